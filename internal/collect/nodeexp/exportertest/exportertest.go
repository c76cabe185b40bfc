// Package exportertest starts Debian's prometheus-node-exporter on a free
// loopback port for a test, and stops it by PID when the test ends.
package exportertest

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Binary is where Debian's package installs the exporter.
const Binary = "/usr/bin/prometheus-node-exporter"

// Start runs the exporter on 127.0.0.1 and returns its metrics URL. The
// test is skipped when the exporter is not installed, except under
// CI=true, where .ci/run installs it and its absence is a failure.
func Start(t testing.TB) string {
	url, _ := StartKillable(t)
	return url
}

// StartKillable is Start that also returns a function that kills the
// exporter at once (SIGKILL), for fault tests.
func StartKillable(t testing.TB) (url string, kill func()) {
	t.Helper()
	bin := Binary
	if _, err := os.Stat(bin); err != nil {
		if p, err := exec.LookPath("node_exporter"); err == nil {
			bin = p
		} else if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but prometheus-node-exporter is not installed (.ci/run installs it)")
		} else {
			t.Skip("prometheus-node-exporter is not installed: apt-get install prometheus-node-exporter to run this test")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--web.listen-address="+addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(kill)
	url = "http://" + addr + "/metrics"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, kill
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node_exporter (pid %s) did not answer on %s within 10 s: %v", strconv.Itoa(cmd.Process.Pid), url, err)
		}
	}
}
