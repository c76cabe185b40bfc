package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

// managedTarget gives a test its own throw-away cluster directory. Skipped
// when no PostgreSQL is installed, except under CI=true where that is a
// failure.
func managedTarget(t *testing.T) Target {
	t.Helper()
	if _, err := exec.LookPath("initdb"); err != nil {
		if dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(dirs) == 0 {
			if os.Getenv("CI") == "true" {
				t.Fatal("CI=true but no PostgreSQL server binaries (initdb) are installed")
			}
			t.Skip("no PostgreSQL server binaries (initdb) on PATH or in /usr/lib/postgresql: install PostgreSQL to run this test")
		}
	}
	// Not t.TempDir: its parent is mode 0700, which the unprivileged server
	// user (when tests run as root) cannot enter.
	dir, err := os.MkdirTemp("", "dbparity-pg-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return Target{Managed: "postgres", PGData: filepath.Join(dir, "data"), PGSet: []string{"fsync=off", "autovacuum=off"}}
}

// managedServer starts a cluster the test holds for its whole length and
// returns a plain target on it (commands then do not start and stop it);
// settings are added to the test profile.
func managedServer(t *testing.T, settings ...string) (Target, *managed.Instance) {
	t.Helper()
	tg := managedTarget(t)
	inst, err := managed.Start(context.Background(), managed.Options{DataDir: tg.PGData, Settings: append(tg.PGSet, settings...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	return Target{URL: inst.URL()}, inst
}

// dbCounters reads the database's own transaction counters.
func dbCounters(t *testing.T, tg Target) (commits, rollbacks int64) {
	t.Helper()
	queryRow(t, tg, "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()",
		&commits, &rollbacks)
	return commits, rollbacks
}

func TestOrderEntryManagedPostgres(t *testing.T) {
	t.Parallel()
	tg := managedTarget(t)
	var before, after [2]int64
	r := runAndVerifyHook(t, tg,
		func() { before[0], before[1] = dbCounters(t, tg) },
		func() { after[0], after[1] = dbCounters(t, tg) })
	committed, rolledBack := driverCounts(r)
	// The tool makes a few transactions of its own (schema lookups, the
	// server version, the counter read itself): about a dozen measured.
	// And pgx describes a pipelined batch's new statements in a round trip
	// of their own before the batch's BEGIN: the server counts that as a
	// transaction, once per batch shape per connection (at most a dozen
	// shapes, so 36 here; measured 19). And the round trip is timed with
	// empty queries before the run. Autovacuum is off, so nothing else
	// runs here.
	dc, dr := after[0]-before[0], after[1]-before[1]
	t.Logf("tool committed %d, its collectors sent %d statements, database counted %d; tool rolled back %d, database counted %d",
		committed, r.CollectorStatements, dc, rolledBack, dr)
	committed += r.CollectorStatements
	if own := int64(20 + roundTrips + 12*3); dc < committed || dc > committed+own {
		t.Errorf("database counted %d commits, the result %d (want equal within the tool's own %d)", dc, committed, own)
	}
	if dr < rolledBack || dr > rolledBack+5 {
		t.Errorf("database counted %d rollbacks, the result %d", dr, rolledBack)
	}
	if !r.Target.Managed || r.Target.Settings["fsync"] != "off" || r.Target.ServerVersion == "" {
		t.Errorf("target disclosure %+v", r.Target)
	}
	if !strings.HasPrefix(r.Disclosure.Database.Settings["fsync"], "off") {
		t.Errorf("database settings lack fsync=off: %v", r.Disclosure.Database.Settings)
	}
	// DB CPU from the managed server's processes, DB time from the server,
	// waits sampled: the sessions were busy, so each must be seen.
	for _, name := range []string{"DB time", "DB CPU", "DB time (sampled)", "WAL (redo) size"} {
		if l := r.LoadProfile.Line(name); l == nil || l.Total == nil || *l.Total <= 0 {
			t.Errorf("load profile %s: %+v", name, l)
		}
	}
	if l := r.LoadProfile.Line("DB CPU"); l.Source != "os.server_cpu_s" {
		t.Errorf("DB CPU of a managed server from %s, want its processes' CPU", l.Source)
	}
	if c := r.DBCounters; c == nil || c.End["pg_stat_database.xact_commit"] <= c.Start["pg_stat_database.xact_commit"] {
		t.Errorf("raw counters %+v", c)
	}
	if r.Waits == nil || r.Waits.Samples < 20 || len(r.Waits.Events) == 0 {
		t.Errorf("waits %+v", r.Waits)
	}
	if r.OS.Window.ServerCPUCores == nil || *r.OS.Window.ServerCPUCores <= 0 {
		t.Error("the managed server's CPU is not in the OS section")
	}
}

// Sessions whose connections the server kills reconnect and go on; the
// lost transactions are counted as connection errors, never retried.
func TestReconnectAfterTerminatedBackends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct, inst := managedServer(t)
	c, out := common(t, direct)
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	killer, err := pgx.Connect(ctx, inst.URL()+"&application_name=killer")
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)
	killed := make(chan int64, 1)
	path := filepath.Join(t.TempDir(), "r.json")
	// Each killed session may lose the transaction it was in: 3 of 258
	// on a loaded host, above the default 1% that fails a run, and 3 of
	// 25 (12%) beside a second suite.
	pct := 50.0
	o := RunOptions{Common: c, Users: 3, Duration: 4 * time.Second, Label: "kill", Out: path, Faults: Faults{MaxErrorPct: &pct}}
	// 1.5 s into the measured window, when every session is connected
	// however long the run took to start on a loaded host.
	o.phaseHook = func(p int, _ time.Time) {
		if p != driver.Measure {
			return
		}
		time.AfterFunc(1500*time.Millisecond, func() {
			var n int64
			killer.QueryRow(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'dbparity'").Scan(&n)
			killed <- n
		})
	}
	if err := Run(ctx, o); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if n := <-killed; n != 3 {
		t.Fatalf("terminated %d backends, want the 3 sessions", n)
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Driver.Reconnects < 3 || r.Errors["connection"] < 1 || r.Errors["connection"] > 3 {
		t.Errorf("reconnects %d, connection errors %d: want 3 reconnects and at most one lost transaction per session",
			r.Driver.Reconnects, r.Errors["connection"])
	}
	var late int64
	for _, iv := range r.Series {
		if iv.At > 2.5 {
			late += iv.Commits
		}
	}
	if late == 0 {
		t.Error("no commits after the sessions reconnected")
	}
	if err := Check(ctx, c); err != nil {
		t.Errorf("check: %v", err)
	}

	// More sessions than the server accepts (max_connections 300): the run
	// fails before it starts, with the server's reason, and leaves nothing.
	path2 := filepath.Join(t.TempDir(), "r2.json")
	err = Run(ctx, RunOptions{Common: c, Users: 310, Duration: time.Second, Label: "many", Out: path2})
	if err == nil || !strings.Contains(err.Error(), "53300") {
		t.Errorf("310 sessions against max_connections 300: %v", err)
	}
	for _, p := range []string{path2, result.JournalPath(path2)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a run that never started left %s", p)
		}
	}
}

// driverCounts sums a run's committed transactions and those that ended
// in a rollback, by design or by error, over every phase: what the
// server's commit and rollback counters saw.
func driverCounts(r *result.Run) (committed, rolledBack int64) {
	for _, p := range r.Phases {
		for _, n := range p.Committed {
			committed += n
		}
		for _, n := range p.Rollbacks {
			rolledBack += n
		}
		for _, n := range p.Errors {
			rolledBack += n
		}
	}
	return committed, rolledBack
}
