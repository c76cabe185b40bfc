package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/cpuset"
	"github.com/dbparity/dbparity/internal/result"
)

// pinProcess confines every thread of this process to cpus (threads made
// later inherit it) and returns the undo.
func pinProcess(t *testing.T, cpus []int) func() {
	t.Helper()
	set := func(cpus []int) {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatalf("list this process's threads: %v", err)
		}
		for _, task := range tasks {
			if tid, err := strconv.Atoi(task.Name()); err == nil {
				if err := cpuset.Set(tid, cpus); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	all, err := cpuset.Available()
	if err != nil {
		t.Fatal(err)
	}
	set(cpus)
	return func() { set(all) }
}

// pinnedChild marks the test binary run again by TestDriverBoundFlagged,
// where pinning every thread touches no other test.
const pinnedChild = "DBPARITY_TEST_PINNED_CHILD"

// A driver whose CPU a busy loop also uses is flagged driver-bound in the
// result, in show, and compare refuses a verdict on it.
//
// The test pins every thread of its process to one CPU, and a server
// another test starts meanwhile would inherit that (a free server read
// as confined to 1 CPU of 2), so it runs in a test binary of its own.
func TestDriverBoundFlagged(t *testing.T) {
	if os.Getenv(pinnedChild) == "" {
		t.Parallel()
		cmd := exec.Command(os.Args[0], "-test.run=^TestDriverBoundFlagged$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), pinnedChild+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in a process of its own:\n%s", out)
		switch {
		case err != nil:
			t.Fatalf("the pinned test failed: %v", err)
		case bytes.Contains(out, []byte("--- SKIP: TestDriverBoundFlagged")):
			t.Skip("skipped in its process (above)")
		case !bytes.Contains(out, []byte("--- PASS: TestDriverBoundFlagged")):
			t.Fatal("the pinned test did not report a pass")
		}
		return
	}
	avail, err := cpuset.Available()
	if err != nil || len(avail) < 2 {
		t.Skipf("needs 2 CPUs to pin the driver apart from the server: %v %v", avail, err)
	}
	tg, _ := managedServer(t)
	c, out := common(t, tg)
	if err := Load(context.Background(), LoadOptions{Common: c}); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	one := []int{avail[0]}
	// Three busy loops, favoured by the scheduler where this test may
	// (root), leave the driver a fraction of its CPU, in slices: its
	// sessions wait for the CPU, which is what the flag is about.
	for range 3 {
		busy := exec.Command("sh", "-c", "while :; do :; done")
		if err := busy.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { busy.Process.Kill(); busy.Wait() }()
		if err := cpuset.Set(busy.Process.Pid, one); err != nil {
			t.Fatal(err)
		}
		syscall.Setpriority(syscall.PRIO_PROCESS, busy.Process.Pid, -5) // best effort
	}
	undo := pinProcess(t, one)
	path := filepath.Join(t.TempDir(), "bound.json")
	err = Run(context.Background(), RunOptions{Common: c, Users: 4, Duration: 2 * time.Second, Warmup: 300 * time.Millisecond,
		Label: "bound", Out: path, Collect: CollectOptions{Off: true}})
	undo()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Driver
	t.Logf("driver: %d CPU(s), share %.0f%%, scheduler p99 %.2f ms, wakes late p99 %.2f ms, %.1f µs between transactions; %s",
		d.CPUs, 100*d.CPUShare, d.SchedP99Ms, d.WakeP99Ms, d.GapUsPerTx, d.BoundReason)
	if !d.Bound || d.CPUs != 1 {
		t.Fatalf("a driver sharing one CPU with a busy loop was not flagged: %+v", d)
	}
	if !strings.Contains(out.String(), "DRIVER-BOUND") {
		t.Errorf("show does not flag it:\n%s", out.String())
	}
	// compare and ab give the verdict, marked beside it as no platform
	// figure, with the reason: one policy for both.
	g := []compare.Group{{Label: "bound", Runs: []*result.Run{r, r}, Files: []string{path, path}},
		{Label: "other", Runs: []*result.Run{r, r}, Files: []string{"b1.json", "b2.json"}}}
	if err := compare.Comparable(g, nil); err != nil {
		t.Errorf("compare refuses a driver-bound run: %v", err)
	}
	if vs := compare.Verdicts(g[0], g[1], compare.Metrics(r)); len(vs) == 0 || !vs[0].Primary {
		t.Errorf("no throughput verdict: %+v", vs)
	}
	if a := compare.Assess(compare.GroupCaveats(g...), 4); a.Grade != compare.NotAFinding || !strings.HasPrefix(a.Lines[0], "DRIVER-BOUND: ") ||
		!strings.Contains(a.Lines[0], path) {
		t.Errorf("the answer is not graded as no finding: %s %q", a.Label, a.Lines)
	}
}
