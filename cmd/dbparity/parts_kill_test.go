package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine/managed"
)

// A part of a split run never runs alone because a partner was killed
// outright (SIGKILL: no chance to remove its registration), on every
// server engine a split run drives (PostgreSQL; MariaDB when installed),
// with the binary's own processes:
//
//   - part 0 killed while it waits at the barrier, part 1 started well
//     within a second of the kill: part 1 does not count the dead part's
//     registration; it waits and gives up after its --barrier-timeout,
//     naming the missing part (before: "all 2 parts registered", and it
//     ran alone at half the load and exited 0);
//   - part 0 killed after both registered, in the 2 s before the agreed
//     start: part 1 sees it gone before it starts and stops, naming it
//     (before: it started alone and exited 0).
func TestPartKilledNeverRunsAlone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs driver processes against PostgreSQL and MariaDB")
	}
	engines := []struct {
		name  string
		start func(t *testing.T) (string, *managed.Instance)
	}{
		{"postgres", partsServer},
		{"mariadb", func(t *testing.T) (string, *managed.Instance) {
			inst := mariadbServer(t) // nil: not installed (a failure under CI=true)
			if inst == nil {
				t.Skip("no MariaDB server (mariadbd): apt-get install mariadb-server to run this case")
			}
			return t.TempDir(), inst
		}},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			began := time.Now()
			dir, inst := e.start(t)
			url := inst.URL()
			if code, _, stderr := dbparity(t, dir, "load", "--workload", "slob", "--schemas", "2", "--scale", "500", "--target", url); code != 0 {
				t.Fatalf("load: %s", stderr)
			}
			t.Logf("%s started and loaded in %s", e.name, time.Since(began).Round(100*time.Millisecond))
			part := func(run string, i int, timeout string) *exec.Cmd {
				cmd := exec.Command(bin, "run", "--workload", "slob", "--target", url, "--users", "2", "--warmup", "500ms", "--duration", "2s",
					"--no-collect", "--label", "split", "--part", fmt.Sprintf("%d/2", i), "--run-id", run, "--barrier-timeout", timeout,
					"--out", fmt.Sprintf("%s-%d.json", run, i))
				cmd.Dir = dir
				return cmd
			}
			// lonely checks part 1 of run: it exited 1 with one line that
			// names part 0 (and, when it waited alone, never read that all
			// parts registered), and never ran.
			lonely := func(what, run string, cmd *exec.Cmd, w *outputWatch, want string, alone bool) {
				t.Helper()
				err := cmd.Wait()
				stderr := w.buf.String()
				last := lastLine(stderr)
				if code := cmd.ProcessState.ExitCode(); code != 1 || err == nil || alone && strings.Contains(stderr, "all 2 parts registered") ||
					!strings.Contains(last, want) || !strings.Contains(last, "part 0") {
					t.Errorf("%s: part 1 exited %d; want 1 and a last line naming part 0 with %q:\n%s", what, code, want, stderr)
				}
				for _, f := range []string{run + "-1.json", run + "-1.json.journal"} {
					if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
						t.Errorf("%s: part 1 ran alone: it wrote %s", what, f)
					}
				}
				t.Logf("%s: part 1: %s", what, last)
			}

			// Killed while it waits; its partner comes 0.3 s later.
			start := time.Now()
			p0 := part("killed-waiting", 0, "1m")
			w0 := newOutputWatch("waiting for the other parts")
			p0.Stderr = w0
			if err := p0.Start(); err != nil {
				t.Fatal(err)
			}
			w0.await(t, p0)
			p0.Process.Kill()
			p0.Wait()
			time.Sleep(300 * time.Millisecond)
			p1 := part("killed-waiting", 1, "2s")
			w1 := newOutputWatch("\n")
			p1.Stderr = w1
			if err := p1.Start(); err != nil {
				t.Fatal(err)
			}
			lonely("part 0 killed while waiting", "killed-waiting", p1, w1, "only 1 of 2 parts", true)
			t.Logf("part 0 killed while waiting: %s in all", time.Since(start).Round(100*time.Millisecond))

			// Killed once both registered, before the start they agreed.
			start = time.Now()
			p0 = part("killed-leading", 0, "1m")
			p0.Stderr = newOutputWatch("\n")
			if err := p0.Start(); err != nil {
				t.Fatal(err)
			}
			p1 = part("killed-leading", 1, "1m")
			w1 = newOutputWatch("all 2 parts registered")
			p1.Stderr = w1
			if err := p1.Start(); err != nil {
				p0.Process.Kill()
				t.Fatal(err)
			}
			w1.await(t, p1)
			p0.Process.Kill()
			p0.Wait()
			lonely("part 0 killed before the start", "killed-leading", p1, w1, "before the start", false)
			t.Logf("part 0 killed before the start: %s in all", time.Since(start).Round(100*time.Millisecond))
		})
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
