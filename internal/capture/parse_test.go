package capture

import (
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// The logs under testdata/run1, both and stmt are real: gen.sh wrote them
// from a PostgreSQL 15 cluster driven by psql, pgbench and gen/main.go.

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match testdata/%s", pattern)
	}
	return files
}

func parseFiles(t *testing.T, files []string, opt Options) *Capture {
	t.Helper()
	c, err := Parse(files, opt)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, c)
	return c
}

// checkInvariants holds for every capture, from any input.
func checkInvariants(t testing.TB, c *Capture) {
	t.Helper()
	if c.Format != Format {
		t.Errorf("format %q", c.Format)
	}
	if c.End.Before(c.Start) {
		t.Errorf("capture ends (%v) before it starts (%v)", c.End, c.Start)
	}
	for i, s := range c.Sessions {
		if i > 0 && s.Start < c.Sessions[i-1].Start {
			t.Errorf("session %s starts before the one listed before it", s.ID)
		}
		if s.Start < 0 || s.End < s.Start || c.Start.Add(s.End).After(c.End) {
			t.Errorf("session %s: start %v end %v outside the capture (%v)", s.ID, s.Start, s.End, c.End.Sub(c.Start))
		}
		prev := s.Start
		for k, st := range s.Statements {
			if st.Text < 0 || st.Text >= len(c.Texts) {
				t.Fatalf("session %s statement %d: text %d of %d", s.ID, k, st.Text, len(c.Texts))
			}
			if st.Offset < prev {
				t.Errorf("session %s statement %d starts at %v, before %v", s.ID, k, st.Offset, prev)
			}
			if st.Duration < 0 {
				t.Errorf("session %s statement %d: negative duration", s.ID, k)
			}
			if end := st.Offset + st.Duration; end > s.End {
				t.Errorf("session %s statement %d ends at %v, after the session (%v)", s.ID, k, end, s.End)
			}
			prev = st.Offset
		}
	}
	used := make([]bool, len(c.Texts))
	for _, s := range c.Sessions {
		for _, st := range s.Statements {
			used[st.Text] = true
		}
	}
	for i, u := range used {
		if !u {
			t.Errorf("text %d is not used", i)
		}
	}
}

func byApp(c *Capture, app string) []Session {
	var out []Session
	for _, s := range c.Sessions {
		if s.Application == app {
			out = append(out, s)
		}
	}
	return out
}

func str(s string) *string { return &s }

func paramStrings(ps []*string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		if p == nil {
			out[i] = "NULL"
		} else {
			out[i] = "'" + *p + "'"
		}
	}
	return out
}

// sameSessions compares what the three formats must agree on.
func sameSessions(t *testing.T, name string, a, b *Capture) {
	t.Helper()
	if !a.Start.Equal(b.Start) || !a.End.Equal(b.End) {
		t.Errorf("%s: span %v..%v, want %v..%v", name, b.Start, b.End, a.Start, a.End)
	}
	if !reflect.DeepEqual(a.Texts, b.Texts) {
		t.Errorf("%s: texts differ:\n%q\n%q", name, a.Texts, b.Texts)
	}
	if len(a.Sessions) != len(b.Sessions) {
		t.Fatalf("%s: %d sessions, want %d", name, len(b.Sessions), len(a.Sessions))
	}
	// Formats log different numbers of lines, and a server writing
	// several destinations interleaves its backends' lines differently in
	// each, so Seq differs across sessions; within one it only grows.
	for _, c := range []*Capture{a, b} {
		for _, ss := range c.Sessions {
			for i := 1; i < len(ss.Statements); i++ {
				if ss.Statements[i].Seq <= ss.Statements[i-1].Seq {
					t.Errorf("%s: session %s: statement %d has Seq %d after %d", name, ss.ID, i, ss.Statements[i].Seq, ss.Statements[i-1].Seq)
				}
			}
		}
	}
	for i := range a.Sessions {
		sa, sb := noSeq(a.Sessions[i]), noSeq(b.Sessions[i])
		if !reflect.DeepEqual(sa, sb) {
			t.Errorf("%s: session %d differs:\n%+v\n%+v", name, i, sb, sa)
		}
	}
}

func noSeq(s Session) Session {
	s.Statements = append([]Statement(nil), s.Statements...)
	for i := range s.Statements {
		s.Statements[i].Seq = 0
	}
	return s
}

var tpcbLike = []string{
	"BEGIN;",
	"UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?;",
	"SELECT abalance FROM pgbench_accounts WHERE aid = ?;",
	"UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?;",
	"UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?;",
	"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP);",
	"END;",
}

// checkPgbench checks pgbench's sessions of one mode: its first connection
// runs two setup queries, then each client runs transactions of the
// tpcb-like script, whose parameters must tie together (the same delta and
// the same account in every statement of a transaction).
func checkPgbench(t *testing.T, c *Capture, mode string, clients, transactions int, extended, prepared bool) {
	t.Helper()
	sessions := byApp(c, "pgbench-"+mode)
	if len(sessions) != clients+1 {
		t.Fatalf("pgbench -M %s: %d sessions, want %d", mode, len(sessions), clients+1)
	}
	if n := len(sessions[0].Statements); n != 2 || !strings.HasPrefix(c.Texts[sessions[0].Statements[0].Text], "select count(*) from pgbench_branches") {
		t.Errorf("pgbench -M %s: first connection has %d statements", mode, n)
	}
	for _, s := range sessions[1:] {
		if s.User != "postgres" || s.Database != "postgres" || s.Host != "[local]" || s.StartedBeforeLog || s.EndedAfterLog {
			t.Errorf("pgbench -M %s session %s: %+v", mode, s.ID, s)
		}
		if len(s.Statements) != 7*transactions {
			t.Fatalf("pgbench -M %s session %s: %d statements, want %d", mode, s.ID, len(s.Statements), 7*transactions)
		}
		for k, st := range s.Statements {
			text := c.Texts[st.Text]
			fp := Fingerprint(text)
			if fp != tpcbLike[k%7] {
				t.Errorf("pgbench -M %s statement %d: %q, want %q", mode, k, fp, tpcbLike[k%7])
			}
			if st.Extended != extended || st.Error != nil || st.ParamsTruncated {
				t.Errorf("pgbench -M %s statement %d: %+v", mode, k, st)
			}
			wantName := ""
			if prepared {
				wantName = "P_" + string(rune('0'+k%7))
			}
			if st.Prepared != wantName {
				t.Errorf("pgbench -M %s statement %d: prepared %q, want %q", mode, k, st.Prepared, wantName)
			}
			if st.Duration <= 0 || st.Duration > time.Second {
				t.Errorf("pgbench -M %s statement %d: duration %v", mode, k, st.Duration)
			}
			if !extended && st.Params != nil {
				t.Errorf("pgbench -M %s statement %d: simple query with parameters", mode, k)
			}
		}
		if !extended {
			continue
		}
		for tx := 0; tx < transactions; tx++ {
			st := s.Statements[7*tx : 7*tx+7]
			p := func(k, i int) string {
				if i >= len(st[k].Params) || st[k].Params[i] == nil {
					t.Fatalf("pgbench -M %s tx %d statement %d: no parameter %d in %q", mode, tx, k, i+1, paramStrings(st[k].Params))
				}
				return *st[k].Params[i]
			}
			counts := []int{0, 2, 1, 2, 2, 4, 0}
			for k, n := range counts {
				if len(st[k].Params) != n {
					t.Errorf("pgbench -M %s tx %d statement %d: %d parameters, want %d", mode, tx, k, len(st[k].Params), n)
				}
			}
			delta, aid := p(1, 0), p(1, 1)
			if p(2, 0) != aid || p(3, 0) != delta || p(4, 0) != delta || p(5, 2) != aid || p(5, 3) != delta || p(5, 1) != p(4, 1) || p(5, 0) != p(3, 1) {
				t.Errorf("pgbench -M %s tx %d: parameters do not tie: %q %q %q %q %q", mode, tx,
					paramStrings(st[1].Params), paramStrings(st[2].Params), paramStrings(st[3].Params), paramStrings(st[4].Params), paramStrings(st[5].Params))
			}
		}
	}
}

// checkDriver checks gen/main.go's session: unnamed statements with
// quotes, NULL and newlines in parameters, a named prepared statement, and
// an execution that fails at bind.
func checkDriver(t *testing.T, c *Capture, cut bool) {
	t.Helper()
	sessions := byApp(c, "gen-driver")
	if len(sessions) != 1 {
		t.Fatalf("%d gen-driver sessions", len(sessions))
	}
	s := sessions[0]
	type want struct {
		text     string
		prepared string
		params   []*string
		cut      bool
		state    string
	}
	long := "0123456789012345678901234567890123456789"
	wants := []want{
		{text: "create temp table gen_t (id int, note text)"},
		{text: "insert into gen_t values ($1, $2)", params: []*string{str("1"), str(`it's a "quote"`)}},
		{text: "insert into gen_t values ($1, $2)", params: []*string{str("2"), nil}},
		{text: "insert into gen_t\nvalues ($1, $2)", params: []*string{str("3"), str("line one\nline two\n\ttabbed 'x'")}},
		{text: "select id, note from gen_t where note = $1 or id = $2", params: []*string{&long, str("4")}},
		{text: "update gen_t set note = $2 where id = $1", prepared: "gen_upd", params: []*string{str("1"), str("first")}},
		{text: "update gen_t set note = $2 where id = $1", prepared: "gen_upd", params: []*string{str("2"), nil}},
		{text: "select 10 / $1::int", cut: true, state: "22012"},
		{text: "select count(*) from gen_t"},
	}
	if cut {
		wants[1].params[1], wants[1].cut = str(`it's a "qu...`), true
		wants[3].params[1], wants[3].cut = str("line one\nl..."), true
		wants[4].params[0], wants[4].cut = str("0123456789..."), true
		// log_statement alone logs no parse, so the failed execution
		// looks like a simple query whose parameters are unknown.
		wants[7].cut = false
	}
	if len(s.Statements) != len(wants) {
		t.Fatalf("gen-driver: %d statements, want %d", len(s.Statements), len(wants))
	}
	for k, w := range wants {
		st := s.Statements[k]
		if got := c.Texts[st.Text]; got != w.text {
			t.Errorf("gen-driver statement %d: %q, want %q", k, got, w.text)
		}
		ext := w.params != nil || (w.state != "" && !cut)
		if st.Extended != ext || st.Prepared != w.prepared || st.ParamsTruncated != w.cut {
			t.Errorf("gen-driver statement %d: extended %v prepared %q cut %v, want %v %q %v", k, st.Extended, st.Prepared, st.ParamsTruncated, ext, w.prepared, w.cut)
		}
		if !reflect.DeepEqual(paramStrings(st.Params), paramStrings(w.params)) {
			t.Errorf("gen-driver statement %d: parameters %q, want %q", k, paramStrings(st.Params), paramStrings(w.params))
		}
		switch {
		case w.state == "" && st.Error != nil:
			t.Errorf("gen-driver statement %d failed: %+v", k, st.Error)
		case w.state != "" && (st.Error == nil || st.Error.SQLState != w.state || st.Error.Message != "division by zero"):
			t.Errorf("gen-driver statement %d: error %+v, want %s division by zero", k, st.Error, w.state)
		}
	}
}

// checkPsql checks the psql session: multi-line text intact, failures with
// their SQLSTATE and message, the application name of the connection.
func checkPsql(t *testing.T, c *Capture, head []string) {
	t.Helper()
	sessions := byApp(c, "psql-session")
	if len(sessions) != 1 {
		t.Fatalf("%d psql sessions", len(sessions))
	}
	s := sessions[0]
	if s.User != "postgres" || s.Database != "postgres" || s.Host != "[local]" || s.PID == 0 || !strings.Contains(s.ID, ".") {
		t.Errorf("psql session: %+v", s)
	}
	var texts []string
	errs := map[string]Error{}
	for _, st := range s.Statements {
		texts = append(texts, c.Texts[st.Text])
		if st.Error != nil {
			errs[c.Texts[st.Text]] = *st.Error
		}
	}
	if len(texts) < len(head) || !reflect.DeepEqual(texts[:len(head)], head) {
		t.Errorf("psql statements:\n%q\nwant them to start with\n%q", texts, head)
	}
	wantErrs := map[string]Error{
		"select * from no_such_table;": {SQLState: "42P01", Message: `relation "no_such_table" does not exist`},
		"select 1 / 0;":                {SQLState: "22012", Message: "division by zero"},
	}
	for text, w := range wantErrs {
		if errs[text] != w {
			t.Errorf("error of %q: %+v, want %+v", text, errs[text], w)
		}
	}
}

var psqlHead = []string{
	"create table if not exists notes (id int primary key,\n    body text,\n    created timestamptz default now());",
	"select id,\n       body\n  from notes\n where body = 'it''s\ntwo lines'   /* trailing comment */\n   or id in (1, 2, 3);",
	"insert into notes (id, body) values (1, E'tab\\there'), (2, $$dollar 'quoted'$$);",
	"select * from no_such_table;",
	"select 1 / 0;",
	"prepare get_note (int) as select body from notes where id = $1;",
	"execute get_note(1);",
	"set application_name = 'psql renamed';",
	"select count(*) from notes;",
}

func shuffled(files []string) []string {
	out := append([]string(nil), files...)
	rand.New(rand.NewSource(1)).Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

// TestRun1 reads log_min_duration_statement = 0 logs, rotated into three
// files per format, the middle one gzip-compressed, given out of order.
func TestRun1(t *testing.T) {
	var caps []*Capture
	for _, pattern := range []string{"run1/*.log*", "run1/*.csv*", "run1/*.json*"} {
		files := glob(t, pattern)
		if len(files) != 3 {
			t.Fatalf("%s: %d files", pattern, len(files))
		}
		c := parseFiles(t, shuffled(files), Options{})
		caps = append(caps, c)
		sorted := append([]string(nil), files...)
		sort.Strings(sorted) // the names hold the rotation time
		if !reflect.DeepEqual(c.Sources, sorted) {
			t.Errorf("%s: read in order %q, want %q", pattern, c.Sources, sorted)
		}
		if len(c.Sessions) != 11 {
			t.Errorf("%s: %d sessions, want 11", pattern, len(c.Sessions))
		}
		checkPsql(t, c, append(psqlHead, "select pg_sleep(1.1);", "select pg_rotate_logfile();"))
		checkPgbench(t, c, "simple", 2, 3, false, false)
		checkPgbench(t, c, "extended", 2, 3, true, false)
		checkPgbench(t, c, "prepared", 2, 3, true, true)
		checkDriver(t, c, false)
		for _, s := range c.Sessions {
			if s.StartedBeforeLog || s.EndedAfterLog {
				t.Errorf("%s: session %s (%s) cut by the log", pattern, s.ID, s.Application)
			}
			for _, st := range s.Statements {
				if st.Error == nil && st.Duration <= 0 {
					t.Errorf("%s: %q without a duration", pattern, c.Texts[st.Text])
				}
				if strings.HasPrefix(c.Texts[st.Text], "select pg_sleep(1.1)") && (st.Duration < 1100*time.Millisecond || st.Duration > 1500*time.Millisecond) {
					t.Errorf("pg_sleep(1.1) took %v", st.Duration)
				}
			}
		}
		// The psql session spans all three files.
		psql := byApp(c, "psql-session")[0]
		if span := psql.End - psql.Start; span < 2200*time.Millisecond {
			t.Errorf("psql session lasted %v, want over 2.2 s (two pg_sleep(1.1))", span)
		}
		if got := c.Statements(); got != 156 {
			t.Errorf("%s: %d statements, want 156", pattern, got)
		}
	}
	sameSessions(t, "csvlog vs stderr", caps[0], caps[1])
	sameSessions(t, "jsonlog vs stderr", caps[0], caps[2])
}

// TestRotationEdges reads one file of a rotated set alone: the sessions
// that cross its edges are flagged and kept.
func TestRotationEdges(t *testing.T) {
	for _, ext := range []string{"log", "csv", "json"} {
		files := glob(t, "run1/*."+ext+"*")
		sort.Strings(files)
		first := parseFiles(t, files[:1], Options{})
		psql := byApp(first, "psql-session")
		if len(psql) != 1 || psql[0].StartedBeforeLog || !psql[0].EndedAfterLog {
			t.Errorf("%s first file: psql session %+v, want ended after the log", ext, psql)
		}
		last := parseFiles(t, files[2:], Options{})
		// Without its connection line, the session's application name is
		// the one its first line shows.
		psql = byApp(last, "psql renamed")
		if len(psql) != 1 || !psql[0].StartedBeforeLog || psql[0].EndedAfterLog {
			t.Fatalf("%s last file: psql session %+v, want started before the log", ext, psql)
		}
		// Its user and database come from the lines themselves.
		if s := psql[0]; s.User != "postgres" || s.Database != "postgres" || s.Application != "psql renamed" {
			t.Errorf("%s last file: psql session %+v", ext, s)
		}
		if !hasSkip(last, reasonBefore, 1) || !hasSkip(first, reasonAfter, 1) {
			t.Errorf("%s: skips %+v / %+v", ext, first.Skipped, last.Skipped)
		}
	}
}

func hasSkip(c *Capture, reason string, count int) bool {
	for _, s := range c.Skipped {
		if s.Reason == reason {
			return s.Count == count
		}
	}
	return count == 0
}

// TestGzipByContent reads a compressed file whatever its name.
func TestGzipByContent(t *testing.T) {
	gz := glob(t, "run1/*.csv.gz")[0]
	b, err := os.ReadFile(gz)
	if err != nil {
		t.Fatal(err)
	}
	renamed := filepath.Join(t.TempDir(), "plain-name.txt")
	if err := os.WriteFile(renamed, b, 0o644); err != nil {
		t.Fatal(err)
	}
	a := parseFiles(t, []string{gz}, Options{})
	c := parseFiles(t, []string{renamed}, Options{})
	if len(a.Sessions) == 0 || a.Statements() != c.Statements() || !reflect.DeepEqual(a.Sessions, c.Sessions) {
		t.Errorf("%s read as %d statements, renamed %d", gz, a.Statements(), c.Statements())
	}
}

// TestBoth reads a log written with log_statement = all and
// log_min_duration_statement = 0: statements are logged when they start,
// their durations when they end.
func TestBoth(t *testing.T) {
	var caps []*Capture
	for _, pattern := range []string{"both/*.log", "both/*.csv", "both/*.json"} {
		c := parseFiles(t, glob(t, pattern), Options{})
		caps = append(caps, c)
		if len(c.Sessions) != 8 {
			t.Errorf("%s: %d sessions, want 8", pattern, len(c.Sessions))
		}
		checkPsql(t, c, psqlHead[:2])
		checkPgbench(t, c, "extended", 1, 2, true, false)
		checkPgbench(t, c, "prepared", 1, 1, true, true)
		checkPgbench(t, c, "simple", 1, 1, false, false)
		checkDriver(t, c, false)
		if hasSkip(c, reasonDurationOnly, 0) == false {
			t.Errorf("%s: duration lines left without their statement: %+v", pattern, c.Skipped)
		}
		for _, s := range c.Sessions {
			for _, st := range s.Statements {
				if st.Error == nil && st.Duration <= 0 {
					t.Errorf("%s: %q without a duration", pattern, c.Texts[st.Text])
				}
			}
		}
	}
	sameSessions(t, "csvlog vs stderr", caps[0], caps[1])
	sameSessions(t, "jsonlog vs stderr", caps[0], caps[2])
}

// TestStatementOnly reads a log written with log_statement = all alone and
// log_parameter_max_length = 10: no durations, and cut parameters flagged.
func TestStatementOnly(t *testing.T) {
	var caps []*Capture
	for _, pattern := range []string{"stmt/*.log", "stmt/*.csv", "stmt/*.json"} {
		for _, max := range []int{0, 10} {
			c := parseFiles(t, glob(t, pattern), Options{ParamMaxLength: max})
			if max == 0 {
				caps = append(caps, c)
			}
			checkPsql(t, c, psqlHead[:2])
			checkDriver(t, c, true)
			if !hasSkip(c, reasonTruncated, 3) {
				t.Errorf("%s: skips %+v, want 3 cut", pattern, c.Skipped)
			}
			for _, s := range c.Sessions {
				for _, st := range s.Statements {
					if st.Duration != 0 {
						t.Errorf("%s: %q has a duration", pattern, c.Texts[st.Text])
					}
				}
			}
		}
		// Told that values were logged whole, nothing is cut.
		c := parseFiles(t, glob(t, pattern), Options{ParamMaxLength: -1})
		if !hasSkip(c, reasonTruncated, 0) {
			t.Errorf("%s: cut parameters with ParamMaxLength -1", pattern)
		}
		// Told a length the values do not have, nothing is cut either.
		c = parseFiles(t, glob(t, pattern), Options{ParamMaxLength: 5})
		if !hasSkip(c, reasonTruncated, 0) {
			t.Errorf("%s: cut parameters with ParamMaxLength 5", pattern)
		}
	}
	sameSessions(t, "csvlog vs stderr", caps[0], caps[1])
	sameSessions(t, "jsonlog vs stderr", caps[0], caps[2])
}
