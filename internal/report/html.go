package report

import (
	"cmp"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

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
	// lo and hi, when set, are the spread of the runs at each x: a band
	// around the line where x runs on (seconds), or, with ranges, a
	// vertical bar at each x of its own (a sweep's steps: the runs of
	// one step are never joined to another's).
	lo, hi []float64
	ranges bool
	// marks draws a point at each x, tips (when set) their tooltips.
	marks bool
	tips  []string
}

// shade is an x range drawn grey behind the lines, named.
type shade struct {
	name     string
	from, to float64
}

// chart is what a chart shows and how its axes read.
type chart struct {
	title          string
	xLabel, yLabel string
	// intX and intY keep an axis's ticks whole numbers: counts (users,
	// CPUs, seconds) and utilisation in %.
	intX, intY bool
	// pctY is a y axis of percentages: it ends at 100 when they do.
	pctY bool
	// plotH is the height of the plot in the SVG's units (0: 220); the
	// answer's chart is lower, so that the answer fits above the fold.
	plotH float64
}

// The geometry of every chart, in the SVG's own units. The SVG is drawn
// the page's width (its viewBox scales), so on a page 1000–1200 px wide
// a unit is about a pixel; everything in it, text included, scales
// together, so what fits in the units fits on the page.
const (
	chartW     = 1000.0 // the viewBox's width
	chartL     = 64.0   // left of the plot: the y axis's ticks
	chartR     = 24.0   // right of the plot: half the last x tick
	chartTop   = 26.0   // above the plot: the y axis's label (and the shades' names)
	tickSize   = 11.0   // font sizes (.tk, .lg)
	legendSize = 12.0
	legendRow  = 18.0 // a legend's line height
	plotH      = 220.0
)

// textWidth estimates the width of s in a sans-serif font of size units,
// on the wide side (DejaVu Sans, a wide one, is what Linux browsers
// fall back to): labels placed by it do not collide in narrower fonts
// either.
func textWidth(s string, size float64) float64 {
	w := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("iljtfrI.,:;'!|()[]{} -/", r):
			w += 0.42
		case strings.ContainsRune("mwMW@%µ", r):
			w += 1.0
		case unicode.IsUpper(r):
			w += 0.78
		default:
			w += 0.64
		}
	}
	return w * size
}

// wrapText breaks s into lines no wider than width at size, at spaces
// where it can, inside a word too long for a line of its own.
func wrapText(s string, size, width float64) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		next := word
		if cur != "" {
			next = cur + " " + word
		}
		if textWidth(next, size) <= width || cur == "" && textWidth(word, size) <= width {
			cur = next
			continue
		}
		if cur != "" {
			lines = append(lines, cur)
			cur = ""
		}
		for textWidth(word, size) > width { // a word wider than a line
			rs := []rune(word)
			n := 1
			for n < len(rs) && textWidth(string(rs[:n+1]), size) <= width {
				n++
			}
			lines, word = append(lines, string(rs[:n])), string(rs[n:])
		}
		cur = word
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, cur)
	}
	return lines
}

// ticks are an axis from 0 to top (at least v) in steps of step, the
// smallest "nice" number (1, 2 or 5 × 10^k) that needs at most six; with
// integer, whole numbers once v reaches 1.
func ticks(v float64, integer bool) (step, top float64) {
	mag := math.Pow(10, math.Floor(math.Log10(v/6)))
	step = 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if math.Ceil(v/(m*mag)-1e-9) <= 6 {
			step = m * mag
			break
		}
	}
	if integer && v >= 1 {
		step = math.Max(step, 1)
	}
	return step, math.Ceil(v/step-1e-9) * step
}

// tickLabel writes v, a multiple of step, with as many decimals as the
// step has, thousands as k and millions as M.
func tickLabel(v, step float64) string {
	decimals := func(s float64) int { return max(0, int(math.Ceil(-math.Log10(s)-1e-9))) }
	trim := func(s string) string {
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	switch {
	case step >= 1e5 || v >= 1e6 && step >= 1e4:
		return trim(fmt.Sprintf("%.*f", decimals(step/1e6), v/1e6)) + "M"
	case step >= 1e3 || v >= 1e4 && step >= 100:
		return trim(fmt.Sprintf("%.*f", decimals(step/1e3), v/1e3)) + "k"
	}
	return fmt.Sprintf("%.*f", decimals(step), v)
}

// legendEntry is one series named under a chart: its colour as a line
// (dashed, with a point) or as a bar.
type legendEntry struct {
	name, colour    string
	dash, mark, bar bool
}

// legend draws entries under a chart, from x0 to x1 with its first line
// at y, as many on a line as fit, a name too long for one line on lines
// of its own: never cut. It returns the height it took.
func legend(b *strings.Builder, es []legendEntry, x0, x1, y float64) float64 {
	const swatch, gap = 26.0, 22.0
	x, row := x0, 0
	for _, e := range es {
		lines := wrapText(e.name, legendSize, x1-x0-swatch)
		w := swatch
		for _, l := range lines {
			w = math.Max(w, swatch+textWidth(l, legendSize))
		}
		if x > x0 && (len(lines) > 1 || x+w > x1) {
			x, row = x0, row+1
		}
		base := y + float64(row)*legendRow + legendSize
		mid := base - legendSize*0.35
		switch {
		case e.bar:
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="14" height="10" fill="%s"/>`, x+2, mid-5, e.colour)
		default:
			dash := ""
			if e.dash {
				dash = ` stroke-dasharray="5,3"`
			}
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`, x, mid, x+swatch-6, mid, e.colour, dash)
			if e.mark {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`, x+(swatch-6)/2, mid, e.colour)
			}
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="lg" fill="%s">`, x+swatch, base, e.colour)
		for i, l := range lines {
			if i == 0 {
				b.WriteString(html.EscapeString(l))
			} else {
				fmt.Fprintf(b, `<tspan x="%.1f" dy="%.0f">%s</tspan>`, x+swatch, legendRow, html.EscapeString(l))
			}
		}
		b.WriteString(`</text>`)
		if len(lines) > 1 {
			x, row = x1, row+len(lines)-1 // the next entry starts a line
		} else {
			x += w + gap
		}
	}
	if len(es) == 0 {
		return 0
	}
	return float64(row+1) * legendRow
}

// figure wraps a chart's SVG, h units high, under its title: the title is
// the page's text (it wraps), the SVG takes the page's width.
func figure(title string, h float64, svg string) template.HTML {
	t := html.EscapeString(title)
	return template.HTML(fmt.Sprintf(`<figure class="chart"><figcaption>%s</figcaption>`+
		`<svg role="img" aria-label="%s" viewBox="0 0 %.0f %.0f" width="100%%" preserveAspectRatio="xMinYMin meet" xmlns="http://www.w3.org/2000/svg">%s</svg></figure>`,
		t, t, chartW, math.Ceil(h), svg))
}

// lineChart draws lines, axes from zero with nice ticks, the shaded
// ranges behind them, the legend below.
func lineChart(ch chart, lines []line, shades ...shade) template.HTML {
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
	xStep, xTop := ticks(maxX, ch.intX)
	yStep, yTop := ticks(yRoom(maxY, ch.pctY), ch.intY)
	x0, x1 := chartL, chartW-chartR
	px := func(x float64) float64 { return x0 + x/xTop*(x1-x0) }
	// The shades' names above the plot, over their shade (kept within
	// the plot's width), a line higher where one would run into the one
	// before.
	type name struct {
		text string
		x    float64
		row  int
		a, z float64
	}
	var names []name
	var ends []float64 // per line of names, where the last one ends
	for _, sh := range shades {
		a, z := px(math.Max(sh.from, 0)), px(math.Min(sh.to, xTop))
		if z <= a {
			continue
		}
		w := textWidth(sh.name, tickSize)
		tx := math.Max(x0, math.Min(a, x1-w))
		k := 0
		for k < len(ends) && tx < ends[k]+8 {
			k++
		}
		if k == len(ends) {
			ends = append(ends, 0)
		}
		ends[k] = tx + w
		names = append(names, name{text: sh.name, x: tx, row: k, a: a, z: z})
	}
	y1 := chartTop + 14*float64(len(ends))
	y0 := y1 + cmp.Or(ch.plotH, plotH)
	py := func(y float64) float64 { return y0 - y/yTop*(y0-y1) }
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, `<rect class="shade" x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#eee"><title>%s</title></rect>`,
			n.a, y1, n.z-n.a, y0-y1, html.EscapeString(n.text))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="tk sh">%s</text>`, n.x, y1-5-float64(n.row)*14, html.EscapeString(n.text))
	}
	axes(&b, x0, y0, x1, y1, xStep, xTop, yStep, yTop, ch.xLabel, ch.yLabel)
	// Lines with ranges at the same x stand a little apart.
	var ranged []int
	for i, l := range lines {
		if l.lo != nil && l.ranges {
			ranged = append(ranged, i)
		}
	}
	for gi, l := range lines {
		if l.lo == nil {
			continue
		}
		if l.ranges { // a bar at each x: the runs of that x alone
			dx := (float64(slices.Index(ranged, gi)) - float64(len(ranged)-1)/2) * 4
			for k := range l.x {
				if l.hi[k] <= l.lo[k] {
					continue
				}
				x, a, z := px(l.x[k])+dx, py(l.hi[k]), py(l.lo[k])
				tip := ""
				if l.tips != nil {
					tip = "<title>" + html.EscapeString(l.tips[k]) + "</title>"
				}
				fmt.Fprintf(&b, `<path class="range" stroke="%s" stroke-width="1.5" fill="none" d="M%.1f,%.1fV%.1fM%.1f,%.1fh8M%.1f,%.1fh8">%s</path>`,
					l.colour, x, a, z, x-4, a, x-4, z, tip)
			}
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
	var es []legendEntry
	for _, l := range lines {
		var pts []string
		for k := range l.x {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(l.x[k]), py(l.y[k])))
		}
		dash := ""
		if l.dash {
			dash = ` stroke-dasharray="5,3"`
		}
		fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`, l.colour, dash, strings.Join(pts, " "))
		if l.marks {
			for k := range l.x {
				tip := ""
				if l.tips != nil {
					tip = "<title>" + html.EscapeString(l.tips[k]) + "</title>"
				}
				fmt.Fprintf(&b, `<circle class="mark" cx="%.1f" cy="%.1f" r="3.5" fill="%s">%s</circle>`, px(l.x[k]), py(l.y[k]), l.colour, tip)
			}
		}
		es = append(es, legendEntry{name: l.name, colour: l.colour, dash: l.dash, mark: l.marks})
	}
	below := 22.0
	if ch.xLabel != "" {
		below += 18
	}
	h := y0 + below + legend(&b, es, x0, x1, y0+below) + 6
	return figure(ch.title, h, b.String())
}

// yRoom is the top a y axis must reach for values up to v: a little
// above them, but no more than 100 on an axis of percentages up to 100.
func yRoom(v float64, pct bool) float64 {
	if pct && v <= 100 {
		return math.Min(v*1.04, 100)
	}
	return v * 1.04
}

// axes draws the x and y axes from 0 to xTop and yTop in their steps, the
// y grid lines, the x axis's label under its ticks and the y axis's
// above the axis. xTop 0: no x ticks (a bar chart's categories).
func axes(b *strings.Builder, x0, y0, x1, y1, xStep, xTop, yStep, yTop float64, xLabel, yLabel string) {
	for v := yStep; v <= yTop*(1+1e-9); v += yStep {
		y := y0 - v/yTop*(y0-y1)
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" class="grid"/>`, x0, y, x1, y)
	}
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="ax"/>`, x0, y0, x1, y0)
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="ax"/>`, x0, y0, x0, y1)
	for i := 0; float64(i)*yStep <= yTop*(1+1e-9); i++ {
		v := float64(i) * yStep
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" class="tk yt" text-anchor="end">%s</text>`, x0-5, y0-v/yTop*(y0-y1)+4, tickLabel(v, yStep))
	}
	if xTop > 0 {
		for i := 0; float64(i)*xStep <= xTop*(1+1e-9); i++ {
			v := float64(i) * xStep
			fmt.Fprintf(b, `<text x="%.1f" y="%.0f" class="tk xt" text-anchor="middle">%s</text>`, x0+v/xTop*(x1-x0), y0+15, tickLabel(v, xStep))
		}
	}
	if xLabel != "" {
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" class="tk" text-anchor="middle">%s</text>`, (x0+x1)/2, y0+34, html.EscapeString(xLabel))
	}
	fmt.Fprintf(b, `<text x="4" y="14" class="tk">%s</text>`, html.EscapeString(yLabel))
}

// micros writes a log2 bucket's bound in the unit that reads best: "512
// µs", "33 ms", "2.1 s".
func micros(u int64) string {
	switch {
	case u >= 1_000_000:
		return strconv.FormatFloat(float64(u)/1e6, 'g', 2, 64) + " s"
	case u >= 1000:
		return strconv.FormatFloat(float64(u)/1e3, 'g', 2, 64) + " ms"
	}
	return strconv.FormatInt(u, 10) + " µs"
}

func short(v float64) string {
	if v == 0 {
		return "0"
	}
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
// per series, the legend below.
func barChart(ch chart, categories []string, names []string, values [][]float64) template.HTML {
	var maxY float64
	for _, s := range values {
		for _, v := range s {
			maxY = math.Max(maxY, v)
		}
	}
	if maxY == 0 || len(categories) == 0 {
		return ""
	}
	yStep, yTop := ticks(yRoom(maxY, ch.pctY), ch.intY)
	x0, x1, y1 := chartL, chartW-chartR, chartTop
	y0 := y1 + cmp.Or(ch.plotH, plotH)
	var b strings.Builder
	axes(&b, x0, y0, x1, y1, 0, 0, yStep, yTop, "", ch.yLabel)
	slot := (x1 - x0) / float64(len(categories))
	bw := slot * 0.8 / float64(len(values))
	every := labelEvery(categories, slot)
	for ci, cat := range categories {
		a := x0 + float64(ci)*slot + slot*0.1
		for si, s := range values {
			v := s[ci]
			bh := v / yTop * (y0 - y1)
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.1f</title></rect>`,
				a+float64(si)*bw, y0-bh, bw, bh, colour(si), html.EscapeString(names[si]), html.EscapeString(cat), v)
		}
		// Every label where it fits, else every second, fourth...:
		// labels never overlap.
		if ci%every == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="tk xc" text-anchor="middle">%s</text>`, a+slot*0.4, y0+15, html.EscapeString(cat))
		}
	}
	var es []legendEntry
	for si, n := range names {
		es = append(es, legendEntry{name: n, colour: colour(si), bar: true})
	}
	h := y0 + 24 + legend(&b, es, x0, x1, y0+24) + 6
	return figure(ch.title, h, b.String())
}

// labelEvery is the step between category labels that keeps them from
// overlapping in slots of slot units.
func labelEvery(categories []string, slot float64) int {
	need := 0.0
	for _, c := range categories {
		need = math.Max(need, textWidth(c, tickSize)+6)
	}
	step := 1
	for float64(step)*slot < need {
		step *= 2
	}
	return step
}

// charts of a comparison: the one that shows its answer (a sweep's
// throughput against CPU or against the swept parameter; otherwise
// throughput over time), then the rest: throughput over time of each
// group (the median of its runs at each second, with their range as a
// band, the warm-up shaded), latency histograms side by side, CPU split
// over time.
func (c *Comparison) charts() (answer template.HTML, rest []template.HTML) {
	answer, rest = c.sweepCharts()
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
		l := line{name: fmt.Sprintf("%s: median of %d runs", g.Label, len(g.Runs)), colour: colour(gi), lo: []float64{}, hi: []float64{}}
		if len(g.Runs) == 1 {
			l.name = g.Label
		}
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
	title := "throughput over time: median of each group's runs, their range shaded"
	if c.AtStep != "" {
		title = "throughput over time at " + c.AtStep + ": median of each group's runs, their range shaded"
	}
	ch := chart{title: title, xLabel: "seconds from the start", yLabel: unit, intX: true}
	if answer == "" {
		ch.plotH = answerPlotH
		answer = lineChart(ch, tps, warm)
	} else {
		rest = append(rest, lineChart(ch, tps, warm))
	}

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
		rest = append(rest, bucketChart(title, "% of transactions", names, bs))
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
		rest = append(rest, hostCPUChart("database host CPU split over time: "+g.Label+" (first run, source "+compare.HostSource(r)+")", r.OS))
	}
	return answer, rest
}

// answerPlotH is the height of the answer's chart's plot: lower than the
// others', so that the answer, chart and all, fits above the fold.
const answerPlotH = 140.0

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
		cats = append(cats, "<"+micros(u))
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
	return barChart(chart{title: title, yLabel: yLabel, intY: true, pctY: true}, cats, names, vals)
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
	return lineChart(chart{title: title, xLabel: "seconds", yLabel: "% of all CPUs", intX: true, intY: true, pctY: true}, ls)
}

// HTMLGenerator marks, in the head of every HTML report, a file that
// compare --html may replace: its own earlier report, never another file.
const HTMLGenerator = `<meta name="generator" content="dbparity compare">`

// pageData is what the page template shows: the answer at the top (the
// headline sentences, their grade, the caveats folded, the one chart that
// shows the answer), then the other charts and the tables.
type pageData struct {
	Title, Disclaimer string
	Headlines         []string
	Grade             string
	Caveats           []string
	Answer            template.HTML
	Charts            []template.HTML
	Tables            []Table
	Text              string // show's text (the run's page)
}

// gradeClass is the CSS class of a grade: "READ WITH CARE (2 reasons)" →
// "read-with-care".
func gradeClass(g string) string {
	g, _, _ = strings.Cut(g, " (")
	return strings.Join(strings.Fields(strings.ToLower(g)), "-")
}

// caveatsSummary is what the folded caveats say before they are opened.
func caveatsSummary(cs []string) string {
	if len(cs) == 1 {
		return "1 caveat: what may undermine this answer"
	}
	return fmt.Sprintf("%d caveats: what may undermine this answer", len(cs))
}

// wbr is a column's heading that may break after a slash too ("b/a", a
// ratio's heading, is two names without a space).
func wbr(s string) template.HTML {
	return template.HTML(strings.ReplaceAll(html.EscapeString(s), "/", "/<wbr>"))
}

// The page takes the window's width up to 1200 px: charts are as wide as
// it, tables wrap their headings and scroll inside a box of their own
// when still too wide, as show's text does; the page itself never
// scrolls sideways.
var page = template.Must(template.New("page").Funcs(template.FuncMap{"gradeClass": gradeClass, "caveatsSummary": caveatsSummary, "wbr": wbr}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">` + HTMLGenerator + `<meta name="viewport" content="width=device-width, initial-scale=1"><title>{{.Title}}</title>
<style>
*{box-sizing:border-box}
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;padding:10px 24px 24px;color:#222;max-width:1248px}
h1{font-size:17px;margin:0 0 .2em}h2{font-size:16px;margin-top:1.6em}
h1,h2,p,li,summary,figcaption{overflow-wrap:anywhere}
#answer{margin:.4em 0 1.2em;padding-bottom:.2em;border-bottom:2px solid #ddd}
.headline{font-size:16px;font-weight:bold;margin:.2em 0}
.grade{display:inline-block;margin:.35em 0 .2em;padding:1px 10px;border-radius:4px;font-weight:bold;letter-spacing:.04em;background:#eee;color:#333}
.grade.trustworthy{background:#d7f0dc;color:#14532d}.grade.read-with-care{background:#fdefc3;color:#713f12}.grade.not-a-finding{background:#f9d9d9;color:#7f1d1d}
details.caveats{margin:.2em 0;color:#444}details.caveats summary{cursor:pointer}details.caveats ul{margin:.3em 0;padding-left:1.4em}
.chart{margin:.8em 0;border:1px solid #eee;padding:4px 6px}#answer .chart{margin:.5em 0 .3em}
.chart figcaption{font-size:13px;font-weight:bold}
.chart svg{display:block;width:100%;height:auto}
.ax{stroke:#888}.grid{stroke:#eee}.tk{font-size:11px;fill:#555}.lg{font-size:12px}
.tbl{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:right}
th{white-space:normal;vertical-align:bottom}td{white-space:nowrap}
td:first-child,th:first-child{text-align:left}td.wide{text-align:left;white-space:normal;min-width:20em}
pre{overflow-x:auto}
.note{color:#666;margin:.2em 0}
</style></head><body>
<h1>{{.Title}}</h1>{{if .Disclaimer}}<p class="note">{{.Disclaimer}}</p>{{end}}
<section id="answer">
{{range .Headlines}}<p class="headline">{{.}}</p>
{{end}}{{with .Grade}}<p id="grade" class="grade {{gradeClass .}}">{{.}}</p>
{{end}}{{with .Caveats}}<details class="caveats"><summary>{{caveatsSummary .}}</summary><ul>{{range .}}<li>{{.}}</li>{{end}}</ul></details>
{{end}}{{.Answer}}
</section>
{{range .Charts}}{{.}}{{end}}
{{range .Tables}}<h2>{{.Title}}</h2><div class="tbl"><table><tr>{{range .Columns}}<th>{{wbr .}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{if gt (len .) 40}} class="wide"{{end}}>{{.}}</td>{{end}}</tr>
{{end}}</table></div>{{end}}
{{block "extra" .}}{{end}}
<p class="note">Written by dbparity. This file fetches nothing: charts are inline SVG.</p>
</body></html>
`))

// CompareHTML writes the comparison as one self-contained HTML file:
// inline SVG charts and the tables; no script, font or style is fetched.
func CompareHTML(w io.Writer, c *Comparison) error {
	answer, charts := c.charts()
	a := c.Answer()
	return page.Execute(w, pageData{Title: c.title(), Disclaimer: c.Groups[0].Runs[0].Workload.Disclaimer,
		Headlines: headlines(a), Grade: a.Assessment.Label, Caveats: a.Assessment.Lines,
		Answer: answer, Charts: charts, Tables: c.Tables()})
}

// headlines are what a manager reads first: the study's one answer with
// its interval, and what explains it beside another figure. The grade
// and the caveats follow them; where the platform took time has its
// table.
func headlines(a Answer) []string {
	out := append([]string(nil), a.Sentences...)
	for _, n := range a.Notes {
		out = append(out, "note: "+n)
	}
	return out
}

// sweepCharts draw a sweep: each group's throughput against the swept
// parameter (medians through the steps, each step's runs as a range of
// its own at that step, the USL fit dashed) and against the database
// server's CPU utilisation, the equal-CPU point shaded; over CPUs,
// whose utilisations are shares of different counts, against the CPU
// the server used in cores instead, so that each step stands apart.
// answer is the one that shows the sweep's answer: against CPU when the
// answer is throughput at equal CPU, against the parameter otherwise.
func (c *Comparison) sweepCharts() (answer template.HTML, rest []template.HTML) {
	s := c.Sweep
	if s == nil {
		return "", nil
	}
	// Counts step in whole numbers; a rate need not.
	intParam := s.Param != "rate"
	var byStep, byCPU []line
	for gi, g := range s.Groups {
		l := line{name: g.Label + ": median of each step's runs, bar: their range", colour: colour(gi), lo: []float64{}, hi: []float64{},
			ranges: true, marks: true}
		cpu := line{name: g.Label, colour: colour(gi), marks: true}
		var cpuTips []string
		for _, st := range g.Steps {
			at := s.Param + "=" + stepValue(st.Value)
			l.x, l.y = append(l.x, st.Value), append(l.y, st.TPS)
			l.lo, l.hi = append(l.lo, st.TPSMin), append(l.hi, st.TPSMax)
			l.tips = append(l.tips, fmt.Sprintf("%s %s: median %.1f tps of %d runs (%.1f to %.1f)", g.Label, at, st.TPS, st.Runs, st.TPSMin, st.TPSMax))
			switch {
			case math.IsNaN(st.CPU):
			case s.Param == "cpus":
				if cores := st.CPU / 100 * st.CPUs; cores > 0 {
					cpu.x, cpu.y = append(cpu.x, cores), append(cpu.y, st.TPS)
					cpuTips = append(cpuTips, fmt.Sprintf("%s %s: %.2f cores (%.1f%% CPU), %.1f tps", g.Label, at, cores, st.CPU, st.TPS))
				}
			default:
				cpu.x, cpu.y = append(cpu.x, st.CPU), append(cpu.y, st.TPS)
				cpuTips = append(cpuTips, fmt.Sprintf("%s %s: %.1f%% CPU, %.1f tps", g.Label, at, st.CPU, st.TPS))
			}
		}
		byStep = append(byStep, l)
		if u := g.USL; u != nil {
			fit := line{name: g.Label + ": USL fit", colour: colour(gi), dash: true}
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
			sorted := line{name: cpu.name, colour: cpu.colour, marks: true}
			for _, i := range idx {
				sorted.x, sorted.y = append(sorted.x, cpu.x[i]), append(sorted.y, cpu.y[i])
				sorted.tips = append(sorted.tips, cpuTips[i])
			}
			byCPU = append(byCPU, sorted)
		}
	}
	unit := "transactions/s"
	stepChart := chart{title: "throughput against " + s.Param + ": median of each step's runs, the bar at each step their range",
		xLabel: s.Param, yLabel: unit, intX: intParam}
	cpuChart := chart{title: "throughput against CPU utilisation", xLabel: "CPU utilisation %", yLabel: unit, intX: true}
	if s.CPUBasis != "" {
		cpuChart.title += " (" + s.CPUBasis + ")"
	}
	if s.Param == "cpus" {
		cpuChart = chart{title: "throughput against the CPU the database server used, in cores (each step's CPUs apart)",
			xLabel: "CPU used, cores", yLabel: unit, intX: true}
	}
	var marks []shade
	if !math.IsNaN(s.EqualAt) {
		marks = append(marks, shade{name: fmt.Sprintf("equal CPU %.0f%%", s.EqualAt), from: s.EqualAt - 0.4, to: s.EqualAt + 0.4})
	}
	// The answer is throughput at equal CPU where the groups have one
	// (as sweepHeadlines gives it), else the throughput the steps gave.
	if len(byCPU) > 0 && !math.IsNaN(s.EqualAt) && len(s.EqualCPU) >= 2 {
		cpuChart.plotH = answerPlotH
		return lineChart(cpuChart, byCPU, marks...), []template.HTML{lineChart(stepChart, byStep)}
	}
	stepChart.plotH = answerPlotH
	if len(byCPU) > 0 {
		rest = append(rest, lineChart(cpuChart, byCPU, marks...))
	}
	return lineChart(stepChart, byStep), rest
}
