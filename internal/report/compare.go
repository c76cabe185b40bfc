package report

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
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
	// Sweep is set when the runs step through a parameter; Groups then
	// hold the runs of one step (AtStep), the highest every group ran,
	// for the verdicts and the side-by-side sections.
	Sweep  *compare.Sweep
	AtStep string
}

// CompareOptions shape a comparison.
type CompareOptions struct {
	// Over reads the runs as a sweep over this parameter even when they
	// did not record it (runs made one by one with --users N, say); ""
	// takes the sweep the runs recorded, if any.
	Over string
	// AtCPU is the CPU utilisation (%) a sweep's groups are compared at;
	// NaN or 0: the highest every group reached.
	AtCPU float64
}

// NewComparison computes the verdicts and notes of gs.
func NewComparison(gs []compare.Group) *Comparison {
	c, _ := NewComparisonWith(gs, CompareOptions{})
	return c
}

// NewComparisonWith computes the comparison of gs; a sweep's groups may
// be one.
func NewComparisonWith(gs []compare.Group, o CompareOptions) (*Comparison, error) {
	c := &Comparison{}
	for _, g := range gs {
		c.Notes = append(c.Notes, compare.RunNotes(g)...)
	}
	param := o.Over
	if param == "" {
		param = compare.SweepParam(gs)
	}
	if param != "" {
		at := o.AtCPU
		if at == 0 {
			at = math.NaN()
		}
		sw, err := compare.NewSweep(gs, param, at)
		if err != nil {
			return nil, err
		}
		c.Sweep = sw
		gs, c.AtStep = atTopStep(gs, sw)
	}
	if len(gs) < 2 && c.Sweep == nil {
		return nil, fmt.Errorf("compare needs two groups")
	}
	c.Groups, c.Diff = gs, compare.DisclosureDiff(gs)
	ms := compare.Metrics(gs[0].Runs[0])
	for _, g := range gs[1:] {
		c.Verdicts = append(c.Verdicts, compare.Verdicts(gs[0], g, ms))
	}
	return c, nil
}

// atTopStep keeps of each group the runs of the highest step every group
// ran (the last step, with one group).
func atTopStep(gs []compare.Group, sw *compare.Sweep) ([]compare.Group, string) {
	common := map[float64]int{}
	for _, g := range sw.Groups {
		for _, st := range g.Steps {
			common[st.Value]++
		}
	}
	top := math.Inf(-1)
	for v, n := range common {
		if n == len(sw.Groups) {
			top = max(top, v)
		}
	}
	if math.IsInf(top, -1) {
		return gs, ""
	}
	var out []compare.Group
	for _, g := range gs {
		k := compare.Group{Label: g.Label}
		for i, r := range g.Runs {
			if v, ok := compare.StepOf(r, sw.Param); ok && v == top {
				k.Runs, k.Files = append(k.Runs, r), append(k.Files, g.Files[i])
			}
		}
		out = append(out, k)
	}
	return out, fmt.Sprintf("%s=%s", sw.Param, stepValue(top))
}

// Table is one section of a comparison: every output format (terminal,
// Markdown, CSV, HTML) renders the same tables.
type Table struct {
	Title   string     `json:"title"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}

// Tables builds the comparison's sections, verdicts first (a sweep's
// tables before them).
func (c *Comparison) Tables() []Table {
	if c.Sweep != nil && len(c.Groups) < 2 {
		return append(c.sweepTables(), c.noteTable()...)
	}
	return append(append(c.sweepTables(), c.verdictTables()...), c.sections()...)
}

// verdictTables are the verdicts of each group against the baseline, as
// text.
func (c *Comparison) verdictTables() []Table {
	base := c.Groups[0]
	var ts []Table
	for i, g := range c.Groups[1:] {
		at := ""
		if c.AtStep != "" {
			at = " at " + c.AtStep + ", the highest step both ran"
		}
		t := Table{Title: fmt.Sprintf("%s against %s%s (ratio %s/%s; throughput tested alone, the other metrics Holm-corrected among themselves)", g.Label, base.Label, at, g.Label, base.Label),
			Columns: []string{"metric", "verdict"}}

		for _, v := range c.Verdicts[i] {
			t.Rows = append(t.Rows, []string{v.Metric, v.String()})
			for _, n := range v.Notes {
				t.Rows = append(t.Rows, []string{"", "note: " + n})
			}
		}
		ts = append(ts, t)
	}
	return ts
}

// sections are the tables after the verdicts.
func (c *Comparison) sections() []Table {
	base := c.Groups[0]
	var ts []Table
	pw := Table{Title: "where the platform took time (database hosts, group medians)", Columns: []string{"finding"}}
	for _, g := range c.Groups[1:] {
		if s, tested := compare.PlatformFinding(base, g); s != "" {
			if !tested && !strings.Contains(s, "no platform-side wait") {
				s += " (not a finding: within the runs' own spread, or too few runs to tell)"
			}
			pw.Rows = append(pw.Rows, []string{s})
		}
	}
	if len(pw.Rows) > 0 {
		ts = append(ts, pw)
	}
	ts = append(ts, c.noteTable()...)
	side := c.sideBySide()
	if c.AtStep != "" {
		for i := range side {
			side[i].Title += " at " + c.AtStep
		}
	}
	ts = append(ts, side...)
	if t := c.overHosts(); t != nil {
		ts = append(ts, *t)
	}
	ts = append(ts, c.profiles()...)
	for _, f := range []func() *Table{c.waits, c.timedWaits} {
		if t := f(); t != nil {
			ts = append(ts, *t)
		}
	}
	ts = append(ts, c.histograms()...)
	for _, f := range []func() *Table{c.os, c.driverHost, c.diff, c.defaultsDiff, c.driverDiff} {
		if t := f(); t != nil {
			ts = append(ts, *t)
		}
	}
	return ts
}

// noteTable lists the runs to read with care, if any.
func (c *Comparison) noteTable() []Table {
	if len(c.Notes) == 0 {
		return nil
	}
	t := Table{Title: "runs to read with care", Columns: []string{"note"}}
	for _, n := range c.Notes {
		t.Rows = append(t.Rows, []string{n})
	}
	return []Table{t}
}

// title is the comparison's heading.
func (c *Comparison) title() string {
	ref := c.Groups[0].Runs[0]
	s := fmt.Sprintf("dbparity compare: %s v%s, baseline %q", ref.Workload.Name, ref.Workload.Version, c.Groups[0].Label)
	for _, g := range c.Groups {
		s += fmt.Sprintf(", %q %d run(s)", g.Label, len(g.Runs))
	}
	return s
}

// CompareText writes the comparison for a terminal of 100 columns.
func CompareText(w io.Writer, c *Comparison) error {
	p := &printer{w: w}
	p.f("%s\n", c.title())
	if d := c.Groups[0].Runs[0].Workload.Disclaimer; d != "" {
		p.f("  %s\n", d)
	}
	// The answer first, as the HTML report gives it.
	if hs := c.headlines(); len(hs) > 0 {
		p.f("\n  the answer\n")
		for _, h := range hs {
			p.f("    %s\n", h)
		}
	}
	for _, t := range c.Tables() {
		p.f("\n  %s\n", t.Title)
		widths := make([]int, len(t.Columns))
		for _, row := range append([][]string{t.Columns}, t.Rows...) {
			for i, cell := range row {
				widths[i] = max(widths[i], len([]rune(cell)))
			}
		}
		// A wide last column (verdicts, values) is not padded.
		for _, row := range append([][]string{t.Columns}, t.Rows...) {
			line := "   "
			for i, cell := range row {
				switch {
				case i == len(row)-1:
					line += " " + cell
				case i == 0:
					line += " " + cell + strings.Repeat(" ", widths[i]-len([]rune(cell)))
				default:
					line += " " + strings.Repeat(" ", widths[i]-len([]rune(cell))) + cell
				}
			}
			p.f("%s\n", strings.TrimRight(line, " "))
		}
	}
	return p.err
}

// CompareMarkdown writes the comparison as Markdown tables.
func CompareMarkdown(w io.Writer, c *Comparison) error {
	p := &printer{w: w}
	p.f("# %s\n", c.title())
	if d := c.Groups[0].Runs[0].Workload.Disclaimer; d != "" {
		p.f("\n%s\n", d)
	}
	esc := strings.NewReplacer("|", "\\|", "\n", " ")
	for _, t := range c.Tables() {
		p.f("\n## %s\n\n", esc.Replace(t.Title))
		p.f("|")
		for _, col := range t.Columns {
			p.f(" %s |", esc.Replace(col))
		}
		p.f("\n|")
		for i := range t.Columns {
			if i == 0 {
				p.f("---|")
			} else {
				p.f("---:|")
			}
		}
		p.f("\n")
		for _, row := range t.Rows {
			p.f("|")
			for _, cell := range row {
				p.f(" %s |", esc.Replace(cell))
			}
			p.f("\n")
		}
	}
	return p.err
}

// CompareCSV writes every table row as a CSV record led by its section's
// title; each section starts with its header record. Records are padded
// to one width, so spreadsheets read the file as one rectangle. The
// verdicts come first with numeric columns (ratio, interval, p-values,
// counts; empty where there is no number).
func CompareCSV(w io.Writer, c *Comparison) error {
	num := func(x float64) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ""
		}
		return strconv.FormatFloat(x, 'g', 6, 64)
	}
	vt := Table{Title: "verdicts", Columns: []string{"a", "b", "metric", "primary", "paired", "ratio", "ci_lo", "ci_hi", "p", "p_adj", "n_a", "n_b", "verdict", "notes"}}
	for i, g := range c.Groups[1:] {
		for _, v := range c.Verdicts[i] {
			vt.Rows = append(vt.Rows, []string{c.Groups[0].Label, g.Label, v.Metric, strconv.FormatBool(v.Primary), strconv.FormatBool(v.Paired),
				num(v.Ratio), num(v.Lo), num(v.Hi), num(v.P), num(v.PAdj), strconv.Itoa(v.NA), strconv.Itoa(v.NB), v.Word(), strings.Join(v.Notes, "; ")})
		}
	}
	ts := append(append([]Table{vt}, c.sweepTables()...), c.sections()...)
	width := 0
	for _, t := range ts {
		width = max(width, len(t.Columns)+1)
	}
	pad := func(r []string) []string { return append(r, make([]string, width-len(r))...) }
	cw := csv.NewWriter(w)
	for _, t := range ts {
		cw.Write(pad(append([]string{"section"}, t.Columns...)))
		for _, row := range t.Rows {
			cw.Write(pad(append([]string{t.Title}, row...)))
		}
	}
	cw.Flush()
	return cw.Error()
}

// header is a table of one row per figure, a column per group, and the
// ratio of every other group to the baseline: "ratio" when there are
// two groups, "GROUP/BASELINE" for each when there are more.
func (c *Comparison) header(title string) Table {
	t := Table{Title: title, Columns: []string{"figure"}}
	for _, g := range c.Groups {
		t.Columns = append(t.Columns, g.Label)
	}
	t.Columns = append(t.Columns, ratioColumns(c.Groups)...)
	return t
}

// ratioColumns name the ratio columns of gs against the first group.
func ratioColumns(gs []compare.Group) []string {
	if len(gs) == 2 {
		return []string{"ratio"}
	}
	var cols []string
	for _, g := range gs[1:] {
		cols = append(cols, g.Label+"/"+gs[0].Label)
	}
	return cols
}

// row adds a figure: NaN is a group without it, printed n/a and left out
// of the ratios (a figure a run does not have is never a zero).
func (c *Comparison) row(t *Table, name string, vals []float64) {
	t.Rows = append(t.Rows, append([]string{name}, cells(vals)...))
}

// cells are a figure's values, then their ratios to the first.
func cells(vals []float64) []string {
	var row []string
	for _, v := range vals {
		if math.IsNaN(v) {
			row = append(row, "n/a")
		} else {
			row = append(row, trim(v))
		}
	}
	for _, v := range vals[1:] {
		r := ""
		if !math.IsNaN(vals[0]) && !math.IsNaN(v) && vals[0] != 0 {
			r = fmt.Sprintf("%.2fx", v/vals[0])
		}
		row = append(row, r)
	}
	return row
}

func trim(v float64) string { return num(&v) }

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

// each calls f on every run of every group until it returns true, and
// tells whether it did: the sections a run lacks (a recovered run has no
// profiles, no waits, no OS window) are shown when another run has them.
func (c *Comparison) each(f func(r *result.Run) bool) bool {
	for _, g := range c.Groups {
		for _, r := range g.Runs {
			if f(r) {
				return true
			}
		}
	}
	return false
}

// transactions counts a run's committed transactions: a replay's are
// the committed blocks and autocommit statements it replayed (its
// summary counts statements).
func transactions(r *result.Run) float64 {
	if r.Replay != nil {
		return float64(r.Replay.ReplayedTransactions)
	}
	return float64(r.Summarize().Commits)
}

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

func (c *Comparison) profiles() []Table {
	var ts []Table
	if t := c.loadProfile(); t != nil {
		ts = append(ts, *t)
	}
	var first *result.Profile
	c.each(func(r *result.Run) bool { first = r.IOProfile; return first != nil })
	if first == nil {
		return ts
	}
	t := c.header("io profile per second")
	for _, l := range first.Lines {
		vals := c.medians(profileValue(func(r *result.Run) *result.Profile { return r.IOProfile }, l.Name, false))
		if !empty(vals) {
			c.row(&t, l.Name+" ("+l.Unit+")", vals)
		}
	}
	ts = append(ts, t)
	if b := c.ioByBackend(); b != nil {
		ts = append(ts, *b)
	}
	return ts
}

// ioByBackend puts the engine's IO by backend type and context side by
// side: pg_stat_io's rows on 16+, what pg_stat_bgwriter says before (the
// rows a group's server does not count are n/a).
func (c *Comparison) ioByBackend() *Table {
	type key struct{ backend, context string }
	var keys []key
	seen := map[key]bool{}
	c.each(func(r *result.Run) bool {
		for _, b := range r.IOByBackend {
			if k := (key{b.Backend, b.Context}); !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		return false
	})
	if len(keys) == 0 {
		return nil
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].backend != keys[j].backend {
			return keys[i].backend < keys[j].backend
		}
		return keys[i].context < keys[j].context
	})
	t := c.header("io by backend per second (pg_stat_io on 16+; before, pg_stat_bgwriter's writes and the database's reads)")
	for _, k := range keys {
		name := k.backend
		if k.context != "" {
			name += " (" + k.context + ")"
		}
		for _, m := range []struct {
			label string
			get   func(b result.IOBackend) *float64
		}{
			{"reads", func(b result.IOBackend) *float64 { return b.Reads }},
			{"writes", func(b result.IOBackend) *float64 { return b.Writes }},
			{"extends", func(b result.IOBackend) *float64 { return b.Extends }},
			{"fsyncs", func(b result.IOBackend) *float64 { return b.Fsyncs }},
			{"read ms", func(b result.IOBackend) *float64 { return b.ReadMs }},
			{"write ms", func(b result.IOBackend) *float64 { return b.WriteMs }},
		} {
			vals := c.medians(func(r *result.Run) float64 {
				for _, b := range r.IOByBackend {
					if b.Backend == k.backend && b.Context == k.context {
						if v := m.get(b); v != nil {
							return *v
						}
					}
				}
				return math.NaN()
			})
			if !empty(vals) {
				c.row(&t, name+" "+m.label, vals)
			}
		}
	}
	return &t
}

// overHosts is the scale-out studies' table, when a group drove several
// targets at once: per group, the targets, and in total and per target
// the throughput, p95, the servers' CPU, the physical reads and the data
// devices' read IOPS (per database host); against
// the baseline, the efficiency of adding targets (throughput ratio over
// target ratio). The medians of each group's runs.
func (c *Comparison) overHosts() *Table {
	if !c.each(func(r *result.Run) bool { return len(r.Parts) > 1 }) {
		return nil
	}
	targets := func(r *result.Run) float64 { return float64(max(len(r.Parts), 1)) }
	perTarget := func(f func(r *result.Run) float64) func(r *result.Run) float64 {
		return func(r *result.Run) float64 { return f(r) / targets(r) }
	}
	tps := func(r *result.Run) float64 { return r.Summarize().TPS }
	cores := func(r *result.Run) float64 {
		if !r.OS.HasWindow() || r.OS.Window.ServerCPUCores == nil {
			return math.NaN()
		}
		return *r.OS.Window.ServerCPUCores
	}
	reads := func(r *result.Run) float64 {
		if r.IO == nil || r.IO.PhysicalReads == nil {
			return math.NaN()
		}
		return *r.IO.PhysicalReads
	}
	p95 := func(r *result.Run) float64 {
		if len(r.Transactions) == 0 || r.Transactions[0].Latency.Count == 0 {
			return math.NaN()
		}
		return r.Transactions[0].Latency.P95Ms
	}
	t := c.header("over the targets (several database hosts driven at once: in total and per target)")
	n := c.medians(targets)
	c.row(&t, "targets", n)
	c.row(&t, "database hosts", c.medians(func(r *result.Run) float64 { return float64(r.DatabaseHosts()) }))
	for _, row := range t.Rows[len(t.Rows)-2:] { // counts, not measurements
		for i := range n {
			if v, err := strconv.ParseFloat(row[1+i], 64); err == nil {
				row[1+i] = fmt.Sprintf("%g", v)
			}
		}
	}
	c.row(&t, "transactions/s", c.medians(tps))
	c.row(&t, "transactions/s per target", c.medians(perTarget(tps)))
	c.row(&t, "p95 ms (first transaction type, every target merged)", c.medians(p95))
	c.row(&t, "database servers CPU (cores)", c.medians(cores))
	c.row(&t, "database servers CPU per target (cores)", c.medians(perTarget(cores)))
	c.row(&t, "physical reads/s", c.medians(reads))
	c.row(&t, "physical reads/s per target", c.medians(perTarget(reads)))
	iops := func(r *result.Run) float64 {
		if r.IO == nil || r.IO.ReadIOPS == nil {
			return math.NaN()
		}
		return *r.IO.ReadIOPS
	}
	c.row(&t, "data device read IOPS (each host's devices once)", c.medians(iops))
	c.row(&t, "data device read IOPS per database host", c.medians(func(r *result.Run) float64 { return iops(r) / float64(r.DatabaseHosts()) }))
	total := c.medians(tps)
	eff := []float64{1}
	for i := 1; i < len(total); i++ {
		eff = append(eff, total[i]/total[0]/(n[i]/n[0]))
	}
	row := []string{"efficiency of the targets added (throughput ratio / targets ratio)"}
	for _, e := range eff {
		if math.IsNaN(e) || math.IsInf(e, 0) {
			row = append(row, "n/a")
			continue
		}
		row = append(row, fmt.Sprintf("%.0f%%", 100*e))
	}
	for range eff[1:] {
		row = append(row, "")
	}
	t.Rows = append(t.Rows, row)
	return &t
}

// loadProfile is AWR's load profile side by side: per second and per
// transaction in one table, each group's median; lines no group has, or
// that are zero in every group, are left out.
func (c *Comparison) loadProfile() *Table {
	var first *result.Profile
	c.each(func(r *result.Run) bool { first = r.LoadProfile; return first != nil })
	if first == nil {
		return nil
	}
	t := &Table{Title: "load profile (per second and per transaction, as AWR prints it; medians of each group's runs)", Columns: []string{"figure"}}
	for _, per := range []string{"/s", "/tx"} {
		for _, g := range c.Groups {
			t.Columns = append(t.Columns, g.Label+" "+per)
		}
		for _, col := range ratioColumns(c.Groups) {
			t.Columns = append(t.Columns, col+" "+per)
		}
	}
	get := func(r *result.Run) *result.Profile { return r.LoadProfile }
	for _, l := range first.Lines {
		ps := c.medians(profileValue(get, l.Name, false))
		pt := c.medians(profileValue(get, l.Name, true))
		if empty(ps) && empty(pt) {
			continue
		}
		t.Rows = append(t.Rows, append(append([]string{l.Name + " (" + l.Unit + ")"}, cells(ps)...), cells(pt)...))
	}
	return t
}

// profileValue reads one line of a run's profile, per second or per
// transaction; NaN when the run has no such figure.
func profileValue(get func(*result.Run) *result.Profile, name string, perTx bool) func(*result.Run) float64 {
	return func(r *result.Run) float64 {
		pl := get(r).Line(name)
		if pl == nil {
			return math.NaN()
		}
		v := pl.PerSecond
		if perTx {
			v = pl.PerTx
		}
		if v == nil {
			return math.NaN()
		}
		return *v
	}
}

// empty: no group has the figure, or it is zero in all of them.
func empty(vals []float64) bool {
	for _, v := range vals {
		if !math.IsNaN(v) && v != 0 {
			return false
		}
	}
	return true
}

// waits are the sampled wait events side by side, as AWR's top timed
// events: over all runs of each group, each event's samples, its time
// estimated as samples × the sampling interval, its share of DB time, and
// its class; the events in any group's top ten, most time first.
func (c *Comparison) waits() *Table {
	if !c.each(func(r *result.Run) bool { return r.Waits != nil }) {
		return nil
	}
	type sum struct {
		samples map[waitKey]int64
		active  int64
		secs    float64 // seconds a sample stands for: the sampling interval
	}
	sums := make([]sum, len(c.Groups))
	for i, g := range c.Groups {
		s := sum{samples: map[waitKey]int64{}}
		for _, r := range g.Runs {
			if r.Waits == nil {
				continue
			}
			s.active += r.Waits.ActiveSamples
			s.secs = r.Waits.IntervalMs / 1000
			for _, e := range r.Waits.Events {
				s.samples[waitKey{e.Class, e.Event}] += e.Samples
			}
		}
		sums[i] = s
	}
	weights := make([]map[waitKey]int64, len(sums))
	for i, s := range sums {
		weights[i] = s.samples
	}
	keys := topEvents(weights)
	t := &Table{Title: "top wait events (sampled: every run of each group; time = samples × interval; per-wait time histograms n/a: sampling sees waits, not their lengths)",
		Columns: []string{"event"}}
	for _, g := range c.Groups {
		t.Columns = append(t.Columns, g.Label+" samples", g.Label+" time s", g.Label+" % DB time")
	}
	t.Columns = append(t.Columns, "class")
	for _, k := range keys {
		row := []string{k.event}
		for _, s := range sums {
			if s.active == 0 {
				row = append(row, "n/a", "n/a", "n/a")
				continue
			}
			n := s.samples[k]
			row = append(row, fmt.Sprint(n), fmt.Sprintf("%.1f", float64(n)*s.secs), fmt.Sprintf("%.1f", 100*float64(n)/float64(s.active)))
		}
		t.Rows = append(t.Rows, append(row, k.class))
	}
	return t
}

// timedWaits are the wait events the server times itself (MySQL's and
// MariaDB's performance_schema) side by side, in AWR's columns: over all
// runs of each group, the waits, their total time, the average wait and
// the share of all timed wait time, then the class; the events in any
// group's top ten, most time first.
func (c *Comparison) timedWaits() *Table {
	if !c.each(func(r *result.Run) bool { return r.TimedWaits != nil }) {
		return nil
	}
	type sum struct {
		count, secs map[waitKey]float64
		total       float64
		measured    bool
	}
	sums := make([]sum, len(c.Groups))
	for i, g := range c.Groups {
		s := sum{count: map[waitKey]float64{}, secs: map[waitKey]float64{}}
		for _, r := range g.Runs {
			if r.TimedWaits == nil {
				continue
			}
			s.measured = true
			for _, e := range r.TimedWaits.Events {
				k := waitKey{e.Class, e.Event}
				s.count[k] += e.Count
				s.secs[k] += e.Seconds
				s.total += e.Seconds
			}
		}
		sums[i] = s
	}
	weights := make([]map[waitKey]float64, len(sums))
	for i, s := range sums {
		weights[i] = s.secs
	}
	keys := topEvents(weights)
	t := &Table{Title: "timed wait events (the server's own timing, every run of each group; as AWR's top timed events)", Columns: []string{"event"}}
	for _, g := range c.Groups {
		t.Columns = append(t.Columns, g.Label+" waits", g.Label+" time s", g.Label+" avg ms", g.Label+" % wait time")
	}
	t.Columns = append(t.Columns, "class")
	for _, k := range keys {
		row := []string{k.event}
		for _, s := range sums {
			if !s.measured {
				row = append(row, "n/a", "n/a", "n/a", "n/a")
				continue
			}
			n, secs := s.count[k], s.secs[k]
			avg, pct := "-", "0.0"
			if n > 0 {
				avg = fmt.Sprintf("%.3f", 1000*secs/n)
			}
			if s.total > 0 {
				pct = fmt.Sprintf("%.1f", 100*secs/s.total)
			}
			row = append(row, fmt.Sprintf("%.0f", n), fmt.Sprintf("%.2f", secs), avg, pct)
		}
		t.Rows = append(t.Rows, append(row, k.class))
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// waitKey is a wait event.
type waitKey struct{ class, event string }

// topEvents are the events in any group's top ten by weight (samples, or
// seconds), the heaviest over all groups first.
func topEvents[N int64 | float64](weights []map[waitKey]N) []waitKey {
	top := map[waitKey]bool{}
	for _, w := range weights {
		keys := slices.Collect(maps.Keys(w))
		slices.SortFunc(keys, func(a, b waitKey) int { return cmp.Compare(w[b], w[a]) })
		for _, k := range keys[:min(len(keys), 10)] {
			top[k] = true
		}
	}
	keys := slices.Collect(maps.Keys(top))
	total := func(k waitKey) (n N) {
		for _, w := range weights {
			n += w[k]
		}
		return n
	}
	slices.SortFunc(keys, func(a, b waitKey) int {
		if d := cmp.Compare(total(b), total(a)); d != 0 {
			return d
		}
		return cmp.Compare(a.class+a.event, b.class+b.event)
	})
	return keys
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
	diffRows(t, c.Diff, func(d compare.Difference) bool { return d.Default })
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

// CompareSchema names the layout of `compare --format json`
// (docs/compare-json.md).
const CompareSchema = "dbparity.compare/1"

// CompareJSON writes the comparison as one JSON document: the groups and
// their files, each group's verdicts against the baseline with their
// numbers, the notes, the facts that differ, and every table as text.
func CompareJSON(w io.Writer, c *Comparison) error {
	type group struct {
		Label      string   `json:"label"`
		Runs       int      `json:"runs"`
		Files      []string `json:"files"`
		HostSource string   `json:"host_source"`
	}
	type against struct {
		A        string            `json:"a"`
		B        string            `json:"b"`
		Verdicts []compare.Verdict `json:"verdicts"`
		Platform string            `json:"platform,omitempty"`
	}
	doc := struct {
		Schema      string               `json:"schema"`
		Workload    string               `json:"workload"`
		Baseline    string               `json:"baseline"`
		Groups      []group              `json:"groups"`
		Comparisons []against            `json:"comparisons"`
		Notes       []string             `json:"notes"`
		Differences []compare.Difference `json:"differences"`
		Tables      []Table              `json:"tables"`
		Sweep       any                  `json:"sweep,omitempty"`
		AtStep      string               `json:"at_step,omitempty"`
	}{Schema: CompareSchema, Workload: c.Groups[0].Runs[0].Workload.Name, Baseline: c.Groups[0].Label,
		Notes: c.Notes, Differences: c.Diff, Tables: append(c.sweepTables(), c.sections()...), AtStep: c.AtStep}
	if c.Sweep != nil {
		doc.Sweep = finite(reflect.ValueOf(c.Sweep))
	}
	for _, g := range c.Groups {
		doc.Groups = append(doc.Groups, group{Label: g.Label, Runs: len(g.Runs), Files: g.Files, HostSource: compare.HostSource(g.Runs[0])})
	}
	for i, g := range c.Groups[1:] {
		doc.Comparisons = append(doc.Comparisons, against{A: c.Groups[0].Label, B: g.Label, Verdicts: c.Verdicts[i],
			Platform: compare.PlatformSentence(c.Groups[0], g)})
	}
	if doc.Notes == nil {
		doc.Notes = []string{}
	}
	if doc.Differences == nil {
		doc.Differences = []compare.Difference{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
