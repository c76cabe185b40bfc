package testhost

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbparity/dbparity/internal/engine/managed"
)

// The relay adds what it is asked to, not a millisecond: 0.25 ms each
// way is a 0.5 ms round trip on top of loopback's.
func TestRelayDelay(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // an echo server
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	measure := func(addr string) []time.Duration {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var rts []time.Duration
		b := make([]byte, 1)
		for range 300 {
			start := time.Now()
			if _, err := c.Write(b); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, b); err != nil {
				t.Fatal(err)
			}
			rts = append(rts, time.Since(start))
		}
		slices.Sort(rts)
		return rts
	}
	direct := measure(ln.Addr().String())
	const oneWay = 250 * time.Microsecond
	relayed := measure(Link(t, ln.Addr().String(), oneWay))
	q := func(rts []time.Duration, p float64) time.Duration { return rts[int(p*float64(len(rts)-1))] }
	t.Logf("round trip direct: least %v, median %v, p99 %v; relayed (%v each way): least %v, median %v, p99 %v",
		q(direct, 0), q(direct, 0.5), q(direct, 0.99), oneWay, q(relayed, 0), q(relayed, 0.5), q(relayed, 0.99))
	if q(relayed, 0) < 2*oneWay {
		t.Errorf("the least relayed round trip %v is below the %v added", q(relayed, 0), 2*oneWay)
	}
	// What it adds beyond the delay, on the least of 300 (the median
	// depends on how late a busy host wakes the relay: 1.0 ms added for
	// 0.5 ms asked with a second suite beside).
	if least := q(relayed, 0) - q(direct, 0); least > 2*oneWay+200*time.Microsecond {
		t.Errorf("the relay added %v to the least round trip, asked for %v", least, 2*oneWay)
	}
}

// Several hosts at once (4; DBPARITY_TEST_HOSTS=8 for 8), each its own:
// its address, its host name, its server; then nothing of them is left.
func TestSeveralHosts(t *testing.T) {
	t.Parallel()
	n := 4
	if v, err := strconv.Atoi(os.Getenv("DBPARITY_TEST_HOSTS")); err == nil && v > 0 {
		n = v
	}
	if why := Unavailable(managed.Postgres); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s", why)
		}
		t.Skip(why)
	}
	start := time.Now()
	hosts := make([]*Host, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { hosts[i], errs[i] = StartHost(Options{Settings: []string{"fsync=off"}}) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, h := range hosts {
			if h != nil {
				h.Close()
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("host %d: %v", i, err)
		}
	}
	t.Logf("%d hosts started in %s", n, time.Since(start).Round(time.Millisecond))
	seen := map[string]bool{}
	for _, h := range hosts {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := pgx.Connect(ctx, h.URL())
		if err != nil {
			cancel()
			t.Fatalf("host %d: %v", h.N, err)
		}
		var addr string
		var pid int
		err = c.QueryRow(ctx, "SELECT host(inet_server_addr()), pg_backend_pid()").Scan(&addr, &pid)
		c.Close(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		r, err := h.Read()
		if err != nil {
			t.Fatal(err)
		}
		// The server answers on the host's loopback behind the relay; its
		// backend's PID is its namespace's, small, and the host's name is
		// its own.
		if addr != "127.0.0.1" || r.Hostname != h.Hostname || seen[h.Addr] || r.ServerProcs == 0 {
			t.Errorf("host %d at %s: server address %q, host name %q (want %q), %d server processes", h.N, h.Addr, addr, r.Hostname, h.Hostname, r.ServerProcs)
		}
		seen[h.Addr] = true
		t.Logf("host %d: %s at %s, backend pid %d in its namespace, server pid %d there, PID 1 is %d here", h.N, r.Hostname, h.Addr, pid, h.ServerPIDInside, h.InitPID)
	}
	for _, h := range hosts {
		if err := h.Close(); err != nil {
			t.Errorf("host %d: %v", h.N, err)
		}
	}
	checkNothingLeft(t, hosts...)
}

// checkNothingLeft fails when a link, cpuset or record of a host gone
// is left. Another host (of a test beside, or of a second suite) may have
// taken its number since: a record whose PID 1 is another's says so, and
// that number is not checked. The state's lock keeps a host being made
// from being seen half made.
func checkNothingLeft(t *testing.T, gone ...*Host) {
	t.Helper()
	unlock, err := lockState()
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	for _, h := range gone {
		n := h.N
		if b, err := os.ReadFile(statePath(n)); err == nil {
			var st state
			if json.Unmarshal(b, &st) == nil && st.Init != int64(h.InitPID) {
				t.Logf("host %d was taken again (PID 1 %d) before it could be checked", n, st.Init)
				continue
			}
		}
		for _, name := range []string{linkPrefix + strconv.Itoa(n), peerPrefix + strconv.Itoa(n)} {
			if linkExists(name) {
				t.Errorf("link %s left", name)
			}
		}
		if exists(filepath.Join(cpusetRoot, cpusetPrefix+strconv.Itoa(n))) {
			t.Errorf("cpuset %s%d left", cpusetPrefix, n)
		}
		if exists(statePath(n)) {
			t.Errorf("record %s left", statePath(n))
		}
	}
}

// A test process killed outright (SIGKILL: no cleanup runs) leaves
// nothing running: its hosts' PID 1 dies with it (Pdeathsig), the kernel
// kills the rest of the namespace and deletes the link, and the next
// Cleanup removes the cpuset and the record.
func TestKilledOwner(t *testing.T) {
	t.Parallel()
	if os.Getenv("DBPARITY_TESTHOST_OWNER") == "1" {
		h, err := StartHost(Options{Settings: []string{"fsync=off"}})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("ready", h.InitPID, h.AgentPID, h.N, h.tmpDir)
		time.Sleep(time.Minute)
		return
	}
	if why := Unavailable(managed.Postgres); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s", why)
		}
		t.Skip(why)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledOwner$")
	cmd.Env = append(os.Environ(), "DBPARITY_TESTHOST_OWNER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the owner said %q", line)
	}
	initPID, _ := strconv.Atoi(f[1])
	agentPID, _ := strconv.Atoi(f[2])
	n, _ := strconv.Atoi(f[3])
	tmpDir := f[4]
	cmd.Process.Kill()
	cmd.Wait()
	for _, pid := range []int{initPID, agentPID} {
		for end := time.Now().Add(10 * time.Second); startTime(pid) != 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("pid %d outlived its owner by 10 s", pid)
			}
		}
	}
	if err := Cleanup(); err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, &Host{N: n, InitPID: initPID})
	if exists(tmpDir) {
		t.Errorf("data directory %s left", tmpDir)
	}
	// Nothing of the server either: no process works in its data
	// directory.
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			if cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd"); strings.HasPrefix(cwd, tmpDir) {
				t.Errorf("pid %s left in %s", e.Name(), cwd)
			}
		}
	}
}

// A bandwidth cap (tbf on both ends of the link): 4 MiB from the server
// at 20 Mbit/s take about 1.7 s.
func TestRateCap(t *testing.T) {
	t.Parallel()
	const mbit, size = 20, 4 << 20
	h := Start(t, Options{Settings: []string{"fsync=off"}, RateMbit: mbit})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, h.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	start := time.Now()
	if err := c.QueryRow(ctx, "SELECT length(repeat('x', $1::int))", size).Scan(&n); err != nil {
		t.Fatal(err)
	}
	small := time.Since(start)
	var s string
	start = time.Now()
	if err := c.QueryRow(ctx, "SELECT repeat('x', $1::int)", size).Scan(&s); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	want := time.Duration(float64(size*8) / (mbit * 1e6) * float64(time.Second))
	t.Logf("%d bytes at %d Mbit/s: %v (%.1f Mbit/s; the same query's answer alone %v)", len(s), mbit, took.Round(time.Millisecond),
		float64(len(s)*8)/took.Seconds()/1e6, small.Round(time.Microsecond))
	if took < want*8/10 || took > 2*want {
		t.Errorf("%d bytes took %v at %d Mbit/s, want about %v", len(s), took, mbit, want)
	}
}
