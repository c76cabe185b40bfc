package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

// pgTool finds a PostgreSQL client program (pgbench, psql).
func pgTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name); len(m) > 0 {
		return m[len(m)-1]
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s is not installed", name)
	}
	t.Skipf("%s is not installed: install the PostgreSQL client programs to run this test", name)
	return ""
}

// client runs a PostgreSQL client program against inst.
func client(t *testing.T, inst *managed.Instance, prog string, args ...string) string {
	t.Helper()
	all := append([]string{"-h", inst.SocketDir, "-p", strconv.Itoa(inst.Port), "-U", inst.User}, args...)
	cmd := exec.Command(prog, append(all, inst.Database)...)
	cmd.Env = append(os.Environ(), "PGAPPNAME=")
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "no_such_table") {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(prog), args, err, out)
	}
	return string(out)
}

// pgbenchState is what a pgbench run leaves behind.
func pgbenchState(t *testing.T, tg Target) string {
	t.Helper()
	var history, accounts, tellers, branches, delta int64
	queryRow(t, tg, `SELECT (SELECT count(*) FROM pgbench_history), (SELECT sum(abalance) FROM pgbench_accounts),
		(SELECT sum(tbalance) FROM pgbench_tellers), (SELECT sum(bbalance) FROM pgbench_branches),
		(SELECT coalesce(sum(delta), 0) FROM pgbench_history)`, &history, &accounts, &tellers, &branches, &delta)
	return fmt.Sprintf("history %d rows, balances accounts %d tellers %d branches %d, history deltas %d",
		history, accounts, tellers, branches, delta)
}

// A real client nobody here wrote (pgbench, extended protocol with named
// prepared statements, and psql) runs against a managed server with
// statement logging; its log is captured; the server's starting state is
// restored into a second cluster; the capture is replayed there. Every
// session must replay the same transactions with no new error, the data
// must end as the original run left it, and the captured failure must be
// reported as expected. A second replay on a changed schema must report
// captureLog captures the csvlog a cluster on dataDir wrote into
// capture-log, writes it to out and returns it.
func captureLog(t *testing.T, dataDir, out string) *capture.Capture {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dataDir, "capture-log", "*.csv"))
	if len(logs) == 0 {
		t.Fatal("the server wrote no csvlog")
	}
	c, err := capture.Parse(logs, capture.Options{ParamMaxLength: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := capture.Write(out, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// startCluster starts a managed cluster on dir for the test's length, with
// fsync and autovacuum off and settings added.
func startCluster(t *testing.T, dir string, settings ...string) *managed.Instance {
	t.Helper()
	inst, err := managed.Start(context.Background(), managed.Options{DataDir: dir, Settings: append([]string{"fsync=off", "autovacuum=off"}, settings...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	return inst
}

// the new failures as divergence.
func TestCaptureAndReplayPgbench(t *testing.T) {
	t.Parallel()
	pgbench, psql := pgTool(t, "pgbench"), pgTool(t, "psql")
	ctx := context.Background()
	base := managedTarget(t)
	start := func(dir string, settings ...string) *managed.Instance { return startCluster(t, dir, settings...) }
	inst := start(base.PGData)
	client(t, inst, pgbench, "-i", "-q", "-s", "1")
	inst.Stop()
	snapshot := base.PGData + "-start"
	if out, err := exec.Command("cp", "-a", base.PGData, snapshot).CombinedOutput(); err != nil {
		t.Fatalf("copy the starting state: %v\n%s", err, out)
	}

	inst = start(base.PGData, "logging_collector=on", "log_destination=csvlog", "log_directory=capture-log",
		"log_min_duration_statement=0", "log_connections=on", "log_disconnections=on", "log_parameter_max_length=-1")
	client(t, inst, pgbench, "-n", "-c", "3", "-j", "1", "-t", "40", "-M", "prepared")
	client(t, inst, psql, "-X", "-c", "SELECT * FROM no_such_table")
	want := pgbenchState(t, Target{URL: inst.URL()})
	inst.Stop()

	capFile := filepath.Join(t.TempDir(), "pgbench.capture")
	captureLog(t, base.PGData, capFile)

	replayed := start(snapshot)
	var out bytesBuffer
	replay := func(out *bytesBuffer, label string) *result.Run {
		path := filepath.Join(t.TempDir(), label+".json")
		err := Replay(ctx, ReplayOptions{Common: Common{Target: Target{URL: replayed.URL()}, Stdout: out, Stderr: out},
			Capture: capFile, Speed: 0, Label: label, Out: path})
		if err != nil {
			t.Fatalf("replay: %v\n%s", err, out.String())
		}
		r, err := result.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := replay(&out, "replay")
	rp := r.Replay
	if got := pgbenchState(t, Target{URL: replayed.URL()}); got != want {
		t.Errorf("after the replay: %s\nafter the original run: %s", got, want)
	}
	// 3 clients × 40 transactions.
	if rp.CapturedCommits < 120 || rp.ReplayedCommits != rp.CapturedCommits || len(rp.SessionDiffs) != 0 {
		t.Errorf("commits captured %d, replayed %d; sessions that differ: %+v", rp.CapturedCommits, rp.ReplayedCommits, rp.SessionDiffs)
	}
	if rp.Replayed != rp.Statements || rp.Divergent() != 0 {
		t.Errorf("replayed %d of %d statements, %d divergent: %+v", rp.Replayed, rp.Statements, rp.Divergent(), rp.Outcomes)
	}
	expected := false
	for _, o := range rp.Outcomes {
		expected = expected || (o.Kind == "expected error" && o.Captured == "42P01" && o.Replayed == "42P01" && o.Count == 1)
	}
	if !expected {
		t.Errorf("the captured failure is not an expected error: %+v", rp.Outcomes)
	}
	s := out.String()
	for _, line := range []string{"replaying " + capFile, "expected error", "capture"} {
		if !strings.Contains(s, line) {
			t.Errorf("replay output lacks %q:\n%s", line, s)
		}
	}

	// The same capture on a schema without pgbench_history: every INSERT
	// into it is a new failure.
	execSQL(t, Target{URL: replayed.URL()}, "DROP TABLE pgbench_history")
	var out2 bytesBuffer
	rp = replay(&out2, "diverged").Replay
	var inserts int64
	for _, o := range rp.Outcomes {
		if o.Kind == "new error" && o.Replayed == "42P01" && strings.Contains(o.Fingerprint, "pgbench_history") {
			inserts += o.Count
		}
	}
	if inserts < 120 {
		t.Errorf("new failures on the missing table: %d, want one per transaction: %+v", inserts, rp.Outcomes)
	}
	if !strings.Contains(out2.String(), "new error") {
		t.Errorf("the report does not show the divergence:\n%s", out2.String())
	}
}
