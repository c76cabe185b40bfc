package managed

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// While an Instance owns a data directory, a second Start on it, from this
// process too and through a symlink, is refused at once naming the owner,
// and the owner's server is left alone. Stop gives the directory up.
func TestSecondStartRefused(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	dir := clusterDir(t)
	data := filepath.Join(dir, "data")
	a := start(t, Options{DataDir: data})
	link := filepath.Join(dir, "link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{data, link} {
		t0 := time.Now()
		_, err := Start(context.Background(), Options{DataDir: path})
		took := time.Since(t0)
		want := fmt.Sprintf("--pg-data %s is in use by pid %d (%s, started ", path, os.Getpid(), filepath.Base(os.Args[0]))
		switch {
		case err == nil:
			t.Fatalf("second Start on %s succeeded", path)
		case !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), "): wait for it to finish or choose another --pg-data"):
			t.Errorf("second Start on %s: %q, want it to contain %q", path, err, want)
		case took > 2*time.Second:
			t.Errorf("the refusal took %v", took)
		}
		t.Logf("refused in %v: %v", took, err)
	}
	if !alive(a.PID) {
		t.Fatal("the owner's server was stopped")
	}
	if got := show(t, connect(t, a), "port"); got != strconv.Itoa(a.Port) {
		t.Errorf("the owner's server answers on port %s, want %d", got, a.Port)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ownerPath(data)); !os.IsNotExist(err) {
		t.Errorf("Stop left the owner file: %v", err)
	}
	start(t, Options{DataDir: link})
}

// TestHelperOwner is no test: it is the dbparity that
// TestKilledOwnerLeavesNoServer starts and kills.
func TestHelperOwner(t *testing.T) {
	t.Parallel()
	data := os.Getenv("DBPARITY_TEST_OWNER_DATA")
	if data == "" {
		t.Skip("run by TestKilledOwnerLeavesNoServer only")
	}
	inst, err := Start(context.Background(), Options{DataDir: data})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("started", inst.PID)
	time.Sleep(time.Minute)
	os.Exit(1)
}

// A dbparity killed with SIGKILL leaves no server behind for more than
// 5 s (its watchdog stops it), and the data directory is free again.
func TestKilledOwnerLeavesNoServer(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	data := filepath.Join(clusterDir(t), "data")
	owner := exec.Command(os.Args[0], "-test.run=^TestHelperOwner$", "-test.count=1")
	owner.Env = append(os.Environ(), "DBPARITY_TEST_OWNER_DATA="+data)
	out, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	owner.Stderr = os.Stderr
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	started := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "started ") || strings.HasPrefix(l, "error ") {
				started <- l
				return
			}
		}
		started <- "no output"
	}()
	var pid int
	select {
	case l := <-started:
		if pid, err = strconv.Atoi(strings.TrimPrefix(l, "started ")); err != nil {
			t.Fatalf("helper: %s", l)
		}
	case <-time.After(time.Minute):
		t.Fatal("the helper did not start a server within a minute")
	}
	_, err = Start(context.Background(), Options{DataDir: data})
	if want := fmt.Sprintf("is in use by pid %d (%s,", owner.Process.Pid, filepath.Base(os.Args[0])); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Start beside a live owner in another process: %v, want an error containing %q", err, want)
	}

	owner.Process.Signal(syscall.SIGKILL)
	t0 := time.Now()
	owner.Wait()
	for alive(pid) && time.Since(t0) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(t0)
	t.Logf("postmaster %d gone %v after its owner was killed", pid, took)
	if took > 5*time.Second {
		t.Errorf("the server outlived its killed owner by %v", took)
	}
	requireGone(t, pid)

	t0 = time.Now()
	inst := start(t, Options{DataDir: data})
	t.Logf("next Start: %v", time.Since(t0))
	if p := processesIn(data); len(p) == 0 || p[0] == pid {
		t.Errorf("processes in the data directory: %v", p)
	}
	show(t, connect(t, inst), "port")
}

// After every server process is killed, Restart brings the server back on
// the same URL with the data committed before, and a new watchdog.
func TestRestartAfterKill(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	data := filepath.Join(clusterDir(t), "data")
	inst := start(t, Options{DataDir: data})
	c := connect(t, inst)
	if _, err := c.Exec(context.Background(), "CREATE TABLE kept (x int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	oldPID, oldWatchdog, url := inst.PID, inst.watchdog.Process.Pid, inst.URL()
	if sid := procField(oldWatchdog, 6); sid != strconv.Itoa(oldWatchdog) {
		t.Errorf("the watchdog %d is in session %s, not one of its own: a Ctrl-C could reach it", oldWatchdog, sid)
	}
	n, err := inst.Signal(syscall.SIGKILL)
	if err != nil || n < 3 {
		t.Fatalf("SIGKILL reached %d processes (%v), want the postmaster, its helpers and a backend", n, err)
	}
	t0 := time.Now()
	if err := inst.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart after SIGKILL of %d processes: %v", n, time.Since(t0))
	if inst.PID == oldPID || !alive(inst.PID) || inst.URL() != url {
		t.Errorf("after Restart: pid %d (was %d), URL %s (was %s)", inst.PID, oldPID, inst.URL(), url)
	}
	if inst.watchdog == nil || inst.watchdog.Process.Pid == oldWatchdog || syscall.Kill(oldWatchdog, 0) == nil {
		t.Errorf("the watchdog %d was not replaced", oldWatchdog)
	}
	c2, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(context.Background())
	var rows int
	if err := c2.QueryRow(context.Background(), "SELECT count(*) FROM kept").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("after crash recovery: %d rows, %v", rows, err)
	}
}

// Stop of a frozen server (every process SIGSTOPped) takes seconds, not
// pg_ctl's minute.
func TestStopFrozenServer(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	data := filepath.Join(clusterDir(t), "data")
	inst := start(t, Options{DataDir: data})
	show(t, connect(t, inst), "port") // a backend, frozen too
	n, err := inst.Signal(syscall.SIGSTOP)
	if err != nil {
		t.Fatal(err)
	}
	// A signal takes effect when the process is next scheduled; a child
	// that was exiting anyway (an autovacuum worker, say) may be gone.
	for _, pid := range inst.Processes() {
		for end := time.Now().Add(2 * time.Second); !strings.Contains("TZ", procField(pid, 3)) && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
		if st := procField(pid, 3); !strings.Contains("TZ", st) {
			t.Errorf("pid %d is in state %q after SIGSTOP", pid, st)
		}
	}
	t0 := time.Now()
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	t.Logf("stop of %d frozen processes: %v", n, took)
	if took > 5*time.Second {
		t.Errorf("stop of a frozen server took %v", took)
	}
	requireGone(t, inst.PID)
	if p := processesIn(data); len(p) > 0 {
		t.Errorf("processes %v still run in the data directory", p)
	}
}

// procField is field n (from 1) of /proc/PID/stat: 3 the state, 6 the
// session.
func procField(pid, n int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < n-2 {
		return ""
	}
	return f[n-3]
}

// The watchdog fires when its pipe closes, as at dbparity's death, and
// stops even a frozen server, every process of it, within 5 s.
func TestWatchdogStopsFrozenServer(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	data := filepath.Join(clusterDir(t), "data")
	inst := start(t, Options{DataDir: data})
	show(t, connect(t, inst), "port")
	if _, err := inst.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	inst.watchdogPipe.Close()
	for len(processesIn(data)) > 0 && time.Since(t0) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(t0)
	t.Logf("frozen server gone %v after the watchdog's pipe closed", took)
	if p := processesIn(data); len(p) > 0 || took > 5*time.Second {
		t.Errorf("after %v processes %v still run in the data directory", took, p)
	}
	if err := inst.Stop(); err != nil {
		t.Error(err)
	}
}
