package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/snapshot"
	"github.com/dbparity/dbparity/internal/workload/replay"
)

// recorded is a client's workload as the replay tests need it: the
// capture, a copy of the data directory as it was before the client ran,
// and the end state it left.
type recorded struct {
	capture, start, end string
	captureS            float64
}

// logging are the settings that make a server's log capturable.
var logging = []string{"logging_collector=on", "log_destination=csvlog", "log_directory=capture-log",
	"log_min_duration_statement=0", "log_connections=on", "log_disconnections=on", "log_parameter_max_length=-1"}

// record sets up a managed server, copies its starting state, runs the
// client with statement logging on, snapshots the end state and captures
// the log.
func record(t *testing.T, setup, client func(inst *managed.Instance), settings ...string) recorded {
	t.Helper()
	ctx := context.Background()
	base := managedTarget(t)
	start := func(dir string, more ...string) *managed.Instance {
		return startCluster(t, dir, append(more, settings...)...)
	}
	inst := start(base.PGData)
	setup(inst)
	inst.Stop()
	rec := recorded{start: base.PGData + "-start"}
	if out, err := exec.Command("cp", "-a", base.PGData, rec.start).CombinedOutput(); err != nil {
		t.Fatalf("copy the starting state: %v\n%s", err, out)
	}
	inst = start(base.PGData, logging...)
	client(inst)
	rec.end = filepath.Join(t.TempDir(), "end.snap")
	withConn(t, Target{URL: inst.URL()}, func(c engine.Conn) error {
		s, err := snapshot.Take(ctx, c, engine.Postgres, inst.URL())
		if err != nil {
			return err
		}
		return snapshot.Write(rec.end, s)
	}, "snapshot")
	inst.Stop()
	rec.capture = filepath.Join(t.TempDir(), "client.capture")
	c := captureLog(t, base.PGData, rec.capture)
	rec.captureS = c.End.Sub(c.Start).Seconds()
	return rec
}

// replays numbers the copies replayVerified makes.
var replays atomic.Int64

// replayVerified replays rec on a fresh copy of its starting state at
// speed (0: as fast as possible), verifying the end state; it fails the
// test if the replay does not end within limit.
func replayVerified(t *testing.T, rec recorded, speed float64, limit time.Duration) (*result.Run, string) {
	t.Helper()
	dir := fmt.Sprintf("%s-replay-%s-%d", rec.start, strings.ReplaceAll(t.Name(), "/", "_"), replays.Add(1))
	os.RemoveAll(dir)
	if out, err := exec.Command("cp", "-a", rec.start, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the starting state: %v\n%s", err, out)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	inst, err := managed.Start(context.Background(), managed.Options{DataDir: dir, Settings: []string{"fsync=off", "autovacuum=off", "max_connections=120"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	path := filepath.Join(t.TempDir(), "replay.json")
	var out bytesBuffer
	err = Replay(ctx, ReplayOptions{Common: Common{Target: Target{URL: inst.URL()}, Stdout: &out, Stderr: &out},
		Capture: rec.capture, Speed: speed, Label: "replay", Out: path, Verify: rec.end, Collect: CollectOptions{Off: true}})
	if err != nil {
		t.Fatalf("replay: %v (limit %s)\n%s", err, limit, out.String())
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Replay.EndState == nil {
		t.Fatalf("no end state verified:\n%s", out.String())
	}
	return r, out.String()
}

// pgbench's TPC-B at full speed on one branch row (every transaction
// waits for the previous one's lock), in both protocols with 4 clients
// and with 100 clients, replayed at the captured pace and as fast as
// possible: the end state matches (pgbench_history's mtime is the
// clock's), every transaction commits again, nothing diverges, and the
// replay keeps up. Synchronised on every statement, as before commit
// order, such captures did not finish in minutes; the bound here is
// twice the captured time and 3 s, a margin a busy 2-core machine keeps
// (the benchmark bench/replayclients measures the pace: 1.0-1.1x).
func TestReplayPgbenchVerified(t *testing.T) {
	t.Parallel()
	pgbench := pgTool(t, "pgbench")
	for _, c := range []struct {
		name, mode, clients string
		speeds              []float64
	}{
		{"extended", "extended", "4", []float64{1, 0}},
		{"prepared", "prepared", "4", []float64{1}},
		{"100 clients", "extended", "100", []float64{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := record(t, func(inst *managed.Instance) { client(t, inst, pgbench, "-i", "-q", "-s", "1") },
				func(inst *managed.Instance) {
					// 1,000 transactions whatever the machine's load
					// (-T 3 made 749 with the suite beside).
					n, _ := strconv.Atoi(c.clients)
					client(t, inst, pgbench, "-n", "-c", c.clients, "-j", "2", "-t", strconv.Itoa(1000/n), "-M", c.mode)
				}, "max_connections=120")
			for _, speed := range c.speeds {
				r, out := replayVerified(t, rec, speed, 90*time.Second)
				rp, es := r.Replay, r.Replay.EndState
				if es.Match+es.ClockOnly != es.Of || es.Of != 4 {
					t.Errorf("speed %g: %s\n%s", speed, es.Summary, out)
				}
				for _, tb := range es.Tables {
					if tb.Verdict == snapshot.ClockOnly && (tb.Name != "public.pgbench_history" || strings.Join(tb.Columns, ",") != "mtime") {
						t.Errorf("table %+v differs in more than pgbench_history's clock column", tb)
					}
				}
				if rp.Divergent() != 0 || rp.ReplayedTransactions != rp.CapturedTransactions || rp.CapturedTransactions < 1000 {
					t.Errorf("speed %g: divergent %d, transactions %d of %d: %+v", speed, rp.Divergent(), rp.ReplayedTransactions, rp.CapturedTransactions, rp.Outcomes)
				}
				if limit := 2*rec.captureS + 3; rp.ReplaySeconds > limit && speed != 0 {
					// A host too loaded to replay it in time (with two
					// suites beside: 15.4 s for a 5.8 s capture): the pace
					// is kept if as fast as possible is not much faster.
					fast, _ := replayVerified(t, rec, 0, 90*time.Second)
					// Paced, the replay fell further behind than as fast as
					// possible on a loaded host: 10.4 s against 3.6 s for a
					// 2.5 s capture, alone in the suite, with no release or
					// stall reported (issue 49 to find why); a stall of the
					// replay's own is well beyond that.
					if f := fast.Replay.ReplaySeconds; rp.ReplaySeconds > 3*f+3 {
						stalled(t, speed, rp, rec.captureS, fmt.Sprintf("more than %.1f s, and as fast as possible took %.1f s", limit, f))
					}
				} else if speed == 0 && rp.ReplaySeconds > 2*limit {
					// As fast as possible, pgbench's four sessions on one
					// branch row wait on each other's locks and commits
					// more than at their pace (14.4 s for a 5.1 s capture
					// that speed 1 replayed in 5.6 s; 23.5 s for a 2.6 s
					// one with two suites beside, no stall).
					stalled(t, speed, rp, rec.captureS, fmt.Sprintf("more than %.1f s", 2*limit))
				}
				// Releases come from the log's order where it is not the
				// server's (docs/replay.md, Known limits): a backend
				// descheduled between its COMMIT and its log line. 100
				// clients on one row: 3.2-4.0% of the transactions on a
				// quiet 2-core machine (9 runs), 1.1-1.6% beside two busy
				// loops, 5.3% in CI beside the other packages' tests.
				if n := int64(len(rp.Releases)); n > rp.CapturedTransactions/10 {
					var first []string
					for i := 0; i < len(rp.Releases) && i < 3; i++ {
						first = append(first, rp.Releases[i].Cycle)
					}
					t.Errorf("speed %g: sync released %d times in %d transactions (first: %s)", speed, n, rp.CapturedTransactions, strings.Join(first, "; "))
				}
				t.Logf("pgbench -M %s -c %s, speed %g: %s; capture %.2f s, replay %.2f s; %d transactions; sync released %d",
					c.mode, c.clients, speed, es.Summary, rec.captureS, rp.ReplaySeconds, rp.ReplayedTransactions, len(rp.Releases))
			}
		})
	}
}

// psycopgClient finds python3 with psycopg 3.
func psycopgClient(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import psycopg").Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but python3 with psycopg 3 is missing: %v", err)
		}
		t.Skipf("python3 with psycopg 3 is missing (pip install \"psycopg[binary]\"): %v", err)
	}
	return py
}

// A psycopg 3 client: typed parameters, savepoints, COPY FROM STDIN, a
// statement name reused for another text after a Close, and two sessions
// contending for one row lock. The replay at the captured pace ends;
// every table matches but the one COPY filled, whose rows the log never
// held: the end state names that cause, and the outcomes that class.
func TestReplayPsycopg(t *testing.T) {
	t.Parallel()
	py := psycopgClient(t)
	script, err := filepath.Abs("testdata/psycopg_client.py")
	if err != nil {
		t.Fatal(err)
	}
	rec := record(t, func(inst *managed.Instance) {
		execSQL(t, Target{URL: inst.URL()}, `CREATE TABLE typed(note text); CREATE TABLE sp(v int); CREATE TABLE copied(v int);
			CREATE TABLE reused(v text); CREATE TABLE counter(id int PRIMARY KEY, n int); INSERT INTO counter VALUES (1, 0)`)
	}, func(inst *managed.Instance) {
		dsn := "host=" + inst.SocketDir + " port=" + strconv.Itoa(inst.Port) + " user=" + inst.User + " dbname=" + inst.Database
		out, err := exec.Command(py, script, dsn).CombinedOutput()
		if err != nil {
			t.Fatalf("psycopg client: %v\n%s", err, out)
		}
		t.Logf("client: %s", strings.TrimSpace(string(out)))
	})
	r, out := replayVerified(t, rec, 1, 60*time.Second)
	rp, es := r.Replay, r.Replay.EndState
	verdict := map[string]string{}
	for _, tb := range es.Tables {
		verdict[tb.Name] = tb.Verdict
	}
	if !strings.Contains(es.Summary, "public.copied (0 rows, want 5): its COPY FROM STDIN rows are not in the server log") {
		t.Errorf("the end state does not name the COPY's missing rows: %s", es.Summary)
	}
	for name, want := range map[string]string{"public.typed": snapshot.Match, "public.sp": snapshot.Match,
		"public.reused": snapshot.Match, "public.counter": snapshot.Match, "public.copied": snapshot.Explained} {
		if verdict[name] != want {
			t.Errorf("%s: %s, want %s (%s)\n%s", name, verdict[name], want, es.Summary, out)
		}
	}
	kinds := map[string]int64{}
	for _, o := range rp.Outcomes {
		kinds[o.Kind] += o.Count
	}
	if kinds["data not captured"] != 1 || kinds["new error"] != 0 || kinds["vanished error"] != 0 {
		t.Errorf("outcomes %+v", rp.Outcomes)
	}
	if rp.Typing == nil || rp.Typing.Texts < 2 {
		t.Errorf("typing %+v: the typed statements were not typed", rp.Typing)
	}
	if rp.ReplayedTransactions != rp.CapturedTransactions {
		t.Errorf("transactions captured %d, replayed %d", rp.CapturedTransactions, rp.ReplayedTransactions)
	}
	t.Logf("psycopg: %s; capture %.2f s, replay at speed 1 %.2f s; typed %+v; outcomes %+v",
		es.Summary, rec.captureS, rp.ReplaySeconds, *rp.Typing, rp.Outcomes)
}

// A replay whose end state differs from the expected one beyond the
// causes it names is a check that failed (exit 3), and its report says
// so in the headline; the result is written.
func TestReplayEndStateDiffers(t *testing.T) {
	t.Parallel()
	psql := pgTool(t, "psql")
	rec := record(t, func(inst *managed.Instance) { execSQL(t, Target{URL: inst.URL()}, "CREATE TABLE t(v int)") },
		func(inst *managed.Instance) { client(t, inst, psql, "-c", "INSERT INTO t VALUES (1)") })
	// The platform under test does not start from the capture's state.
	inst := startCluster(t, rec.start)
	execSQL(t, Target{URL: inst.URL()}, "INSERT INTO t VALUES (2)")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "replay.json")
	var out bytesBuffer
	err := Replay(ctx, ReplayOptions{Common: Common{Target: Target{URL: inst.URL()}, Stdout: &out, Stderr: &out},
		Capture: rec.capture, Speed: 0, Label: "replay", Out: path, Verify: rec.end, Collect: CollectOptions{Off: true}})
	if !errors.Is(err, ErrEndStateDiffers) || !strings.Contains(err.Error(), "public.t: 2 rows, want 1") {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	r, rerr := result.Read(path)
	if rerr != nil || !r.Replay.EndStateDiffers() {
		t.Fatalf("result: %v %+v", rerr, r.Replay.EndState)
	}
	if !strings.Contains(out.String(), "END STATE    DIFFERS: 0 of 1 tables match") {
		t.Errorf("the headline does not say the end state differs:\n%s", out.String())
	}
}

// The causes a capture knows of: a COPY's missing rows, values drawn at
// random; not the clock's, which the comparison of date and time columns
// sets apart, and not tables only read.
func TestEndStateCauses(t *testing.T) {
	t.Parallel()
	c := &capture.Capture{Texts: []string{"COPY events (a) FROM STDIN", "UPDATE public.t SET v = random() WHERE id = $1",
		"INSERT INTO h VALUES ($1, now())", "SELECT random() FROM r"},
		Sessions: []capture.Session{{Statements: []capture.Statement{{Text: 0}, {Text: 1}, {Text: 2}, {Text: 3}}}}}
	got := causes(c, nil)
	if len(got) != 2 || !got["events"].Rows || got["public.t"].Rows || !strings.Contains(got["public.t"].Why, "random()") {
		t.Errorf("causes %+v", got)
	}
}

// A table that differs after statements of the replay that wrote it and
// ended otherwise than captured says so, and still differs.
func TestEndStateAfterDivergence(t *testing.T) {
	t.Parallel()
	after := diverged([]result.ReplayOutcome{
		{Kind: replay.Vanished, Fingerprint: "INSERT INTO sbtest1 (id, k, c, pad) VALUES (...)", Captured: "23505", Count: 12},
		{Kind: replay.Vanished, Fingerprint: "DELETE FROM sbtest1 WHERE id = ?", Captured: "23505", Count: 3},
		{Kind: replay.Expected, Fingerprint: "INSERT INTO sbtest2 (id) VALUES (...)", Captured: "23505", Replayed: "23505", Count: 5},
		{Kind: replay.New, Fingerprint: "SELECT 1/0", Replayed: "22012", Count: 1},
	})
	if len(after) != 1 || !strings.HasPrefix(after["sbtest1"], "after 15 statement(s) writing it ended otherwise than captured (vanished error 23505: INSERT INTO sbtest1") {
		t.Errorf("after %q", after)
	}
	cmp := snapshot.Comparison{Tables: []snapshot.TableDiff{{Name: "public.sbtest1", Verdict: snapshot.Differs, WantRows: 10, GotRows: 10, Columns: []string{"k"}},
		{Name: "public.sbtest2", Verdict: snapshot.Differs, WantRows: 10, GotRows: 10, Columns: []string{"c"}}}}
	cmp.After(after)
	if s := cmp.Summary(); !strings.Contains(s, "public.sbtest1: 10 rows alike in number, content differs in k, after 15 statement(s)") ||
		!strings.Contains(s, "public.sbtest2: 10 rows alike in number, content differs in c;") && !strings.HasSuffix(s, "content differs in c") {
		t.Errorf("summary %q", s)
	}
	if _, _, explained, _ := cmp.Matching(); explained != 0 {
		t.Error("a table that differs after divergent statements counted as explained")
	}
}

// stalled fails a replay that took too long by a bound meant for stalls
// when the replay reports one (a statement, or a wait for another
// session, past the stall timeout), and logs it otherwise: on a
// saturated host each commit another session waits for costs a wake-up
// the scheduler delays, and a replay of pgbench's hot row slows by that
// without stalling (bench/replayclients measures the pace on a quiet
// machine).
func stalled(t *testing.T, speed float64, rp *result.Replay, captureS float64, bound string) {
	t.Helper()
	if len(rp.Stalls) > 0 {
		t.Errorf("speed %g: replayed in %.1f s, captured %.1f s: %s, with %d stalls (first: %+v)", speed, rp.ReplaySeconds, captureS, bound,
			len(rp.Stalls), rp.Stalls[0])
		return
	}
	t.Logf("speed %g: replayed in %.1f s, captured %.1f s: %s, with no stall (a loaded host)", speed, rp.ReplaySeconds, captureS, bound)
}
