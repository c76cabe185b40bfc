// Package nodeexp reads a host's counters and facts from a Prometheus
// node_exporter: it scrapes the exporter's text exposition, parses it with
// the Prometheus client library's parser, and maps the node_* metrics onto
// ostat's Snapshot — cumulative counters, so that rates come from the
// same ostat.Between as /proc's — and onto disclose's host and storage
// facts. It sees no processes: no self or server CPU.
package nodeexp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
)

// maxBody bounds a scrape: a node_exporter's page is some hundred KB.
const maxBody = 16 << 20

// Scraper reads one node_exporter.
type Scraper struct {
	url    string
	shown  string // url with its password masked, for messages
	client *http.Client
}

// New checks url (http or https, with a host) and returns its scraper;
// client nil is http.DefaultClient (each Read is bounded by its context).
func New(raw string, client *http.Client) (*Scraper, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not a node_exporter URL: give http://HOST:9100/metrics", Redact(raw))
	}
	if client == nil {
		client = http.DefaultClient
	}
	return &Scraper{url: raw, shown: Redact(raw), client: client}, nil
}

// families is one scrape, by metric name.
type families map[string]*dto.MetricFamily

// scrape GETs and parses the exposition.
func (s *Scraper) scrape(ctx context.Context) (families, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%s: %w", s.shown, err)
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("scrape %s: %w", s.shown, unwrapURL(err))
	}
	headers := time.Now()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, time.Time{}, fmt.Errorf("scrape %s: HTTP %s", s.shown, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("scrape %s: not the Prometheus text format: %w", s.shown, err)
	}
	if _, ok := fams["node_cpu_seconds_total"]; !ok {
		return nil, time.Time{}, fmt.Errorf("scrape %s: no node_cpu_seconds_total: is this a node_exporter?", s.shown)
	}
	return fams, headers, nil
}

// Redact is a node_exporter URL as messages and files show it: without
// its user info (http://user:pw@host) and its query and fragment
// (?token=...), either of which may hold a credential that only the
// exporter is sent. A URL that does not parse is shown from its host on,
// up to its query, in case it held one.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			raw = raw[:i]
		}
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			return "(a URL with credentials)" + raw[i:]
		}
		return raw
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// unwrapURL drops url.Error's repetition of the method and URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// value is a counter's, gauge's or untyped metric's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// sum adds the metric's series whose label key has value (any when key
// is ""); ok is false when the metric is absent.
func (f families) sum(name, key, val string) (v float64, ok bool) {
	fam, ok := f[name]
	if !ok {
		return 0, false
	}
	for _, m := range fam.Metric {
		if key == "" || label(m, key) == val {
			v += value(m)
		}
	}
	return v, true
}

// byLabel is the metric's value per value of the label key.
func (f families) byLabel(name, key string) map[string]float64 {
	out := map[string]float64{}
	if fam, ok := f[name]; ok {
		for _, m := range fam.Metric {
			out[label(m, key)] += value(m)
		}
	}
	return out
}

// info is the labels of an *_info metric's first series.
func (f families) info(name string) map[string]string {
	out := map[string]string{}
	if fam, ok := f[name]; ok && len(fam.Metric) > 0 {
		for _, l := range fam.Metric[0].Label {
			out[l.GetName()] = l.GetValue()
		}
	}
	return out
}

// Read scrapes once and maps the counters. The snapshot's time is the
// middle of the time from the request to the answer's headers: the
// exporter reads the kernel's counters in between and writes its headers
// once it has (the body's parse, slow on a loaded host, comes after, and
// counting it put the readings of a window 0.2 s off its edges).
func (s *Scraper) Read(ctx context.Context) (*ostat.Snapshot, error) {
	start := time.Now()
	f, headers, err := s.scrape(ctx)
	if err != nil {
		return nil, err
	}
	snap := Snapshot(f)
	snap.At = start.Add(headers.Sub(start) / 2)
	return snap, nil
}

// u64 converts a counter the exporter publishes as a float; the values
// are integers well inside float64's exact range (2^53).
func u64(v float64) uint64 {
	if v <= 0 {
		return 0
	}
	return uint64(v + 0.5)
}

// Snapshot maps one scrape onto ostat's snapshot.
func Snapshot(f families) *ostat.Snapshot {
	s := &ostat.Snapshot{}
	mode := f.byLabel("node_cpu_seconds_total", "mode")
	s.CPU = ostat.CPUTimes{User: mode["user"], Nice: mode["nice"], System: mode["system"], Idle: mode["idle"],
		Iowait: mode["iowait"], IRQ: mode["irq"], SoftIRQ: mode["softirq"], Steal: mode["steal"]}
	s.NumCPU = len(f.byLabel("node_cpu_seconds_total", "cpu"))
	v, _ := f.sum("node_intr_total", "", "")
	s.Interrupts = u64(v)
	v, _ = f.sum("node_context_switches_total", "", "")
	s.ContextSwitches = u64(v)
	v, _ = f.sum("node_procs_running", "", "")
	s.ProcsRunning = u64(v)
	v, _ = f.sum("node_procs_blocked", "", "")
	s.ProcsBlocked = u64(v)
	s.Load1, _ = f.sum("node_load1", "", "")
	s.Load5, _ = f.sum("node_load5", "", "")
	s.Load15, _ = f.sum("node_load15", "", "")
	if v, ok := f.sum("node_schedstat_waiting_seconds_total", "", ""); ok {
		s.RunDelay = &v
	}
	// Pressure: node_exporter publishes the stall totals, not the
	// kernel's avg10, which stays 0 here.
	s.CPUPressure = pressure(f, "node_pressure_cpu_waiting_seconds_total", "")
	s.IOPressure = pressure(f, "node_pressure_io_waiting_seconds_total", "node_pressure_io_stalled_seconds_total")
	s.MemoryPressure = pressure(f, "node_pressure_memory_waiting_seconds_total", "node_pressure_memory_stalled_seconds_total")
	if v, ok := f.sum("node_vmstat_pgmajfault", "", ""); ok {
		s.VM = &ostat.VMStat{MajorFaults: u64(v)}
		v, _ = f.sum("node_vmstat_pswpin", "", "")
		s.VM.SwapIn = u64(v)
		v, _ = f.sum("node_vmstat_pswpout", "", "")
		s.VM.SwapOut = u64(v)
	}
	s.Disks = disks(f)
	s.Nets = nets(f)
	mem := func(name string) uint64 {
		v, _ := f.sum("node_memory_"+name+"_bytes", "", "")
		return u64(v)
	}
	s.Memory = ostat.Memory{Total: mem("MemTotal"), Free: mem("MemFree"), Available: mem("MemAvailable"),
		Buffers: mem("Buffers"), Cached: mem("Cached"), SReclaimable: mem("SReclaimable"), Shmem: mem("Shmem"),
		Dirty: mem("Dirty"), Writeback: mem("Writeback")}
	return s
}

func pressure(f families, some, full string) *ostat.Pressure {
	v, ok := f.sum(some, "", "")
	if !ok {
		return nil
	}
	p := &ostat.Pressure{Some: ostat.PressureLine{Total: u64(v * 1e6)}}
	if full != "" {
		if v, ok := f.sum(full, "", ""); ok {
			p.Full = &ostat.PressureLine{Total: u64(v * 1e6)}
		}
	}
	return p
}

// sectorBytes is /proc/diskstats' sector: the exporter multiplies by it.
const sectorBytes = 512

func disks(f families) map[string]ostat.DiskCounters {
	get := func(name string) map[string]float64 { return f.byLabel("node_disk_"+name, "device") }
	reads := get("reads_completed_total")
	all := map[string]bool{}
	for d := range reads {
		all[d] = true
	}
	rm, rb, rt := get("reads_merged_total"), get("read_bytes_total"), get("read_time_seconds_total")
	wc, wm, wb, wt := get("writes_completed_total"), get("writes_merged_total"), get("written_bytes_total"), get("write_time_seconds_total")
	now, io, wio := get("io_now"), get("io_time_seconds_total"), get("io_time_weighted_seconds_total")
	dc, ds, dt := get("discards_completed_total"), get("discarded_sectors_total"), get("discard_time_seconds_total")
	fc, ft := get("flush_requests_total"), get("flush_requests_time_seconds_total")
	_, hasDiscard := f["node_disk_discards_completed_total"]
	_, hasFlush := f["node_disk_flush_requests_total"]
	out := make(map[string]ostat.DiskCounters, len(reads))
	ms := func(secs float64) uint64 { return u64(secs * 1000) }
	for d, r := range reads {
		if !ostat.KeepDisk(d, all) {
			continue
		}
		c := ostat.DiskCounters{
			ReadIOs: u64(r), ReadMerges: u64(rm[d]), ReadSectors: u64(rb[d] / sectorBytes), ReadTicks: ms(rt[d]),
			WriteIOs: u64(wc[d]), WriteMerges: u64(wm[d]), WriteSectors: u64(wb[d] / sectorBytes), WriteTicks: ms(wt[d]),
			InFlight: u64(now[d]), IOTicks: ms(io[d]), WeightedTicks: ms(wio[d]),
			DiscardIOs: u64(dc[d]), DiscardSectors: u64(ds[d]), DiscardTicks: ms(dt[d]),
			FlushIOs: u64(fc[d]), FlushTicks: ms(ft[d]), Fields: 11,
		}
		if hasDiscard {
			c.Fields = 15
		}
		if hasFlush {
			c.Fields = 17
		}
		out[d] = c
	}
	return out
}

func nets(f families) map[string]ostat.NetCounters {
	get := func(name string) map[string]float64 { return f.byLabel("node_network_"+name+"_total", "device") }
	rb, rp, re, rd := get("receive_bytes"), get("receive_packets"), get("receive_errs"), get("receive_drop")
	tb, tp, te, td := get("transmit_bytes"), get("transmit_packets"), get("transmit_errs"), get("transmit_drop")
	out := make(map[string]ostat.NetCounters, len(rb))
	for d := range rb {
		out[d] = ostat.NetCounters{RxBytes: u64(rb[d]), RxPackets: u64(rp[d]), RxErrors: u64(re[d]), RxDropped: u64(rd[d]),
			TxBytes: u64(tb[d]), TxPackets: u64(tp[d]), TxErrors: u64(te[d]), TxDropped: u64(td[d])}
	}
	return out
}

// Disclose scrapes once for the host's facts and, when dataDir is not
// "", the file system holding it (the longest mount point above it).
// What the exporter does not publish is left empty.
func (s *Scraper) Disclose(ctx context.Context, dataDir string) (disclose.HostInfo, *disclose.StorageInfo) {
	f, _, err := s.scrape(ctx)
	if err != nil {
		return disclose.HostInfo{}, nil
	}
	return Host(f), Storage(f, dataDir)
}

// Host maps the exporter's info metrics onto the host facts.
func Host(f families) disclose.HostInfo {
	u, o, d := f.info("node_uname_info"), f.info("node_os_info"), f.info("node_dmi_info")
	h := disclose.HostInfo{Hostname: u["nodename"], Kernel: u["release"], KernelVersion: u["version"],
		OS: o["pretty_name"], Arch: u["machine"]}
	h.CPU.Online = len(f.byLabel("node_cpu_seconds_total", "cpu"))
	if ci := f.info("node_cpu_info"); ci["model_name"] != "" {
		h.CPU.Model, h.CPU.Vendor = ci["model_name"], ci["vendor"]
	}
	if v, ok := f.sum("node_memory_MemTotal_bytes", "", ""); ok {
		h.Memory.TotalBytes = int64(u64(v))
	}
	h.Evidence.DMISysVendor, h.Evidence.DMIProductName = d["system_vendor"], d["product_name"]
	h.Virtualization = hypervisor(d["system_vendor"], d["product_name"])
	return h
}

// hypervisor names a hypervisor from the DMI vendor and product, the one
// sign node_exporter gives (no CPU flags, no /sys/hypervisor).
func hypervisor(vendor, product string) string {
	v := strings.ToLower(vendor + " " + product)
	for _, h := range []struct{ sign, name string }{
		{"qemu", "kvm"}, {"kvm", "kvm"}, {"vmware", "vmware"}, {"xen", "xen"}, {"amazon ec2", "kvm"},
		{"microsoft", "microsoft"}, {"virtualbox", "oracle"}, {"google compute engine", "kvm"},
	} {
		if strings.Contains(v, h.sign) {
			return h.name
		}
	}
	if vendor == "" && product == "" {
		return "" // not published: unknown, not "none"
	}
	return "none detected"
}

// Storage is the file system under dir from node_filesystem_*.
func Storage(f families, dir string) *disclose.StorageInfo {
	if dir == "" {
		return nil
	}
	st := &disclose.StorageInfo{Dir: dir, Path: dir}
	fam, ok := f["node_filesystem_size_bytes"]
	if !ok {
		return st
	}
	var best *dto.Metric
	for _, m := range fam.Metric {
		p := label(m, "mountpoint")
		if (dir == p || strings.HasPrefix(dir, strings.TrimSuffix(p, "/")+"/")) &&
			(best == nil || len(p) > len(label(best, "mountpoint"))) {
			best = m
		}
	}
	if best == nil {
		return st
	}
	st.MountPoint, st.FSType, st.Source = label(best, "mountpoint"), label(best, "fstype"), label(best, "device")
	st.TotalBytes = int64(u64(value(best)))
	avail := f.byLabel("node_filesystem_avail_bytes", "mountpoint")
	st.FreeBytes = int64(u64(avail[st.MountPoint]))
	if name, ok := strings.CutPrefix(st.Source, "/dev/"); ok && name != "" && !strings.Contains(name, "/") {
		st.Device = &disclose.BlockDevice{Name: name}
		if all := f.byLabel("node_disk_reads_completed_total", "device"); len(all) > 0 {
			names := map[string]bool{}
			for d := range all {
				names[d] = true
			}
			if !ostat.KeepDisk(name, names) {
				st.Device.Parent = parentDisk(name)
			}
		}
	}
	return st
}

// parentDisk is the disk of a partition's name (sda1, nvme0n1p2).
func parentDisk(part string) string {
	d := strings.TrimRight(part, "0123456789")
	if strings.HasSuffix(d, "p") && len(d) > 1 && d[len(d)-2] >= '0' && d[len(d)-2] <= '9' {
		d = d[:len(d)-1]
	}
	return d
}
