package capture

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The logs under testdata/hand are written by hand (gen.sh's README says
// how) to hold what a short real run does not: bad lines in the middle,
// sessions cut by the log, cut and unreadable parameters, fetches, failed
// logins, replication connections.

type wantStmt struct {
	offset   time.Duration
	duration time.Duration
	text     string
	prepared string
	extended bool
	params   []string // "NULL" for NULL, else the value quoted with '
	cut      bool
	err      *Error
}

func checkStatements(t *testing.T, c *Capture, s Session, want []wantStmt) {
	t.Helper()
	if len(s.Statements) != len(want) {
		t.Fatalf("session %s: %d statements, want %d", s.ID, len(s.Statements), len(want))
	}
	for k, w := range want {
		st := s.Statements[k]
		got := wantStmt{offset: st.Offset, duration: st.Duration, text: c.Texts[st.Text], prepared: st.Prepared,
			extended: st.Extended, cut: st.ParamsTruncated, err: st.Error}
		if st.Params != nil {
			got.params = paramStrings(st.Params)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("session %s statement %d:\n got %+v\nwant %+v", s.ID, k, got, w)
		}
	}
}

func skipsOf(c *Capture) map[string]Skip {
	out := map[string]Skip{}
	for _, s := range c.Skipped {
		out[s.Reason] = s
	}
	return out
}

func TestEdgeStderr(t *testing.T) {
	c := parseFiles(t, []string{"testdata/hand/edge.log"}, Options{})
	if !c.Start.Equal(time.Date(2024, 5, 20, 10, 0, 0, 98500000, time.UTC)) {
		t.Errorf("start %v", c.Start)
	}
	if len(c.Sessions) != 2 {
		t.Fatalf("%d sessions, want 2 (the failed login and the replication connection are not sessions)", len(c.Sessions))
	}
	alice, bob := c.Sessions[0], c.Sessions[1]
	if alice.ID != "664b1f10.64" || alice.PID != 100 || alice.User != "alice" || alice.Database != "shop" || alice.Application != "web" ||
		alice.Host != "10.0.0.5" || !alice.StartedBeforeLog || alice.EndedAfterLog || alice.Start != 0 || alice.End != 1901500*time.Microsecond {
		t.Errorf("alice: %+v", alice)
	}
	checkStatements(t, c, alice, []wantStmt{
		{offset: 0, duration: 1500 * time.Microsecond, text: "SELECT 1"},
		// Parse at 200 ms - 50 µs: the parse, bind and execute fold into one.
		{offset: 101450 * time.Microsecond, duration: 170 * time.Microsecond, text: "INSERT INTO t VALUES ($1, $2, $3)", extended: true,
			params: []string{"'O'Brien'", "NULL", "'two\nlines'"}},
		// The fetch adds its time to the execute that opened the portal.
		{offset: 201470 * time.Microsecond, duration: 70 * time.Microsecond, text: "SELECT * FROM big WHERE note = $1", prepared: "S_7", extended: true,
			params: []string{"'abcdefghij...'"}, cut: true},
	})
	if bob.User != "bob@example.com" || bob.Database != "my db" || bob.Application != "my app: v2" || bob.Host != "[local]" ||
		bob.StartedBeforeLog || !bob.EndedAfterLog || bob.Start != 1101500*time.Microsecond {
		t.Errorf("bob: %+v", bob)
	}
	checkStatements(t, c, bob, []wantStmt{
		// Failed at bind: its parameters come from the CONTEXT.
		{offset: 1201000 * time.Microsecond, text: "SELECT $1::int / 0", extended: true, params: []string{"'5'"},
			err: &Error{SQLState: "22012", Message: "division by zero"}},
		// One tab of each continuation line is the server's.
		{offset: 1301300 * time.Microsecond, duration: 200 * time.Microsecond, text: "SELECT a,\n\tb\nFROM t"},
	})
	want := map[string]Skip{
		reasonOrphanPart:   {reasonOrphanPart, Dropped, 2, "testdata/hand/edge.log:1"},
		reasonPrefix:       {reasonPrefix, Dropped, 1, "testdata/hand/edge.log:10"},
		reasonDurationOnly: {reasonDurationOnly, Dropped, 1, "testdata/hand/edge.log:15"},
		reasonErrorNoStmt:  {reasonErrorNoStmt, Dropped, 1, "testdata/hand/edge.log:18"},
		reasonTruncated:    {reasonTruncated, Flagged, 1, "testdata/hand/edge.log:11"},
		reasonBefore:       {reasonBefore, Flagged, 1, "testdata/hand/edge.log:2"},
		reasonAfter:        {reasonAfter, Flagged, 1, "testdata/hand/edge.log:24"},
		reasonOther:        {reasonOther, Ignored, 1, "testdata/hand/edge.log:16"},
		reasonFatal:        {reasonFatal, Ignored, 1, "testdata/hand/edge.log:20"},
		reasonReplication:  {reasonReplication, Ignored, 1, "testdata/hand/edge.log:22"},
		reasonFailedLogin:  {reasonFailedLogin, Ignored, 1, "testdata/hand/edge.log:19"},
	}
	if got := skipsOf(c); !reflect.DeepEqual(got, want) {
		t.Errorf("skips:\n%+v\nwant\n%+v", got, want)
	}
	sum := c.Summary()
	for _, line := range []string{
		"sessions: 2 (1 started before the log, 1 ended after it)\n",
		"statements: 5 (3 extended protocol, 1 of named prepared statements), 5 distinct texts, 1.94ms of server time\n",
		"errors: 1 (22012 x1)\n",
		"dropped: 1 lines that do not match log_line_prefix (first at testdata/hand/edge.log:10)\n",
	} {
		if !strings.Contains(sum, line) {
			t.Errorf("summary lacks %q:\n%s", line, sum)
		}
	}
}

// TestNoSessionID reads pgBadger's usual prefix: seconds only, no session
// id and no SQLSTATE, log_statement = all; the pid is reused.
func TestNoSessionID(t *testing.T) {
	opt := Options{Prefix: "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h "}
	c := parseFiles(t, []string{"testdata/hand/nocid.log"}, opt)
	if len(c.Sessions) != 2 {
		t.Fatalf("%d sessions, want 2", len(c.Sessions))
	}
	a, b := c.Sessions[0], c.Sessions[1]
	if a.ID != "pid-500.1" || a.User != "u1" || a.Database != "d1" || a.Application != "a1" || a.StartedBeforeLog || !a.EndedAfterLog ||
		a.Start != 0 || a.End != 3*time.Second {
		t.Errorf("first session: %+v", a)
	}
	checkStatements(t, c, a, []wantStmt{
		{offset: time.Second, text: "BEGIN"},
		{offset: time.Second, text: "UPDATE x SET y = $1", extended: true, params: []string{"'42'"}, err: &Error{Message: "deadlock detected"}},
		{offset: 3 * time.Second, text: "ROLLBACK"},
	})
	if b.ID != "pid-500.2" || b.User != "u2" || b.Application != "psql" || b.Host != "[local]" || b.StartedBeforeLog || b.EndedAfterLog ||
		b.Start != 5*time.Second || b.End != 7*time.Second {
		t.Errorf("second session: %+v", b)
	}
	checkStatements(t, c, b, []wantStmt{{offset: 6 * time.Second, text: "SELECT 2"}})
	if _, err := Parse([]string{"testdata/hand/nocid.log"}, Options{}); err == nil || !strings.Contains(err.Error(), "none of its 14 lines matches log_line_prefix") {
		t.Errorf("default prefix on another prefix's log: %v", err)
	}
}

func TestEdgeCSV(t *testing.T) {
	c := parseFiles(t, []string{"testdata/hand/edge.csv"}, Options{})
	if len(c.Sessions) != 1 {
		t.Fatalf("%d sessions", len(c.Sessions))
	}
	s := c.Sessions[0]
	if s.ID != "664b1f10.64" || s.User != "alice" || s.Application != "web" || s.Host != "10.0.0.5" || !s.StartedBeforeLog || s.EndedAfterLog {
		t.Errorf("session %+v", s)
	}
	checkStatements(t, c, s, []wantStmt{
		{offset: 0, duration: 1500 * time.Microsecond, text: "SELECT 1"},
		// Read again after the record before it ran on without its quote.
		{offset: 101450 * time.Microsecond, duration: 170 * time.Microsecond, text: "INSERT INTO t VALUES ($1, $2, $3)", extended: true,
			params: []string{`'O'Brien "the" ,,'`, "NULL", "'two\nlines'"}},
		{offset: 401500 * time.Microsecond, text: "SELECT 'x'::int", err: &Error{SQLState: "22P02", Message: `invalid input syntax for type integer: "x"`}},
	})
	want := map[string]Skip{
		reasonCSV:     {reasonCSV, Dropped, 4, "testdata/hand/edge.csv:2"},
		reasonBefore:  {reasonBefore, Flagged, 1, "testdata/hand/edge.csv:1"},
		reasonProcess: {reasonProcess, Ignored, 1, "testdata/hand/edge.csv:10"},
	}
	if got := skipsOf(c); !reflect.DeepEqual(got, want) {
		t.Errorf("skips:\n%+v\nwant\n%+v", got, want)
	}
}

func TestEdgeJSON(t *testing.T) {
	c := parseFiles(t, []string{"testdata/hand/edge.json"}, Options{})
	if len(c.Sessions) != 1 {
		t.Fatalf("%d sessions", len(c.Sessions))
	}
	s := c.Sessions[0]
	if !s.StartedBeforeLog || !s.EndedAfterLog || s.Host != "10.0.0.5" {
		t.Errorf("session %+v", s)
	}
	ins := "INSERT INTO t VALUES ($1, $2)"
	checkStatements(t, c, s, []wantStmt{
		{offset: 0, duration: 1500 * time.Microsecond, text: "SELECT 1"},
		{offset: 101450 * time.Microsecond, duration: 50 * time.Microsecond, text: ins, extended: true, params: []string{"NULL", "'a\\b 'c' \"d\"\n\te'"}},
		{offset: 201450 * time.Microsecond, duration: 50 * time.Microsecond, text: ins, extended: true, params: []string{"'1'", "'cut at tenc...'"}, cut: true},
		{offset: 301450 * time.Microsecond, duration: 50 * time.Microsecond, text: ins, extended: true, cut: true},
		{offset: 501450 * time.Microsecond, duration: 50 * time.Microsecond, text: "SELECT $1", extended: true, cut: true},
	})
	want := map[string]Skip{
		reasonJSON:      {reasonJSON, Dropped, 2, "testdata/hand/edge.json:2"},
		reasonTime:      {reasonTime, Dropped, 1, "testdata/hand/edge.json:3"},
		reasonTruncated: {reasonTruncated, Flagged, 1, "testdata/hand/edge.json:6"},
		reasonParams:    {reasonParams, Flagged, 1, "testdata/hand/edge.json:7"},
		reasonNoParams:  {reasonNoParams, Flagged, 1, "testdata/hand/edge.json:10"},
		reasonBefore:    {reasonBefore, Flagged, 1, "testdata/hand/edge.json:1"},
		reasonAfter:     {reasonAfter, Flagged, 1, "testdata/hand/edge.json:1"},
		reasonProcess:   {reasonProcess, Ignored, 1, "testdata/hand/edge.json:8"},
	}
	if got := skipsOf(c); !reflect.DeepEqual(got, want) {
		t.Errorf("skips:\n%+v\nwant\n%+v", got, want)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	csv := "testdata/hand/edge.csv"
	json := "testdata/hand/edge.json"
	empty := writeFile(t, dir, "empty.log", "\n\n")
	junk := writeFile(t, dir, "junk.log", "not a log\nat all\n")
	for _, tc := range []struct {
		name  string
		files []string
		opt   Options
		want  string
	}{
		{"nothing", nil, Options{}, "no log files given"},
		{"missing", []string{filepath.Join(dir, "missing.log")}, Options{}, "no such file"},
		{"directory", []string{dir}, Options{}, "is a directory"},
		{"format", []string{csv}, Options{Format: "syslog"}, `unknown log format "syslog"`},
		{"mixed", []string{csv, json}, Options{}, "log files of different formats (testdata/hand/edge.csv is csvlog, testdata/hand/edge.json is jsonlog): capture one format at a time"},
		{"junk", []string{junk}, Options{}, "none of its 2 lines matches log_line_prefix"},
		{"no time", []string{junk}, Options{Prefix: "[%p] "}, "has no timestamp"},
		{"no pid", []string{junk}, Options{Prefix: "%m "}, "has neither %p nor %c"},
	} {
		_, err := Parse(tc.files, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error of several lines: %q", tc.name, err)
		}
	}
	// A file named twice is read once.
	c, err := Parse([]string{csv, "./" + csv}, Options{})
	if err != nil || len(c.Sessions) != 1 || len(c.Sources) != 1 {
		t.Errorf("a file named twice: %v, %+v", err, c)
	}
	// Empty files hold no format, so they mix with any.
	c, err = Parse([]string{empty, csv}, Options{})
	if err != nil || len(c.Sessions) != 1 || len(c.Sources) != 2 || c.Sources[0] != csv {
		t.Errorf("empty file beside a csvlog: %v, %+v", err, c)
	}
	// A forced format reads every file as that format.
	c, err = Parse([]string{csv}, Options{Format: FormatJSON})
	if err != nil || len(c.Sessions) != 0 || !hasSkip(c, reasonJSON, 13) {
		t.Errorf("csvlog read as jsonlog: %v, %+v", err, c.Skipped)
	}
}

// TestDamagedGzip keeps what a cut gzip file held before the damage.
func TestDamagedGzip(t *testing.T) {
	raw, err := os.ReadFile("testdata/hand/edge.json")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	zw.Close()
	cut := writeFile(t, t.TempDir(), "cut.json.gz", buf.String()[:buf.Len()-12])
	c, err := Parse([]string{cut}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, c)
	if c.Statements() == 0 || !hasSkip(c, "rest of a file after a damaged gzip stream", 1) {
		t.Errorf("cut gzip: %d statements, skips %+v", c.Statements(), c.Skipped)
	}
}

func TestProgress(t *testing.T) {
	var calls []int64
	files := glob(t, "run1/*.json*")
	_, err := Parse(files, Options{Progress: func(file string, done, total int64) {
		if done > total || done < 0 {
			t.Errorf("%s: %d of %d", file, done, total)
		}
		calls = append(calls, done)
	}})
	if err != nil || len(calls) != len(files) {
		t.Errorf("progress: %v, %d calls for %d files", err, len(calls), len(files))
	}
}
