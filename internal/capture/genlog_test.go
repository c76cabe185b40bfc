package capture

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
)

// This file writes PostgreSQL 15 logs of a made-up workload, the same run
// as csvlog and as stderr with any of a few prefixes, and remembers what
// each session ran, so that tests can check what capture reads against
// what the log holds, and the readers against each other, on logs of any
// size: sessions interleaved, cut by the log's edges and dbparity's own;
// simple and extended protocol logged at the end of statements
// (log_min_duration_statement) and at their start (log_statement = 'all');
// named and unnamed prepared statements; failures; texts and parameters
// with quotes, commas, NULLs and newlines; lines of other processes; and,
// when asked, damaged lines.

// genStmt is a statement as a session ran it.
type genStmt struct {
	text     string
	params   []*string
	extended bool
	prepared string
	dur      time.Duration // what the log says the statement took in all
	err      *Error
}

// genSession is a session of the made-up workload.
type genSession struct {
	id, user, db, app, host string
	pid                     int
	own, before, after      bool
	stmts                   []genStmt
	prepared                map[string]string
}

// genLog is the made-up run: its messages, in log order, and its sessions.
type genLog struct {
	msgs     []genMsg
	sessions []*genSession
}

// genMsg is one logged message, whatever the format it is written in.
type genMsg struct {
	at        time.Time
	s         *genSession // nil for other processes
	backend   string
	severity  string
	state     string
	message   string
	detail    string
	context   string
	statement string
	damaged   string // a damaged line written instead of the message
}

type genOptions struct {
	seed     uint64
	sessions int  // sessions in all
	stmts    int  // statements in all, about
	damage   bool // write damaged lines now and then
}

func generateLog(o genOptions) *genLog {
	r := rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))
	g := &genLog{}
	now := time.Date(2024, 5, 20, 10, 0, 0, 0, time.UTC)
	tick := func() time.Time {
		now = now.Add(time.Duration(r.IntN(3000)) * time.Microsecond).Truncate(time.Millisecond)
		return now
	}
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
	}
	dur := func() time.Duration { return time.Duration(1+r.IntN(5000)) * time.Microsecond }
	var open []*genSession
	made := 0
	start := func() {
		made++
		s := &genSession{pid: 1000 + made, user: "app", db: "shop", app: "web-" + strconv.Itoa(made%3),
			host: "10.0.0." + strconv.Itoa(1+made%7), prepared: map[string]string{}}
		s.id = fmt.Sprintf("664b1f10.%x", s.pid)
		switch made % 9 {
		case 1:
			s.user, s.db = `we"ird, user`, "db with space"
		case 4:
			s.app = "dbparity-monitor"
			s.own = true
		case 5:
			s.host = "[local]"
		}
		// The first sessions were open when the log began.
		s.before = made <= 2
		s.after = made > o.sessions-2
		g.sessions = append(g.sessions, s)
		open = append(open, s)
		if s.before {
			return
		}
		g.msgs = append(g.msgs, genMsg{at: tick(), s: s, backend: "not initialized", severity: "LOG",
			message: "connection received: host=" + s.host + " port=5432"})
		g.msgs = append(g.msgs, genMsg{at: tick(), s: s, backend: "client backend", severity: "LOG",
			message: "connection authorized: user=" + s.user + " database=" + s.db + " application_name=" + s.app})
	}
	quote := func(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }
	paramList := func(ps []*string) string {
		var b strings.Builder
		b.WriteString("parameters: ")
		for i, p := range ps {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "$%d = ", i+1)
			if p == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString(quote(*p))
			}
		}
		return b.String()
	}
	values := []string{"42", "it's", `a "quoted", comma`, "line one\nline two", "\ttabbed", "", "O'Brien, Jr.", "ünïcode ✓", "ends..."}
	param := func() *string {
		if r.IntN(8) == 0 {
			return nil
		}
		v := values[r.IntN(len(values))]
		if r.IntN(2) == 0 {
			v = strconv.Itoa(r.IntN(1_000_000))
		}
		return &v
	}
	simpleText := func() string {
		switch r.IntN(6) {
		case 0:
			return "BEGIN"
		case 1:
			return fmt.Sprintf("UPDATE accounts SET balance = balance + %d WHERE id = %d", r.IntN(10000)-5000, r.IntN(100000))
		case 2:
			return fmt.Sprintf("SELECT \"Name\", note FROM t\nWHERE note = 'it''s, \"%d\"'\n  AND id > %d", r.IntN(100), r.IntN(100))
		case 3:
			return "SELECT 1"
		case 4:
			return fmt.Sprintf("INSERT INTO log VALUES (%d, 'a,b', E'x\\ny')", r.IntN(1000))
		}
		return "COMMIT"
	}
	extText := func() (string, int) {
		switch r.IntN(4) {
		case 0:
			return "SELECT abalance FROM pgbench_accounts WHERE aid = $1", 1
		case 1:
			return "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2", 2
		case 2:
			return "INSERT INTO notes (id, \"Note\")\nVALUES ($1, $2)", 2
		}
		return "SELECT $1::int, $2::text, $3", 3
	}
	run := func(s *genSession) {
		logStatement := r.IntN(3) == 0 // this statement was logged at its start too
		fail := r.IntN(25) == 0
		var st genStmt
		emit := func(m genMsg) {
			m.s, m.backend = s, "client backend"
			if m.severity == "" {
				m.severity = "LOG"
			}
			g.msgs = append(g.msgs, m)
		}
		switch r.IntN(3) {
		case 0: // simple protocol
			st.text = simpleText()
			if fail {
				st.text = "SELECT 1/0 -- " + strconv.Itoa(r.IntN(50))
				st.err = &Error{SQLState: "22012", Message: "division by zero"}
				if logStatement {
					emit(genMsg{at: tick(), message: "statement: " + st.text})
				}
				emit(genMsg{at: tick(), severity: "ERROR", state: "22012", message: "division by zero", statement: st.text})
				break
			}
			st.dur = dur()
			if logStatement {
				emit(genMsg{at: tick(), message: "statement: " + st.text})
				emit(genMsg{at: tick(), message: "duration: " + ms(st.dur) + " ms"})
			} else {
				emit(genMsg{at: tick(), message: "duration: " + ms(st.dur) + " ms  statement: " + st.text})
			}
		default: // extended protocol, unnamed or named
			text, n := extText()
			st.text, st.extended = text, true
			for range n {
				st.params = append(st.params, param())
			}
			name := "<unnamed>"
			if r.IntN(2) == 0 {
				name = "S_" + strconv.Itoa(len(text)%5)
			}
			if name != "<unnamed>" {
				st.prepared = name
			}
			parse, bind, exec := dur(), dur(), dur()
			if name == "<unnamed>" || s.prepared[name] != text {
				if name != "<unnamed>" {
					if old, ok := s.prepared[name]; ok && old != text {
						// Named statements keep their text: use another name.
						name = "S_" + strconv.Itoa(len(s.prepared)+10)
						st.prepared = name
					}
					s.prepared[name] = text
				}
				emit(genMsg{at: tick(), message: "duration: " + ms(parse) + " ms  parse " + name + ": " + text})
				st.dur += parse
			}
			emit(genMsg{at: tick(), message: "duration: " + ms(bind) + " ms  bind " + name + ": " + text, detail: paramList(st.params)})
			st.dur += bind
			if fail {
				st.dur = 0
				st.err = &Error{SQLState: "23505", Message: `duplicate key value violates unique constraint "notes_pkey"`}
				emit(genMsg{at: tick(), severity: "ERROR", state: "23505", message: st.err.Message, statement: text,
					detail: "Key (id)=(1) already exists."})
				break
			}
			st.dur += exec
			if logStatement {
				emit(genMsg{at: tick(), message: "execute " + name + ": " + text, detail: paramList(st.params)})
				emit(genMsg{at: tick(), message: "duration: " + ms(exec) + " ms"})
			} else {
				emit(genMsg{at: tick(), message: "duration: " + ms(exec) + " ms  execute " + name + ": " + text, detail: paramList(st.params)})
			}
		}
		s.stmts = append(s.stmts, st)
	}
	other := func() {
		switch r.IntN(3) {
		case 0:
			g.msgs = append(g.msgs, genMsg{at: tick(), backend: "checkpointer", severity: "LOG", message: "checkpoint starting: time"})
		case 1:
			g.msgs = append(g.msgs, genMsg{at: tick(), backend: "autovacuum worker", severity: "LOG",
				message: "automatic vacuum of table \"shop.public.t\": index scans: 0\npages: 0 removed, 1 remain"})
		default:
			if len(open) > 0 {
				s := open[r.IntN(len(open))]
				g.msgs = append(g.msgs, genMsg{at: tick(), s: s, backend: "client backend", severity: "WARNING",
					message: "there is no transaction in progress", state: "25P01"})
			}
		}
	}
	total := 0
	for total < o.stmts || made < o.sessions {
		switch k := r.IntN(100); {
		case made < o.sessions && (len(open) == 0 || k < 3):
			start()
		case len(open) > 1 && k < 5:
			i := r.IntN(len(open))
			s := open[i]
			if s.after {
				continue
			}
			open = append(open[:i], open[i+1:]...)
			g.msgs = append(g.msgs, genMsg{at: tick(), s: s, backend: "client backend", severity: "LOG",
				message: "disconnection: session time: 0:00:01.000 user=" + s.user + " database=" + s.db + " host=" + s.host + " port=5432"})
		case k < 7:
			other()
		case o.damage && k < 8:
			g.msgs = append(g.msgs, genMsg{damaged: []string{"garbage without a prefix", "\tan orphan continuation", "2024-05-20 10:00:00.000 UTC,\"unterminated",
				"2024-05-20 10:00:00.000 UTC,\"u\",\"d\",12,x\"y,,,,,,,LOG"}[r.IntN(4)]})
		default:
			if len(open) > 0 {
				run(open[r.IntN(len(open))])
				total++
			}
		}
	}
	return g
}

// csv writes the run as csvlog (PostgreSQL 15's 26 columns).
func (g *genLog) csv() string {
	var b strings.Builder
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	opt := func(s string) string {
		if s == "" {
			return ""
		}
		return q(s)
	}
	for i, m := range g.msgs {
		if m.damaged != "" {
			b.WriteString(m.damaged + "\n")
			continue
		}
		user, db, from, sid, app, pid := "", "", "", fmt.Sprintf("664b1f10.%x", 9000+len(m.backend)), "", 9000+len(m.backend)
		if m.s != nil {
			from, sid, app, pid = q(m.s.host+":5432"), m.s.id, q(m.s.app), m.s.pid
			if m.s.host == "[local]" {
				from = q("[local]")
			}
			if m.backend != "not initialized" {
				user, db = q(m.s.user), q(m.s.db)
			}
		}
		state := m.state
		if state == "" {
			state = "00000"
		}
		fmt.Fprintf(&b, "%s,%s,%s,%d,%s,%s,%d,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d\n",
			m.at.Format("2006-01-02 15:04:05.000 MST"), user, db, pid, from, sid, i+1, q("idle"), "2024-05-20 09:59:00 UTC", "3/4", 0,
			m.severity, state, q(m.message), opt(m.detail), "", "", "", opt(m.context), opt(m.statement), "", "", app, q(m.backend), "", 0)
	}
	return b.String()
}

// Prefixes the stderr logs are written with: dbparity's recommended one,
// and pgreplay's.
const pgreplayPrefix = "%m|%u|%d|%c|"

// stderr writes the run as a stderr log with the prefix DefaultPrefix or
// pgreplayPrefix; a message's lines after its first start with a tab.
func (g *genLog) stderr(px string) string {
	var b strings.Builder
	for _, m := range g.msgs {
		if m.damaged != "" {
			if !strings.Contains(m.damaged, ",") {
				b.WriteString(m.damaged + "\n")
			}
			continue
		}
		head := func(sev, state string) string {
			at := m.at.Format("2006-01-02 15:04:05.000 MST")
			user, db, app, sid, pid := "[unknown]", "[unknown]", "[unknown]", fmt.Sprintf("664b1f10.%x", 9000+len(m.backend)), 9000+len(m.backend)
			if m.s != nil {
				sid, pid, app = m.s.id, m.s.pid, m.s.app
				if m.backend != "not initialized" {
					user, db = m.s.user, m.s.db
				}
			}
			if px == pgreplayPrefix {
				if m.s == nil {
					user, db = "", ""
				}
				return fmt.Sprintf("%s|%s|%s|%s|%s:  ", at, user, db, sid, sev)
			}
			if m.s == nil {
				return fmt.Sprintf("%s [%d] %s:  ", at, pid, sev)
			}
			return fmt.Sprintf("%s [%d] %s %s user=%s db=%s app=%s %s:  ", at, pid, sid, state, user, db, app, sev)
		}
		state := m.state
		if state == "" {
			state = "00000"
		}
		tabs := func(s string) string { return strings.ReplaceAll(s, "\n", "\n\t") }
		b.WriteString(head(m.severity, state) + tabs(m.message) + "\n")
		if m.detail != "" {
			b.WriteString(head("DETAIL", state) + tabs(m.detail) + "\n")
		}
		if m.context != "" {
			b.WriteString(head("CONTEXT", state) + tabs(m.context) + "\n")
		}
		if m.statement != "" {
			b.WriteString(head("STATEMENT", state) + tabs(m.statement) + "\n")
		}
	}
	return b.String()
}

// digest is a capture's content, every field the log can give, as one
// hash: two captures with the same digest hold the same sessions,
// statements, texts (in the same order) and skips.
func digest(c *Capture) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s %q %s %s %d\n", c.Format, c.Engine, c.Sources, c.Start.UTC().Format(time.RFC3339Nano), c.End.UTC().Format(time.RFC3339Nano), len(c.Texts))
	for i, t := range c.Texts {
		fmt.Fprintf(h, "text %d %q\n", i, t)
	}
	for _, s := range c.Sessions {
		fmt.Fprintf(h, "session %q %d %q %q %q %q %d %d %v %v %d\n", s.ID, s.PID, s.User, s.Database, s.Application, s.Host,
			s.Start, s.End, s.StartedBeforeLog, s.EndedAfterLog, len(s.Statements))
		for _, st := range s.Statements {
			fmt.Fprintf(h, " %d %d %d %q %v %v %q %d", st.Offset, st.Duration, st.Text, st.Prepared, st.Extended, st.ParamsTruncated, paramStrings(st.Params), st.Seq)
			if st.Error != nil {
				fmt.Fprintf(h, " error %q %q", st.Error.SQLState, st.Error.Message)
			}
			h.Write([]byte("\n"))
		}
	}
	skips := append([]Skip(nil), c.Skipped...)
	for _, s := range skips {
		fmt.Fprintf(h, "skip %q %s %d %q\n", s.Reason, s.Effect, s.Count, s.First)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// sessionIDs lists the sessions a made-up run must give: not dbparity's
// own, in ID order.
func (g *genLog) kept() map[string]*genSession {
	out := map[string]*genSession{}
	for _, s := range g.sessions {
		if !s.own && (len(s.stmts) > 0 || !s.before) {
			out[s.id] = s
		}
	}
	return out
}

func sortedIDs(m map[string]*genSession) []string {
	var ids []string
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
