package report

import (
	"cmp"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// palette colours the groups, baseline first.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

func colour(i int) string { return palette[i%len(palette)] }

type line struct {
	name   string
	colour string
	dash   bool
	x, y   []float64
	// lo and hi, when set, draw a band around the line (the spread of
	// the runs at each x).
	lo, hi []float64
}

// shade is an x range drawn grey behind the lines, named.
type shade struct {
	name     string
	from, to float64
}

// lineChart draws lines in an SVG of fixed size, axes from zero, with
// the shaded ranges behind them.
func lineChart(title, xLabel, yLabel string, lines []line, shades ...shade) template.HTML {
	const w, h, left, bottom, top, right = 760.0, 260.0, 60.0, 36.0, 28.0, 150.0
	var maxX, maxY float64
	for _, l := range lines {
		for i := range l.x {
			maxX, maxY = math.Max(maxX, l.x[i]), math.Max(maxY, l.y[i])
			if l.hi != nil {
				maxY = math.Max(maxY, l.hi[i])
			}
		}
	}
	if maxX == 0 || maxY == 0 {
		return ""
	}
	maxY *= 1.1
	px := func(x float64) float64 { return left + x/maxX*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/maxY*(h-bottom-top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" xmlns="http://www.w3.org/2000/svg">`, w, h, w, h)
	fmt.Fprintf(&b, `<title>%s</title><text x="%.0f" y="18" class="ct">%s</text>`, html.EscapeString(title), left, html.EscapeString(title))
	for _, sh := range shades {
		x0, x1 := px(math.Max(sh.from, 0)), px(math.Min(sh.to, maxX))
		if x1 > x0 {
			fmt.Fprintf(&b, `<rect class="shade" x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#eee"><title>%s</title></rect>`,
				x0, top, x1-x0, h-bottom-top, html.EscapeString(sh.name))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="tk">%s</text>`, x0+3, top+12, html.EscapeString(sh.name))
		}
	}
	axes(&b, left, h-bottom, w-right, top, maxX, maxY, xLabel, yLabel)
	for _, l := range lines {
		if l.lo == nil {
			continue
		}
		var pts []string
		for k := range l.x {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(l.x[k]), py(l.hi[k])))
		}
		for k := len(l.x) - 1; k >= 0; k-- {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(l.x[k]), py(l.lo[k])))
		}
		fmt.Fprintf(&b, `<polygon class="band" fill="%s" fill-opacity="0.18" stroke="none" points="%s"/>`, l.colour, strings.Join(pts, " "))
	}
	for i, l := range lines {
		var pts []string
		for k := range l.x {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(l.x[k]), py(l.y[k])))
		}
		dash := ""
		if l.dash {
			dash = ` stroke-dasharray="5,3"`
		}
		fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`, l.colour, dash, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" class="lg" fill="%s">%s</text>`, w-right+10, top+14*float64(i+1), l.colour, html.EscapeString(l.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func axes(b *strings.Builder, x0, y0, x1, y1, maxX, maxY float64, xLabel, yLabel string) {
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="ax"/>`, x0, y0, x1, y0)
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="ax"/>`, x0, y0, x0, y1)
	for i := 0; i <= 4; i++ {
		y := y0 - float64(i)/4*(y0-y1)
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" class="tk" text-anchor="end">%s</text>`, x0-4, y+4, short(maxY*float64(i)/4))
		if maxX > 0 {
			x := x0 + float64(i)/4*(x1-x0)
			fmt.Fprintf(b, `<text x="%.0f" y="%.0f" class="tk" text-anchor="middle">%s</text>`, x, y0+14, short(maxX*float64(i)/4))
		}
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" class="tk" text-anchor="middle">%s</text>`, (x0+x1)/2, y0+30, html.EscapeString(xLabel))
	fmt.Fprintf(b, `<text x="14" y="%.0f" class="tk" transform="rotate(-90 14 %.0f)" text-anchor="middle">%s</text>`, (y0+y1)/2, (y0+y1)/2, html.EscapeString(yLabel))
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// barChart draws grouped bars: one group of bars per category, one bar
// per series.
func barChart(title, yLabel string, categories []string, names []string, values [][]float64) template.HTML {
	const w, h, left, bottom, top = 760.0, 240.0, 60.0, 44.0, 28.0
	var maxY float64
	for _, s := range values {
		for _, v := range s {
			maxY = math.Max(maxY, v)
		}
	}
	if maxY == 0 || len(categories) == 0 {
		return ""
	}
	maxY *= 1.1
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" xmlns="http://www.w3.org/2000/svg">`, w, h, w, h)
	fmt.Fprintf(&b, `<title>%s</title><text x="%.0f" y="18" class="ct">%s</text>`, html.EscapeString(title), left, html.EscapeString(title))
	const right = 170.0 // room for the legend
	axes(&b, left, h-bottom, w-right, top, 0, maxY, "", yLabel)
	slot := (w - right - left) / float64(len(categories))
	bw := slot * 0.8 / float64(len(values))
	for ci, cat := range categories {
		x0 := left + float64(ci)*slot + slot*0.1
		for si, s := range values {
			v := s[ci]
			bh := v / maxY * (h - bottom - top)
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.1f</title></rect>`,
				x0+float64(si)*bw, h-bottom-bh, bw, bh, colour(si), html.EscapeString(names[si]), html.EscapeString(cat), v)
		}
		// Every label where it fits (6.5 px a character at the ticks'
		// 11 px), else every second, fourth...: labels never overlap.
		if ci%labelEvery(categories, slot) == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="tk" text-anchor="middle">%s</text>`, x0+slot*0.4, h-bottom+14, html.EscapeString(cat))
		}
	}
	for si, n := range names {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" class="lg" fill="%s">%s</text>`, w-right+10, top+14*float64(si+1), colour(si), html.EscapeString(n))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// labelEvery is the step between category labels that keeps them from
// overlapping in slots of slot pixels.
func labelEvery(categories []string, slot float64) int {
	longest := 0
	for _, c := range categories {
		longest = max(longest, len([]rune(c)))
	}
	need := float64(longest)*6.5 + 4
	step := 1
	for float64(step)*slot < need {
		step *= 2
	}
	return step
}

// charts of a comparison: throughput over time of each group (the median
// of its runs at each second, with their range as a band, the warm-up
// shaded), latency histograms side by side, CPU split over time.
func (c *Comparison) charts() []template.HTML {
	out := c.sweepCharts()
	var tps []line
	unit := "transactions/s"
	if c.Groups[0].Runs[0].Replay != nil {
		unit = "statements/s"
	}
	for gi, g := range c.Groups {
		bySecond := map[int][]float64{}
		last := 0
		for _, r := range g.Runs {
			for _, iv := range r.Series {
				if iv.Seconds > 0.5 {
					k := int(math.Round(iv.At))
					bySecond[k] = append(bySecond[k], iv.TPS())
					last = max(last, k)
				}
			}
		}
		l := line{name: fmt.Sprintf("%s (median of %d)", g.Label, len(g.Runs)), colour: colour(gi), lo: []float64{}, hi: []float64{}}
		for k := 0; k <= last; k++ {
			v := bySecond[k]
			if len(v) == 0 {
				continue
			}
			lo, hi := v[0], v[0]
			for _, x := range v {
				lo, hi = math.Min(lo, x), math.Max(hi, x)
			}
			l.x, l.y = append(l.x, float64(k)), append(l.y, compare.Median(v))
			l.lo, l.hi = append(l.lo, lo), append(l.hi, hi)
		}
		tps = append(tps, l)
	}
	warm := shade{name: "warm-up", to: c.Groups[0].Runs[0].Driver.WarmupS}
	out = append(out, lineChart("throughput over time: median of each group's runs, their range shaded", "seconds from the start", unit, tps, warm))

	hist := func(title string, get func(r *result.Run) result.Histogram) {
		var bs [][]metrics.Bucket
		var names []string
		for _, g := range c.Groups {
			h, err := get(g.Runs[0]).Decode()
			if err != nil {
				return
			}
			if h.Count() == 0 {
				continue // no latency (a recovered run's): no bars, not bars of zero
			}
			bs, names = append(bs, metrics.Log2Buckets(h)), append(names, g.Label)
		}
		if len(names) == 0 {
			return
		}
		out = append(out, bucketChart(title, "% of transactions", names, bs))
	}
	hist("COMMIT latency, log2 buckets (first run of each group)", func(r *result.Run) result.Histogram { return r.Commit })
	for _, t := range c.Groups[0].Runs[0].Transactions {
		name := t.Name
		hist(name+" latency, log2 buckets", func(r *result.Run) result.Histogram {
			for _, x := range r.Transactions {
				if x.Name == name {
					return x.Latency
				}
			}
			return result.Histogram{}
		})
	}
	for _, g := range c.Groups {
		r := g.Runs[0]
		if r.OS == nil || len(r.OS.Series) == 0 {
			continue
		}
		out = append(out, hostCPUChart("database host CPU split over time: "+g.Label+" (first run, source "+compare.HostSource(r)+")", r.OS))
	}
	return out
}

// bucketChart draws latency histograms side by side: each named series
// of log2 buckets as bars, over the buckets any of them has.
func bucketChart(title, yLabel string, names []string, bs [][]metrics.Bucket) template.HTML {
	present := map[int64]bool{}
	for _, b := range bs {
		for _, x := range b {
			present[x.UpToMicros] = true
		}
	}
	var cats []string
	vals := make([][]float64, len(bs))
	for u := int64(1); u <= 1<<40; u <<= 1 {
		if !present[u] {
			continue
		}
		cats = append(cats, "<"+short(float64(u))+"µs")
		for i, b := range bs {
			v := 0.0
			for _, x := range b {
				if x.UpToMicros == u {
					v = x.Pct
				}
			}
			vals[i] = append(vals[i], v)
		}
	}
	return barChart(title, yLabel, cats, names, vals)
}

// hostCPUChart draws a host's CPU split (user, sys, iowait, steal) over
// the OS series.
func hostCPUChart(title string, o *result.OS) template.HTML {
	start := o.Series[0].From
	var ls []line
	for k, f := range []struct {
		name string
		get  func(i int) float64
	}{
		{"user", func(i int) float64 { return o.Series[i].CPUUserPct }},
		{"sys", func(i int) float64 { return o.Series[i].CPUSystemPct }},
		{"iowait", func(i int) float64 { return o.Series[i].CPUIowaitPct }},
		{"steal", func(i int) float64 { return o.Series[i].CPUStealPct }},
	} {
		l := line{name: f.name, colour: palette[(k+2)%len(palette)]}
		for i, s := range o.Series {
			l.x, l.y = append(l.x, s.To.Sub(start).Seconds()), append(l.y, f.get(i))
		}
		ls = append(ls, l)
	}
	return lineChart(title, "seconds", "% of all CPUs", ls)
}

// HTMLGenerator marks, in the head of every HTML report, a file that
// compare --html may replace: its own earlier report, never another file.
const HTMLGenerator = `<meta name="generator" content="dbparity compare">`

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">` + HTMLGenerator + `<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
h1{font-size:20px}h2{font-size:16px;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
td:first-child,th:first-child{text-align:left}td.wide{text-align:left;white-space:normal}
.chart{display:block;margin:1em 0;border:1px solid #eee}.ax{stroke:#888}.tk{font-size:11px;fill:#555}.ct{font-size:13px;font-weight:bold}.lg{font-size:12px}
.note{color:#666}.headline{font-size:16px;font-weight:bold;margin:.3em 0}
</style></head><body>
<h1>{{.Title}}</h1>{{if .Disclaimer}}<p class="note">{{.Disclaimer}}</p>{{end}}
{{range .Headlines}}<p class="headline">{{.}}</p>{{end}}
{{range .Charts}}{{.}}{{end}}
{{range .Tables}}<h2>{{.Title}}</h2><table><tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{if gt (len .) 40}} class="wide"{{end}}>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{block "extra" .}}{{end}}
<p class="note">Written by dbparity. This file fetches nothing: charts are inline SVG.</p>
</body></html>
`))

// CompareHTML writes the comparison as one self-contained HTML file:
// inline SVG charts and the tables; no script, font or style is fetched.
func CompareHTML(w io.Writer, c *Comparison) error {
	return page.Execute(w, struct {
		Title, Disclaimer string
		Headlines         []string
		Charts            []template.HTML
		Tables            []Table
	}{c.title(), c.Groups[0].Runs[0].Workload.Disclaimer, c.headlines(), c.charts(), c.Tables()})
}

// headlines are what a manager reads first: the study's one answer with
// its interval and what undermines it, then where the platform took time
// when that passed a test against the runs' own spread. A sweep's answer
// is throughput at equal CPU (or, over CPUs, the gain per doubling); the
// verdicts at its top step stay in their table. Otherwise each group's
// primary verdict against the baseline, with its caveats.
func (c *Comparison) headlines() []string {
	out := c.sweepHeadlines()
	sweepAnswer := c.Sweep != nil && len(out) > len(c.Sweep.Caveats)
	for i, g := range c.Groups[1:] {
		if !sweepAnswer {
			for _, v := range c.Verdicts[i] {
				if v.Primary {
					out = append(out, v.Headline())
					for _, n := range v.Notes {
						if strings.HasPrefix(n, "NOT ") {
							out = append(out, n)
						}
					}
				}
			}
		}
		if s, tested := compare.PlatformFinding(c.Groups[0], g); s != "" && tested {
			out = append(out, s)
		}
	}
	return out
}

// sweepCharts draw a sweep: each group's throughput against the swept
// parameter (medians, the runs' range as a band, the USL fit dashed) and
// against the database server's CPU utilisation, the equal-CPU point
// shaded.
func (c *Comparison) sweepCharts() []template.HTML {
	s := c.Sweep
	if s == nil {
		return nil
	}
	var byStep, byCPU []line
	for gi, g := range s.Groups {
		l := line{name: g.Label + " (median)", colour: colour(gi), lo: []float64{}, hi: []float64{}}
		cpu := line{name: g.Label, colour: colour(gi)}
		for _, st := range g.Steps {
			l.x, l.y = append(l.x, st.Value), append(l.y, st.TPS)
			l.lo, l.hi = append(l.lo, st.TPSMin), append(l.hi, st.TPSMax)
			if !math.IsNaN(st.CPU) {
				cpu.x, cpu.y = append(cpu.x, st.CPU), append(cpu.y, st.TPS)
			}
		}
		byStep = append(byStep, l)
		if u := g.USL; u != nil {
			fit := line{name: g.Label + " USL fit", colour: colour(gi), dash: true}
			lo, hi := g.Steps[0].Value, g.Steps[len(g.Steps)-1].Value
			for k := 0; k <= 60; k++ {
				n := lo + (hi-lo)*float64(k)/60
				fit.x, fit.y = append(fit.x, n), append(fit.y, u.At(n))
			}
			byStep = append(byStep, fit)
		}
		if len(cpu.x) > 0 {
			// A line through the steps in the order of their utilisation.
			idx := make([]int, len(cpu.x))
			for i := range idx {
				idx[i] = i
			}
			slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(cpu.x[a], cpu.x[b]) })
			sorted := line{name: cpu.name, colour: cpu.colour}
			for _, i := range idx {
				sorted.x, sorted.y = append(sorted.x, cpu.x[i]), append(sorted.y, cpu.y[i])
			}
			byCPU = append(byCPU, sorted)
		}
	}
	unit := "transactions/s"
	out := []template.HTML{lineChart("throughput against "+s.Param+": median of each step's runs, their range shaded", s.Param, unit, byStep)}
	if len(byCPU) > 0 {
		var marks []shade
		if !math.IsNaN(s.EqualAt) {
			marks = append(marks, shade{name: fmt.Sprintf("equal CPU %.0f%%", s.EqualAt), from: s.EqualAt - 0.4, to: s.EqualAt + 0.4})
		}
		out = append(out, lineChart("throughput against CPU utilisation ("+s.CPUBasis+")", "CPU utilisation %", unit, byCPU, marks...))
	}
	return out
}
