package report

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// topWaits is how many wait events the reports list.
const topWaits = 10

// num prints a profile figure with a sensible number of digits, or n/a.
func num(v *float64) string {
	if v == nil {
		return "n/a"
	}
	x := *v
	switch a := abs(x); {
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", x)
	case a >= 10:
		return fmt.Sprintf("%.1f", x)
	case a >= 0.01:
		return fmt.Sprintf("%.3f", x)
	}
	return fmt.Sprintf("%.2g", x)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func profileText(w io.Writer, title string, p *result.Profile, perTx bool) error {
	if p == nil {
		return nil
	}
	fmt.Fprintf(w, "\n  %s (%s, %.1f s", title, p.Source, p.Seconds)
	if perTx {
		fmt.Fprintf(w, ", %.0f transactions", p.Transactions)
	}
	fmt.Fprintln(w, ")")
	if p.Note != "" {
		fmt.Fprintf(w, "    note: %s\n", p.Note)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if perTx {
		fmt.Fprintf(tw, "    \tunit\tper second\tper transaction\tsource\n")
	} else {
		fmt.Fprintf(tw, "    \tunit\tper second\t\tsource\n")
	}
	for _, l := range p.Lines {
		src := l.Source
		if l.Total == nil {
			src = l.Note
		}
		pt := ""
		if perTx {
			pt = num(l.PerTx)
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\n", l.Name, l.Unit, num(l.PerSecond), pt, src)
	}
	return tw.Flush()
}

// ioBackendText is the engine's IO by backend type and context.
func ioBackendText(w io.Writer, rows []result.IOBackend) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n  io by backend (per second; %s)\n", rows[0].Source)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    backend\tcontext\treads\tread ms\twrites\twrite ms\textends\textend ms\tfsyncs\tfsync ms\n")
	for _, b := range rows {
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Backend, cmp.Or(b.Context, "-"), num(b.Reads), num(b.ReadMs),
			num(b.Writes), num(b.WriteMs), num(b.Extends), num(b.ExtendMs), num(b.Fsyncs), num(b.FsyncMs))
	}
	if rows[0].Source != "pg_stat_io" {
		fmt.Fprintf(tw, "    (before PostgreSQL 16 the server counts no more than this: pg_stat_io by backend and context, with extends and times, is 16+)\n")
	}
	return tw.Flush()
}

// waitsTitle names a run's sampled session states: wait events, or
// MySQL's and MariaDB's process list states, which tell what a statement
// is doing, not what it waits for (their waits are the timed ones).
func waitsTitle(ws *result.Waits) string {
	if ws.Source == "information_schema.PROCESSLIST" {
		return "top session states, not wait events"
	}
	return "top wait events"
}

func waitsText(w io.Writer, ws *result.Waits) error {
	if ws == nil {
		return nil
	}
	fmt.Fprintf(w, "\n  %s (%s every %.0f ms, %d samples, %.2f average active sessions)\n",
		waitsTitle(ws), ws.Source, ws.IntervalMs, ws.Samples, ws.AvgActiveSessions)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    class\tevent\t%% DB time\tavg active\tsamples\n")
	for i, e := range ws.Events {
		if i == topWaits {
			break
		}
		fmt.Fprintf(tw, "    %s\t%s\t%.1f\t%.2f\t%d\n", e.Class, e.Event, e.PctDBTime, e.AvgActive, e.Samples)
	}
	return tw.Flush()
}

// timedWaitsText prints the server's own timed waits of the window.
func timedWaitsText(w io.Writer, ws *result.TimedWaits) error {
	if ws == nil {
		return nil
	}
	fmt.Fprintf(w, "\n  timed waits (%s)\n", ws.Source)
	if ws.Note != "" {
		fmt.Fprintf(w, "    %s\n", ws.Note)
	}
	if len(ws.Events) == 0 {
		fmt.Fprintln(w, "    none timed in the window")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    event\t%% wait time\tseconds\tcount\tavg µs\n")
	for _, e := range ws.Events {
		avg := 0.0
		if e.Count > 0 {
			avg = e.Seconds / e.Count * 1e6
		}
		fmt.Fprintf(tw, "    %s\t%.1f\t%.3f\t%.0f\t%.1f\n", e.Event, e.PctWaitTime, e.Seconds, e.Count, avg)
	}
	return tw.Flush()
}

// commitBuckets returns the COMMIT latency histogram in log2 µs buckets.
func commitBuckets(r *result.Run) []metrics.Bucket {
	if r.Commit.HDR == "" {
		return nil
	}
	h, err := r.Commit.Decode()
	if err != nil {
		return nil
	}
	return metrics.Log2Buckets(h)
}

// latencyBuckets returns a transaction type's latency histogram in log2
// µs buckets.
func latencyBuckets(r *result.Run, name string) []metrics.Bucket {
	for _, t := range r.Transactions {
		if t.Name != name || t.Latency.HDR == "" {
			continue
		}
		if h, err := t.Latency.Decode(); err == nil {
			return metrics.Log2Buckets(h)
		}
	}
	return nil
}

// ioText prints a run's IO in SLOB's units and where its reads came from.
func ioText(w io.Writer, r *result.Run) error {
	u := r.IO
	if u == nil {
		return nil
	}
	fmt.Fprintf(w, "\n  io (SLOB units, per second)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, v *float64, unit, note string) {
		if v != nil {
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", name, num(v), unit, note)
		}
	}
	hit := ""
	if u.CacheHitRatio != nil {
		hit = fmt.Sprintf("buffer cache hit ratio %.1f%%", 100**u.CacheHitRatio)
	}
	row("logical reads", u.LogicalReads, "blocks/s", "")
	row("physical reads", u.PhysicalReads, "blocks/s", hit)
	row("physical writes", u.PhysicalWrites, "blocks/s", "")
	row("engine read", u.EngineReadMB, "MB/s", "physical reads × block size")
	row("read IOPS", u.ReadIOPS, "requests/s", "device "+deviceName(r))
	row("read", u.ReadMB, "MB/s", "device")
	row("write IOPS", u.WriteIOPS, "requests/s", "device")
	row("write", u.WriteMB, "MB/s", "device")
	row("redo (WAL)", u.RedoBytes, "bytes/s", "")
	row("read time", u.ReadMs, "ms", "per physical read, as the engine timed it")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "  reads served from: %s. %s\n", u.ServedFrom, u.Statement)
	wu := ""
	if n, ok := r.Workload.Params["work_unit"]; ok {
		wu = fmt.Sprintf(" (each reads WORK_UNIT=%v blocks)", n)
	}
	return bucketsText(w, "read operation latency"+wu, latencyBuckets(r, "read"))
}

func deviceName(r *result.Run) string {
	if r.OS != nil && r.OS.DataDevice != "" {
		return r.OS.DataDevice
	}
	return "(every disk)"
}

func bucketsText(w io.Writer, title string, b []metrics.Bucket) error {
	if len(b) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n  %s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "    < µs\tcount\t%%\t\n")
	for _, x := range b {
		// The bar is left out of the aligned cells so it grows from the left.
		fmt.Fprintf(tw, "    %d\t%d\t%.1f\t  %s\n", x.UpToMicros, x.Count, x.Pct, bar(x.Pct))
	}
	return tw.Flush()
}

func bar(pct float64) string {
	n := int(pct/2 + 0.5)
	b := make([]byte, n)
	for i := range b {
		b[i] = '#'
	}
	return string(b)
}

// sourceNames says where a host's figures came from, for titles.
var sourceNames = map[string]string{
	"":              "local /proc",
	"local":         "local /proc",
	"sql":           "sql: the host's /proc read through the database connection",
	"node-exporter": "node_exporter",
}

func osText(w io.Writer, r *result.Run) error {
	p := &printer{w: w}
	o := r.OS
	if o == nil {
		if r.Disclosure != nil && r.Disclosure.HostSource == "none" {
			p.f("\n  database host: not observed (give --db-host-metrics URL of its node_exporter, or grant the role pg_read_server_files and EXECUTE on pg_read_file and pg_ls_dir: see docs/targets.md)\n")
		}
		driverHostText(p, r)
		return p.err
	}
	if !o.HasWindow() {
		// A recovered run's journal keeps the series, without their
		// source, and no reading at the window's edges.
		p.f("\n  database host os (measured window): n/a (no reading at the window's edges%s)\n",
			map[bool]string{true: ": the run was recovered from its journal, which keeps only the OS series"}[r.Recovered])
		driverHostText(p, r)
		return p.err
	}
	x := o.Window
	local := o.Source == "" || o.Source == "local"
	p.f("\n  database host os (source: %s; measured window, %.1f s, %d CPUs)\n", sourceNames[o.Source], x.IntervalS, x.NumCPU)
	p.f("    cpu         user %.1f%%  nice %.1f%%  sys %.1f%%  iowait %.1f%%  irq %.1f%%  softirq %.1f%%  steal %.1f%%  idle %.1f%%\n",
		x.CPUUserPct, x.CPUNicePct, x.CPUSystemPct, x.CPUIowaitPct, x.CPUIRQPct, x.CPUSoftIRQPct, x.CPUStealPct, x.CPUIdlePct)
	server := "n/a (not on this host and not readable through the database: --db-pid, or the grants of pg_read_file in docs/targets.md)"
	switch {
	case r.Target.Dialect == "sqlite":
		server = "inside dbparity"
	case x.ServerCPUCores != nil:
		server = fmt.Sprintf("%.2f cores (%.1f%%)", *x.ServerCPUCores, *x.ServerCPUPct)
	}
	if local {
		p.f("    cpu used by dbparity %.2f cores (%.1f%%), database %s, other %.2f cores (%.1f%%)\n",
			x.SelfCPUCores, x.SelfCPUPct, server, x.OtherCPUCores, x.OtherCPUPct)
	} else {
		p.f("    cpu used by the database %s, other %.2f cores (%.1f%%)\n", server, x.OtherCPUCores, x.OtherCPUPct)
	}
	platformWaitsText(p, x, r.Summarize().TPS)
	p.f("    interrupts  %.0f/s   context switches %.0f/s   load %.2f %.2f %.2f   running %d blocked %d\n",
		x.InterruptsPerS, x.ContextSwitchesPerS, x.Load1, x.Load5, x.Load15, x.ProcsRunning, x.ProcsBlocked)
	p.f("    memory      used %.0f MB  cached %.0f MB (shared %.0f)  dirty %.0f MB  available %.0f MB of %.0f MB\n",
		x.MemUsedMB, x.MemCachedMB, x.MemShmemMB, x.MemDirtyMB, x.MemAvailableMB, x.MemTotalMB)
	if x.MajorFaultsPerS != nil && x.SwapInPagesPerS != nil && x.SwapOutPagesPerS != nil {
		p.f("    paging      major faults %.1f/s   swap in %.1f pages/s   swap out %.1f pages/s\n",
			*x.MajorFaultsPerS, *x.SwapInPagesPerS, *x.SwapOutPagesPerS)
	}
	if p.err != nil {
		return p.err
	}
	p.f("    %-16s %9s %9s %8s %8s %10s %10s %7s %6s\n", "disk", "r/s", "w/s", "rMB/s", "wMB/s", "r_await ms", "w_await ms", "aqu-sz", "%util")
	for _, d := range x.Disks {
		if d.ReadsPerS+d.WritesPerS == 0 && d.Name != o.DataDevice {
			continue
		}
		name := d.Name
		if name == o.DataDevice {
			name += " (data)"
		}
		p.f("    %-16s %9.1f %9.1f %8.2f %8.2f %10.2f %10.2f %7.2f %6.1f\n", name, d.ReadsPerS, d.WritesPerS,
			d.ReadMBPerS, d.WriteMBPerS, d.RAwaitMs, d.WAwaitMs, d.AquSz, d.UtilPct)
	}
	p.f("    %-16s %9s %9s %8s %8s\n", "network", "rx pkt/s", "tx pkt/s", "rx MB/s", "tx MB/s")
	for _, n := range x.Nets {
		if n.RxPacketsPerS+n.TxPacketsPerS == 0 {
			continue
		}
		p.f("    %-16s %9.0f %9.0f %8.2f %8.2f\n", n.Name, n.RxPacketsPerS, n.TxPacketsPerS, n.RxMBPerS, n.TxMBPerS)
	}
	driverHostText(p, r)
	return p.err
}

// platformWaitsText prints where the platform took time: the server's
// and the host's run-queue delay, steal and pressure stall, as seconds
// per second and per transaction.
func platformWaitsText(p *printer, x ostat.Rates, tps float64) {
	f := func(v *float64) string {
		if v == nil {
			return "n/a"
		}
		if tps > 0 {
			return fmt.Sprintf("%.3f s/s (%.3f ms/tx)", *v, *v/tps*1000)
		}
		return fmt.Sprintf("%.3f s/s", *v)
	}
	stall := func(pr *ostat.PressureRates) *float64 {
		if pr == nil {
			return nil
		}
		v := pr.SomePct / 100
		return &v
	}
	steal := x.CPUStealPct / 100 * float64(x.NumCPU)
	p.f("    platform    run-queue delay: server %s, host %s; steal %s\n", f(x.ServerRunDelayPerS), f(x.RunDelayPerS), f(&steal))
	p.f("                pressure stall (some): cpu %s, io %s, memory %s\n", f(stall(x.CPUPressure)), f(stall(x.IOPressure)), f(stall(x.MemoryPressure)))
}

// driverHostText prints the driver's host when it is not the database
// host: its CPU shows whether the driver was the bottleneck.
func driverHostText(p *printer, r *result.Run) {
	d := r.DriverOS
	if !d.HasWindow() {
		return
	}
	x := d.Window
	name := r.Host.Hostname
	if r.Disclosure != nil && r.Disclosure.DriverHost != nil && r.Disclosure.DriverHost.Hostname != "" {
		name = r.Disclosure.DriverHost.Hostname
	}
	p.f("\n  driver host %s (local /proc, %d CPUs): busy %.1f%%, dbparity %.2f cores (%.1f%%), steal %.1f%%\n",
		name, x.NumCPU, x.CPUBusyPct, x.SelfCPUCores, x.SelfCPUPct, x.CPUStealPct)
}

// disclosureText prints what the run ran on: the database host (from its
// source), the storage under the data, the database's settings that are
// not at their defaults, and the driver's host when it is another.
func disclosureText(w io.Writer, r *result.Run) error {
	d := r.Disclosure
	if d == nil {
		return nil
	}
	p := &printer{w: w}
	src := d.HostSource
	if src == "" {
		src = "local"
	}
	p.f("\n  platform (database host, source: %s)\n", src)
	if src != "none" {
		p.f("    host      %s\n", hostLine(d.Host))
		p.f("    limits    %s\n", limitsLine(d.Host))
	}
	if st := d.Storage; st != nil && st.MountPoint != "" {
		line := fmt.Sprintf("%s on %s (%s), mounted at %s", st.Dir, st.FSType, st.Source, st.MountPoint)
		if dev := st.Device; dev != nil {
			line += ", device " + dev.Name
			if dev.Parent != "" {
				line += " on " + dev.Parent
			}
			if dev.Rotational != nil {
				line += fmt.Sprintf(", rotational %v", *dev.Rotational)
			}
			if dev.Scheduler != "" {
				line += ", scheduler " + dev.Scheduler
			}
		}
		p.f("    storage   %s\n", line)
	}
	if db := d.Database; db != nil {
		var set []string
		for _, k := range sortedKeys(db.Settings) {
			v, src, _ := strings.Cut(compare.HumanSetting(db.Settings[k]), " [")
			// "override" is the server's own (data_directory, the
			// transaction defaults); paths and the port differ by
			// construction.
			if src == "override]" || compare.Volatile("disclosure.database.settings."+k) {
				continue
			}
			set = append(set, k+" "+v)
		}
		p.f("    database  %s %s; not at their defaults: %s\n", db.Product, db.Version, strings.Join(set, ", "))
	}
	if h := d.DriverHost; h != nil {
		p.f("    driver    %s (the driver's host, not the platform)\n", hostLine(*h))
	}
	return p.err
}

func hostLine(h disclose.HostInfo) string {
	s := h.Hostname
	if h.Kernel != "" {
		s += ": Linux " + h.Kernel
	}
	if h.OS != "" {
		s += " (" + h.OS + ")"
	}
	if h.Virtualization != "" {
		s += ", " + h.Virtualization
	}
	c := h.CPU
	if c.Online > 0 {
		s += fmt.Sprintf(", %d CPUs", c.Online)
		if c.Sockets > 0 {
			s += fmt.Sprintf(" (%d socket(s), %d cores)", c.Sockets, c.Cores)
		}
	}
	if c.Model != "" {
		s += " " + c.Model
	}
	if h.Memory.TotalBytes > 0 {
		s += fmt.Sprintf(", %.1f GB", float64(h.Memory.TotalBytes)/(1<<30))
	}
	return s
}

func limitsLine(h disclose.HostInfo) string {
	var parts []string
	if c := h.Cgroup; c.Of == "server" && c.CPUsAllowed > 0 && c.CPUsAllowed < h.CPU.Online {
		parts = append(parts, fmt.Sprintf("server confined to CPUs %s (%d of %d)", c.CPUsAllowedList, c.CPUsAllowed, h.CPU.Online))
	}
	if l := h.Cgroup.CPULimit; l != nil {
		parts = append(parts, fmt.Sprintf("cgroup cpu %.2f CPUs", *l))
	}
	if l := h.Cgroup.MemoryLimitBytes; l != nil {
		parts = append(parts, fmt.Sprintf("cgroup memory %.1f GB", float64(*l)/(1<<30)))
	}
	if len(parts) == 0 && h.Cgroup.Mode != "" {
		parts = append(parts, "no cgroup limit ("+h.Cgroup.Mode+")")
	}
	if h.THPEnabled != "" {
		parts = append(parts, "THP "+h.THPEnabled)
	}
	if h.CPU.Governor != "" {
		parts = append(parts, "governor "+h.CPU.Governor)
	}
	if h.Clocksource != "" {
		parts = append(parts, "clocksource "+h.Clocksource)
	}
	if len(parts) == 0 {
		return "n/a"
	}
	return strings.Join(parts, "; ")
}
