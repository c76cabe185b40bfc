package runner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// postmasterPID reads a PostgreSQL data directory's postmaster.pid.
func postmasterPID(t *testing.T, dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	return pid
}

// A managed server that dies during a run says so: the error names the
// server, its pid, how it ended (MariaDB's signal, dbparity being its
// parent; PostgreSQL's status is pg_ctl's to know) and the last lines of
// its log with the log's path, and keeps those lines beside the result
// (TestOrderEntryManagedMariaDB saw "server unreachable ... connection
// reset by peer" alone when its server segfaulted).
func TestManagedServerDiesSaysSo(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"postgres", "mariadb"} {
		t.Run(engine, func(t *testing.T) {
			var tg Target
			var pid func() int
			sig := syscall.SIGKILL
			if engine == "postgres" {
				tg = managedTarget(t)
				tg.Managed = "postgres"
				pid = func() int { return postmasterPID(t, tg.PGData) }
			} else {
				tg = managedMariaDB(t)
				sig = syscall.SIGSEGV                                   // as the segfault was
				pid = func() int { return postmasterPID(t, tg.MyData) } // its pid file is where the postmaster's is
			}
			c, out := common(t, tg)
			c.Workload = orderEntry(t)
			o := RunOptions{Common: c, Label: "dies", Users: 2, Duration: 30 * time.Second, Warmup: 500 * time.Millisecond, Load: true,
				Faults: Faults{AbortAfter: 2 * time.Second, StatementTimeout: 2 * time.Second}, Out: filepath.Join(t.TempDir(), "r.json")}
			killed, ran := make(chan int, 1), make(chan struct{})
			go func() {
				// Once the run measures (its result's journal exists), kill the
				// server; for as long as the run lasts, since its load takes
				// over a minute on a saturated host.
				for {
					select {
					case <-ran:
						killed <- 0
						return
					case <-time.After(100 * time.Millisecond):
					}
					if _, err := os.Stat(o.Out + ".journal"); err == nil {
						time.Sleep(1500 * time.Millisecond)
						p := pid()
						if p > 0 {
							syscall.Kill(p, sig)
						}
						killed <- p
						return
					}
				}
			}()
			err := Run(context.Background(), o)
			close(ran)
			p := <-killed
			if p == 0 {
				t.Fatalf("the server's pid was not found to kill (run: %v)\n%s", err, out)
			}
			if err == nil {
				t.Fatalf("the run succeeded though its server was killed\n%s", out)
			}
			msg := err.Error()
			for _, want := range []string{"the managed " + engine + " server (pid " + strconv.Itoa(p) + ") died during the command",
				"the last lines of its log ", "server.log", "kept in " + o.Out + ".server.log"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the error lacks %q: %s", want, msg)
				}
			}
			if engine == "mariadb" && !strings.Contains(msg, "signal: segmentation fault") {
				t.Errorf("MariaDB's signal is not named: %s", msg)
			}
			if b, err := os.ReadFile(o.Out + ".server.log"); err != nil || len(b) == 0 {
				t.Errorf("the log's last lines are not kept beside the result: %v", err)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("the error is not one line: %q", msg)
			}
			t.Logf("%s", msg)
		})
	}
}
