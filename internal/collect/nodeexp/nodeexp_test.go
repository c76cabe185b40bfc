package nodeexp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func parse(t *testing.T, text string) families {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	f, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A scrape of node_exporter 1.5 (Debian 12) on this VM, trimmed, mapped
// onto ostat's units: seconds → CPU seconds and ms ticks, bytes → 512-byte
// sectors, seconds → µs of stall.
func TestSnapshotMapping(t *testing.T) {
	b, err := os.ReadFile("testdata/node_exporter-1.5.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := Snapshot(parse(t, string(b)))
	if s.NumCPU != 2 {
		t.Errorf("NumCPU %d, want 2", s.NumCPU)
	}
	if s.CPU.User < 3684.34 || s.CPU.Steal < 1.05 || s.CPU.Idle < 4987.56 {
		t.Errorf("CPU not summed over the CPUs: %+v", s.CPU)
	}
	if s.Interrupts != 61521678 || s.ContextSwitches != 327187524 {
		t.Errorf("interrupts %d, context switches %d", s.Interrupts, s.ContextSwitches)
	}
	if s.Load1 != 0.02 {
		t.Errorf("load1 %v", s.Load1)
	}
	if s.CPUPressure == nil || s.CPUPressure.Some.Total != 5602077101 || s.CPUPressure.Full != nil {
		t.Errorf("cpu pressure %+v", s.CPUPressure)
	}
	if s.IOPressure == nil || s.IOPressure.Full == nil || s.IOPressure.Full.Total != 41610514 {
		t.Errorf("io pressure %+v", s.IOPressure)
	}
	vda, ok := s.Disks["vda"]
	if !ok {
		t.Fatalf("no vda in %v", s.Disks)
	}
	if vda.ReadIOs != 733131 || vda.ReadSectors != 10457445376/512 || vda.ReadTicks != 294092 ||
		vda.WriteIOs != 15350650 || vda.WeightedTicks != 10000403 || vda.FlushIOs != 3685009 || vda.Fields != 17 {
		t.Errorf("vda %+v", vda)
	}
	if _, ok := s.Disks["loop0"]; ok {
		t.Error("loop devices are left out, as from /proc/diskstats")
	}
	if s.Nets["eth0"].RxPackets != 9184 || s.Nets["eth0"].TxBytes != 597640 {
		t.Errorf("nets %+v", s.Nets)
	}
	if s.Memory.Total != 25276510208 || s.Memory.Cached != 195018752 {
		t.Errorf("memory %+v", s.Memory)
	}
	if s.VM == nil || s.VM.MajorFaults != 15363 || s.VM.SwapIn != 0 {
		t.Errorf("vmstat %+v", s.VM)
	}
	if s.ServerCPU != nil || s.SelfCPU != 0 {
		t.Error("node_exporter sees no processes")
	}

	h := Host(parse(t, string(b)))
	if h.Kernel != "6.18.44-fc-v657" || h.Hostname != "vm" || h.OS != "Debian GNU/Linux 12 (bookworm)" || h.CPU.Online != 2 || h.Memory.TotalBytes != 25276510208 {
		t.Errorf("host %+v", h)
	}
	st := Storage(parse(t, string(b)), "/var/lib/postgresql/15/main")
	if st.MountPoint != "/" || st.FSType != "ext4" || st.Device == nil || st.Device.Name != "vda" || st.TotalBytes != 270553174016 {
		t.Errorf("storage %+v", st)
	}
}

// Partitions are left out as ostat leaves them out of /proc/diskstats
// (node_exporter's default already does), and a partition under the data
// names its disk.
func TestPartitions(t *testing.T) {
	f := parse(t, `node_cpu_seconds_total{cpu="0",mode="user"} 1
node_disk_reads_completed_total{device="nvme0n1"} 10
node_disk_reads_completed_total{device="nvme0n1p2"} 7
node_filesystem_size_bytes{device="/dev/nvme0n1p2",fstype="xfs",mountpoint="/data"} 100
node_filesystem_size_bytes{device="/dev/nvme0n1p1",fstype="ext4",mountpoint="/"} 100
`)
	s := Snapshot(f)
	if _, ok := s.Disks["nvme0n1p2"]; ok || len(s.Disks) != 1 {
		t.Errorf("disks %v", s.Disks)
	}
	st := Storage(f, "/data/pg")
	if st.MountPoint != "/data" || st.Device == nil || st.Device.Parent != "nvme0n1" {
		t.Errorf("storage %+v %+v", st, st.Device)
	}
}

// Each failure is one line naming the URL and what is wrong.
func TestScrapeErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/metrics"
	l.Close()
	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer status.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("http_requests_total 3\n"))
	}))
	defer other.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>not metrics</html>\n"))
	}))
	defer garbage.Close()
	for url, want := range map[string]string{
		refused:                  "connection refused",
		status.URL + "/metrics":  "HTTP 500",
		other.URL + "/metrics":   "is this a node_exporter?",
		garbage.URL + "/metrics": "not the Prometheus text format",
	} {
		s, err := New(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = s.Read(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), url) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q and the URL", url, err, want)
		}
	}
	if _, err := New("db1:9100", nil); err == nil || !strings.Contains(err.Error(), "http://HOST:9100/metrics") {
		t.Errorf("a URL without scheme: %v", err)
	}
}

// A URL's password reaches the exporter (basic auth) and no message:
// every error shows the URL without its user info (and query).
func TestPasswordNotShown(t *testing.T) {
	var user, pass string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ = r.BasicAuth()
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	raw := strings.Replace(srv.URL, "http://", "http://watch:hunter2@", 1) + "/metrics"
	s, err := New(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Read(context.Background())
	if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "watch") || !strings.Contains(err.Error(), srv.URL+"/metrics") {
		t.Errorf("error %v", err)
	}
	if user != "watch" || pass != "hunter2" {
		t.Errorf("the exporter got %q:%q", user, pass)
	}
	if _, err := New("ftp://watch:hunter2@host/metrics", nil); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad URL error %v", err)
	}
}
