package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/dbparity/dbparity/internal/compare"
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

	all []compare.Group // every run, a sweep's every step
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
	c := &Comparison{all: gs}
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
	for _, f := range []func() *Table{c.os, c.driverHost, c.diff, c.defaultsDiff, c.packagingDiff, c.driverDiff} {
		if t := f(); t != nil {
			ts = append(ts, *t)
		}
	}
	return ts
}

// noteTable names the runs behind the answer's caveats, if any: the
// answer counts them and names the worst.
func (c *Comparison) noteTable() []Table {
	if t := caveatRuns(c.Answer().Assessment); t != nil {
		return []Table{*t}
	}
	return nil
}

// title is the comparison's heading: every run of each group, a sweep's
// every step ("baseline" only when there is another group).
func (c *Comparison) title() string {
	ref := c.Groups[0].Runs[0]
	s := fmt.Sprintf("dbparity compare: %s v%s", ref.Workload.Name, ref.Workload.Version)
	if len(c.all) > 1 {
		s += fmt.Sprintf(", baseline %q", c.all[0].Label)
	}
	for _, g := range c.all {
		n := int64(len(g.Runs))
		s += fmt.Sprintf(", %q %d %s", g.Label, n, plural(n, "run", "runs"))
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
	answerText(p, c.Answer())
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
	a := c.Answer()
	p.f("\n## The answer\n\n")
	for _, l := range a.Sentences {
		p.f("**%s**\n\n", l)
	}
	p.f("Grade: **%s**\n", a.Assessment.Label)
	if len(a.Assessment.Lines) > 0 {
		p.f("\n")
	}
	for _, l := range a.Assessment.Lines {
		p.f("- %s\n", l)
	}
	for _, n := range a.Notes {
		p.f("\nNote: %s\n", n)
	}
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
	a := c.Answer()
	at := Table{Title: "answer", Columns: []string{"kind", "text"}}
	for _, l := range a.Sentences {
		at.Rows = append(at.Rows, []string{"sentence", l})
	}
	at.Rows = append(at.Rows, []string{"grade", a.Assessment.Label})
	for _, l := range a.Assessment.Lines {
		at.Rows = append(at.Rows, []string{"caveat", l})
	}
	for _, n := range a.Notes {
		at.Rows = append(at.Rows, []string{"note", n})
	}
	ts := append(append([]Table{at, vt}, c.sweepTables()...), c.sections()...)
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
		Answer      Answer               `json:"answer"`
		Workload    string               `json:"workload"`
		Baseline    string               `json:"baseline"`
		Groups      []group              `json:"groups"`
		Comparisons []against            `json:"comparisons"`
		Notes       []string             `json:"notes"`
		Differences []compare.Difference `json:"differences"`
		Tables      []Table              `json:"tables"`
		Sweep       any                  `json:"sweep,omitempty"`
		AtStep      string               `json:"at_step,omitempty"`
	}{Schema: CompareSchema, Answer: c.Answer(), Workload: c.Groups[0].Runs[0].Workload.Name, Baseline: c.Groups[0].Label,
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
