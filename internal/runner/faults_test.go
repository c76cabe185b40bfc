package runner

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
)

// fault is a step of a case's plan: do, at after the measured window began.
type fault struct {
	at time.Duration
	do func()
}

// Faults injected into a managed server in the middle of a run: each ends
// in bounded time with an honest, complete result file. The subtests share
// one server and one load, in order.
func TestFaultsOnManagedPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct, inst := managedServer(t)
	c, out := common(t, direct)
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	signal := func(sig syscall.Signal) {
		if _, err := inst.Signal(sig); err != nil {
			t.Errorf("signal %v: %v", sig, err)
		}
	}
	// run runs o and returns its result, its error and
	// how long it took.
	// how long it took from the start of its measured window. The faults
	// of a case are timed from that start too (plan): on a loaded host the
	// run's setup took more than the 1.5 s a fault waited, and the server
	// froze before the run could connect.
	run := func(t *testing.T, ctx context.Context, o RunOptions, plan ...fault) (*result.Run, error, time.Duration) {
		t.Helper()
		o.Common, o.Label, o.Users = c, "fault", 4
		o.Out = filepath.Join(t.TempDir(), "r.json")
		start := time.Now()
		began := make(chan time.Time, 1)
		o.phaseHook = func(p int, at time.Time) {
			if p != driver.Measure {
				return
			}
			began <- at
			for _, f := range plan {
				time.AfterFunc(f.at-time.Since(at), f.do)
			}
		}
		err := Run(ctx, o)
		select {
		case start = <-began:
		default:
		}
		took := time.Since(start)
		r, rerr := result.Read(o.Out)
		if rerr != nil {
			t.Fatalf("no result after %s (run: %v): %v\n%s", took, err, rerr, out)
		}
		return r, err, took
	}

	// The database host read through the frozen server's own connection
	// (--db-host sql) must not stretch the run either.
	for _, host := range []string{"local", "sql"} {
		t.Run("frozen, database host "+host, func(t *testing.T) {
			// Frozen 1.5 s into a 4 s window, statements time out after 2 s.
			defer signal(syscall.SIGCONT)
			r, err, took := run(t, ctx, RunOptions{Duration: 4 * time.Second, Faults: Faults{StatementTimeout: 2 * time.Second},
				Collect: CollectOptions{DBHost: host}}, fault{1500 * time.Millisecond, func() { signal(syscall.SIGSTOP) }})
			t.Logf("frozen server, database host %s: run ended after %s: %v", host, took, err)
			// The window ends at 4 s; the run within 2 × the timeout after it
			// (a second more for a busy machine).
			if took > 9*time.Second {
				t.Errorf("run took %s: window 4 s, statement timeout 2 s", took)
			}
			if err == nil || errors.Is(err, ErrInterrupted) {
				t.Errorf("a run against a frozen server returned %v, want a failure", err)
			}
			if !r.Partial || !r.Failed || r.FailedReason != "server did not answer for 2s" {
				t.Errorf("partial %v failed %v reason %q", r.Partial, r.Failed, r.FailedReason)
			}
			if len(r.Events) == 0 || r.Events[len(r.Events)-1].Kind != "outage" || !r.Events[len(r.Events)-1].End.IsZero() {
				t.Errorf("events %+v: want an outage open at the end", r.Events)
			}
			if r.Errors["timeout"] == 0 {
				t.Errorf("no timeouts counted: %v", r.Errors)
			}
			if host == "sql" && !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.HasPrefix(w, "collector (os (sql)): ") }) {
				t.Errorf("the database host's readings that timed out are not in the warnings: %q", r.Warnings)
			}
		})
	}

	t.Run("interrupted while frozen", func(t *testing.T) {
		// The default statement timeout (30 s) is far away: Ctrl-C must end
		// the run within 5 s all the same.
		ictx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer signal(syscall.SIGCONT)
		cancelled := make(chan time.Time, 1)
		r, err, _ := run(t, ictx, RunOptions{Duration: time.Minute},
			fault{time.Second, func() { signal(syscall.SIGSTOP) }},
			fault{2 * time.Second, func() { cancelled <- time.Now(); cancel() }})
		var at time.Time
		select {
		case at = <-cancelled:
		default:
			t.Fatalf("the run ended before it was interrupted: %v", err)
		}
		after := time.Since(at)
		t.Logf("interrupted a run on a frozen server: it ended %s after the interrupt", after)
		if after > 5*time.Second {
			t.Errorf("the run ended %s after Ctrl-C, want within 5 s", after)
		}
		if !errors.Is(err, ErrInterrupted) || !r.Partial || r.PartialReason != "interrupted" {
			t.Errorf("err %v, partial %v %q", err, r.Partial, r.PartialReason)
		}
	})

	t.Run("other commands interrupted while frozen", func(t *testing.T) {
		signal(syscall.SIGSTOP)
		defer signal(syscall.SIGCONT)
		// slob's load, so that statements the frozen server runs once it
		// wakes cannot touch the order-entry load the next cases use.
		sc := c
		sc.Workload = slob(t, "--schemas", "1", "--scale", "100")
		for name, command := range map[string]func(context.Context) error{
			"check": func(ctx context.Context) error { return Check(ctx, c) },
			"load":  func(ctx context.Context) error { return Load(ctx, LoadOptions{Common: sc}) },
		} {
			ictx, cancel := context.WithTimeout(ctx, time.Second)
			start := time.Now()
			err := command(ictx)
			cancel()
			t.Logf("%s on a frozen server, interrupted after 1 s: returned after %s: %v", name, time.Since(start), err)
			if err == nil || time.Since(start) > 6*time.Second {
				t.Errorf("%s returned %v after %s, want an error within 5 s of the interrupt", name, err, time.Since(start))
			}
		}
	})

	t.Run("killed and restarted", func(t *testing.T) {
		restarted := make(chan error, 1)
		plan := []fault{{1500 * time.Millisecond, func() { signal(syscall.SIGKILL) }}, {3 * time.Second, func() { restarted <- inst.Restart(ctx) }}}
		// Every session fails a few reconnects while the server is down:
		// not what this case tests, so the error threshold is lifted (on
		// a busy host the run's few transactions make them a larger
		// share: 24 of 102 with a second suite beside).
		pct := 60.0
		// A restart takes 2 s here, up to 5.5 s on a busy machine (reaping,
		// crash recovery); then the sessions' back-off (up to 2 s): the
		// window leaves room for both.
		r, err, took := run(t, ctx, RunOptions{Duration: 12 * time.Second, Faults: Faults{MaxErrorPct: &pct}}, plan...)
		if err := <-restarted; err != nil {
			t.Fatalf("restart: %v", err)
		}
		t.Logf("killed at 1.5 s, restarted at 3 s: run took %s: %v; events %+v", took, err, r.Events)
		if err != nil || r.Failed || r.Partial {
			t.Errorf("a run that recovered: err %v, failed %v %q, partial %v %q", err, r.Failed, r.FailedReason, r.Partial, r.PartialReason)
		}
		var outage *result.Event
		for i, e := range r.Events {
			if e.Kind == "outage" {
				outage = &r.Events[i]
			}
		}
		if outage == nil {
			t.Fatalf("no outage among the events %+v", r.Events)
		}
		from, to := outage.Start.Sub(r.MeasureStart), outage.End.Sub(r.MeasureStart)
		if from < time.Second || from > 3*time.Second || to < 3*time.Second || outage.Failed < 4 || outage.Reconnects < 1 {
			t.Errorf("outage from %s to %s, %d failed, %d reconnects: down from 1.5 s to 3 s", from, to, outage.Failed, outage.Reconnects)
		}
		// The collectors came back and saw the counters reset by the crash:
		// no negative rate, and a profile that says what it covers.
		var late int
		for _, iv := range r.DBSeries {
			if iv.At > 4 {
				late++
			}
			for _, v := range []*float64{iv.Commits, iv.Rollbacks, iv.LogicalRead, iv.Reads, iv.WALBytes, iv.ActiveTime} {
				if v != nil && *v < 0 {
					t.Errorf("negative rate in the database series at %.1f s: %+v", iv.At, iv)
				}
			}
		}
		if late < 2 {
			t.Errorf("%d database readings after the restart: the collectors did not reconnect", late)
		}
		if r.LoadProfile == nil || !strings.Contains(r.LoadProfile.Note, "covers") {
			t.Errorf("load profile %+v: want a note of the time it covers", r.LoadProfile)
		} else if l := r.LoadProfile.Line("Transactions"); l != nil && l.Total != nil && *l.Total < 0 {
			t.Errorf("negative transactions in the profile: %v", *l.Total)
		}
		var text bytes.Buffer
		if err := report.Text(&text, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "outage") {
			t.Errorf("show does not print the outage:\n%s", text.String())
		}
		// compare names the run that had an outage.
		notes := compare.RunNotes(compare.Group{Label: "fault", Runs: []*result.Run{r}, Files: []string{"outage.json"}})
		if !strings.Contains(strings.Join(notes, "\n"), "outage.json had 1 outage") {
			t.Errorf("compare's notes do not flag the outage: %q", notes)
		}
	})

	t.Run("killed and down", func(t *testing.T) {
		r, err, took := run(t, ctx, RunOptions{Duration: time.Minute, Faults: Faults{AbortAfter: 3 * time.Second}},
			fault{1500 * time.Millisecond, func() { signal(syscall.SIGKILL) }})
		t.Logf("killed for good at 1.5 s: run ended after %s: %v", took, err)
		// A minute asked: well under it shows the abort (8.02 s once
		// beside a second suite, the host saturated).
		if took > 12*time.Second {
			t.Errorf("run took %s: killed at 1.5 s, abort after 3 s", took)
		}
		if err == nil || errors.Is(err, ErrInterrupted) {
			t.Errorf("err %v, want a failure", err)
		}
		if !r.Failed || !r.Partial || !strings.HasPrefix(r.FailedReason, "no transaction committed for 3s; ") ||
			!strings.Contains(r.FailedReason, "connection refused") {
			t.Errorf("failed %v partial %v reason %q", r.Failed, r.Partial, r.FailedReason)
		}
		if n := len(r.Events); n == 0 || r.Events[n-1].Kind != "outage" || !r.Events[n-1].End.IsZero() {
			t.Errorf("events %+v: want the outage, open", r.Events)
		}
	})
}

// A failure that hits every transaction of a kind is not a success: on
// SQLite, a trigger makes every slob update fail while reads go on.
func TestEveryUpdateFailsFailsTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "s.db")
	c, out := slobOnSQLite(t, db)
	execSQL(t, c.Target, "CREATE TRIGGER no_update BEFORE UPDATE ON slob_1 BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
	c.Workload = slob(t, "--schemas", "1", "--scale", "500", "--work-unit", "8", "--update-pct", "50")
	path := filepath.Join(t.TempDir(), "r.json")
	err := Run(ctx, RunOptions{Common: c, Users: 2, Duration: time.Second, Label: "trigger", Out: path})
	assertFailedRun(t, path, err, "every update failed", out)
}

// The same with a real full disk: the database on a tmpfs just larger
// than its file (root only: mount needs it).
func TestFullDiskFailsTheRun(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	ctx := context.Background()
	loaded := filepath.Join(t.TempDir(), "s.db")
	c, out := slobOnSQLite(t, loaded)
	mnt := smallTmpfs(t, fileSize(t, loaded)+256<<10)
	db := filepath.Join(mnt, "s.db")
	copyFile(t, loaded, db)
	c.Target = Target{URL: "sqlite://" + db}
	c.Workload = slob(t, "--schemas", "1", "--scale", "500", "--work-unit", "8", "--update-pct", "50")
	path := filepath.Join(t.TempDir(), "r.json")
	err := Run(ctx, RunOptions{Common: c, Users: 2, Duration: 2 * time.Second, Label: "full", Out: path})
	r := assertFailedRun(t, path, err, "", out)
	if r.Errors["sqlite_full"] == 0 {
		t.Errorf("no sqlite_full errors on a full disk: %v", r.Errors)
	}
}

// slobOnSQLite loads a small slob (one schema of 500 rows) into db.
func slobOnSQLite(t *testing.T, db string) (Common, *bytesBuffer) {
	t.Helper()
	out := &bytesBuffer{}
	c := Common{Target: Target{URL: "sqlite://" + db}, Workload: slob(t, "--schemas", "1", "--scale", "500", "--work-unit", "8"),
		Seed: 1, Stdout: out, Stderr: out}
	if err := Load(context.Background(), LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	return c, out
}

// assertFailedRun checks that a run exited with a failure (not an
// interrupt) and wrote its result marked failed, for the reason given.
func assertFailedRun(t *testing.T, path string, err error, reason string, out *bytesBuffer) *result.Run {
	t.Helper()
	if err == nil || errors.Is(err, ErrInterrupted) {
		t.Errorf("run returned %v, want a failure\n%s", err, out)
	}
	r, rerr := result.Read(path)
	if rerr != nil {
		t.Fatalf("the failed run's result: %v", rerr)
	}
	t.Logf("failed: %s", r.FailedReason)
	if !r.Failed || !strings.Contains(r.FailedReason, reason) {
		t.Errorf("failed %v reason %q, want %q", r.Failed, r.FailedReason, reason)
	}
	return r
}

// smallTmpfs mounts a tmpfs of about size bytes for the test.
func smallTmpfs(t *testing.T, size int64) string {
	t.Helper()
	mnt, err := os.MkdirTemp("", "dbparity-tmpfs-")
	if err != nil {
		t.Fatal(err)
	}
	size = (size + 4095) / 4096 * 4096
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", mnt).CombinedOutput(); err != nil {
		os.Remove(mnt)
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a tmpfs: %v: %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		exec.Command("umount", "-l", mnt).Run()
		os.Remove(mnt)
	})
	return mnt
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The journal's disk fills during a run: the error is reported at once,
// the run ends with a failure, the journal holds only whole lines, and
// recover turns it into a result once there is room.
func TestJournalOnFullDisk(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	ctx := context.Background()
	c, out := slobOnSQLite(t, filepath.Join(t.TempDir(), "s.db"))
	mnt := smallTmpfs(t, 64<<10)
	// Leave about 12 KB: the header and a few seconds of the run.
	fill := make([]byte, 52<<10)
	if err := os.WriteFile(filepath.Join(mnt, "filler"), fill, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(mnt, "r.json")
	start := time.Now()
	err := Run(ctx, RunOptions{Common: c, Users: 2, Duration: time.Minute, Label: "journal", Out: path})
	took := time.Since(start)
	t.Logf("run ended after %s: %v", took, err)
	if err == nil || !strings.Contains(err.Error(), "dbparity recover") || took > 20*time.Second {
		t.Fatalf("run on a filling disk: %v after %s\n%s", err, took, out)
	}
	if !strings.Contains(out.String(), "write failed: no space left on device: ending the run") {
		t.Errorf("the journal's failure was not reported at once:\n%s", out)
	}
	// Every line is whole.
	b, rerr := os.ReadFile(result.JournalPath(path))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Errorf("the journal ends in a cut line: %q", b[max(0, len(b)-80):])
	}
	// Once there is room (here: elsewhere), the journal recovers.
	moved := filepath.Join(t.TempDir(), "r.json.journal")
	copyFile(t, result.JournalPath(path), moved)
	var rec bytes.Buffer
	if err := Recover(RecoverOptions{Journal: moved, MaxErrorPct: 1, Stdout: &rec}); err != nil {
		t.Fatalf("recover: %v", err)
	}
	r, rerr := result.Read(strings.TrimSuffix(moved, ".journal"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !r.Recovered || !r.Partial || r.Summarize().Commits == 0 {
		t.Errorf("recovered %v partial %v commits %d", r.Recovered, r.Partial, r.Summarize().Commits)
	}
}

// A long run keeps a bounded series in its result, merged so that every
// count still adds up, and every point in a gzipped side file (here the
// bound is 4 points, so a 6 s window is "long").
func TestSeriesBoundedWithSideFile(t *testing.T) {
	t.Parallel()
	c, out := slobOnSQLite(t, filepath.Join(t.TempDir(), "s.db"))
	path := filepath.Join(t.TempDir(), "r.json")
	err := Run(context.Background(), RunOptions{Common: c, Users: 2, Warmup: time.Second, Duration: 6 * time.Second,
		Label: "long", Out: path, SeriesPoints: 4})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var commits int64
	var measured float64
	for _, iv := range r.Series {
		if iv.Phase == "measure" {
			commits += iv.Commits
			measured += iv.Seconds
		}
	}
	s := r.Summarize()
	t.Logf("%d points, step %d, measured %.2f s in the series, %d commits", len(r.Series), r.Driver.SeriesStep, measured, commits)
	// 4 points, plus one per phase edge, plus the pending one.
	if r.Driver.SeriesStep < 2 || len(r.Series) > 4+2+1 {
		t.Errorf("series of %d points, step %d: want at most 7 points and a step of 2 or more", len(r.Series), r.Driver.SeriesStep)
	}
	if commits != s.Commits || measured < s.DurationS-0.2 || measured > s.DurationS+0.2 {
		t.Errorf("the merged series counts %d commits in %.2f s, the window %d in %.2f s", commits, measured, s.Commits, s.DurationS)
	}
	if r.OS != nil && len(r.OS.Series) > 6 {
		t.Errorf("OS series of %d points", len(r.OS.Series))
	}
	if r.SeriesFile != "r.json.series.gz" {
		t.Fatalf("series file %q", r.SeriesFile)
	}
	f, err := os.Open(filepath.Join(filepath.Dir(path), r.SeriesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `{"iv":`); n < 7 {
		t.Errorf("the side file holds %d intervals for a 7 s run", n)
	}
	if _, err := os.Stat(result.JournalPath(path)); !os.IsNotExist(err) {
		t.Errorf("the journal was kept beside its side file: %v", err)
	}
}
