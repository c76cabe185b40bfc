package compare

import (
	"sort"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/result"
)

func hostRun(source string, runDelay, steal, ioStall float64, kernel, driverKernel string) *result.Run {
	r := &result.Run{Host: result.Host{Kernel: driverKernel}}
	w := ostat.Rates{IntervalS: 60, NumCPU: 4, CPUStealPct: steal, ServerRunDelayPerS: &runDelay,
		IOPressure: &ostat.PressureRates{SomePct: ioStall * 100}}
	r.OS = &result.OS{Source: source, Window: w}
	r.Disclosure = &result.Disclosure{Host: disclose.HostInfo{Kernel: kernel}, HostSource: source}
	if source != "local" {
		r.Disclosure.DriverHost = &disclose.HostInfo{Kernel: driverKernel}
	}
	return r
}

// The sentence names the largest platform-side difference with its sign.
func TestPlatformSentence(t *testing.T) {
	a := Group{Label: "bare", Runs: []*result.Run{hostRun("sql", 0.05, 0, 0.02, "6.1", "6.1"), hostRun("sql", 0.07, 0, 0.02, "6.1", "6.1")}}
	b := Group{Label: "vm", Runs: []*result.Run{hostRun("sql", 0.26, 1, 0.03, "6.1", "6.1"), hostRun("sql", 0.30, 1, 0.03, "6.1", "6.1")}}
	s := PlatformSentence(a, b)
	// server run-queue delay: 0.28 - 0.06 = 0.22 s/s; steal 1% of 4 CPUs = 0.04 s/s.
	if !strings.Contains(s, "vm's database host waited for a CPU (the server's run-queue delay) 0.22 s/s more than bare's") {
		t.Errorf("sentence: %s", s)
	}
	if !strings.Contains(s, "steal 1.0% against 0.0%") {
		t.Errorf("steal not named beside it: %s", s)
	}
	if s := PlatformSentence(b, a); !strings.Contains(s, "0.22 s/s less") {
		t.Errorf("reversed: %s", s)
	}
	if s := PlatformSentence(a, a); !strings.Contains(s, "no platform-side wait differs") {
		t.Errorf("same: %s", s)
	}
	none := Group{Label: "x", Runs: []*result.Run{{}}}
	if s := PlatformSentence(none, none); s != "" {
		t.Errorf("runs without database host figures: %q", s)
	}
}

// The database hosts' differences are the platforms'; the driver hosts'
// are marked apart; a local run's basic host facts (the same machine as
// disclosure.host) are not listed twice.
func TestDisclosureDiffDriverHost(t *testing.T) {
	a := Group{Label: "a", Runs: []*result.Run{hostRun("sql", 0, 0, 0, "6.1", "5.15")}}
	b := Group{Label: "b", Runs: []*result.Run{hostRun("sql", 0, 0, 0, "6.8", "6.2")}}
	var platform, driver []string
	for _, d := range DisclosureDiff([]Group{a, b}) {
		if d.Driver {
			driver = append(driver, d.Key)
		} else {
			platform = append(platform, d.Key)
		}
	}
	if strings.Join(platform, ",") != "disclosure.host.kernel" {
		t.Errorf("platform differences %v", platform)
	}
	if strings.Join(driver, ",") != "disclosure.driver_host.kernel,host.kernel" {
		t.Errorf("driver host differences %v", driver)
	}
	la := Group{Label: "a", Runs: []*result.Run{hostRun("local", 0, 0, 0, "6.1", "6.1")}}
	lb := Group{Label: "b", Runs: []*result.Run{hostRun("local", 0, 0, 0, "6.8", "6.8")}}
	for _, d := range DisclosureDiff([]Group{la, lb}) {
		if d.Key != "disclosure.host.kernel" {
			t.Errorf("local runs: unexpected difference %s", d.Key)
		}
	}
}

// A managed server's paths, port and socket differ by construction: they
// are never "what differs" (PostgreSQL's and MariaDB's), while a setting
// that matters is.
func TestDisclosureDiffLeavesOutManagedPaths(t *testing.T) {
	run := func(dir, port, sync string) *result.Run {
		r := &result.Run{Disclosure: &result.Disclosure{}}
		r.Disclosure.Database = &result.Database{Settings: map[string]string{
			"port": port + " [config]", "unix_socket_directories": dir + " [config]", "data_directory": dir,
			"datadir": dir + "/ [config]", "socket": dir + "/mysqld.sock [config]", "pid_file": dir + "/postmaster.pid [config]",
			"log_error": dir + "/server.log [config]", "synchronous_commit": sync + " [config]"}}
		// The workload's sessions saw the same settings.
		r.Target.Settings = map[string]string{"port": port, "synchronous_commit": sync}
		return r
	}
	a := Group{Label: "a", Runs: []*result.Run{run("/tmp/a", "40001", "on")}}
	b := Group{Label: "b", Runs: []*result.Run{run("/tmp/b", "40002", "off")}}
	var keys []string
	for _, d := range DisclosureDiff([]Group{a, b}) {
		keys = append(keys, d.Key)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "disclosure.database.settings.synchronous_commit,target.settings.synchronous_commit" {
		t.Errorf("differences %v, want synchronous_commit only", keys)
	}
}
