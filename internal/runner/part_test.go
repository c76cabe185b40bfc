package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/workload/orderentry"
)

func TestParsePart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want string // error text; "" for none
	}{
		{"0/3", ""}, {"2/3", ""}, {"3/3", "counts from 0 to 2"}, {"-1/3", "counts from 0"},
		{"1", "give I/N"}, {"a/b", "give I/N"}, {"0/0", "between 1 and"},
	} {
		_, err := ParsePart(c.in)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("--part %s: %v, want %q", c.in, err, c.want)
		}
	}
}

// Each part gets whole shares of the data: order-entry's sessions of one
// home warehouse all go to one part; every session to exactly one part.
func TestPartSessions(t *testing.T) {
	t.Parallel()
	oe := &orderentry.OrderEntry{Warehouses: 4, HomeWarehouse: "fixed"}
	owner := map[int]int{}
	for i := range 3 {
		ids, err := partSessions(oe, 20, &Part{Index: i, Of: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range ids {
			if _, ok := owner[g]; ok {
				t.Errorf("session %d in two parts", g)
			}
			owner[g] = i
		}
	}
	for g := range 20 {
		if owner[g] != owner[g%4] {
			t.Errorf("session %d (warehouse %d) in part %d, session %d of the same warehouse in part %d", g, g%4+1, owner[g], g%4, owner[g%4])
		}
	}
	if len(owner) != 20 {
		t.Errorf("%d of 20 sessions in a part", len(owner))
	}
	if _, err := partSessions(oe, 20, &Part{Index: 0, Of: 5}); err == nil || !strings.Contains(err.Error(), "4 home warehouses") {
		t.Errorf("5 parts of 4 warehouses: %v", err)
	}
	oe.HomeWarehouse = "random"
	if _, err := partSessions(oe, 2, &Part{Index: 2, Of: 3}); err == nil || !strings.Contains(err.Error(), "--users at least 3") {
		t.Errorf("3 parts of 2 sessions: %v", err)
	}
}

// The faults of a split run end in bounded time with one clear error and
// no result: a part whose partners never come gives up after
// --barrier-timeout; a run id used again is refused; a --start-at in the
// past is refused. Two parts given one --start-at run at once (their
// windows within 100 ms) and merge.
func TestPartBarrierFaults(t *testing.T) {
	t.Parallel()
	tg, inst := managedServer(t)
	ctx := context.Background()
	c, out := common(t, tg)
	c.Workload.(*orderentry.OrderEntry).Warehouses = 2
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	dir := t.TempDir()
	run := func(p *Part, name string) error {
		return Run(ctx, RunOptions{Common: c, Users: 2, Duration: 2 * time.Second, Warmup: 500 * time.Millisecond,
			Label: "split", Out: filepath.Join(dir, name), Part: p, Collect: CollectOptions{Off: true}})
	}
	start := time.Now()
	err := run(&Part{Index: 0, Of: 2, RunID: "lonely", BarrierTimeout: 1500 * time.Millisecond}, "lonely.json")
	if err == nil || !strings.Contains(err.Error(), "only 1 of 2 parts of run \"lonely\" registered") {
		t.Errorf("a part alone: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a part alone gave up after %s", took)
	}
	for _, f := range []string{"lonely.json", "lonely.json.journal"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("a part that never started left %s", f)
		}
	}
	// The server frozen (SIGSTOP) while the part waits for its partners:
	// the wait ends after --statement-timeout, not --barrier-timeout.
	signal := func(sig syscall.Signal) {
		for _, pid := range inst.Processes() {
			syscall.Kill(pid, sig)
		}
	}
	t.Cleanup(func() { signal(syscall.SIGCONT) })
	time.AfterFunc(1500*time.Millisecond, func() { signal(syscall.SIGSTOP) })
	start = time.Now()
	err = Run(ctx, RunOptions{Common: c, Users: 2, Duration: 2 * time.Second, Label: "split", Out: filepath.Join(dir, "frozen.json"),
		Part: &Part{Index: 0, Of: 2, RunID: "frozen", BarrierTimeout: time.Minute}, Collect: CollectOptions{Off: true},
		Faults: Faults{StatementTimeout: 2 * time.Second}})
	took := time.Since(start)
	signal(syscall.SIGCONT)
	// (On a busy host the freeze may come while the sessions connect:
	// "did not accept a connection within 2s".)
	if err == nil || !strings.Contains(err.Error(), " within 2s") || took > 15*time.Second {
		t.Errorf("a part waiting on a frozen server: %v after %s", err, took.Round(time.Millisecond))
	}
	t.Logf("a frozen server ended the barrier's wait after %s: %v", took.Round(time.Millisecond), err)

	// The part that gave up removed its row: the other part of its run,
	// started later, finds it alone, waits and gives up in turn (before,
	// it found the row, started at once and ran alone).
	before := len(out.String())
	err = run(&Part{Index: 1, Of: 2, RunID: "lonely", BarrierTimeout: time.Second}, "again.json")
	if said := out.String()[before:]; err == nil || !strings.Contains(err.Error(), "only 1 of 2 parts of run \"lonely\" registered") ||
		strings.Contains(said, "all 2 parts registered") {
		t.Errorf("the other part after one gave up: %v\n%s", err, said)
	}
	var ue UsageError
	if err := run(&Part{Index: 0, Of: 2, StartAt: time.Now().Add(-time.Minute)}, "past.json"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "past") {
		t.Errorf("--start-at in the past: %v", err)
	}

	at := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = run(&Part{Index: i, Of: 2, StartAt: at}, []string{"p0.json", "p1.json"}[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("parts with --start-at: %v\n%s", err, out)
	}
	var parts []*result.Run
	files := []string{filepath.Join(dir, "p0.json"), filepath.Join(dir, "p1.json")}
	for _, f := range files {
		r, err := result.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, r)
	}
	// On a saturated host (two suites beside) the parts' windows started
	// 137 ms apart once: merge refuses them, says so, and merges them
	// flagged when forced.
	m := mergeLoaded(t, parts, files)
	if m.Merged.SkewMs > 100 && len(m.Merged.Forced) == 0 || m.Driver.Users != 2 || parts[0].Part.Sync != "start-at" {
		t.Errorf("skew %.1f ms (forced: %q), users %d, sync %q", m.Merged.SkewMs, m.Merged.Forced, m.Driver.Users, parts[0].Part.Sync)
	}
	if d := parts[0].MeasureStart.Sub(at.Add(500 * time.Millisecond)); d < 0 {
		t.Errorf("the window started %s before --start-at and the warm-up", -d)
	} else if d > 100*time.Millisecond {
		t.Logf("the window started %s after --start-at and the warm-up (a loaded host)", d)
	}
	t.Logf("windows %.1f ms apart", m.Merged.SkewMs)
}

// The barrier counts the parts that are alive, on every engine a split run
// drives: a row left by a part killed outright (its heartbeat stopped), by
// an older dbparity (no heartbeat column: added, its rows never count), or
// by a part that gave up or was interrupted (it removes its own) does not
// make a later part of the run believe it is complete; two live parts
// agree on one start and leave no row; a part registered twice while the
// first still waits is refused.
func TestPartBarrierLiveness(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, e := range []struct {
		name string
		tg   func(t *testing.T) Target
	}{
		{"sqlite", func(t *testing.T) Target { return Target{URL: "sqlite://" + filepath.Join(t.TempDir(), "b.db")} }},
		{"postgres", func(t *testing.T) Target { tg, _ := managedServer(t); return tg }},
		{"mariadb", managedMariaDB},
	} {
		t.Run(e.name, func(t *testing.T) {
			o, err := openTarget(ctx, e.tg(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(o.close)
			testBarrierLiveness(t, o)
		})
	}
}

func testBarrierLiveness(t *testing.T, o *opened) {
	ctx := context.Background()
	now := o.Dialect.NowMicros()
	exec := func(sql string, args ...any) {
		t.Helper()
		c, err := o.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	rows := func(run string) int64 {
		t.Helper()
		c, err := o.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var n int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM dbparity_barrier WHERE run = $1", run).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var mu sync.Mutex
	var said []string
	wait := func(ctx context.Context, index int, run string, timeout time.Duration) (synced, error) {
		p := &Part{Index: index, Of: 2, RunID: run, BarrierTimeout: timeout}
		return p.wait(ctx, o, 10*time.Second, func(m string) { mu.Lock(); said = append(said, m); mu.Unlock() })
	}
	alone := func(what string, s synced, err error) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if err == nil || !strings.Contains(err.Error(), "only 1 of 2 parts") || s.method != "" || strings.Contains(strings.Join(said, "\n"), "all 2 parts registered") {
			t.Errorf("%s: %v; said %q", what, err, said)
		}
		said = nil
	}

	// The table of an older dbparity, with a row of part 1 in it.
	exec("CREATE TABLE dbparity_barrier (run varchar(200) NOT NULL, part int NOT NULL, parts int NOT NULL, host varchar(255)," +
		" registered_us bigint NOT NULL, PRIMARY KEY (run, part))")
	exec("INSERT INTO dbparity_barrier (run, part, parts, host, registered_us) VALUES ('r', 1, 2, 'old', " + now + ")")
	s, err := wait(ctx, 0, "r", time.Second)
	alone("beside an older dbparity's row", s, err)
	// A row of a part killed outright: its heartbeat 10 s old. And a row of
	// another run dead for two hours.
	exec("INSERT INTO dbparity_barrier (run, part, parts, host, registered_us, alive_us) VALUES ('r', 1, 2, 'killed', "+now+" - $1, "+now+" - $1)",
		(10 * time.Second).Microseconds())
	exec("INSERT INTO dbparity_barrier (run, part, parts, host, registered_us, alive_us) VALUES ('ancient', 0, 2, 'gone', "+now+" - $1, "+now+" - $1)",
		(2 * time.Hour).Microseconds())
	s, err = wait(ctx, 0, "r", time.Second)
	alone("beside a killed part's row", s, err)
	if n, m := rows("r"), rows("ancient"); n != 0 || m != 0 {
		t.Errorf("%d rows of run r left (the killed part's cleared, the part that gave up removed its own), %d of a run dead for 2 h", n, m)
	}

	// A part interrupted while it waits removes its row: the next part
	// waits alone, and gives up.
	// It is interrupted once its row is in (a fixed 700 ms ran out in its
	// connect on a loaded CI host, before there was a row to remove).
	ictx, cancel := context.WithCancel(ctx)
	ierr := make(chan error, 1)
	go func() { _, err := wait(ictx, 0, "i", time.Minute); ierr <- err }()
	for deadline := time.Now().Add(30 * time.Second); rows("i") == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-ierr; !errors.Is(err, context.Canceled) || rows("i") != 0 {
		t.Errorf("an interrupted part: %v, %d rows left", err, rows("i"))
	}
	mu.Lock()
	said = nil
	mu.Unlock()
	s, err = wait(ctx, 1, "i", time.Second)
	alone("after an interrupted part", s, err)

	// A part registered twice while the first waits.
	first := make(chan error)
	fctx, stop := context.WithCancel(ctx)
	go func() { _, err := wait(fctx, 0, "dup", time.Minute); first <- err }()
	// Once it has registered (a loaded host took over 1 s).
	for deadline := time.Now().Add(30 * time.Second); rows("dup") == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	var ue UsageError
	if _, err := wait(ctx, 0, "dup", time.Second); !errors.As(err, &ue) || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("part 0 twice: %v", err)
	}
	// Its row cleared while it waits (as a part registering after it would
	// clear it had it not answered for 3 s): the part registers again.
	exec("DELETE FROM dbparity_barrier WHERE run = 'dup'")
	heard := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(said, "\n"), "registering again")
	}
	// Its next heartbeat finds the row gone (within 1.5 s on a quiet host).
	for deadline := time.Now().Add(30 * time.Second); (rows("dup") != 1 || !heard()) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	again := heard()
	mu.Lock()
	said = nil
	mu.Unlock()
	if n := rows("dup"); n != 1 || !again {
		t.Errorf("a part whose row was cleared: %d rows, registered again: %v", n, again)
	}
	stop()
	<-first

	// Two live parts agree on one start and leave no row.
	var wg sync.WaitGroup
	got := make([]synced, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 500 * time.Millisecond)
			got[i], errs[i] = wait(ctx, i, "both", 30*time.Second)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// One start, each on its own clock as it reads the database's: apart
	// by at most the bounds each gives its reading (half its round trip,
	// 5.6 and 11.1 ms on a loaded host) and a millisecond.
	if d := got[0].startAt.Sub(got[1].startAt).Abs(); got[0].method != "barrier" || d > got[0].err+got[1].err+time.Millisecond {
		t.Errorf("two parts: %+v and %+v (%s apart)", got[0], got[1], d)
	}
	// Each removes its row by the start, or beside the run within
	// barrierLeave of it when the server is too slow for that.
	n := rows("both")
	for deadline := time.Now().Add(barrierLeave + time.Second); n != 0 && time.Now().Before(deadline); n = rows("both") {
		time.Sleep(50 * time.Millisecond)
	}
	if n != 0 {
		t.Errorf("two parts that started left %d rows", n)
	}
}
