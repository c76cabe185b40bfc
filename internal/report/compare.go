package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// Comparison is what `dbparity compare` prints: the groups, the verdicts
// of each group against the baseline, and the side-by-side sections.
type Comparison struct {
	Groups   []compare.Group
	Verdicts [][]compare.Verdict // [group-1]: verdicts of group against the baseline
	Notes    []string
	Diff     []compare.Difference
}

// NewComparison computes the verdicts and notes of gs.
func NewComparison(gs []compare.Group) *Comparison {
	c := &Comparison{Groups: gs, Diff: compare.DisclosureDiff(gs)}
	ms := compare.Metrics(gs[0].Runs[0])
	for _, g := range gs[1:] {
		c.Verdicts = append(c.Verdicts, compare.Verdicts(gs[0], g, ms))
	}
	for _, g := range gs {
		c.Notes = append(c.Notes, compare.RunNotes(g)...)
	}
	return c
}

// CompareText writes the comparison for a terminal of 100 columns.
func CompareText(w io.Writer, c *Comparison) error {
	p := &printer{w: w}
	base := c.Groups[0]
	ref := base.Runs[0]
	p.f("dbparity compare: %s v%s, baseline %q", ref.Workload.Name, ref.Workload.Version, base.Label)
	for _, g := range c.Groups {
		p.f(", %q %d run(s)", g.Label, len(g.Runs))
	}
	p.f("\n")
	if ref.Workload.Disclaimer != "" {
		p.f("  %s\n", ref.Workload.Disclaimer)
	}
	for i, g := range c.Groups[1:] {
		p.f("\n  %s against %s (ratio %s/%s; Holm-corrected across these metrics)\n", g.Label, base.Label, g.Label, base.Label)
		for _, v := range c.Verdicts[i] {
			p.f("    %-26s %s\n", v.Metric, v)
			for _, n := range v.Notes {
				p.f("    %-26s   note: %s\n", "", n)
			}
		}
	}
	if len(c.Notes) > 0 {
		p.f("\n  runs to read with care:\n")
		for _, n := range c.Notes {
			p.f("    %s\n", n)
		}
	}
	c.sideBySide(p)
	c.profiles(p)
	c.waits(p)
	c.histogram(p)
	c.os(p)
	c.diff(p)
	return p.err
}

// header prints a table header: a label column and one per group, plus
// the ratio of the last group to the baseline when there are two.
func (c *Comparison) header(p *printer, title string) {
	p.f("\n  %-28s", title)
	for _, g := range c.Groups {
		p.f(" %14s", clip(g.Label, 14))
	}
	if len(c.Groups) == 2 {
		p.f(" %8s", "ratio")
	}
	p.f("\n")
}

func (c *Comparison) row(p *printer, name string, vals []float64) {
	p.f("    %-26s", clip(name, 26))
	for _, v := range vals {
		if math.IsNaN(v) {
			p.f(" %14s", "n/a")
		} else {
			p.f(" %14s", trim(v))
		}
	}
	if len(vals) == 2 && !math.IsNaN(vals[0]) && !math.IsNaN(vals[1]) && vals[0] != 0 {
		p.f(" %7.2fx", vals[1]/vals[0])
	}
	p.f("\n")
}

func trim(v float64) string { return num(&v) }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "~"
}

// median of f over the runs of each group.
func (c *Comparison) medians(f func(r *result.Run) float64) []float64 {
	var out []float64
	for _, g := range c.Groups {
		var v []float64
		for _, r := range g.Runs {
			if x := f(r); !math.IsNaN(x) {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			out = append(out, math.NaN())
		} else {
			out = append(out, compare.Median(v))
		}
	}
	return out
}

func (c *Comparison) sideBySide(p *printer) {
	c.header(p, "side by side (group medians)")
	sum := func(f func(s result.Summary) float64) func(r *result.Run) float64 {
		return func(r *result.Run) float64 { return f(r.Summarize()) }
	}
	c.row(p, "transactions/s", c.medians(sum(func(s result.Summary) float64 { return s.TPS })))
	if _, ok := c.Groups[0].Runs[0].Summarize().Transactions["new_order"]; ok {
		c.row(p, "NOPM", c.medians(sum(func(s result.Summary) float64 { return s.NOPM })))
	}
	c.row(p, "errors", c.medians(sum(func(s result.Summary) float64 { return float64(s.Errors) })))
	for _, t := range c.Groups[0].Runs[0].Transactions {
		name := t.Name
		lat := func(q float64) func(r *result.Run) float64 {
			return func(r *result.Run) float64 {
				for _, x := range r.Transactions {
					if x.Name == name {
						if q == 95 {
							return x.Latency.P95Ms
						}
						return x.Latency.P99Ms
					}
				}
				return math.NaN()
			}
		}
		c.row(p, name+" p95 ms", c.medians(lat(95)))
		c.row(p, name+" p99 ms", c.medians(lat(99)))
	}
	// Cost: CPU seconds per committed transaction, from the host, the
	// database server and the driver. Equal throughput bought with more
	// CPU is a more expensive platform.
	c.header(p, "cost (CPU µs per transaction)")
	per := func(cores func(r *result.Run) float64) func(r *result.Run) float64 {
		return func(r *result.Run) float64 {
			s := r.Summarize()
			if s.Commits == 0 || s.DurationS == 0 {
				return math.NaN()
			}
			return cores(r) * s.DurationS * 1e6 / float64(s.Commits)
		}
	}
	osf := func(f func(o *result.OS) float64) func(r *result.Run) float64 {
		return func(r *result.Run) float64 {
			if r.OS == nil {
				return math.NaN()
			}
			return f(r.OS)
		}
	}
	c.row(p, "host (all CPUs busy)", c.medians(per(osf(func(o *result.OS) float64 { return o.Window.CPUBusyPct / 100 * float64(o.Window.NumCPU) }))))
	c.row(p, "database server", c.medians(per(osf(func(o *result.OS) float64 {
		if o.Window.ServerCPUCores == nil {
			return math.NaN()
		}
		return *o.Window.ServerCPUCores
	}))))
	c.row(p, "driver", c.medians(func(r *result.Run) float64 { return r.Summarize().DriverCPUPerTxUs }))
	c.row(p, "tps per busy host core", c.medians(func(r *result.Run) float64 {
		if r.OS == nil || r.OS.Window.CPUBusyPct == 0 {
			return math.NaN()
		}
		return r.Summarize().TPS / (r.OS.Window.CPUBusyPct / 100 * float64(r.OS.Window.NumCPU))
	}))
}

func (c *Comparison) profiles(p *printer) {
	for _, sec := range []struct {
		title string
		get   func(r *result.Run) *result.Profile
		perTx bool
	}{{"load profile per second", func(r *result.Run) *result.Profile { return r.LoadProfile }, false},
		{"load profile per transaction", func(r *result.Run) *result.Profile { return r.LoadProfile }, true},
		{"io profile per second", func(r *result.Run) *result.Profile { return r.IOProfile }, false}} {
		first := sec.get(c.Groups[0].Runs[0])
		if first == nil {
			continue
		}
		c.header(p, sec.title)
		for _, l := range first.Lines {
			name := l.Name
			c.row(p, name+" ("+l.Unit+")", c.medians(func(r *result.Run) float64 {
				pl := sec.get(r).Line(name)
				v := (*float64)(nil)
				if pl != nil {
					v = pl.PerSecond
					if sec.perTx {
						v = pl.PerTx
					}
				}
				if v == nil {
					return math.NaN()
				}
				return *v
			}))
		}
	}
}

func (c *Comparison) waits(p *printer) {
	if c.Groups[0].Runs[0].Waits == nil {
		return
	}
	p.f("\n  top wait events (%% of DB time, first run of each group)\n")
	for _, g := range c.Groups {
		ws := g.Runs[0].Waits
		if ws == nil {
			continue
		}
		var parts []string
		for i, e := range ws.Events {
			if i == 6 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s/%s %.0f%%", e.Class, e.Event, e.PctDBTime))
		}
		p.f("    %-14s AAS %.2f: %s\n", clip(g.Label, 14), ws.AvgActiveSessions, strings.Join(parts, ", "))
	}
}

func (c *Comparison) histogram(p *printer) {
	var bs [][]metrics.Bucket
	upTo := map[int64]bool{}
	for _, g := range c.Groups {
		b := commitBuckets(g.Runs[0])
		bs = append(bs, b)
		for _, x := range b {
			upTo[x.UpToMicros] = true
		}
	}
	if len(upTo) == 0 {
		return
	}
	c.header(p, "commit latency, % per bucket")
	for u := int64(1); u <= 1<<40; u <<= 1 {
		if !upTo[u] {
			continue
		}
		var vals []float64
		for _, b := range bs {
			v := 0.0
			for _, x := range b {
				if x.UpToMicros == u {
					v = x.Pct
				}
			}
			vals = append(vals, v)
		}
		p.f("    %-26s", fmt.Sprintf("< %d µs", u))
		for _, v := range vals {
			p.f(" %13.1f%%", v)
		}
		p.f("\n")
	}
}

func (c *Comparison) os(p *printer) {
	if c.Groups[0].Runs[0].OS == nil {
		return
	}
	c.header(p, "os (measured window)")
	get := func(f func(x *result.OS) float64) []float64 {
		return c.medians(func(r *result.Run) float64 {
			if r.OS == nil {
				return math.NaN()
			}
			return f(r.OS)
		})
	}
	rows := []struct {
		name string
		f    func(o *result.OS) float64
	}{
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
	}
	for _, r := range rows {
		c.row(p, r.name, get(r.f))
	}
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

func (c *Comparison) diff(p *printer) {
	p.f("\n  what differs between the platforms (first run of each group)\n")
	if len(c.Diff) == 0 {
		p.f("    nothing disclosed differs\n")
		return
	}
	for _, d := range c.Diff {
		var vals []string
		long := false
		for _, v := range d.Values {
			if v == "" {
				v = "(absent)"
			}
			vals = append(vals, v)
			long = long || len(v) > 24
		}
		if !long {
			p.f("    %-52s %s\n", clip(d.Key, 52), strings.Join(vals, " | "))
			continue
		}
		p.f("    %s\n", d.Key)
		for i, v := range vals {
			p.f("      %-14s %s\n", clip(c.Groups[i].Label, 14), clip(v, 76))
		}
	}
}
