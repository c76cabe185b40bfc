// Package wire captures a workload from the wire: it decodes the protocol
// a client and its server exchange, PostgreSQL's (v3, postgres.go) or
// MySQL's (mysql.go), as a proxy relays it (proxy.go) or as packets read
// off an interface carry it (sniff_linux.go), into a capture's sessions
// and statements, with what the logs cannot give: the parameters' declared
// types and binary values, the rows each statement affected or returned,
// COPY data, and the client's own timing.
package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
)

// Recorder collects the sessions of the connections it decodes.
type Recorder struct {
	// KeepOwn keeps dbparity's own sessions (application dbparity-*),
	// left out and counted otherwise, as the log reader does.
	KeepOwn bool
	// MySQL decodes the MySQL protocol (MySQL and MariaDB; mysql.go)
	// instead of PostgreSQL's.
	MySQL    bool
	mu       sync.Mutex
	source   string
	texts    map[string]int
	textList []string
	plain    []bool     // by text: interned as a statement sent it (nothing masked)
	sessions []*session // every session, open or ended
	seq      int64
	skipped  map[string]*capture.Skip
	ids      int
}

// NewRecorder starts a recording; source names where it came from (the
// proxy's addresses), for the capture's Sources (after capture.WirePrefix).
func NewRecorder(source string) *Recorder {
	return &Recorder{source: source, texts: map[string]int{}, skipped: map[string]*capture.Skip{}}
}

// Reasons a connection or statement is not in the capture as it ran.
const (
	reasonTLS         = "TLS sessions (encrypted: capture where TLS ends, or connect without TLS to the port the capture relays)"
	reasonCancel      = "cancel requests (a connection of their own, no statements)"
	reasonBinary      = "statements with binary parameters of a type not decoded (replayed without them: skipped)"
	reasonUndecoded   = "protocol messages that could not be decoded (the rest of the session is not captured)"
	reasonUpstream    = "client connections turned away: the upstream server could not be reached"
	reasonTLSGaveUp   = "clients that closed their connection when offered no TLS (they require it: give the proxy a certificate)"
	reasonTLSRefused  = "clients that asked for TLS and were told there is none (they went on in the clear; one that requires TLS gave up)"
	reasonOwn         = "dbparity's own sessions (collectors, replay monitors: application dbparity-*), left out"
	reasonCopyBig     = "COPY FROM STDIN data over 64 MiB a statement, not kept (replayed empty, and reported)"
	reasonUnknownStmt = "executions of statements prepared before the capture began (their text never crossed the wire while it ran), not captured"
	reasonBefore      = "connections open before the capture began, picked up at a statement (user and database unknown: the replay uses the target's)"
)

// maxCopyData is the most COPY data a statement keeps.
const maxCopyData = 64 << 20

func (r *Recorder) skip(effect capture.SkipEffect, reason, where string) {
	s := r.skipped[reason]
	if s == nil {
		s = &capture.Skip{Reason: reason, Effect: effect, First: where}
		r.skipped[reason] = s
	}
	s.Count++
}

func (r *Recorder) intern(text string) int {
	if i, ok := r.texts[text]; ok {
		return i
	}
	i := len(r.textList)
	r.texts[text] = i
	r.textList = append(r.textList, text)
	r.plain = append(r.plain, false)
	return i
}

// Counts says how many sessions and statements the recording holds so far.
func (r *Recorder) Counts() (sessions, statements int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sessions {
		if s.started {
			sessions++
			statements += len(s.stmts)
		}
	}
	return sessions, statements
}

// Capture returns what was recorded, sessions still open included (marked
// as ending after the capture).
func (r *Recorder) Capture() *capture.Capture {
	r.mu.Lock()
	defer r.mu.Unlock()
	var start, end time.Time
	for _, s := range r.sessions {
		if !s.started {
			continue
		}
		if start.IsZero() || s.start.Before(start) {
			start = s.start
		}
		e := s.end
		if e.IsZero() && len(s.stmts) > 0 {
			e = s.stmts[len(s.stmts)-1].end
		}
		if e.After(end) {
			end = e
		}
	}
	engine := capture.EnginePostgres
	if r.MySQL {
		engine = capture.EngineMySQL
	}
	c := &capture.Capture{Format: capture.Format, Engine: engine, Sources: []string{capture.WirePrefix + r.source},
		Start: start, End: end, Texts: append([]string{}, r.textList...)}
	for _, s := range r.sessions {
		if !s.started {
			continue
		}
		if capture.Own(s.app) && !r.KeepOwn {
			r.skip(capture.Ignored, reasonOwn, s.id)
			continue
		}
		cs := capture.Session{ID: s.id, PID: s.pid, User: s.user, Database: s.database, Application: s.app, Host: s.host,
			Start: s.start.Sub(start), EndedAfterLog: s.end.IsZero(), StartedBeforeLog: s.before}
		if s.end.IsZero() {
			cs.End = end.Sub(start)
		} else {
			cs.End = s.end.Sub(start)
		}
		for _, st := range s.stmts {
			x := st.st
			x.Offset, x.Duration = st.start.Sub(start), st.end.Sub(st.start)
			cs.Statements = append(cs.Statements, x)
		}
		c.Sessions = append(c.Sessions, cs)
	}
	sort.SliceStable(c.Sessions, func(i, j int) bool { return c.Sessions[i].Start < c.Sessions[j].Start })
	for _, k := range sortedKeys(r.skipped) {
		c.Skipped = append(c.Skipped, *r.skipped[k])
	}
	return c
}

func sortedKeys(m map[string]*capture.Skip) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// session is one client connection being decoded.
type session struct {
	r                   *Recorder
	id, host            string
	user, database, app string
	pid                 int
	started             bool // the startup message was read
	before              bool // open before the capture began: picked up at a statement
	start, end          time.Time
	stmts               []*done

	mu       sync.Mutex
	isMy     bool    // the MySQL protocol
	my       myState // its state
	front    buffer  // client to server
	back     buffer  // server to client
	startup  bool    // the next client message is a startup message (no type byte)
	sslReply bool    // the server's next byte answers an SSL or GSS request
	off      bool    // not decoded any more (TLS, a message not understood)
	prepared map[string]prepared
	portals  map[string]portal
	group    time.Time // the first message of the statement being built
	pending  []*pend   // statements sent, awaiting their end, in order; nil entries mark a Sync
	// describes are the prepared statements whose parameter types the
	// client asked for (Describe), awaiting the server's
	// ParameterDescription, in order; nil entries mark a Sync.
	describes []*string
	simple    *pend
	slab      slab
}

type done struct {
	st         capture.Statement
	start, end time.Time
}

type prepared struct {
	name  string // its key, for the portals bound to it
	text  string
	types []uint32
}

type portal struct {
	stmt      string // the prepared statement's name
	params    []*string
	truncated bool
}

type pend struct {
	st    capture.Statement
	text  string
	start time.Time
	rows  *int64
	err   *capture.Error
}

// Open starts decoding a new client connection from host.
func (r *Recorder) Open(host string) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids++
	s := &session{r: r, id: "wire-" + strconv.Itoa(r.ids), host: host, startup: !r.MySQL, isMy: r.MySQL,
		prepared: map[string]prepared{}, portals: map[string]portal{}}
	r.sessions = append(r.sessions, s)
	return &Session{s: s}
}

// openMidstream starts decoding a connection that was open before the
// capture began, at a client message: its startup (user, database) is
// unknown.
func (r *Recorder) openMidstream(host string, at time.Time) *Session {
	x := r.Open(host)
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	s.startup, s.started, s.before, s.start = false, true, true, at
	if s.isMy {
		s.my.phase, s.my.stmts, s.my.eofUnknown = 3, map[uint32]*myStmt{}, true
	}
	r.skip(capture.Flagged, reasonBefore, s.id)
	return x
}

// lost ends the decoding of a session whose stream has a gap that never
// filled.
func (x *Session) lost() {
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	if !x.s.off {
		x.s.stop("segments lost")
	}
}

// Session decodes one connection: feed it each side's bytes as they pass.
type Session struct{ s *session }

// FromClient decodes bytes the client sent, at the time they passed.
func (x *Session) FromClient(b []byte, at time.Time) {
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off {
		return
	}
	s.front.write(b)
	defer s.front.release()
	if s.isMy {
		s.myFromClient(at)
		return
	}
	for !s.off {
		var typ byte
		var body []byte
		var ok bool
		var bad bool
		if s.startup {
			body, ok, bad = s.front.untyped()
		} else {
			typ, body, ok, bad = s.front.message()
		}
		if bad {
			s.stop("a client message's length")
			return
		}
		if !ok {
			return
		}
		s.client(typ, body, at)
	}
}

// FromServer decodes bytes the server sent, at the time they passed.
func (x *Session) FromServer(b []byte, at time.Time) {
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off {
		return
	}
	s.back.write(b)
	defer s.back.release()
	if s.isMy {
		s.myFromServer(at)
		return
	}
	for !s.off {
		if s.sslReply {
			c, ok := s.back.byte1()
			if !ok {
				return
			}
			s.sslReply = false
			if c != 'N' {
				s.r.mu.Lock()
				s.r.skip(capture.Dropped, reasonTLS, s.host)
				s.r.mu.Unlock()
				s.off = true
				return
			}
			s.startup = true
			continue
		}
		typ, body, ok, bad := s.back.message()
		if bad {
			s.stop("a server message's length")
			return
		}
		if !ok {
			return
		}
		s.server(typ, body, at)
	}
}

// Close ends the connection at.
func (x *Session) Close(at time.Time) {
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.end.IsZero() {
		s.end = at
	}
	// Bytes left that never made a whole message: a connection the
	// capture could not read to its end, counted as one.
	if n := len(s.front.b) + len(s.back.b); !s.off && n > 0 {
		s.off = true
		s.r.skip(capture.Dropped, reasonUndecoded, fmt.Sprintf("%s from %s: the connection ended inside a message (%d bytes unread)", s.id, s.host, n))
	}
}

// Protocol codes of the untyped first messages.
const (
	protocol3  = 196608
	sslRequest = 80877103
	gssRequest = 80877104
	cancelCode = 80877102
	maxMessage = 1 << 30
)

func (s *session) stop(what string) {
	s.off = true
	s.r.mu.Lock()
	s.r.skip(capture.Dropped, reasonUndecoded, s.id+" from "+s.host+": "+what)
	s.r.mu.Unlock()
}

// client handles one message from the client.
func (s *session) client(typ byte, body []byte, at time.Time) {
	if s.startup {
		if len(body) < 4 {
			s.stop("a short startup message")
			return
		}
		switch code := binary.BigEndian.Uint32(body); code {
		case sslRequest, gssRequest:
			s.startup, s.sslReply = false, true
		case cancelCode:
			s.off = true
			s.r.mu.Lock()
			s.r.skip(capture.Ignored, reasonCancel, s.host)
			s.r.mu.Unlock()
		case protocol3:
			s.startup = false
			kv := strings.Split(string(body[4:]), "\x00")
			for i := 0; i+1 < len(kv); i += 2 {
				switch kv[i] {
				case "user":
					s.user = kv[i+1]
				case "database":
					s.database = kv[i+1]
				case "application_name":
					s.app = kv[i+1]
				}
			}
			if s.database == "" {
				s.database = s.user
			}
			s.r.mu.Lock()
			s.started, s.start = true, at
			s.r.mu.Unlock()
		default:
			s.stop(fmt.Sprintf("protocol %d", code))
		}
		return
	}
	m := msg{b: body}
	switch typ {
	case 'Q':
		text := m.str()
		s.simple = s.slab.pend()
		*s.simple = pend{text: text, start: at}
	case 'P':
		name, text := m.str(), m.str()
		n := int(m.u16())
		types := make([]uint32, 0, n)
		for range n {
			types = append(types, m.u32())
		}
		if m.bad {
			s.stop("a Parse message")
			return
		}
		s.prepared[name] = prepared{name: name, text: text, types: types}
		s.mark(at)
	case 'B':
		name, sb := m.str(), m.strBytes()
		nf := int(m.u16())
		formats := m.bytes(2 * nf) // read in place: two bytes each
		n := int(m.u16())
		pr, known := s.prepared[string(sb)] // looked up without a copy
		stmt := pr.name
		if !known {
			stmt = string(sb)
		}
		p := portal{stmt: stmt, params: s.slab.ptrs(n)}
		vals := s.slab.strs(n)
		for i := range n {
			l := int32(m.u32())
			if l < 0 {
				continue // NULL
			}
			raw := m.bytes(int(l))
			format := uint16(0)
			switch {
			case m.bad:
			case nf == 1:
				format = binary.BigEndian.Uint16(formats)
			case i < nf:
				format = binary.BigEndian.Uint16(formats[2*i:])
			}
			var t uint32
			if i < len(pr.types) {
				t = pr.types[i]
			}
			v, ok := value(raw, format, t)
			if !ok {
				p.truncated = true
				continue
			}
			vals[i] = v
			p.params[i] = &vals[i]
		}
		if m.bad {
			s.stop("a Bind message")
			return
		}
		s.portals[name] = p
		s.mark(at)
	case 'E':
		name := m.str()
		p, ok := s.portals[name]
		pr, known := s.prepared[p.stmt]
		if !ok || !known {
			// Bound, or prepared, before the capture began: its text
			// cannot be known from the wire.
			s.r.mu.Lock()
			s.r.skip(capture.Dropped, reasonUnknownStmt, s.id)
			s.r.mu.Unlock()
			return
		}
		start := s.group
		if start.IsZero() {
			start = at
		}
		s.group = time.Time{}
		st := capture.Statement{Extended: true, Params: p.params, ParamsTruncated: p.truncated, Prepared: p.stmt}
		if len(pr.types) > 0 {
			st.Types = pr.types
		}
		if p.truncated {
			s.r.mu.Lock()
			s.r.skip(capture.Dropped, reasonBinary, s.id)
			s.r.mu.Unlock()
		}
		x := s.slab.pend()
		*x = pend{st: st, text: pr.text, start: start}
		s.pending = append(s.pending, x)
	case 'S':
		s.pending = append(s.pending, nil) // a Sync: the server answers ReadyForQuery
		s.describes = append(s.describes, nil)
		s.group = time.Time{}
	case 'D':
		// A client that names no parameter types (pgx, node-postgres)
		// learns them from the server's answer to this, and then sends
		// integers, floats and timestamps in binary: the answer gives the
		// types to decode them with.
		if kind, name := m.byte(), m.str(); kind == 'S' && !m.bad {
			s.describes = append(s.describes, &name)
		}
	case 'C':
		kind, name := m.byte(), m.str()
		if kind == 'S' {
			delete(s.prepared, name)
		} else {
			delete(s.portals, name)
		}
	case 'd':
		if p := s.copying(); p != nil {
			p.st.CopyBytes += int64(len(body))
			switch {
			case p.st.CopyBytes > maxCopyData:
				if p.st.CopyData != nil {
					p.st.CopyData = nil
					s.r.mu.Lock()
					s.r.skip(capture.Flagged, reasonCopyBig, s.id)
					s.r.mu.Unlock()
				}
			default:
				p.st.CopyData = append(p.st.CopyData, body...)
			}
		}
	case 'X':
		s.r.mu.Lock()
		s.end = at
		s.r.mu.Unlock()
	}
}

// mark notes the first message of a statement being built (Parse, Bind).
func (s *session) mark(at time.Time) {
	if s.group.IsZero() {
		s.group = at
	}
}

// copying is the statement a COPY ... FROM STDIN's data belongs to.
func (s *session) copying() *pend {
	if s.simple != nil {
		return s.simple
	}
	for _, p := range s.pending {
		if p != nil {
			return p
		}
	}
	return nil
}

// server handles one message from the server.
func (s *session) server(typ byte, body []byte, at time.Time) {
	m := msg{b: body}
	switch typ {
	case 'K':
		pid := int(m.u32())
		s.r.mu.Lock()
		s.pid = pid
		s.r.mu.Unlock()
	case 'C', 'I', 's':
		var rows *int64
		if typ == 'C' {
			if n, ok := tagRows(m.b); ok {
				rows = s.slab.int64p(n)
			}
		}
		if s.simple != nil {
			s.simple.rows = rows // the last statement's, of a query of several
			return
		}
		if p := s.first(); p != nil {
			p.rows = rows
			s.finish(p, at)
		}
	case 't':
		if len(s.describes) == 0 || s.describes[0] == nil {
			return // not asked for as decoded: nothing to type
		}
		name := *s.describes[0]
		s.describes = s.describes[1:]
		pr, ok := s.prepared[name]
		if !ok {
			return
		}
		types := make([]uint32, m.u16())
		for i := range types {
			types[i] = m.u32()
			if i < len(pr.types) && pr.types[i] != 0 {
				types[i] = pr.types[i] // as the client declared it
			}
		}
		if !m.bad {
			pr.types = types
			s.prepared[name] = pr
		}
	case 'E':
		e := errorOf(body)
		if s.simple != nil {
			if s.simple.err == nil {
				s.simple.err = e
			}
			return
		}
		if p := s.first(); p != nil {
			p.err = e
			s.finish(p, at)
		}
		// The rest up to the Sync never ran, nor is any describe answered.
		for len(s.pending) > 0 && s.pending[0] != nil {
			s.pending = s.pending[1:]
		}
		for len(s.describes) > 0 && s.describes[0] != nil {
			s.describes = s.describes[1:]
		}
	case 'Z':
		if s.simple != nil {
			p := s.simple
			s.simple = nil
			s.record(p, at, capture.Statement{})
			return
		}
		// Statements before this Sync that had no answer did not run.
		for len(s.pending) > 0 && s.pending[0] != nil {
			s.pending = s.pending[1:]
		}
		if len(s.pending) > 0 {
			s.pending = s.pending[1:]
		}
		for len(s.describes) > 0 && s.describes[0] != nil {
			s.describes = s.describes[1:]
		}
		if len(s.describes) > 0 {
			s.describes = s.describes[1:]
		}
	}
}

// first is the oldest statement awaiting its end, nil at a Sync.
func (s *session) first() *pend {
	if len(s.pending) == 0 {
		return nil
	}
	return s.pending[0]
}

// finish records the first pending statement, ended at.
func (s *session) finish(p *pend, at time.Time) {
	s.pending = s.pending[1:]
	s.record(p, at, p.st)
}

func (s *session) record(p *pend, at time.Time, st capture.Statement) {
	st.Rows, st.Error, st.CopyBytes, st.CopyData = p.rows, p.err, p.st.CopyBytes, p.st.CopyData
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if i, ok := s.r.texts[p.text]; ok && s.r.plain[i] {
		// Sent before and found to hold no password: most statements
		// repeat a text, read for passwords once.
		st.Text = i
	} else {
		// No capture file holds a password: masked as the log reader masks it.
		text := capture.MaskSecrets(p.text)
		if text != p.text {
			s.r.skip(capture.Flagged, capture.ReasonSecret, s.id)
		}
		st.Text = s.r.intern(text)
		if text == p.text {
			s.r.plain[st.Text] = true
		}
	}
	s.r.seq++
	st.Seq = s.r.seq
	d := s.slab.done()
	*d = done{st: st, start: p.start, end: at}
	s.stmts = append(s.stmts, d)
}

// tagRows is capture.TagRows of a CommandComplete's tag, read in place:
// the rows after the last space.
func tagRows(b []byte) (int64, bool) {
	end := bytes.IndexByte(b, 0)
	if end < 0 {
		return 0, false
	}
	tag := b[:end]
	sp := bytes.LastIndexByte(tag, ' ')
	if sp < 0 {
		return 0, false // BEGIN, COMMIT: no count
	}
	digits := tag[sp+1:]
	if len(digits) == 0 || len(digits) > 18 {
		return capture.TagRows(string(tag))
	}
	n := int64(0)
	for _, c := range digits {
		if c < '0' || c > '9' {
			return capture.TagRows(string(tag))
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// slab hands out a session's small kept values from chunks: one
// allocation for many, as every statement a session records is kept.
type slab struct {
	ints   []int64
	dones  []done
	pends  []pend
	ptrBuf []*string
	strBuf []string
}

// ptrs and strs hand out a statement's parameters (kept with it).
func (a *slab) ptrs(n int) []*string {
	if n == 0 {
		return []*string{} // not nil, as a Bind without parameters always gave
	}
	if n > 16 {
		return make([]*string, n)
	}
	if len(a.ptrBuf) < n {
		a.ptrBuf = make([]*string, 256)
	}
	p := a.ptrBuf[:n:n]
	a.ptrBuf = a.ptrBuf[n:]
	return p
}

func (a *slab) strs(n int) []string {
	if n > 16 {
		return make([]string, n)
	}
	if len(a.strBuf) < n {
		a.strBuf = make([]string, 256)
	}
	p := a.strBuf[:n:n]
	a.strBuf = a.strBuf[n:]
	return p
}

func (a *slab) pend() *pend {
	if len(a.pends) == 0 {
		a.pends = make([]pend, 32)
	}
	p := &a.pends[0]
	a.pends = a.pends[1:]
	return p
}

func (a *slab) int64p(v int64) *int64 {
	if len(a.ints) == 0 {
		a.ints = make([]int64, 64)
	}
	p := &a.ints[0]
	*p, a.ints = v, a.ints[1:]
	return p
}

func (a *slab) done() *done {
	if len(a.dones) == 0 {
		a.dones = make([]done, 32)
	}
	d := &a.dones[0]
	a.dones = a.dones[1:]
	return d
}

// errorOf reads an ErrorResponse's SQLSTATE and message.
func errorOf(body []byte) *capture.Error {
	e := &capture.Error{}
	for len(body) > 1 && body[0] != 0 {
		code := body[0]
		end := 1
		for end < len(body) && body[end] != 0 {
			end++
		}
		v := string(body[1:end])
		switch code {
		case 'C':
			e.SQLState = v
		case 'M':
			e.Message = v
		}
		if end >= len(body) {
			break
		}
		body = body[end+1:]
	}
	return e
}
