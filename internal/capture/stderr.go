package capture

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DefaultPrefix is the log_line_prefix dbparity recommends for stderr logs:
// a timestamp with milliseconds, the pid, then (for session processes
// only, after %q) the session id, the SQLSTATE, the user, the database and
// the application name. The fields whose values are free text come last,
// each after a label of its own, so that names holding spaces or @ are
// still read right; the application name, which clients set freely, is
// the last, delimited by the severity that follows it.
const DefaultPrefix = "%m [%p] %q%c %e user=%u db=%d app=%a "

// severities are the labels the server writes after the prefix, followed
// by a colon and two spaces.
const severities = `DEBUG[1-5]|DEBUG|LOG|INFO|NOTICE|WARNING|ERROR|FATAL|PANIC|DETAIL|HINT|QUERY|CONTEXT|LOCATION|STATEMENT`

// prefix is a log_line_prefix compiled into a matcher.
type prefix struct {
	source string
	// re is the prefix as a regular expression: the definition of what a
	// line's prefix is, which the matcher follows (prefixmatch.go) and
	// the tests hold it to.
	re      *regexp.Regexp
	m       matcher
	group   map[byte]int // escape -> submatch index of its first use
	sev     int          // submatch index of the severity
	timeEsc byte         // 'm', 't' or 'n'
}

// prefixMatch is what a prefix matcher read from one line.
type prefixMatch struct {
	time     time.Time
	pid      int
	session  string
	user     string
	db       string
	app      string
	host     string
	backend  string
	state    string
	severity string
	rest     string // the message after "SEVERITY:  "
}

// escapes maps each log_line_prefix escape to what its value looks like.
// Free-text values are lazy: the literal text after them delimits them.
var escapes = map[byte]string{
	'a': `.*?`,                  // application name
	'u': `.*?`,                  // user
	'd': `.*?`,                  // database
	'r': `.*?`,                  // host(port)
	'h': `.*?`,                  // host
	'b': `.*?`,                  // backend type
	'i': `.*?`,                  // command tag
	'v': `.*?`,                  // virtual transaction id
	'p': `\d+`,                  // pid
	'P': `\d*`,                  // parallel group leader's pid
	'x': `\d+`,                  // transaction id
	'l': `\d+`,                  // line number in the session
	'e': `[0-9A-Z]{5}`,          // SQLSTATE
	'c': `[0-9a-f]+\.[0-9a-f]+`, // session id
	'n': `\d+\.\d{3}`,           // epoch with milliseconds
	't': `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: [^ ]*)?`,
	'm': `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}(?: [^ ]*)?`,
	's': `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: [^ ]*)?`, // session start
}

// compilePrefix turns a log_line_prefix into a matcher, following the
// server's rules: %% is a percent sign, an optional padding (%-10u, %10u)
// pads with spaces, unknown escapes print nothing, and %q ends the prefix
// for processes that are not sessions.
func compilePrefix(src string) (*prefix, error) {
	px := &prefix{source: src, group: map[byte]int{}}
	var head, tail strings.Builder
	out := &head
	var nodes []pnode
	opt := -1 // the optional part's element
	groups := 0
	// Literal text is gathered and quoted whole, so that a character of
	// several bytes stays one.
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			out.WriteString(regexp.QuoteMeta(string(lit)))
			nodes = append(nodes, pnode{kind: 'l', lit: string(lit)})
			lit = lit[:0]
		}
	}
	for i := 0; i < len(src); i++ {
		ch := src[i]
		if ch != '%' {
			lit = append(lit, ch)
			continue
		}
		i++
		padded := false
		if i < len(src) && src[i] == '-' {
			i++
			padded = true
		}
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
			padded = true
		}
		if i >= len(src) {
			break
		}
		esc := src[i]
		switch esc {
		case '%':
			lit = append(lit, '%')
			continue
		case 'q':
			flush()
			if opt < 0 {
				opt = len(nodes)
				nodes = append(nodes, pnode{kind: 'o'})
			}
			out = &tail
			continue
		}
		pat, ok := escapes[esc]
		if !ok {
			continue
		}
		flush()
		groups++
		if _, seen := px.group[esc]; !seen {
			px.group[esc] = groups
		}
		if padded {
			fmt.Fprintf(out, ` *(%s) *`, pat)
		} else {
			fmt.Fprintf(out, `(%s)`, pat)
		}
		nodes = append(nodes, pnode{kind: 'g', esc: esc, group: groups, padded: padded})
	}
	flush()
	for _, t := range []byte{'m', 'n', 't'} {
		if _, ok := px.group[t]; ok {
			px.timeEsc = t
			break
		}
	}
	if px.timeEsc == 0 {
		return nil, fmt.Errorf("log_line_prefix %q has no timestamp (%%m, %%t or %%n): capture needs one, best %%m", src)
	}
	_, pid := px.group['p']
	_, sid := px.group['c']
	if !pid && !sid {
		return nil, fmt.Errorf("log_line_prefix %q has neither %%p nor %%c: capture cannot tell sessions apart", src)
	}
	expr := "^" + head.String()
	if tail.Len() > 0 {
		expr += "(?:" + tail.String() + ")?"
	}
	expr += "(" + severities + "):  "
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("log_line_prefix %q: %w", src, err)
	}
	px.re = re
	px.sev = groups + 1
	nodes = append(nodes, pnode{kind: 's', group: groups + 1})
	if opt >= 0 {
		if opt == len(nodes)-2 {
			// %q with nothing after it.
			nodes = append(nodes[:opt], nodes[opt+1:]...)
		} else {
			nodes[opt].skip = len(nodes) - 1
		}
	}
	for i := range nodes[:len(nodes)-1] {
		n, next := &nodes[i], nodes[i+1]
		// A literal found by searching starts a character whatever the
		// bytes before it, as the regexp package steps through them: it
		// must not start with a byte inside a character.
		if n.kind == 'g' && !n.padded && next.kind == 'l' && (next.lit[0] < 0x80 || next.lit[0] >= 0xc0) {
			n.follow = next.lit
		}
	}
	px.m = matcher{nodes: nodes, groups: groups}
	return px, nil
}

// maxPrefix bounds the part of a line searched for the prefix: names are
// at most 63 bytes, so a prefix is short, while the message after it may
// be a statement of any length.
const maxPrefix = 4096

func (px *prefix) match(line string, c *clock) (prefixMatch, bool) {
	head := line
	if len(head) > maxPrefix {
		head = head[:maxPrefix]
	}
	loc := px.m.find(head)
	if loc == nil {
		return prefixMatch{}, false
	}
	get := func(esc byte) string {
		g, ok := px.group[esc]
		if !ok || loc[2*g] < 0 {
			return ""
		}
		return strings.TrimSpace(head[loc[2*g]:loc[2*g+1]])
	}
	m := prefixMatch{
		session:  get('c'),
		user:     known(get('u')),
		db:       known(get('d')),
		app:      known(get('a')),
		backend:  get('b'),
		state:    get('e'),
		severity: head[loc[2*px.sev]:loc[2*px.sev+1]],
		rest:     line[loc[1]:],
	}
	var ok bool
	switch px.timeEsc {
	case 'n':
		m.time, ok = epoch(get('n'))
	default:
		m.time, ok = c.parse(get(px.timeEsc))
	}
	if !ok {
		return prefixMatch{}, false
	}
	if p := get('p'); p != "" {
		m.pid, _ = strconv.Atoi(p)
	} else if _, hex, found := strings.Cut(m.session, "."); found {
		// The session id is the backend's start time and pid, in hex.
		n, _ := strconv.ParseInt(hex, 16, 64)
		m.pid = int(n)
	}
	if h := get('h'); h != "" {
		m.host = h
	} else if r := get('r'); r != "" {
		if i := strings.LastIndexByte(r, '('); i > 0 && strings.HasSuffix(r, ")") {
			r = r[:i]
		}
		m.host = r
	}
	m.host = known(m.host)
	return m, true
}

// grouper assembles stderr lines into entries: continuation lines (a tab,
// then the text) extend the line before them, and DETAIL, CONTEXT and
// STATEMENT lines join the last message of their session. The server
// writes a message's lines together when logging_collector is on, but
// without it lines of different sessions may interleave, so each session
// has its own open message. Sessions continue across files.
type grouper struct {
	out     sink
	clock   *clock
	open    map[string]*entry
	seq     map[*entry]int
	n       int
	cur     *string // the text continuation lines extend
	scratch string
}

func newGrouper(out sink, clk *clock) *grouper {
	return &grouper{out: out, clock: clk, open: map[string]*entry{}, seq: map[*entry]int{}}
}

func (g *grouper) read(sc *scanner, file string, px *prefix) (matched, other int, err error) {
	for {
		sp, err := sc.next()
		n := sp.n
		if err == io.EOF {
			return matched, other, nil
		}
		if err == errLongLine {
			g.out.skip(Dropped, reasonLong, fmt.Sprintf("%s:%d", file, n))
			g.cur = nil
			continue
		}
		if err != nil {
			return matched, other, err
		}
		b := sc.bytes(sp)
		if len(b) > 0 && b[0] == '\t' && g.cur != nil {
			*g.cur += "\n" + string(b[1:])
			continue
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		line := string(b)
		m, ok := px.match(line, g.clock)
		if !ok {
			other++
			reason := reasonPrefix
			if strings.HasPrefix(line, "\t") {
				reason = reasonOrphanPart
			}
			g.out.skip(Dropped, reason, fmt.Sprintf("%s:%d", file, n))
			g.cur = nil
			continue
		}
		matched++
		key := m.session
		if key == "" {
			key = "pid:" + strconv.Itoa(m.pid)
		}
		switch m.severity {
		case "DETAIL", "CONTEXT", "STATEMENT", "HINT", "QUERY", "LOCATION":
			e := g.open[key]
			if e == nil {
				g.out.skip(Dropped, reasonOrphanPart, fmt.Sprintf("%s:%d", file, n))
				g.cur = nil
				continue
			}
			switch m.severity {
			case "DETAIL":
				g.cur = &e.detail
			case "CONTEXT":
				g.cur = &e.context
			case "STATEMENT":
				g.cur = &e.statement
			default:
				g.cur = &g.scratch
			}
			*g.cur = m.rest
			continue
		}
		if m.severity == "ERROR" || m.severity == "FATAL" || m.severity == "PANIC" {
			m.rest = cutPosition(m.rest)
		}
		e := &entry{
			file: file, line: n, time: m.time, pid: m.pid, session: m.session,
			user: m.user, db: m.db, app: m.app, host: m.host, backend: m.backend,
			severity: m.severity, state: m.state, message: m.rest,
		}
		if old := g.open[key]; old != nil {
			g.emit(key, old)
		}
		if m.severity == "LOG" && strings.HasPrefix(m.rest, "disconnection: ") {
			// Nothing follows a disconnection: hand it over now, so that
			// a long log does not keep one message per session it saw.
			g.out.add(e)
			g.cur = &g.scratch
			continue
		}
		g.open[key] = e
		g.n++
		g.seq[e] = g.n
		g.cur = &e.message
	}
}

func (g *grouper) emit(key string, e *entry) {
	delete(g.open, key)
	delete(g.seq, e)
	g.out.add(e)
}

// flush hands over the messages still open, in the order they were read.
func (g *grouper) flush() {
	rest := make([]*entry, 0, len(g.open))
	keys := map[*entry]string{}
	for k, e := range g.open {
		rest = append(rest, e)
		keys[e] = k
	}
	sort.Slice(rest, func(i, j int) bool { return g.seq[rest[i]] < g.seq[rest[j]] })
	for _, e := range rest {
		g.emit(keys[e], e)
	}
	g.cur = nil
}

// cutPosition drops the " at character N" that stderr logs add to an
// error message with a cursor position; csvlog and jsonlog keep the
// position in a field of its own, and the capture holds the message alone.
func cutPosition(msg string) string {
	i := strings.LastIndex(msg, " at character ")
	if i < 0 {
		return msg
	}
	num := msg[i+len(" at character "):]
	if num == "" || strings.Trim(num, "0123456789") != "" {
		return msg
	}
	return msg[:i]
}
