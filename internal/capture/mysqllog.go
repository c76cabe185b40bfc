package capture

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MySQL and MariaDB write two logs a capture can read: the general query
// log (every command as the server receives it, connections and Quit
// included, no durations) and the slow query log with long_query_time = 0
// (every statement as it ends, with its duration, no connections).
// MariaDB stamps both with whole seconds; MySQL 8 with microseconds.
// docs/capture.md says which server settings each needs.

// Log formats of MySQL and MariaDB.
const (
	FormatMySQLGeneral = "mysql-general"
	FormatMySQLSlow    = "mysql-slow"
)

// Engines a capture comes from.
const (
	EnginePostgres = "postgresql"
	EngineMySQL    = "mysql"
)

const (
	reasonMyHeader   = "server start banners"
	reasonMyCommand  = "protocol commands with nothing to replay (Prepare, Close stmt, Ping, Statistics...)"
	reasonMyExecute  = "prepared statement executions replayed as text queries with the logged values (the binary protocol is not replayed)"
	reasonMyOrphan   = "lines before the first command (a log that starts mid-statement)"
	reasonMyEarly    = "entries before the log's first time stamp (a log truncated while written), given its time"
	reasonMySecond   = "timestamps in whole seconds (MariaDB): statements within a second are spread evenly over it in log order"
	reasonMyChange   = "COM_CHANGE_USER commands (the session goes on as its first user)"
	reasonMyNoThread = "slow log entries without a thread id"
	reasonMyLocal    = "times without a zone read as this machine's local time"
	reasonMyFailed   = "connections refused by the server (failed logins)"
)

// generalLine is a general log entry's first line: MariaDB's time
// (YYMMDD H:MM:SS, only when it changed) or MySQL 8's ISO time, the
// thread id, the command and its argument.
var generalLine = regexp.MustCompile(`^(\d{6} [ \d]\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?)?\t+ *(\d+) ([A-Z][A-Za-z_ ]*?)\t(.*)$`)

// connectArg is a Connect command's argument: user@host on db using how.
var connectArg = regexp.MustCompile(`^(\S*)@(\S*) (?:as \S+ )?on ?(\S*)(?: using (.*))?$`)

// myEvent is one thing a MySQL log says a thread did.
type myEvent struct {
	thread   int
	kind     byte // 'c' connect, 'q' statement, 'x' quit, 'f' failed connect
	at       time.Time
	second   bool // at is a whole second of a log that has no finer time
	withNext bool // a USE the log implies before the next event: its time
	text     string
	dur      time.Duration
	user, db string
	host     string
	where    string
	insertID int64 // SET insert_id=N before the statement in a slow log
}

func isMySQLFormat(f string) bool { return f == FormatMySQLGeneral || f == FormatMySQLSlow }

// sniffMySQL tells a MySQL log from the head of a file: "" when it is not
// one.
func sniffMySQL(head []byte) string {
	slow := bytes.Contains(head, []byte("\n# Query_time: ")) || bytes.HasPrefix(head, []byte("# Time: ")) ||
		bytes.HasPrefix(head, []byte("# User@Host: ")) || bytes.Contains(head, []byte("\n# User@Host: "))
	if slow {
		return FormatMySQLSlow
	}
	if bytes.Contains(head, []byte("started with:\n")) || bytes.Contains(head, []byte("Time                 Id Command")) ||
		bytes.Contains(head, []byte("Time\t\t    Id Command")) {
		return FormatMySQLGeneral
	}
	for _, ln := range bytes.SplitN(head, []byte("\n"), 4) {
		if generalLine.Match(ln) {
			return FormatMySQLGeneral
		}
	}
	return ""
}

// parseMySQL reads MySQL or MariaDB logs of one format, in the order
// given, as one stream.
func parseMySQL(files []string, format string, opt Options) (*Capture, error) {
	b := newBuilder(opt)
	if err := readMySQL(files, format, opt, b); err != nil {
		return nil, err
	}
	c := b.capture(files)
	c.Engine = EngineMySQL
	c.ErrorsUnknown = true // neither log records errors
	return c, nil
}

// readMySQL reads MySQL logs into b, a second of the log at a time.
func readMySQL(files []string, format string, opt Options, b *builder) error {
	m := &myBuild{b: b, sessions: map[int]*sess{}, seq: map[int]int{}}
	k := &mySink{b: b, feed: m.feed}
	for _, path := range files {
		lr, err := open(path)
		if err != nil {
			return err
		}
		lines := newLineReader(lr)
		if format == FormatMySQLGeneral {
			err = readGeneral(lines, path, b, k, opt, lr)
		} else {
			err = readSlow(lines, path, b, k, opt, lr)
		}
		lr.Close()
		if err != nil {
			return err
		}
	}
	k.drain(true)
	return nil
}

// mySink holds the events read but not yet passed on: those of the last
// whole second, whose times are spread over it once it is complete, and
// the last one, whose statement may go on over the next lines.
type mySink struct {
	b      *builder
	events []myEvent
	feed   func(e *myEvent)
	limit  int // events held before the next drain
}

// add takes an event and returns it, for its text to grow until the next
// one is added.
func (k *mySink) add(e myEvent) *myEvent {
	if len(k.events) >= max(k.limit, 1024) {
		k.drain(false)
		// A second of many statements is held whole: drained again once
		// it has doubled, not at every event.
		k.limit = 2 * len(k.events)
	}
	k.events = append(k.events, e)
	return &k.events[len(k.events)-1]
}

// drain spreads and passes on the events of complete seconds, all of
// them at the end of the logs.
func (k *mySink) drain(final bool) {
	cut := len(k.events)
	if !final && cut > 0 {
		// The last second's run may go on.
		last := &k.events[cut-1]
		cut--
		for cut > 0 && last.second && k.events[cut-1].second && k.events[cut-1].at.Equal(last.at) {
			cut--
		}
	}
	spreadSeconds(k.events[:cut], k.b)
	for i := range k.events[:cut] {
		k.feed(&k.events[i])
	}
	n := copy(k.events, k.events[cut:])
	clear(k.events[n:])
	k.events = k.events[:n]
}

// myBuild makes sessions of a MySQL log's events, in log order.
type myBuild struct {
	b        *builder
	sessions map[int]*sess // the open session of each thread id
	seq      map[int]int   // sessions each thread id had
	n        int64         // events fed
}

func (m *myBuild) get(e *myEvent, connecting bool) *sess {
	b := m.b
	s := m.sessions[e.thread]
	if s != nil && connecting && (s.connected || len(s.stmts) > 0) {
		b.finish(s)
		s = nil
	}
	if s == nil {
		m.seq[e.thread]++
		s = &sess{key: fmt.Sprintf("t%d.%d", e.thread, m.seq[e.thread]), firstAt: e.where, first: e.at, last: e.at}
		s.ID, s.PID = fmt.Sprintf("thread-%d", e.thread), e.thread
		if m.seq[e.thread] > 1 {
			s.ID += "." + strconv.Itoa(m.seq[e.thread])
		}
		m.sessions[e.thread] = s
		b.open[s.key] = s
	}
	if e.at.After(s.last) {
		s.last = e.at
	}
	if s.User == "" {
		s.User = e.user
	}
	if s.Host == "" {
		s.Host = e.host
	}
	return s
}

func (m *myBuild) feed(e *myEvent) {
	b := m.b
	m.n++
	switch e.kind {
	case 'f':
		b.skip(Ignored, reasonMyFailed, e.where)
	case 'c':
		s := m.get(e, true)
		s.connected, s.authorized, s.start = true, true, e.at
		s.Database = e.db
	case 'x':
		s := m.get(e, false)
		s.disconnected, s.end = true, e.at
		b.finish(s)
		delete(m.sessions, e.thread)
	case 'q':
		s := m.get(e, false)
		if s.Database == "" && len(s.stmts) == 0 {
			s.Database = e.db
		}
		s.authorized = true
		if app, ok := OwnMarker(e.text); ok && len(s.stmts) == 0 {
			s.Application = app
		}
		b.push(s, &stmt{start: e.at, dur: e.dur, text: b.intern(e.text), seq: m.n, insertID: e.insertID})
	}
}

// progressEvery reports progress about every so many lines.
const progressEvery = 1 << 16

func reportProgress(opt Options, path string, lr *logReader, n int) {
	if opt.Progress != nil && n%progressEvery == 0 {
		opt.Progress(path, lr.counter.n, lr.size)
	}
}

// maxEarly bounds the entries held before a general log's first time
// stamp.
const maxEarly = 1 << 16

// readGeneral reads a general query log.
func readGeneral(lines *lineReader, path string, b *builder, k *mySink, opt Options, lr *logReader) error {
	var cur time.Time // the last time printed
	second := false
	var last *myEvent // the entry whose argument continues on the next lines
	// The entries before the log's first time stamp (a log truncated or
	// read from the middle of a second): held until it comes, at most
	// maxEarly of them (the server stamps every second it logs in; past
	// that, a log without stamps, whose entries have no time).
	var early []*myEvent
	for {
		ln, n, err := lines.next()
		if err == io.EOF {
			for _, e := range early {
				b.skip(Dropped, reasonTime, e.where)
			}
			return nil
		}
		where := path + ":" + strconv.Itoa(n)
		if errors.Is(err, errLongLine) {
			b.skip(Dropped, reasonLong, where)
			last = nil
			continue
		}
		if err != nil {
			var damaged errDamaged
			if errors.As(err, &damaged) {
				b.skip(Dropped, "the rest of a damaged gzip file", where)
				return nil
			}
			return fmt.Errorf("read log %s: %w", path, err)
		}
		reportProgress(opt, path, lr, n)
		m := generalLine.FindStringSubmatch(ln)
		if m == nil {
			switch {
			case banner(ln):
				countBanner(b, ln, where)
				last = nil
			case last != nil:
				last.text += "\n" + ln
			case ln != "":
				b.skip(Dropped, reasonMyOrphan, where)
			}
			continue
		}
		if m[1] != "" {
			t, whole, local, ok := myTime(m[1])
			if !ok {
				b.skip(Dropped, reasonTime, where)
				last = nil
				continue
			}
			if local {
				b.skip(Flagged, reasonMyLocal, where)
			}
			cur, second = t, whole
			// The server writes a time stamp when the second changes:
			// the entries before the first one came within it or
			// earlier, and get its time, in their order.
			for _, e := range early {
				e.at, e.second = t, whole
				k.add(*e)
				b.skip(Flagged, reasonMyEarly, e.where)
			}
			early = nil
		}
		thread, _ := strconv.Atoi(m[2])
		e := myEvent{thread: thread, at: cur, second: second, where: where}
		last = nil
		switch cmd, arg := m[3], m[4]; cmd {
		case "Connect":
			c := connectArg.FindStringSubmatch(arg)
			if c == nil {
				e.kind = 'f' // "Access denied for user ..."
				break
			}
			e.kind, e.user, e.host, e.db = 'c', c[1], c[2], c[3]
		case "Quit":
			e.kind = 'x'
		case "Query", "Execute":
			e.kind, e.text = 'q', arg
			if cmd == "Execute" {
				b.skip(Flagged, reasonMyExecute, where)
			}
		case "Init DB":
			e.kind, e.text = 'q', "USE "+quoteIdent(arg)
		case "Change user":
			b.skip(Flagged, reasonMyChange, where)
			continue
		default:
			b.skip(Ignored, reasonMyCommand, where)
			continue
		}
		added := &e
		switch {
		case !cur.IsZero():
			added = k.add(e)
		case len(early) < maxEarly:
			early = append(early, added)
		default:
			b.skip(Dropped, reasonTime, where)
		}
		if e.kind == 'q' {
			last = added
		}
	}
}

// slowEntry is the header of a slow log entry being read.
type slowEntry struct {
	thread       int
	user, host   string
	db           string
	dur          time.Duration
	timestamp    int64 // SET timestamp=N: the statement's start, in seconds
	insertID     int64 // SET insert_id=N: the first AUTO_INCREMENT value it took
	at           time.Time
	precise      bool
	where        string
	haveThread   bool
	text         []string
	sawHeader    bool
	sawTimestamp bool
}

var (
	slowUserHost = regexp.MustCompile(`^# User@Host: (\S*?)\[[^\]]*\] @ (\S*) \[([^\]]*)\](?:\s+Id:\s+(\d+))?`)
	slowThread   = regexp.MustCompile(`^# Thread_id: (\d+)\s+Schema: (\S*)`)
	slowQuery    = regexp.MustCompile(`^# Query_time: ([\d.]+)`)
	slowUse      = regexp.MustCompile("^use `?([^`;]*)`?;$")
	// slowSet is the server's SET line before a statement, in the order
	// the server writes it: the value LAST_INSERT_ID() returned when the
	// statement called it, the first AUTO_INCREMENT value it took, and
	// its start. Older MySQL servers write insert_id (with a binary log
	// that is not row-based); MariaDB 10.11 writes neither, with the
	// binary log on or off, in any format (checked): its SET line holds
	// the timestamp alone.
	slowSet = regexp.MustCompile(`^SET (?:last_insert_id=\d+,)?(?:insert_id=(\d+),)?timestamp=(\d+);$`)
)

// readSlow reads a slow query log: each entry is a run of "# " header
// lines, then "use DB;" when the database changed, "SET timestamp=N;"
// (with insert_id=N before it where the server logs it), and the
// statement, ended by ";".
func readSlow(lines *lineReader, path string, b *builder, k *mySink, opt Options, lr *logReader) error {
	var e slowEntry
	var lastTime time.Time
	lastPrecise := false
	db := map[int]string{}
	flush := func() {
		if !e.sawHeader {
			return
		}
		defer func() { e = slowEntry{} }()
		text := strings.TrimSuffix(strings.TrimRight(strings.Join(e.text, "\n"), " \t\r\n"), ";")
		if !e.haveThread {
			b.skip(Dropped, reasonMyNoThread, e.where)
			return
		}
		ev := myEvent{thread: e.thread, user: e.user, host: e.host, dur: e.dur, where: e.where}
		switch {
		case e.precise:
			ev.at = e.at
		case e.sawTimestamp:
			ev.at, ev.second = time.Unix(e.timestamp, 0).UTC(), true
		case !lastTime.IsZero():
			ev.at, ev.second = lastTime, !lastPrecise
		default:
			b.skip(Dropped, reasonTime, e.where)
			return
		}
		if strings.HasPrefix(text, "# administrator command: ") {
			cmd := strings.TrimSuffix(strings.TrimPrefix(text, "# administrator command: "), ";")
			if cmd == "Quit" {
				ev.kind = 'x'
				k.add(ev)
			} else {
				b.skip(Ignored, reasonMyCommand, e.where)
			}
			return
		}
		if text == "" {
			b.skip(Dropped, reasonMyOrphan, e.where)
			return
		}
		if prev, ok := db[e.thread]; ok && e.db != prev {
			use := ev
			use.kind, use.text, use.dur, use.withNext = 'q', "USE "+quoteIdent(e.db), 0, true
			k.add(use)
		}
		db[e.thread] = e.db
		ev.kind, ev.text, ev.db, ev.insertID = 'q', text, e.db, e.insertID
		k.add(ev)
	}
	for {
		ln, n, err := lines.next()
		if err == io.EOF {
			flush()
			return nil
		}
		where := path + ":" + strconv.Itoa(n)
		if errors.Is(err, errLongLine) {
			b.skip(Dropped, reasonLong, where)
			continue
		}
		if err != nil {
			var damaged errDamaged
			if errors.As(err, &damaged) {
				flush()
				b.skip(Dropped, "the rest of a damaged gzip file", where)
				return nil
			}
			return fmt.Errorf("read log %s: %w", path, err)
		}
		reportProgress(opt, path, lr, n)
		header := strings.HasPrefix(ln, "# ") && !strings.HasPrefix(ln, "# administrator command: ")
		if header && len(e.text) > 0 {
			flush() // the next entry begins
		}
		switch {
		case strings.HasPrefix(ln, "# Time: "):
			// MariaDB's whole seconds in local time give way to each
			// entry's SET timestamp (UTC); MySQL 8's times are UTC.
			t, whole, local, ok := myTime(strings.TrimSpace(strings.TrimPrefix(ln, "# Time: ")))
			if local && !whole {
				b.skip(Flagged, reasonMyLocal, where)
			}
			if !ok {
				b.skip(Dropped, reasonTime, where)
				continue
			}
			lastTime, lastPrecise = t, !whole
			if !whole {
				e.at, e.precise = t, true
			}
			e.sawHeader = true
			if e.where == "" {
				e.where = where
			}
		case header:
			if e.where == "" {
				e.where = where
			}
			e.sawHeader = true
			if m := slowUserHost.FindStringSubmatch(ln); m != nil {
				e.user, e.host = m[1], m[2]
				if e.host == "" {
					e.host = m[3]
				}
				if m[4] != "" {
					e.thread, _ = strconv.Atoi(m[4])
					e.haveThread = true
				}
			} else if m := slowThread.FindStringSubmatch(ln); m != nil {
				e.thread, _ = strconv.Atoi(m[1])
				e.db, e.haveThread = m[2], true
			} else if m := slowQuery.FindStringSubmatch(ln); m != nil {
				if f, err := strconv.ParseFloat(m[1], 64); err == nil {
					e.dur = time.Duration(f * float64(time.Second)).Round(time.Microsecond)
				}
			}
		case !e.sawHeader:
			if banner(ln) {
				countBanner(b, ln, where)
			} else if ln != "" {
				b.skip(Dropped, reasonMyOrphan, where)
			}
		case len(e.text) == 0 && slowUse.MatchString(ln):
			if m := slowUse.FindStringSubmatch(ln); m != nil && e.db == "" {
				e.db = m[1]
			}
		case len(e.text) == 0 && !e.sawTimestamp && slowSet.MatchString(ln):
			// The server's line, once per entry: a statement of the
			// application's that sets the same variables comes after it.
			m := slowSet.FindStringSubmatch(ln)
			e.insertID, _ = strconv.ParseInt(m[1], 10, 64)
			e.timestamp, _ = strconv.ParseInt(m[2], 10, 64)
			e.sawTimestamp = true
		default:
			if strings.HasSuffix(ln, "started with:") && len(e.text) > 0 {
				flush()
				b.skip(Ignored, reasonMyHeader, where)
				continue
			}
			e.text = append(e.text, ln)
		}
	}
}

// myTime reads a MySQL log time: MariaDB's YYMMDD H:MM:SS (whole is
// true) or MySQL 8's ISO 8601 time; local says it had no zone and was
// read in this machine's.
func myTime(s string) (t time.Time, whole, local, ok bool) {
	if len(s) == 15 && s[6] == ' ' {
		t, err := time.ParseInLocation("060102 15:04:05", strings.Replace(s, "  ", " 0", 1), time.Local)
		return t, true, true, err == nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, false, false, true
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", s, time.Local)
	return t, false, true, err == nil
}

// spreadSeconds gives the events stamped with a whole second times
// spread evenly over that second, in log order, so that order is kept
// across sessions and a replay at the captured pace does not send a
// second's statements in one burst.
func spreadSeconds(events []myEvent, b *builder) {
	for i := 0; i < len(events); {
		if !events[i].second {
			i++
			continue
		}
		j := i + 1
		for j < len(events) && events[j].second && events[j].at.Equal(events[i].at) {
			j++
		}
		n := 0
		for k := i; k < j; k++ {
			if !events[k].withNext {
				n++
			}
		}
		step, slot := time.Second/time.Duration(max(n, 1)), 0
		for k := i; k < j; k++ {
			events[k].at = events[k].at.Add(time.Duration(slot) * step)
			if !events[k].withNext {
				slot++
			}
		}
		b.skip(Flagged, reasonMySecond, events[i].where)
		i = j
	}
}

// quoteIdent quotes a MySQL identifier with backquotes.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// sniffFiles says whether the files are MySQL logs, and of which format:
// "" when none is; an error when they mix MySQL's formats or MySQL's
// with others.
func sniffFiles(files []string) (string, error) {
	found, at, other := "", "", ""
	for _, path := range files {
		lr, err := open(path)
		if err != nil {
			return "", err
		}
		head, _ := bufio.NewReaderSize(lr, 64<<10).Peek(16 << 10)
		lr.Close()
		if len(bytes.TrimSpace(head)) == 0 {
			continue
		}
		f := sniffMySQL(head)
		switch {
		case f == "":
			other = path
		case found == "":
			found, at = f, path
		case f != found:
			return "", fmt.Errorf("log files of different formats (%s is %s, %s is %s): capture one format at a time", at, found, path, f)
		}
	}
	if found != "" && other != "" {
		return "", fmt.Errorf("log files of different formats (%s is %s, %s is not a MySQL log): capture one format at a time", at, found, other)
	}
	return found, nil
}

// countBanner counts a start banner once, at its first line; the port
// and column-header lines under it are part of it.
func countBanner(b *builder, ln, where string) {
	if strings.HasSuffix(ln, "started with:") {
		b.skip(Ignored, reasonMyHeader, where)
	}
}

// banner tells the lines a server writes at the head of its logs when it
// starts.
func banner(ln string) bool {
	return strings.HasSuffix(ln, "started with:") || strings.HasPrefix(ln, "Tcp port: ") ||
		strings.HasPrefix(ln, "Time ") || strings.HasPrefix(ln, "Time\t")
}

// InsertLike tells a MySQL or MariaDB statement that takes AUTO_INCREMENT
// values the way INSERT does: its first word, after spaces and comments,
// is INSERT or REPLACE. The value such a statement took is what its OK
// packet's last_insert_id says (or the explicit value it inserted), and
// what a replay can make it take again. It reads only the text's head:
// an INSERT of megabytes costs what a short one does.
func InsertLike(text string) bool {
	s := text
	for {
		s = strings.TrimLeft(s, " \t\r\n(")
		switch {
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s, "*/")
			if i < 0 {
				return false
			}
			s = s[i+2:]
			continue
		case strings.HasPrefix(s, "-- "), strings.HasPrefix(s, "#"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return false
			}
			s = s[i+1:]
			continue
		}
		break
	}
	for _, w := range []string{"INSERT", "REPLACE"} {
		if len(s) > len(w) && strings.EqualFold(s[:len(w)], w) {
			switch s[len(w)] {
			case ' ', '\t', '\r', '\n', '/':
				return true
			}
		}
	}
	return false
}

// CallsLastInsertID tells a statement that calls LAST_INSERT_ID(): what
// it writes comes from the AUTO_INCREMENT value its session took before
// (an order's lines, written with their order's id).
func CallsLastInsertID(text string) bool {
	// In pieces, as Volatile reads a statement: memory stays bounded.
	for at := 0; ; at += maxLexed {
		end := min(at+maxLexed+256, len(text))
		toks := lexWith(text[at:end], myRules)
		for i, t := range toks {
			if t.kind == tkIdent && strings.EqualFold(t.text, "last_insert_id") && i+1 < len(toks) &&
				toks[i+1].kind == tkPunct && toks[i+1].text == "(" {
				return true
			}
		}
		if end == len(text) {
			return false
		}
	}
}

// myRules read MySQL's and MariaDB's lexicon, backslashes escaping in
// strings as the server's default has them.
var myRules = lexRules{mysql: true, backslash: true}

// NewRowsOnly tells an INSERT of rows given in the statement (VALUES or
// SET), without ON DUPLICATE KEY UPDATE or ON CONFLICT: it adds rows and
// changes none, so no other session's writer queues behind it for a row
// (the rows it adds are seen by others once it commits). A REPLACE
// deletes the rows it collides with, and an INSERT ... SELECT locks what
// it reads (MySQL's statement-based binary log makes it so): both are
// writers like any other. A word that only looks like those clauses (in
// a value) makes it answer no, the cautious answer.
func NewRowsOnly(text string) bool {
	head := strings.TrimLeft(firstN(text, 16), " \t\r\n(")
	return len(head) >= 6 && strings.EqualFold(head[:6], "INSERT") && InsertLike(text) &&
		!containsFold(text, "duplicate") && !containsFold(text, "conflict") && !InsertSelect(text)
}

// InsertSelect tells an INSERT or REPLACE whose rows come from a query
// (INSERT ... SELECT, ... TABLE, ... WITH), not from VALUES or SET: InnoDB
// does not know how many rows such a statement inserts, so it reserves
// AUTO_INCREMENT values ahead in growing blocks, and the values left
// over are a gap in the table's counter. Given the first value it took
// (SET STATEMENT insert_id=N FOR), the statement reserves none: its rows
// get their ids, but where it was the table's last insert the counter
// ends lower than the capture's (checked on MariaDB 10.11: 5 rows from
// a SELECT took 6 to 10 and left the counter at 13; given 6, at 11).
func InsertSelect(text string) bool {
	toks := lexWith(text[:min(len(text), 4096)], myRules)
	depth := 0
	for i, t := range toks {
		if t.kind == tkPunct {
			switch t.text {
			case "(":
				if depth == 0 && i+1 < len(toks) && toks[i+1].kind == tkIdent &&
					(strings.EqualFold(toks[i+1].text, "SELECT") || strings.EqualFold(toks[i+1].text, "WITH")) {
					return true // INSERT INTO t (SELECT ...)
				}
				depth++
			case ")":
				depth--
			}
			continue
		}
		if t.kind != tkIdent || depth != 0 || i == 0 {
			continue
		}
		switch strings.ToUpper(t.text) {
		case "VALUES", "VALUE", "SET":
			return false
		case "SELECT", "WITH", "TABLE":
			return true
		}
	}
	return false
}
