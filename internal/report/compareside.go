package report

import (
	"fmt"
	"math"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

func (c *Comparison) sideBySide() []Table {
	t := c.header("side by side (group medians)")
	sum := func(f func(s result.Summary) float64) func(r *result.Run) float64 {
		return func(r *result.Run) float64 { return f(r.Summarize()) }
	}
	var div *Table // a replay's divergence, beside its figures
	if c.Groups[0].Runs[0].Replay != nil {
		rp := func(f func(rp *result.Replay, s result.Summary) float64) func(r *result.Run) float64 {
			return func(r *result.Run) float64 {
				if r.Replay == nil {
					return math.NaN()
				}
				return f(r.Replay, r.Summarize())
			}
		}
		c.row(&t, "captured elapsed s", c.medians(rp(func(x *result.Replay, _ result.Summary) float64 { return x.CaptureSeconds })))
		c.row(&t, "replayed elapsed s", c.medians(rp(func(x *result.Replay, _ result.Summary) float64 { return x.ReplaySeconds })))
		c.row(&t, "statements/s", c.medians(sum(func(s result.Summary) float64 { return s.TPS })))
		c.row(&t, "transactions/s", c.medians(rp(func(x *result.Replay, s result.Summary) float64 {
			if s.DurationS == 0 {
				return math.NaN()
			}
			return float64(x.ReplayedTransactions) / s.DurationS
		})))
		t2 := c.header("divergence against the capture (group medians)")
		kind := func(k string) func(r *result.Run) float64 {
			return rp(func(x *result.Replay, _ result.Summary) float64 {
				var n int64
				for _, o := range x.Outcomes {
					if o.Kind == k {
						n += o.Count
					}
				}
				return float64(n)
			})
		}
		c.row(&t2, "new errors", c.medians(kind("new error")))
		c.row(&t2, "vanished errors", c.medians(kind("vanished error")))
		c.row(&t2, "changed errors", c.medians(kind("changed error")))
		c.row(&t2, "commits rolled back", c.medians(kind("rolled back")))
		c.row(&t2, "data not captured (statements)", c.medians(kind("data not captured")))
		c.row(&t2, "rows differing (statements, wire captures)", c.medians(kind("rows differ")))
		c.row(&t2, "otherwise in transactions rolled back alike", c.medians(kind(result.OutcomeRolledBackAlike)))
		c.row(&t2, "errors the log cannot tell", c.medians(kind(result.OutcomeUntold)))
		c.row(&t2, "end-state tables differing", c.medians(rp(func(x *result.Replay, _ result.Summary) float64 {
			if x.EndState == nil {
				return math.NaN() // not verified
			}
			return float64(x.EndState.Of - x.EndState.Match - x.EndState.ClockOnly)
		})))
		div = &t2
	} else {
		c.row(&t, "transactions/s", c.medians(sum(func(s result.Summary) float64 { return s.TPS })))
	}
	if _, ok := c.Groups[0].Runs[0].Summarize().Transactions["new_order"]; ok {
		c.row(&t, "NOPM", c.medians(sum(func(s result.Summary) float64 { return s.NOPM })))
	}
	c.row(&t, "errors", c.medians(sum(func(s result.Summary) float64 { return float64(s.Errors) })))
	for _, tx := range c.Groups[0].Runs[0].Transactions {
		name := tx.Name
		lat := func(q float64) func(r *result.Run) float64 {
			return func(r *result.Run) float64 {
				for _, x := range r.Transactions {
					if x.Name == name && x.Latency.Count > 0 {
						if q == 95 {
							return x.Latency.P95Ms
						}
						return x.Latency.P99Ms
					}
				}
				return math.NaN() // no latency recorded: not a latency of zero
			}
		}
		// A type no group ran (slob's reads at 100% updates) has no row.
		if p95 := c.medians(lat(95)); !empty(p95) {
			c.row(&t, name+" p95 ms", p95)
			c.row(&t, name+" p99 ms", c.medians(lat(99)))
		}
	}
	// The network: round trips per transaction and the least each cost,
	// when measured (a database host across a link pays it every time).
	rt := func(f func(s result.Summary) float64) func(r *result.Run) float64 {
		return func(r *result.Run) float64 {
			s := r.Summarize()
			if s.RoundTripMs == 0 || s.RoundTripsPerTx == 0 {
				return math.NaN()
			}
			return f(s)
		}
	}
	if v := c.medians(rt(func(s result.Summary) float64 { return s.RoundTripMs })); !empty(v) {
		c.row(&t, "round trips per transaction", c.medians(rt(func(s result.Summary) float64 { return s.RoundTripsPerTx })))
		c.row(&t, "round trip ms (least, empty query)", v)
		c.row(&t, "round trips' share of a transaction %", c.medians(rt(func(s result.Summary) float64 { return 100 * s.RoundTripShare })))
	}
	// Cost: CPU seconds per committed transaction, from the host, the
	// database server and the driver. Equal throughput bought with more
	// CPU is a more expensive platform.
	cost := c.header("cost (CPU µs per transaction)")
	per := func(cores func(r *result.Run) float64) func(r *result.Run) float64 {
		return func(r *result.Run) float64 {
			s := r.Summarize()
			n := transactions(r)
			if n == 0 || s.DurationS == 0 {
				return math.NaN()
			}
			return cores(r) * s.DurationS * 1e6 / n
		}
	}
	osf := func(f func(o *result.OS) float64) func(r *result.Run) float64 {
		return func(r *result.Run) float64 {
			if !r.OS.HasWindow() {
				return math.NaN()
			}
			return f(r.OS)
		}
	}
	c.row(&cost, "host (all CPUs busy)", c.medians(per(osf(func(o *result.OS) float64 { return o.Window.CPUBusyPct / 100 * float64(o.Window.NumCPU) }))))
	c.row(&cost, "database server", c.medians(per(osf(func(o *result.OS) float64 {
		if o.Window.ServerCPUCores == nil {
			return math.NaN()
		}
		return *o.Window.ServerCPUCores
	}))))
	c.row(&cost, "driver", c.medians(per(func(r *result.Run) float64 {
		s := r.Summarize()
		if s.DurationS == 0 || s.DriverCPUS == nil {
			return math.NaN()
		}
		return *s.DriverCPUS / s.DurationS
	})))
	c.row(&cost, "tps per busy host core", c.medians(func(r *result.Run) float64 {
		s := r.Summarize()
		n := transactions(r)
		if !r.OS.HasWindow() || r.OS.Window.CPUBusyPct == 0 || s.DurationS == 0 {
			return math.NaN()
		}
		return n / s.DurationS / (r.OS.Window.CPUBusyPct / 100 * float64(r.OS.Window.NumCPU))
	}))
	if div != nil {
		return []Table{t, *div, cost}
	}
	return []Table{t, cost}
}

// histograms are the log2 latency histograms of COMMIT and of every
// transaction type, merged exactly over each group's runs: bucket, then
// count and % per group.
func (c *Comparison) histograms() []Table {
	get := func(name string) func(r *result.Run) result.Histogram {
		return func(r *result.Run) result.Histogram {
			if name == "" {
				return r.Commit
			}
			for _, x := range r.Transactions {
				if x.Name == name {
					return x.Latency
				}
			}
			return result.Histogram{}
		}
	}
	var ts []Table
	names := []string{""}
	for _, t := range c.Groups[0].Runs[0].Transactions {
		names = append(names, t.Name)
	}
	for _, name := range names {
		title := "COMMIT latency, log2 buckets (all runs of each group)"
		if name != "" {
			title = name + " latency, log2 buckets (all runs of each group)"
		}
		if t := c.histogram(title, get(name)); t != nil {
			ts = append(ts, *t)
		}
	}
	return ts
}

func (c *Comparison) histogram(title string, get func(r *result.Run) result.Histogram) *Table {
	var bs [][]metrics.Bucket
	upTo := map[int64]bool{}
	for _, g := range c.Groups {
		merged := metrics.NewHistogram()
		for _, r := range g.Runs {
			if h, err := get(r).Decode(); err == nil {
				merged.Merge(h)
			}
		}
		var b []metrics.Bucket // nil: the group has no latency, n/a
		if merged.Count() > 0 {
			b = metrics.Log2Buckets(merged)
		}
		bs = append(bs, b)
		for _, x := range b {
			upTo[x.UpToMicros] = true
		}
	}
	if len(upTo) == 0 {
		return nil
	}
	t := &Table{Title: title, Columns: []string{"bucket"}}
	for _, g := range c.Groups {
		t.Columns = append(t.Columns, g.Label+" count", g.Label+" %")
	}
	for u := int64(1); u <= 1<<40; u <<= 1 {
		if !upTo[u] {
			continue
		}
		row := []string{fmt.Sprintf("< %d µs", u)}
		for _, b := range bs {
			if b == nil {
				row = append(row, "n/a", "n/a")
				continue
			}
			var n int64
			v := 0.0
			for _, x := range b {
				if x.UpToMicros == u {
					n, v = x.Count, x.Pct
				}
			}
			row = append(row, fmt.Sprint(n), fmt.Sprintf("%.1f%%", v))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func (c *Comparison) os() *Table {
	if !c.each(func(r *result.Run) bool { return r.OS.HasWindow() }) {
		return nil
	}
	t := c.header("database host os (measured window; source: " + compare.HostSources(c.Groups) + ")")
	get := func(f func(x *result.OS) float64) []float64 {
		return c.medians(func(r *result.Run) float64 {
			if !r.OS.HasWindow() {
				return math.NaN()
			}
			return f(r.OS)
		})
	}
	rows := []struct {
		name string
		f    func(o *result.OS) float64
	}{
		{"cpu busy %", func(o *result.OS) float64 { return o.Window.CPUBusyPct }},
		{"cpu user %", func(o *result.OS) float64 { return o.Window.CPUUserPct }},
		{"cpu sys %", func(o *result.OS) float64 { return o.Window.CPUSystemPct }},
		{"cpu iowait %", func(o *result.OS) float64 { return o.Window.CPUIowaitPct }},
		{"cpu steal %", func(o *result.OS) float64 { return o.Window.CPUStealPct }},
		{"cpu idle %", func(o *result.OS) float64 { return o.Window.CPUIdlePct }},
		{"interrupts/s", func(o *result.OS) float64 { return o.Window.InterruptsPerS }},
		{"context switches/s", func(o *result.OS) float64 { return o.Window.ContextSwitchesPerS }},
		{"load average (1 min)", func(o *result.OS) float64 { return o.Window.Load1 }},
		{"data disk IOPS", func(o *result.OS) float64 {
			return dataDisk(o, func(d ostat.DiskRates) float64 { return d.ReadsPerS + d.WritesPerS })
		}},
		{"data disk MB/s", func(o *result.OS) float64 {
			return dataDisk(o, func(d ostat.DiskRates) float64 { return d.ReadMBPerS + d.WriteMBPerS })
		}},
		{"data disk await ms", func(o *result.OS) float64 { return dataDisk(o, func(d ostat.DiskRates) float64 { return d.AwaitMs }) }},
		{"network packets/s", func(o *result.OS) float64 {
			var n float64
			for _, x := range o.Window.Nets {
				n += x.RxPacketsPerS + x.TxPacketsPerS
			}
			return n
		}},
		{"network MB/s", func(o *result.OS) float64 {
			var n float64
			for _, x := range o.Window.Nets {
				n += x.RxMBPerS + x.TxMBPerS
			}
			return n
		}},
	}
	for _, r := range rows {
		c.row(&t, r.name, get(r.f))
	}
	// Where the platform took time, in seconds per second.
	for _, pw := range compare.PlatformWaits {
		c.row(&t, pw.Short+" s/s", get(func(o *result.OS) float64 {
			if v, ok := pw.Get(o.Window); ok {
				return v
			}
			return math.NaN()
		}))
	}
	return &t
}

// driverHost is the driver hosts' CPU, when a database ran on another
// host: it shows whether the driver was the bottleneck.
func (c *Comparison) driverHost() *Table {
	if !c.each(func(r *result.Run) bool { return r.DriverOS.HasWindow() }) {
		return nil
	}
	t := c.header("driver host (not the platform under test)")
	get := func(f func(x ostat.Rates) float64) []float64 {
		return c.medians(func(r *result.Run) float64 {
			switch {
			case r.DriverOS.HasWindow():
				return f(r.DriverOS.Window)
			case r.DriverOS == nil && r.OS.HasWindow() && hostLocal(r):
				return f(r.OS.Window) // the same host
			}
			return math.NaN()
		})
	}
	c.row(&t, "cpu busy %", get(func(x ostat.Rates) float64 { return x.CPUBusyPct }))
	c.row(&t, "dbparity cores", get(func(x ostat.Rates) float64 { return x.SelfCPUCores }))
	return &t
}

func hostLocal(r *result.Run) bool {
	return r.OS != nil && (r.OS.Source == "" || r.OS.Source == "local")
}

// dataDisk is f of the device under the database's files, or NaN.
func dataDisk(o *result.OS, f func(d ostat.DiskRates) float64) float64 {
	for _, d := range o.Window.Disks {
		if d.Name == o.DataDevice {
			return f(d)
		}
	}
	return math.NaN()
}

func (c *Comparison) diff() *Table {
	t := &Table{Title: "what differs between the platforms (first run of each group)", Columns: []string{"fact"}}
	for _, g := range c.Groups {
		t.Columns = append(t.Columns, g.Label)
	}
	platform := 0
	for _, d := range c.Diff {
		if !d.Driver && !d.Default {
			platform++
		}
	}
	if platform == 0 {
		t.Rows = append(t.Rows, append([]string{"nothing disclosed differs"}, make([]string, len(c.Groups))...))
	}
	diffRows(t, c.Diff, func(d compare.Difference) bool { return !d.Driver && !d.Default })
	return t
}

// defaultsDiff lists the settings whose compiled-in defaults differ
// between the servers' versions: differences nobody set, apart from
// those someone did.
func (c *Comparison) defaultsDiff() *Table {
	t := &Table{Title: "settings whose defaults differ between the versions (nobody set them; a setting set by hand is listed above)", Columns: []string{"setting"}}
	for _, g := range c.Groups {
		t.Columns = append(t.Columns, g.Label)
	}
	diffRows(t, c.Diff, func(d compare.Difference) bool { return d.Default && !d.Packaging })
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// packagingDiff lists the settings whose defaults differ because of how
// each server was built or packaged (paths), apart from those the
// version changed.
func (c *Comparison) packagingDiff() *Table {
	t := &Table{Title: "settings whose defaults differ by packaging (paths a distribution or a build sets, not the version)", Columns: []string{"setting"}}
	for _, g := range c.Groups {
		t.Columns = append(t.Columns, g.Label)
	}
	diffRows(t, c.Diff, func(d compare.Difference) bool { return d.Packaging })
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// driverDiff lists what differs between the driver hosts, apart from the
// platforms' differences.
func (c *Comparison) driverDiff() *Table {
	t := &Table{Title: "what differs between the driver hosts (not the platform under test)", Columns: []string{"fact"}}
	for _, g := range c.Groups {
		t.Columns = append(t.Columns, g.Label)
	}
	diffRows(t, c.Diff, func(d compare.Difference) bool { return d.Driver })
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

func diffRows(t *Table, diffs []compare.Difference, keep func(compare.Difference) bool) {
	for _, d := range diffs {
		if !keep(d) {
			continue
		}
		row := []string{d.Key}
		for _, v := range d.Values {
			if v == "" {
				v = "(absent)"
			}
			row = append(row, v)
		}
		t.Rows = append(t.Rows, row)
	}
}
