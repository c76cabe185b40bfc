package capture

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/atomicfile"
)

// Convert reads PostgreSQL logs as Parse does and writes the capture file
// Write would write for them, without holding the capture: an hour of a
// busy server's log is tens of millions of statements, which Parse holds
// at about a kilobyte each. Each statement is written to a spill file
// beside the capture as soon as no later line can change it (when its
// session's next statement comes, or the session ends), each text once;
// the capture file is then written from the spill in two passes, the
// first for what the file's head needs (the capture's end, the texts in
// their order of use). What stays in memory is the open sessions' last
// statements, about 250 bytes per session the log had and 16 per text,
// and a cache of recent texts of at most textCacheBytes: not the
// statements.
//
// A capture that holds no statement is not written (Converted.Statements
// is 0). MySQL's and MariaDB's logs are read the same way, a second of
// the log at a time (the statements a whole second's stamp holds are
// spread over it).
func Convert(files []string, opt Options, path string) (*Converted, error) {
	files, opt, mysql, err := checkFiles(files, opt)
	if err != nil {
		return nil, err
	}
	st, err := newStreamOut(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return nil, &WriteError{err}
	}
	defer st.close()
	var b *builder
	sources := files
	if mysql != "" {
		b = newBuilder(opt)
		b.stream = st
		if err := readMySQL(files, mysql, opt, b); err != nil {
			return nil, err
		}
		st.engine, st.errorsUnknown = EngineMySQL, true
	} else {
		p, logs, err := plan(files, opt)
		if err != nil {
			return nil, err
		}
		b, sources = p.b, sourcesOf(logs)
		b.stream = st
		if err := p.readAll(logs); err != nil {
			return nil, err
		}
	}
	b.finishOpen()
	if st.err != nil {
		return nil, &WriteError{fmt.Errorf("write capture %s: spill file: %w", path, st.err)}
	}
	st.stop = opt.Stop
	out, err := st.write(b, sources, path)
	if err != nil {
		return nil, &WriteError{err}
	}
	return out, nil
}

// errStopped ends a Convert told to stop (Options.Stop).
var errStopped = errors.New("stopped")

// stopped says whether Options.Stop is closed.
func (st *streamOut) stopped() bool {
	select {
	case <-st.stop:
		return true
	default:
		return false
	}
}

// WriteError is an error of Convert's writing (the capture file or its
// spill), not of the logs it read.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// Converted is what Convert read and wrote.
type Converted struct {
	Summary    string // Capture.Summary's lines for what the logs held
	Statements int    // 0: the logs held none, and no file was written
}

// Sizes of what a stream holds (variables: tests lower them).
var (
	// textCacheBytes bounds the texts kept to find a text's earlier
	// copy: two generations, the older dropped when the newer passes
	// half of it. A text met again after it was dropped is stored again
	// under a new index (a literal-laden workload's texts are mostly
	// used once; those used often stay).
	textCacheBytes = 16 << 20
	// blockBytes is what a session's statements gather before they are
	// written to the spill as one block, and heldBytes what all open
	// sessions may gather before all are written.
	blockBytes = 16 << 10
	heldBytes  = 8 << 20
)

// streamOut is the spill of a Convert: statements written as they are
// done, in blocks per session, and the sessions' heads.
type streamOut struct {
	texts    *textStore
	f        *os.File
	w        *bufio.Writer
	size     int64
	held     int
	sessions []*sessEntry // in the order they ended
	err      error        // the first write error
	rd       []byte       // a block read back
	stop     <-chan struct{}
	// engine and errorsUnknown are the capture's Engine and
	// ErrorsUnknown (a MySQL log's).
	engine        string
	errorsUnknown bool
}

// sessOut is what a stream keeps of an open session.
type sessOut struct {
	buf      []byte // statements not yet in a block
	blocks   []block
	n        int
	minStart time.Time
	prevSec  int64 // the last statement's start, in Unix seconds
	lastID   int   // the last statement's text
	lastText string
}

type block struct {
	off int64
	n   int
}

// sessEntry is an ended session the capture keeps: its head, and where
// its statements are in the spill.
type sessEntry struct {
	Session
	start time.Time // the connection, else the first thing seen
	// end is the disconnection, else the last line seen; the first pass
	// moves it up to the end of the session's statements (finish).
	end    time.Time
	blocks []block
	n      int
}

// spillFile makes an unnamed temporary file beside the capture: removed
// at once, it goes when it is closed, however the process ends.
func spillFile(dir, name, what string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "."+name+"."+what+"-*")
	if err != nil {
		return nil, fmt.Errorf("capture spill file: %w", err)
	}
	os.Remove(f.Name())
	return f, nil
}

func newStreamOut(dir, name string) (*streamOut, error) {
	f, err := spillFile(dir, name, "statements")
	if err != nil {
		return nil, err
	}
	tf, err := spillFile(dir, name, "texts")
	if err != nil {
		f.Close()
		return nil, err
	}
	return &streamOut{f: f, w: bufio.NewWriterSize(f, 256<<10), texts: newTextStore(tf)}, nil
}

func (st *streamOut) close() {
	st.f.Close()
	st.texts.f.Close()
}

// push adds a statement to its session. Once another follows it, nothing
// in the log can change a statement (duration and error lines belong to
// the session's last one): a stream writes it then, and keeps the last
// one's text, which an error may have to be compared with.
func (b *builder) push(s *sess, x *stmt) {
	if b.stream != nil {
		if s.out == nil {
			s.out = &sessOut{}
		}
		s.out.lastID, s.out.lastText = x.text, b.stream.texts.text(x.text)
		if len(s.stmts) > 0 {
			b.stream.statement(b, s, s.stmts[0])
			s.stmts[0] = x
			return
		}
	}
	s.stmts = append(s.stmts, x)
}

// textOf returns the text of an interned index, one of session s's
// statements' (its last, in a stream).
func (b *builder) textOf(s *sess, i int) string {
	if b.stream == nil {
		return b.textList[i]
	}
	if s.out != nil && s.out.lastID == i {
		return s.out.lastText
	}
	return b.stream.texts.text(i)
}

// statement writes a done statement into its session's buffer.
func (st *streamOut) statement(b *builder, s *sess, x *stmt) {
	o := s.out
	if o == nil {
		o = &sessOut{}
		s.out = o
	}
	if o.n == 0 || x.start.Before(o.minStart) {
		o.minStart = x.start
	}
	o.n++
	k := len(o.buf)
	o.buf = appendStmt(o.buf, x, &o.prevSec)
	st.held += len(o.buf) - k
	if len(o.buf) >= blockBytes {
		st.flush(o)
	}
	if st.held > heldBytes {
		for _, s := range b.open {
			if s.out != nil && len(s.out.buf) > 0 {
				st.flush(s.out)
			}
		}
	}
}

// flush writes a session's buffer as a block.
func (st *streamOut) flush(o *sessOut) {
	if _, err := st.w.Write(o.buf); err != nil && st.err == nil {
		st.err = err
	}
	o.blocks = append(o.blocks, block{off: st.size, n: len(o.buf)})
	st.size += int64(len(o.buf))
	st.held -= len(o.buf)
	o.buf = nil // an idle session holds nothing
}

// end takes a session finish keeps: its last statement, its start (the
// connection, else the first thing seen), its head.
func (st *streamOut) end(b *builder, s *sess) {
	for _, x := range s.stmts {
		st.statement(b, s, x)
	}
	o := s.out
	if o == nil {
		o = &sessOut{}
	}
	if len(o.buf) > 0 {
		st.flush(o)
	}
	start := s.start
	if !s.connected {
		start = s.first
		if o.n > 0 && o.minStart.Before(start) {
			start = o.minStart
		}
	}
	end := s.end
	if !s.disconnected {
		end = s.last
	}
	e := &sessEntry{Session: s.Session, start: start, end: end, blocks: o.blocks, n: o.n}
	// The names are pieces of the log records they came from: copied,
	// so that a session's head does not keep its records.
	e.ID, e.User, e.Database = strings.Clone(e.ID), strings.Clone(e.User), strings.Clone(e.Database)
	e.Application, e.Host = strings.Clone(e.Application), strings.Clone(e.Host)
	st.sessions = append(st.sessions, e)
	s.stmts, s.out = nil, nil
	s.pending, s.prepared, s.openStmt, s.lastStmt = nil, nil, nil, nil
}

// A statement in the spill: its start as Unix seconds (from the one
// before it in the session) and nanoseconds, duration, text index, flags,
// then what the flags say it has, and its place in the log, then the
// insert id where a MySQL slow log gave one. Logs give no rows, types or
// COPY data.
const (
	spillExtended = 1 << iota
	spillTruncated
	spillPrepared
	spillParams
	spillError
	spillInsertID
)

func appendStmt(b []byte, x *stmt, prevSec *int64) []byte {
	sec := x.start.Unix()
	b = binary.AppendVarint(b, sec-*prevSec)
	*prevSec = sec
	b = binary.AppendUvarint(b, uint64(x.start.Nanosecond()))
	b = binary.AppendVarint(b, int64(x.dur))
	b = binary.AppendUvarint(b, uint64(x.text))
	var flags byte
	if x.extended {
		flags |= spillExtended
	}
	if x.truncated {
		flags |= spillTruncated
	}
	if x.prepared != "" {
		flags |= spillPrepared
	}
	if x.params != nil {
		flags |= spillParams
	}
	if x.err != nil {
		flags |= spillError
	}
	if x.insertID != 0 {
		flags |= spillInsertID
	}
	b = append(b, flags)
	if x.prepared != "" {
		b = appendSpillString(b, x.prepared)
	}
	if x.params != nil {
		b = binary.AppendUvarint(b, uint64(len(x.params)))
		for _, p := range x.params {
			if p == nil {
				b = append(b, 0)
				continue
			}
			b = binary.AppendUvarint(b, uint64(len(*p))+1)
			b = append(b, *p...)
		}
	}
	if x.err != nil {
		b = appendSpillString(b, x.err.SQLState)
		b = appendSpillString(b, x.err.Message)
	}
	b = binary.AppendVarint(b, x.seq)
	if x.insertID != 0 {
		b = binary.AppendVarint(b, x.insertID)
	}
	return b
}

func appendSpillString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// spilled is a statement read back: its strings point into the block.
type spilled struct {
	start     time.Time
	dur       time.Duration
	text      int
	flags     byte
	prepared  []byte
	params    [][]byte // nil elements are NULL
	state     []byte
	message   []byte
	seq       int64
	insertID  int64
	hasParams bool
}

// sessionReader reads a session's statements back from the spill.
type sessionReader struct {
	st      *streamOut
	e       *sessEntry
	blk     int
	buf     []byte
	prevSec int64
	x       spilled
}

func (st *streamOut) reader(e *sessEntry) *sessionReader {
	return &sessionReader{st: st, e: e}
}

// next reads the next statement into r.x; false at the session's end.
func (r *sessionReader) next() bool {
	for len(r.buf) == 0 {
		if r.blk == len(r.e.blocks) {
			return false
		}
		b := r.e.blocks[r.blk]
		r.blk++
		if cap(r.st.rd) < b.n {
			r.st.rd = make([]byte, b.n)
		}
		r.buf = r.st.rd[:b.n]
		if _, err := r.st.f.ReadAt(r.buf, b.off); err != nil {
			if r.st.err == nil {
				r.st.err = err
			}
			r.buf = nil
			return false
		}
	}
	x := &r.x
	d, k := binary.Varint(r.buf)
	r.buf = r.buf[k:]
	r.prevSec += d
	nsec := r.uvarint()
	x.start = time.Unix(r.prevSec, int64(nsec))
	dur, k := binary.Varint(r.buf)
	r.buf = r.buf[k:]
	x.dur = time.Duration(dur)
	x.text = int(r.uvarint())
	x.flags = r.buf[0]
	r.buf = r.buf[1:]
	x.prepared, x.params, x.state, x.message, x.hasParams = nil, x.params[:0], nil, nil, false
	if x.flags&spillPrepared != 0 {
		x.prepared = r.bytes()
	}
	if x.flags&spillParams != 0 {
		x.hasParams = true
		for n := r.uvarint(); n > 0; n-- {
			l := r.uvarint()
			if l == 0 {
				x.params = append(x.params, nil)
				continue
			}
			x.params = append(x.params, r.buf[:l-1:l-1])
			r.buf = r.buf[l-1:]
		}
	}
	if x.flags&spillError != 0 {
		x.state = r.bytes()
		x.message = r.bytes()
	}
	seq, k := binary.Varint(r.buf)
	r.buf = r.buf[k:]
	x.seq = seq
	x.insertID = 0
	if x.flags&spillInsertID != 0 {
		x.insertID, k = binary.Varint(r.buf)
		r.buf = r.buf[k:]
	}
	return true
}

func (r *sessionReader) uvarint() uint64 {
	v, k := binary.Uvarint(r.buf)
	r.buf = r.buf[k:]
	return v
}

func (r *sessionReader) bytes() []byte {
	n := r.uvarint()
	b := r.buf[:n:n]
	r.buf = r.buf[n:]
	return b
}

// write writes the capture file from the spill: the sessions in the order
// of their starts (then IDs), the texts in the order of their first use
// there, as Parse and Write would.
func (st *streamOut) write(b *builder, sources []string, path string) (*Converted, error) {
	if err := st.w.Flush(); err != nil {
		return nil, fmt.Errorf("write capture %s: spill file: %w", path, err)
	}
	sort.SliceStable(st.sessions, func(i, j int) bool {
		a, z := st.sessions[i], st.sessions[j]
		if !a.start.Equal(z.start) {
			return a.start.Before(z.start)
		}
		return a.ID < z.ID
	})
	c := &Capture{Format: Format, Engine: st.engine, Sources: sources, Skipped: b.skipped(), ErrorsUnknown: st.errorsUnknown}
	for i, e := range st.sessions {
		if i == 0 || e.start.Before(c.Start) {
			c.Start = e.start
		}
	}
	// The first pass: each session's end once its statements are moved
	// up to the end of the one before (finish), and the texts used (the
	// spill also has those of sessions left out).
	used := newRanks(st.texts.count())
	statements := 0
	for i, e := range st.sessions {
		if st.stopped() {
			return nil, errStopped
		}
		floor := e.start
		r := st.reader(e)
		for r.next() {
			used.set(r.x.text)
			start := r.x.start
			if start.Before(floor) {
				start = floor
			}
			if end := start.Add(r.x.dur); end.After(floor) {
				floor = end
			}
			statements++
		}
		if e.end.Before(floor) {
			e.end = floor
		}
		if i == 0 || e.end.After(c.End) {
			c.End = e.end
		}
	}
	if st.err != nil {
		return nil, fmt.Errorf("write capture %s: spill file: %w", path, st.err)
	}
	c.Start, c.End = c.Start.UTC(), c.End.UTC()
	t := newTally()
	t.texts = used.count()
	for _, e := range st.sessions {
		e.Session.Start, e.Session.End = e.start.Sub(c.Start), e.end.Sub(c.Start)
	}
	out := &Converted{Statements: statements}
	if statements == 0 {
		for _, e := range st.sessions {
			t.session(&e.Session)
		}
		out.Summary = t.summary(c)
		return out, nil
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
		zw, _ := gzip.NewWriterLevel(w, captureGzipLevel)
		aw := newAsyncWriter(zw)
		if err := st.document(aw, c, used, t); err != nil {
			aw.abort()
			return err
		}
		if err := aw.close(); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return nil, fmt.Errorf("write capture %s: %w", path, err)
	}
	out.Summary = t.summary(c)
	return out, nil
}

// captureGzipLevel is gzip's fastest: on a pgbench capture its file is
// 27% larger than at gzip's default level (still about 45 times smaller
// than the csvlog), and written in a twentieth of the time, where the
// default took a quarter of capture's time.
const captureGzipLevel = gzip.BestSpeed

// document writes the capture's JSON: the head, the texts used, in the
// order they were first met in the logs, then each session read back
// from the spill, counting what the summary says.
func (st *streamOut) document(w *asyncWriter, c *Capture, used *ranks, t *tally) error {
	head, err := jsonValue(c.Sources)
	if err != nil {
		return err
	}
	start, err := jsonValue(c.Start)
	if err != nil {
		return err
	}
	end, err := jsonValue(c.End)
	if err != nil {
		return err
	}
	b := w.buf
	b = append(b, `{"format":`...)
	b = appendJSONString(b, Format)
	if c.Engine != "" {
		b = append(b, `,"engine":`...)
		b = appendJSONString(b, c.Engine)
	}
	b = append(b, `,"sources":`...)
	b = append(b, head...)
	b = append(b, `,"start":`...)
	b = append(b, start...)
	b = append(b, `,"end":`...)
	b = append(b, end...)
	b = append(b, `,"texts":[`...)
	// What the few special texts are, for the summary, and the texts
	// Read would refuse, written empty (Write).
	special := map[int]textKind{}
	tooLong := map[int]bool{}
	n := 0
	st.texts.each(func(id int, text []byte) bool {
		if !used.has(id) {
			return true
		}
		if n > 0 {
			b = append(b, ',')
		}
		if k := kindOfBytes(text); k.copy || k.fast {
			special[n] = k
		}
		at := len(b)
		b = appendJSONString(b, text)
		if len(text) > MaxTextBytes/6 && len(b)-at > MaxTextBytes {
			b = append(b[:at], `""`...)
			tooLong[n] = true
		}
		b = w.maybeSend(b)
		n++
		return true
	})
	if st.texts.err != nil {
		return st.texts.err
	}
	b = append(b, `],"sessions":[`...)
	over := fileSkip{Reason: reasonOverLimits, Effect: Dropped}
	var s Statement
	for i, e := range st.sessions {
		if st.stopped() {
			return errStopped
		}
		t.session(&e.Session)
		if i > 0 {
			b = append(b, ',')
		}
		b = appendSessionHead(b, &e.Session)
		floor := e.start
		r := st.reader(e)
		first := true
		for k := 0; r.next(); k++ {
			x := &r.x
			start := x.start
			if start.Before(floor) {
				start = floor
			}
			if end := start.Add(x.dur); end.After(floor) {
				floor = end
			}
			text := used.rank(x.text)
			s = Statement{Offset: start.Sub(c.Start), Duration: x.dur, Text: int(text), Extended: x.flags&spillExtended != 0,
				ParamsTruncated: x.flags&spillTruncated != 0, Seq: x.seq, InsertID: x.insertID}
			if len(x.prepared) > 0 {
				s.Prepared = "-" // for the count: appendSpilled writes x's
			}
			var failure Error
			if x.flags&spillError != 0 {
				failure.SQLState = string(x.state)
				s.Error = &failure
			}
			t.statement(&s, special[text])
			at := len(b)
			if !first {
				b = append(b, ',')
			}
			if k%4096 == 4095 && st.stopped() {
				return errStopped
			}
			b = appendSpilled(b, &s, x)
			if tooLong[text] || len(b)-at-1 > MaxStatementBytes {
				if over.Count++; over.Count == 1 {
					over.First = fmt.Sprintf("session %s statement %d", e.ID, k)
				}
				b = b[:at]
			} else {
				first = false
			}
			b = w.maybeSend(b)
		}
		b = append(b, "]}"...)
	}
	if st.err != nil {
		return st.err
	}
	b = append(b, ']')
	skipped := make([]fileSkip, 0, len(c.Skipped)+1)
	for _, s := range c.Skipped {
		skipped = append(skipped, fileSkip(s))
	}
	if over.Count > 0 {
		skipped = append(skipped, over)
	}
	if len(skipped) > 0 {
		list, err := jsonValue(skipped)
		if err != nil {
			return err
		}
		b = append(b, `,"skipped":`...)
		b = append(b, list...)
	}
	if c.ErrorsUnknown {
		b = append(b, `,"errors_unknown":true`...)
	}
	b = append(b, "}\n"...)
	w.buf = b
	return nil
}

// ranks is a set of text indices that tells each one's place among them:
// a bit per index.
type ranks struct {
	bits   []uint64
	before []int32 // set bits in the words before each word; made by count
}

func newRanks(n int) *ranks { return &ranks{bits: make([]uint64, (n+63)/64)} }

func (r *ranks) set(i int)      { r.bits[i/64] |= 1 << (i % 64) }
func (r *ranks) has(i int) bool { return r.bits[i/64]&(1<<(i%64)) != 0 }

// count counts the set and makes rank ready.
func (r *ranks) count() int {
	r.before = make([]int32, len(r.bits))
	n := 0
	for w, word := range r.bits {
		r.before[w] = int32(n)
		n += bits.OnesCount64(word)
	}
	return n
}

// rank is the number of set indices below i.
func (r *ranks) rank(i int) int {
	return int(r.before[i/64]) + bits.OnesCount64(r.bits[i/64]&(1<<(i%64)-1))
}

// jsonValue encodes v as Write's encoder does.
func jsonValue(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}

// appendSessionHead writes a session's fields up to its statements' list,
// opened.
func appendSessionHead(b []byte, s *Session) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, s.ID)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(s.PID), 10)
	for _, f := range []struct{ key, value string }{{"user", s.User}, {"database", s.Database}, {"application", s.Application}, {"host", s.Host}} {
		if f.value != "" {
			b = append(b, `,"`...)
			b = append(b, f.key...)
			b = append(b, `":`...)
			b = appendJSONString(b, f.value)
		}
	}
	b = append(b, `,"start_us":`...)
	b = strconv.AppendInt(b, us(s.Start), 10)
	b = append(b, `,"end_us":`...)
	b = strconv.AppendInt(b, us(s.End), 10)
	if s.StartedBeforeLog {
		b = append(b, `,"started_before_log":true`...)
	}
	if s.EndedAfterLog {
		b = append(b, `,"ended_after_log":true`...)
	}
	return append(b, `,"statements":[`...)
}

// appendSpilled writes a statement as Write's fileStatement: s holds its
// times, text and flags, x its strings.
func appendSpilled(b []byte, s *Statement, x *spilled) []byte {
	b = append(b, `{"o":`...)
	b = strconv.AppendInt(b, us(s.Offset), 10)
	if d := us(s.Duration); d != 0 {
		b = append(b, `,"d":`...)
		b = strconv.AppendInt(b, d, 10)
	}
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, int64(s.Text), 10)
	if len(x.prepared) > 0 {
		b = append(b, `,"n":`...)
		b = appendJSONString(b, x.prepared)
	}
	if s.Extended {
		b = append(b, `,"x":true`...)
	}
	if len(x.params) > 0 {
		b = append(b, `,"p":[`...)
		for i, p := range x.params {
			if i > 0 {
				b = append(b, ',')
			}
			if p == nil {
				b = append(b, "null"...)
			} else {
				b = appendJSONString(b, p)
			}
		}
		b = append(b, ']')
	}
	if s.ParamsTruncated {
		b = append(b, `,"pt":true`...)
	}
	if s.Error != nil {
		b = append(b, `,"e":{`...)
		if len(x.state) > 0 {
			b = append(b, `"s":`...)
			b = appendJSONString(b, x.state)
			b = append(b, ',')
		}
		b = append(b, `"m":`...)
		b = appendJSONString(b, x.message)
		b = append(b, '}')
	}
	if s.Seq != 0 {
		b = append(b, `,"q":`...)
		b = strconv.AppendInt(b, s.Seq, 10)
	}
	if s.InsertID != 0 {
		b = append(b, `,"ai":`...)
		b = strconv.AppendInt(b, s.InsertID, 10)
	}
	return append(b, '}')
}
