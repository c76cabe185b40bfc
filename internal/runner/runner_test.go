package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/workload"
	_ "github.com/dbparity/dbparity/internal/workload/orderentry"
)

func orderEntry(t *testing.T) workload.Workload {
	t.Helper()
	w, err := workload.New("order-entry")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func common(t *testing.T, tg Target) (Common, *bytesBuffer) {
	out := &bytesBuffer{}
	return Common{Target: tg, Workload: orderEntry(t), Seed: 1, Stdout: out, Stderr: out}, out
}

// countRows reads one count(*) through a fresh connection.
func countRows(t *testing.T, tg Target, query string) int64 {
	t.Helper()
	var n int64
	queryRow(t, tg, query, &n)
	return n
}

// queryRow scans one row of query through a fresh connection (and, for a
// managed target, a fresh start of its server).
func queryRow(t *testing.T, tg Target, query string, dest ...any) {
	t.Helper()
	withConn(t, tg, func(c engine.Conn) error { return c.QueryRow(context.Background(), query).Scan(dest...) }, query)
}

// execSQL runs one statement through a fresh connection.
func execSQL(t *testing.T, tg Target, query string) {
	t.Helper()
	withConn(t, tg, func(c engine.Conn) error { _, err := c.Exec(context.Background(), query); return err }, query)
}

func withConn(t *testing.T, tg Target, f func(engine.Conn) error, query string) {
	t.Helper()
	o, err := openTarget(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	c, err := o.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := f(c); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// allPhases adds a transaction type's commits over every phase: what the
// database saw, warm-up and drain included.
func allPhases(r *result.Run, tx string) int64 {
	var n int64
	for _, p := range r.Phases {
		n += p.Committed[tx]
	}
	return n
}

// runAndVerify loads, runs and checks order-entry on tg, and proves the
// result honest: the New-Orders it counts are the rows the ORDER table
// gained.
func runAndVerify(t *testing.T, tg Target) *result.Run {
	return runAndVerifyHook(t, tg, func() {}, func() {})
}

// runAndVerifyHook calls beforeRun just before the run starts and afterRun
// right after it, before anything else touches the database.
func runAndVerifyHook(t *testing.T, tg Target, beforeRun, afterRun func()) *result.Run {
	ctx := context.Background()
	c, out := common(t, tg)
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	if err := Check(ctx, c); err != nil {
		t.Fatalf("check after load: %v\n%s", err, out)
	}
	ordersBefore := countRows(t, tg, "SELECT count(*) FROM orders")
	path := filepath.Join(t.TempDir(), "run.json")
	beforeRun()
	err := Run(ctx, RunOptions{Common: c, Users: 3, Duration: 3 * time.Second, Warmup: time.Second,
		Label: "test", Out: path, Command: []string{"dbparity", "run"}})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	afterRun()
	if err := Check(ctx, c); err != nil {
		t.Fatalf("check after run: %v\n%s", err, out)
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	grew := countRows(t, tg, "SELECT count(*) FROM orders") - ordersBefore
	if got := allPhases(r, "new_order"); got != grew {
		t.Errorf("result counts %d committed New-Orders; the ORDER table grew by %d", got, grew)
	}
	s := r.Summarize()
	if s.Partial || s.Commits == 0 || s.TPS <= 0 || s.NOPM <= 0 {
		t.Errorf("implausible summary: %+v", s)
	}
	// The window ends when the driver has stopped its sessions: 3.285 s
	// once with two suites beside, 3.621 s another time (its figures are
	// over the window it measured, whatever its length): within 0.5 s
	// and the latest its threads woke.
	if d := s.DurationS; d < 2.9 || d > 3.5+r.Driver.WakeMaxMs/1000 {
		t.Errorf("measured window %.3f s, asked for 3 s (threads woke up to %.0f ms late)", d, r.Driver.WakeMaxMs)
	} else if d > 3.2 {
		t.Logf("measured window %.3f s, asked for 3 s (a loaded host)", d)
	}
	// Every type ran, timed; a type of 4% of the mix may be missing from
	// a run of fewer than 125 transactions (a loaded host's SQLite ran
	// fewer): 0.96^125 is 0.6%.
	for _, name := range []string{"new_order", "payment", "order_status", "delivery", "stock_level"} {
		tx := s.Transactions[name]
		if tx.Count == 0 && s.Commits+s.Rollbacks < 125 {
			t.Logf("%s: none in %d transactions", name, s.Commits+s.Rollbacks)
			continue
		}
		if p50, p99 := result.Value(tx.P50Ms), result.Value(tx.P99Ms); tx.Count == 0 || !(p50 > 0) || !(p99 >= p50) {
			t.Errorf("%s: count %d p50 %.3f p99 %.3f", name, tx.Count, p50, p99)
		}
	}
	if r.Driver.CPUUserS+r.Driver.CPUSysS <= 0 {
		t.Error("driver CPU not recorded")
	}
	if r.Commit.Count != s.Commits {
		t.Errorf("COMMIT histogram has %d values, %d transactions committed", r.Commit.Count, s.Commits)
	}
	// The collectors' sections.
	if r.Disclosure == nil || r.Disclosure.Host.Kernel == "" || r.Disclosure.Storage == nil || r.Disclosure.Database == nil {
		t.Fatalf("disclosure %+v", r.Disclosure)
	}
	if db := r.Disclosure.Database; db.BufferCacheBytes <= 0 || db.DataBytes <= 0 || db.Version == "" {
		t.Errorf("database disclosure %+v", db)
	}
	if r.OS == nil || r.OS.Window.SelfCPUCores <= 0 || len(r.OS.Series) < 2 || r.OS.Window.CPUBusyPct <= 0 {
		t.Errorf("os section %+v", r.OS)
	}
	if l := r.LoadProfile.Line("Logical reads"); l == nil || l.Total == nil || *l.Total <= 0 {
		t.Errorf("load profile: logical reads %+v", l)
	}
	if l := r.LoadProfile.Line("Transactions"); l == nil || l.Total == nil || *l.Total <= 0 {
		t.Errorf("load profile: transactions %+v", l)
	}

	return r
}

func TestOrderEntrySQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runAndVerify(t, Target{URL: "sqlite://" + filepath.Join(dir, "oe.db")})
	if r.Target.Dialect != "sqlite" || r.Target.ServerVersion == "" {
		t.Errorf("target %+v", r.Target)
	}
	// Each second has SQLite's figures; not each has reads: beside a
	// second test suite a second of the window once read nothing.
	var reads float64
	var seconds []string
	for _, p := range r.DBSeries {
		if p.WALFile == nil || p.LogicalRead == nil {
			t.Fatalf("SQLite series point at %.1f s without its WAL file or logical reads", p.At)
		}
		reads += *p.LogicalRead
		seconds = append(seconds, fmt.Sprintf("%.1fs:%g", p.At, *p.LogicalRead))
	}
	if len(r.DBSeries) < 2 || reads <= 0 {
		t.Errorf("SQLite series: logical reads per point %v", seconds)
	}
	if r.DBSeries[1].Commits != nil {
		t.Error("SQLite counts no commits of its own, but the series has some")
	}
}

func TestRunRefusesMissingSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, _ := common(t, Target{URL: "sqlite://" + filepath.Join(dir, "empty.db")})
	out := filepath.Join(dir, "r.json")
	err := Run(context.Background(), RunOptions{Common: c, Users: 1, Duration: time.Second, Label: "x", Out: out})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("not loaded")) {
		t.Fatalf("run on an empty database: %v, want 'not loaded'", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed run left %s behind", out)
	}
}

func TestRunRefusesToOverwrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "keep.json")
	os.WriteFile(out, []byte("precious"), 0o644)
	c, _ := common(t, Target{URL: "sqlite://" + filepath.Join(dir, "x.db")})
	err := Run(context.Background(), RunOptions{Common: c, Users: 1, Duration: time.Second, Label: "x", Out: out})
	var ue UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want a usage error", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "precious" {
		t.Errorf("existing result was changed to %q", b)
	}
}

func TestBadTargets(t *testing.T) {
	t.Parallel()
	for _, tc := range []Target{
		{URL: "oracle://scott:tiger@db/orcl"},
		{URL: "postgres://u@localhost:notaport/db"},
		{URL: "sqlite://"},
		{URL: "sqlite://x.db", Managed: "postgres"},
		{Managed: "mysql"},
		{URL: "sqlite://x.db", PGSet: []string{"work_mem=1MB"}},
	} {
		_, err := openTarget(context.Background(), tc)
		var ue UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%+v: got %v, want a usage error", tc, err)
			continue
		}
		if bytes.Contains([]byte(err.Error()), []byte("tiger")) {
			t.Errorf("error shows the password: %v", err)
		}
	}
}

func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	// Port 1 on loopback: nothing listens there.
	c, _ := common(t, Target{URL: "postgres://bench:secret@127.0.0.1:1/bench?connect_timeout=2"})
	err := Check(context.Background(), c)
	if err == nil {
		t.Fatal("check against a closed port succeeded")
	}
	if bytes.Contains([]byte(err.Error()), []byte("secret")) {
		t.Errorf("error shows the password: %v", err)
	}
}

func TestRedactArgs(t *testing.T) {
	t.Parallel()
	got := RedactArgs([]string{"run", "--target", "postgres://u:pw@h/db", "--target=postgres://u:pw@h/db?password=pw2", "x"})
	for _, a := range got {
		if bytes.Contains([]byte(a), []byte("pw")) && !bytes.Contains([]byte(a), []byte("xxxxx")) {
			t.Errorf("password kept in %q", a)
		}
		if bytes.Contains([]byte(a), []byte(":pw@")) || bytes.Contains([]byte(a), []byte("pw2")) {
			t.Errorf("password kept in %q", a)
		}
	}
	if got[4] != "x" || got[0] != "run" {
		t.Errorf("plain arguments changed: %q", got)
	}
}

// --repeat writes one result per repetition and loads only once.
func TestRepeat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, out := common(t, Target{URL: "sqlite://" + filepath.Join(dir, "r.db")})
	// Each repetition must commit: 2 s, as a saturated host served 3
	// transactions/s with a p95 of 0.86 s, and a 0.7 s window none.
	err := Run(context.Background(), RunOptions{Common: c, Users: 2, Duration: 2 * time.Second, Label: "rep",
		Out: filepath.Join(dir, "a.json"), Repeat: 3, Load: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := bytes.Count(out.Bytes(), []byte("loaded order-entry")); n != 1 {
		t.Errorf("loaded %d times", n)
	}
	for i := 1; i <= 3; i++ {
		r, err := result.Read(filepath.Join(dir, fmt.Sprintf("a-%d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		if r.Label != "rep" || r.Summarize().Commits == 0 {
			t.Errorf("repetition %d: %+v", i, r.Summarize())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a.json")); !os.IsNotExist(err) {
		t.Error("--repeat also wrote the unnumbered file")
	}
}
