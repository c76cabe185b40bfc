package capture

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// entry is one complete log message, whatever the format it came from: the
// primary line with its DETAIL, CONTEXT and STATEMENT parts.
type entry struct {
	file      string
	line      int
	time      time.Time
	pid       int
	session   string // PostgreSQL's session id; "" when the log lacks it
	user      string
	db        string
	app       string
	host      string
	backend   string // backend type; "" when the log lacks it
	severity  string
	state     string // SQLSTATE
	message   string
	detail    string
	context   string
	statement string
}

func (e *entry) at() string { return e.file + ":" + strconv.Itoa(e.line) }

// Reasons for skips, shared by the parsers and the tests.
const (
	reasonPrefix       = "lines that do not match log_line_prefix"
	reasonOrphanPart   = "continuation or DETAIL/STATEMENT lines without their message"
	reasonCSV          = "malformed csvlog records"
	reasonJSON         = "malformed jsonlog lines"
	reasonLong         = "lines longer than 256 MiB"
	reasonTime         = "messages without a readable timestamp"
	reasonOther        = "other messages (checkpoints, autovacuum, startup, warnings...)"
	reasonProcess      = "messages of processes other than client backends"
	reasonReplication  = "replication connections"
	reasonOwn          = "dbparity's own sessions (collectors, replay monitors: application dbparity-*), left out"
	reasonFailedLogin  = "connections never authorized (failed logins)"
	reasonFatal        = "fatal errors without a statement (failed logins, timeouts)"
	reasonErrorNoStmt  = "errors without their statement (log_min_error_statement above error?)"
	reasonDurationOnly = "duration lines without their statement (log cut between them?)"
	reasonFetch        = "fetches without their execute"
	reasonParams       = "unreadable parameter lists"
	reasonBefore       = "sessions started before the log (no connection line)"
	reasonAfter        = "sessions ended after the log (no disconnection line)"
	reasonTruncated    = "statements with parameters cut by log_parameter_max_length"
	reasonNoParams     = "extended-protocol statements whose parameters are not in the log"
	reasonZone         = "timestamps in zone %s read as UTC (set log_timezone = 'UTC')"
)

// builder turns entries into sessions. Sessions continue across files.
type builder struct {
	opt      Options
	clock    *clock
	texts    map[string]int
	textList []string
	open     map[string]*sess
	pidSeq   map[int]int
	done     []*sess
	skips    map[string]*Skip
	order    []string
	line     int64 // entries seen, in log order: the statements' Seq
	// stream, when set, takes each statement once it is done and each
	// session once it ends, so that nothing but the open sessions' last
	// statements is held (stream.go): Convert's way; Parse keeps all.
	stream *streamOut
}

func newBuilder(opt Options) *builder {
	return &builder{
		opt:    opt,
		clock:  newClock(),
		texts:  map[string]int{},
		open:   map[string]*sess{},
		pidSeq: map[int]int{},
		skips:  map[string]*Skip{},
	}
}

func (b *builder) skip(effect SkipEffect, reason, where string) {
	s := b.skips[reason]
	if s == nil {
		s = &Skip{Reason: reason, Effect: effect, First: where}
		b.skips[reason] = s
		b.order = append(b.order, reason)
	}
	s.Count++
}

// skipAt counts a skip at an entry, whose place is only written out the
// first time: most skips are counted again and again.
func (b *builder) skipAt(effect SkipEffect, reason string, e *entry) {
	if s := b.skips[reason]; s != nil {
		s.Count++
		return
	}
	b.skip(effect, reason, e.at())
}

func (b *builder) intern(text string) int {
	if masked := MaskSecrets(text); masked != text {
		text = masked
		b.skip(Flagged, ReasonSecret, "(a statement setting a password)")
	}
	if b.stream != nil {
		return b.stream.texts.intern(text)
	}
	if i, ok := b.texts[text]; ok {
		return i
	}
	i := len(b.textList)
	b.texts[text] = i
	b.textList = append(b.textList, text)
	return i
}

// sess is a session being rebuilt, with absolute times.
type sess struct {
	Session
	key          string
	firstAt      string
	first, last  time.Time // first and last line seen
	start, end   time.Time
	connected    bool // connection received or authorized
	authorized   bool
	replication  bool
	disconnected bool
	stmts        []*stmt
	pending      []fold
	openStmt     *stmt // logged at its start (log_statement), waiting for its duration or error
	lastStmt     *stmt
	prepared     map[string]string // named prepared statements' texts
	out          *sessOut          // what a stream wrote of it (stream.go)
}

// stmt is a statement with absolute times; start is refined when the
// session ends.
type stmt struct {
	start     time.Time
	dur       time.Duration
	text      int
	prepared  string
	extended  bool
	params    []*string
	truncated bool
	err       *Error
	seq       int64 // the log line that ended it
	insertID  int64 // the first AUTO_INCREMENT value it took (a MySQL slow log's SET insert_id)
}

// fold is a parse or bind message waiting for the execute it belongs to.
type fold struct {
	name, text string
	start      time.Time
	dur        time.Duration
	params     paramList
}

const maxPending = 64

func (b *builder) add(e *entry) {
	b.line++
	if e.backend != "" && e.backend != "client backend" && e.backend != "not initialized" {
		b.skipAt(Ignored, reasonProcess, e)
		return
	}
	switch e.severity {
	case "LOG":
		b.logMessage(e)
	case "ERROR", "FATAL", "PANIC":
		b.failure(e)
	default:
		b.skipAt(Ignored, reasonOther, e)
	}
}

// session finds or starts the session an entry belongs to. A connection
// line for a pid that already has a session (no %c in the prefix) starts
// a new one: the pid was reused.
func (b *builder) session(e *entry, connecting bool) *sess {
	key := keyOf(e)
	s := b.open[key]
	if s != nil && connecting && e.session == "" && (s.connected || len(s.stmts) > 0) {
		b.finish(s)
		s = nil
	}
	if s == nil {
		s = &sess{key: key, firstAt: e.at(), first: e.time, last: e.time, prepared: map[string]string{}}
		s.ID, s.PID = e.session, e.pid
		if s.ID == "" {
			b.pidSeq[e.pid]++
			s.ID = fmt.Sprintf("pid-%d.%d", e.pid, b.pidSeq[e.pid])
		}
		b.open[key] = s
	}
	if e.time.Before(s.first) {
		s.first = e.time
	}
	if e.time.After(s.last) {
		s.last = e.time
	}
	if s.User == "" {
		s.User = known(e.user)
	}
	if s.Database == "" {
		s.Database = known(e.db)
	}
	if s.Host == "" {
		s.Host = known(e.host)
	}
	return s
}

func (b *builder) logMessage(e *entry) {
	msg := e.message
	switch {
	case strings.HasPrefix(msg, "connection received: "):
		s := b.session(e, true)
		s.connected = true
		if s.start.IsZero() {
			s.start = e.time
		}
		if h := connFields(strings.TrimPrefix(msg, "connection received: "), "host", "port")["host"]; h != "" {
			s.Host = h
		}
	case strings.HasPrefix(msg, "connection authorized: "):
		s := b.session(e, !b.hasOpen(e))
		s.connected, s.authorized = true, true
		if s.start.IsZero() {
			s.start = e.time
		}
		f := connFields(strings.TrimPrefix(msg, "connection authorized: "), "user", "database", "application_name")
		if v := f["user"]; v != "" {
			s.User = v
		}
		if v := f["database"]; v != "" {
			s.Database = v
		}
		if v := f["application_name"]; v != "" {
			s.Application = v
		}
	case strings.HasPrefix(msg, "replication connection authorized: "):
		s := b.session(e, !b.hasOpen(e))
		s.connected, s.replication = true, true
	case strings.HasPrefix(msg, "disconnection: "):
		s := b.session(e, false)
		f := connFields(msg, "user", "database", "host", "port")
		if s.User == "" {
			s.User = f["user"]
		}
		if s.Database == "" {
			s.Database = f["database"]
		}
		if s.Host == "" {
			s.Host = f["host"]
		}
		s.disconnected, s.end = true, e.time
		b.finish(s)
	case strings.HasPrefix(msg, "duration: "):
		d, rest, ok := cutDuration(msg)
		if !ok {
			b.skipAt(Ignored, reasonOther, e)
			return
		}
		b.duration(e, d, rest)
	case strings.HasPrefix(msg, "statement: "):
		// log_statement: logged when the statement starts.
		s := b.session(e, false)
		b.app(s, e)
		st := b.simple(s, strings.TrimPrefix(msg, "statement: "), e.time, 0)
		s.openStmt = st
	case strings.HasPrefix(msg, FastPath):
		// log_statement: a fast-path call, logged as it starts.
		s := b.session(e, false)
		b.app(s, e)
		s.openStmt = b.simple(s, msg, e.time, 0)
	case strings.HasPrefix(msg, "execute "):
		step, ok := cutStep(msg)
		if !ok {
			b.skipAt(Ignored, reasonOther, e)
			return
		}
		s := b.session(e, false)
		b.app(s, e)
		if step.kind == "fetch" {
			// More rows from a portal an execute opened: not a statement.
			s.openStmt = s.lastStmt
			return
		}
		s.openStmt = b.execute(s, e, step, e.time, 0)
	default:
		b.skipAt(Ignored, reasonOther, e)
	}
}

// keyOf names an entry's session: its session id, or its pid when the log
// has no session ids.
func keyOf(e *entry) string {
	if e.session != "" {
		return e.session
	}
	return "pid:" + strconv.Itoa(e.pid)
}

// hasOpen says whether the entry's session is open and only connecting
// (connection received, not yet authorized): the authorization is its.
func (b *builder) hasOpen(e *entry) bool {
	s := b.open[keyOf(e)]
	return s != nil && !s.authorized && len(s.stmts) == 0
}

// app takes the application name from the first statement's line when the
// connection line did not give one.
func (b *builder) app(s *sess, e *entry) {
	if s.Application == "" {
		s.Application = known(e.app)
	}
}

// duration handles "duration: X ms" and what may follow it. The line is
// written when the message ends, so it started X before the line's time.
func (b *builder) duration(e *entry, d time.Duration, rest string) {
	if rest == "" {
		// log_statement logged the statement already; this is its end.
		s := b.session(e, false)
		if s.openStmt == nil {
			b.skipAt(Dropped, reasonDurationOnly, e)
			return
		}
		s.openStmt.dur += d
		s.openStmt.seq = b.line
		s.openStmt = nil
		return
	}
	start := e.time.Add(-d)
	if strings.HasPrefix(rest, FastPath) {
		s := b.session(e, false)
		b.app(s, e)
		s.openStmt = nil
		b.simple(s, rest, start, d)
		return
	}
	if text, ok := strings.CutPrefix(rest, "statement: "); ok {
		s := b.session(e, false)
		b.app(s, e)
		s.openStmt = nil
		b.simple(s, text, start, d)
		return
	}
	step, ok := cutStep(rest)
	if !ok {
		// "plan:" (auto_explain) and the like.
		b.skipAt(Ignored, reasonOther, e)
		return
	}
	s := b.session(e, false)
	b.app(s, e)
	s.openStmt = nil
	switch step.kind {
	case "parse", "bind":
		b.fold(s, e, step, start, d)
	case "execute":
		b.execute(s, e, step, start, d)
	case "fetch":
		if s.lastStmt == nil || !s.lastStmt.extended {
			b.skipAt(Dropped, reasonFetch, e)
			return
		}
		s.lastStmt.dur += d
		s.lastStmt.seq = b.line
	}
}

func (b *builder) simple(s *sess, text string, start time.Time, d time.Duration) *stmt {
	st := &stmt{start: start, dur: d, text: b.intern(text), seq: b.line}
	b.push(s, st)
	s.lastStmt = st
	return st
}

// fold keeps a parse or bind until its execute. A new parse of the unnamed
// statement replaces the unnamed statement, so what was pending for it was
// never executed and goes.
func (b *builder) fold(s *sess, e *entry, step protocolStep, start time.Time, d time.Duration) {
	if step.name != unnamed {
		if step.text == "" {
			step.text = s.prepared[step.name]
		} else if step.kind == "parse" {
			s.prepared[step.name] = step.text
		}
	}
	if step.kind == "parse" {
		kept := s.pending[:0]
		for _, f := range s.pending {
			if f.name != step.name {
				kept = append(kept, f)
			}
		}
		s.pending = kept
	}
	f := fold{name: step.name, text: step.text, start: start, dur: d}
	if step.kind == "bind" {
		f.params = b.params(e)
	}
	if len(s.pending) == maxPending {
		s.pending = s.pending[1:]
	}
	s.pending = append(s.pending, f)
}

// paramList is a statement's parameters as one message logged them.
type paramList struct {
	values     []*string
	found      bool // the message had a parameter list
	cut        bool // some value was cut by log_parameter_max_length
	unreadable bool // the list could not be read
}

// params reads the parameters of a bind or execute message from its DETAIL
// (or, for a failure, its CONTEXT).
func (b *builder) params(e *entry) paramList {
	list, found := paramsIn(e.detail, e.context)
	if !found {
		return paramList{}
	}
	values, cut, ok := parseParams(list, b.opt.ParamMaxLength)
	if !ok {
		b.skipAt(Flagged, reasonParams, e)
		return paramList{found: true, unreadable: true}
	}
	return paramList{values: values, found: true, cut: cut}
}

// execute records one execution of an extended-protocol statement, folding
// in the parse and bind messages that prepared it.
func (b *builder) execute(s *sess, e *entry, step protocolStep, start time.Time, d time.Duration) *stmt {
	if step.text == "" && step.name != unnamed {
		step.text = s.prepared[step.name]
	}
	st := &stmt{start: start, dur: d, text: b.intern(step.text), extended: true, seq: b.line}
	if step.name != unnamed {
		st.prepared = step.name
	}
	pl := b.params(e)
	if bound := b.take(s, st, step.name, step.text); !pl.found {
		pl = bound
	}
	b.setParams(st, pl, step.text, e)
	b.push(s, st)
	s.lastStmt = st
	return st
}

// take folds the pending parse and bind messages of one statement into st
// and returns the bind's parameters.
func (b *builder) take(s *sess, st *stmt, name, text string) paramList {
	var bound paramList
	kept := s.pending[:0]
	for _, f := range s.pending {
		if f.name != name || f.text != text {
			kept = append(kept, f)
			continue
		}
		if f.start.Before(st.start) {
			st.start = f.start
		}
		st.dur += f.dur
		if f.params.found {
			bound = f.params
		}
	}
	s.pending = kept
	return bound
}

// setParams gives an extended-protocol statement its parameters and flags
// it when the log cut them or left them out.
func (b *builder) setParams(st *stmt, pl paramList, text string, e *entry) {
	st.params = pl.values
	switch {
	case pl.unreadable:
		st.truncated = true
	case pl.cut:
		st.truncated = true
		b.skipAt(Flagged, reasonTruncated, e)
	case !pl.found && hasPlaceholder(text):
		st.truncated = true
		b.skipAt(Flagged, reasonNoParams, e)
	}
}

// failure attaches an ERROR or FATAL to its statement: the one
// log_statement logged at its start, or a new one (statements that fail
// have no duration line).
func (b *builder) failure(e *entry) {
	s := b.session(e, false)
	failed := &Error{SQLState: e.state, Message: e.message}
	if st := s.openStmt; st != nil && (e.statement == "" || MaskSecrets(e.statement) == b.textOf(s, st.text)) {
		st.err, st.seq = failed, b.line
		s.openStmt = nil
		return
	}
	if e.statement == "" {
		if e.severity == "ERROR" {
			b.skipAt(Dropped, reasonErrorNoStmt, e)
		} else {
			b.skipAt(Ignored, reasonFatal, e)
		}
		return
	}
	b.app(s, e)
	s.openStmt = nil
	// A statement that failed after its parse or bind was logged came
	// through the extended protocol; which name it had is not logged, so
	// take the pending messages of that text, unnamed first.
	st := &stmt{start: e.time, text: b.intern(e.statement), seq: b.line}
	var bound paramList
	if names := b.pendingNames(s, e.statement); len(names) > 0 {
		st.extended = true
		if names[0] != unnamed {
			st.prepared = names[0]
		}
		bound = b.take(s, st, names[0], e.statement)
		st.dur = 0 // the failed message's own time is not logged
	}
	// log_parameter_max_length_on_error puts them in the CONTEXT.
	if pl := b.params(e); pl.found {
		st.extended = true
		bound = pl
	}
	if st.extended {
		b.setParams(st, bound, e.statement, e)
	}
	st.err = failed
	b.push(s, st)
	s.lastStmt = st
}

func (b *builder) pendingNames(s *sess, text string) []string {
	var names []string
	for _, f := range s.pending {
		if f.text != text {
			continue
		}
		if f.name == unnamed {
			return []string{unnamed}
		}
		names = append(names, f.name)
	}
	return names
}

// finish closes a session: it leaves the open set, and is kept when it is
// a client session.
func (b *builder) finish(s *sess) {
	delete(b.open, s.key)
	switch {
	case s.replication:
		b.skip(Ignored, reasonReplication, s.firstAt)
		return
	case !s.authorized && len(s.stmts) == 0 && !s.disconnected:
		if s.connected {
			b.skip(Ignored, reasonFailedLogin, s.firstAt)
		}
		return
	case Own(s.Application) && !b.opt.KeepOwn:
		b.skip(Ignored, reasonOwn, s.firstAt)
		return
	}
	s.StartedBeforeLog = !s.connected
	s.EndedAfterLog = !s.disconnected
	if s.StartedBeforeLog {
		b.skip(Flagged, reasonBefore, s.firstAt)
	}
	if s.EndedAfterLog {
		b.skip(Flagged, reasonAfter, s.firstAt)
	}
	if b.stream != nil {
		b.stream.end(b, s)
		return
	}
	// Start: the connection; failing that, the first thing seen.
	if !s.connected {
		s.start = s.first
		for _, st := range s.stmts {
			if st.start.Before(s.start) {
				s.start = st.start
			}
		}
	}
	// Offsets never decrease: a statement cannot start before the one
	// before it ended. Log times have millisecond resolution while
	// durations have microseconds, so start estimates of quick statements
	// can come out slightly before their predecessor's end (or before the
	// connection); they are moved up to it, which is still no later than
	// the true start.
	floor := s.start
	for _, st := range s.stmts {
		if st.start.Before(floor) {
			st.start = floor
		}
		if end := st.start.Add(st.dur); end.After(floor) {
			floor = end
		}
	}
	if !s.disconnected {
		s.end = s.last
	}
	if s.end.Before(floor) {
		s.end = floor
	}
	s.pending, s.prepared, s.openStmt, s.lastStmt = nil, nil, nil, nil
	b.done = append(b.done, s)
}

// finishOpen closes the sessions still open, in the order of their keys.
func (b *builder) finishOpen() {
	open := make([]*sess, 0, len(b.open))
	for _, s := range b.open {
		open = append(open, s)
	}
	sort.Slice(open, func(i, j int) bool { return open[i].key < open[j].key })
	for _, s := range open {
		b.finish(s)
	}
}

// capture closes the sessions still open and assembles the result.
func (b *builder) capture(sources []string) *Capture {
	b.finishOpen()
	c := &Capture{Format: Format, Sources: sources}
	for i, s := range b.done {
		if i == 0 || s.start.Before(c.Start) {
			c.Start = s.start
		}
		if i == 0 || s.end.After(c.End) {
			c.End = s.end
		}
	}
	c.Start, c.End = c.Start.UTC(), c.End.UTC()
	sort.SliceStable(b.done, func(i, j int) bool {
		a, z := b.done[i], b.done[j]
		if !a.start.Equal(z.start) {
			return a.start.Before(z.start)
		}
		return a.ID < z.ID
	})
	// Texts in order of first use; those of dropped sessions go.
	remap := make([]int, len(b.textList))
	for i := range remap {
		remap[i] = -1
	}
	c.Sessions = make([]Session, len(b.done))
	for i, s := range b.done {
		out := s.Session
		out.Start, out.End = s.start.Sub(c.Start), s.end.Sub(c.Start)
		out.Statements = make([]Statement, len(s.stmts))
		for k, st := range s.stmts {
			if remap[st.text] < 0 {
				remap[st.text] = len(c.Texts)
				c.Texts = append(c.Texts, b.textList[st.text])
			}
			out.Statements[k] = Statement{
				Offset:          st.start.Sub(c.Start),
				Duration:        st.dur,
				Text:            remap[st.text],
				Prepared:        st.prepared,
				Extended:        st.extended,
				Params:          st.params,
				ParamsTruncated: st.truncated,
				Error:           st.err,
				Seq:             st.seq,
				InsertID:        st.insertID,
			}
		}
		c.Sessions[i] = out
	}
	c.Skipped = b.skipped()
	return c
}

// skipped lists the skips: zones read as UTC, then the others in the
// order they were first met.
func (b *builder) skipped() []Skip {
	var out []Skip
	var zones []string
	for z := range b.clock.unknown {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	for _, z := range zones {
		out = append(out, Skip{Reason: fmt.Sprintf(reasonZone, z), Effect: Flagged, Count: 1, First: "(all files)"})
	}
	for _, r := range b.order {
		out = append(out, *b.skips[r])
	}
	return out
}
