package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// layoutScript, appended to a copy of a page, measures its layout in the
// browser once it has loaded and writes what it found, as JSON, into a
// <pre id="layout">: where the answer ends, the elements that reach past
// the page's right edge (those inside a box that scrolls or clips on its
// own, itself within the page, do not count), the texts of a chart that
// leave its box (a truncated legend), and the pairs of texts (a chart's
// labels, headings, table cells) whose boxes overlap by more than 2 px
// each way.
const layoutScript = `<script>
window.addEventListener("load", function () {
  var de = document.documentElement, cw = de.clientWidth;
  var out = {clientWidth: cw, scrollWidth: de.scrollWidth, scrollHeight: de.scrollHeight,
    answerBottom: -1, wide: [], clipped: [], overlaps: []};
  var answer = document.getElementById("answer");
  if (answer) out.answerBottom = answer.getBoundingClientRect().bottom + window.scrollY;
  function name(e) {
    var s = e.tagName.toLowerCase();
    if (e.id) s += "#" + e.id;
    var c = e.getAttribute("class");
    if (c) s += "." + c.trim().split(/\s+/).join(".");
    var t = (e.textContent || "").replace(/\s+/g, " ").trim();
    if (t) s += " \"" + t.slice(0, 60) + "\"";
    return s;
  }
  // An element past the page's edge that a box of its own scrolls or
  // clips, that box within the page, is no wider than the page.
  function contained(e) {
    for (var p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== "visible" && p.tagName.toLowerCase() !== "svg")
        return p.getBoundingClientRect().right <= cw + 0.5;
    }
    return false;
  }
  // What is not drawn (the caveats folded in a closed <details>) has no
  // place on the page.
  function shown(e) { return !e.checkVisibility || e.checkVisibility({contentVisibilityAuto: true, visibilityProperty: true}); }
  document.querySelectorAll("body *").forEach(function (e) {
    if (e.id === "layout" || !shown(e)) return;
    var r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return;
    if (r.right > cw + 0.5 && !contained(e)) out.wide.push(name(e) + " right=" + r.right.toFixed(0));
  });
  document.querySelectorAll("svg").forEach(function (svg) {
    var b = svg.getBoundingClientRect();
    svg.querySelectorAll("text").forEach(function (t) {
      if (!shown(t)) return;
      var r = t.getBoundingClientRect();
      if (r.width && (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1))
        out.clipped.push(name(t) + " [" + r.left.toFixed(0) + "," + r.right.toFixed(0) + "] outside its chart [" + b.left.toFixed(0) + "," + b.right.toFixed(0) + "]");
    });
  });
  // The box of a text: a chart's text's own, an HTML element's the box
  // of its text (a cell's text that spills out of the cell counts).
  var texts = [];
  document.querySelectorAll("svg text, h1, h2, h3, h4, figcaption, p.headline, #grade, summary, li, td, th").forEach(function (e) {
    if (!shown(e)) return;
    var r;
    if (e instanceof SVGElement) {
      r = e.getBoundingClientRect();
    } else {
      var rg = document.createRange();
      rg.selectNodeContents(e);
      r = rg.getBoundingClientRect();
    }
    if (r.width > 0 && r.height > 0) texts.push({e: e, r: r});
  });
  for (var i = 0; i < texts.length; i++) for (var j = i + 1; j < texts.length; j++) {
    var a = texts[i].r, c = texts[j].r;
    var ox = Math.min(a.right, c.right) - Math.max(a.left, c.left), oy = Math.min(a.bottom, c.bottom) - Math.max(a.top, c.top);
    if (ox > 2 && oy > 2 && !texts[i].e.contains(texts[j].e) && !texts[j].e.contains(texts[i].e))
      out.overlaps.push(name(texts[i].e) + " and " + name(texts[j].e) + " overlap " + ox.toFixed(0) + "x" + oy.toFixed(0) + " px");
  }
  var p = document.createElement("pre");
  p.id = "layout";
  p.textContent = JSON.stringify(out);
  document.body.appendChild(p);
});
</script>`

// layout is what layoutScript measured.
type layout struct {
	ClientWidth  float64  `json:"clientWidth"`
	ScrollWidth  float64  `json:"scrollWidth"`
	ScrollHeight float64  `json:"scrollHeight"`
	AnswerBottom float64  `json:"answerBottom"`
	Wide         []string `json:"wide"`
	Clipped      []string `json:"clipped"`
	Overlaps     []string `json:"overlaps"`
}

// pageWidth is the width of the window the layout is checked in: a
// laptop's browser.
const pageWidth = 1280

// measureLayout loads a copy of page with layoutScript in headless
// Chromium, pageWidth px wide, and returns what the script measured.
// With DBPARITY_KEEP_SCREENSHOT_DIR set it also writes the page as it
// looks, the whole of its height, to name.png in that directory.
func measureLayout(t *testing.T, name string, page []byte) layout {
	t.Helper()
	bin := chromium(t)
	dir := t.TempDir()
	file := filepath.Join(dir, name+".html")
	if err := os.WriteFile(file, bytes.Replace(page, []byte("</body>"), []byte(layoutScript+"</body>"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(chromiumFlags(dir), fmt.Sprintf("--window-size=%d,1000", pageWidth), "--virtual-time-budget=5000",
		"--dump-dom", "file://"+file)
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	m := regexp.MustCompile(`(?s)<pre id="layout">(.*?)</pre>`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s: the measuring script did not run", name)
	}
	var l layout
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &l); err != nil {
		t.Fatalf("%s: the measurements: %v", name, err)
	}
	if keep := os.Getenv("DBPARITY_KEEP_SCREENSHOT_DIR"); keep != "" {
		screenshot(t, bin, page, filepath.Join(keep, name+".png"), int(min(l.ScrollHeight, 20000)))
	}
	return l
}

// screenshot writes page as Chromium draws it pageWidth px wide and
// height px high, to file.
func screenshot(t *testing.T, bin string, page []byte, file string, height int) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "page.html")
	if err := os.WriteFile(src, page, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	args := append(chromiumFlags(dir), fmt.Sprintf("--window-size=%d,%d", pageWidth, max(height, 600)), "--hide-scrollbars",
		"--virtual-time-budget=5000", "--screenshot="+abs, "file://"+src)
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	t.Logf("screenshot: %s", abs)
}

// checkLayout is the rule of a page a manager reads in ten seconds: the
// answer ends within the first 600 px of a page 1280 px wide, nothing is
// wider than the page, the page does not scroll sideways, no chart's
// text leaves its chart, no two texts overlap.
func checkLayout(t *testing.T, name string, page []byte) {
	t.Helper()
	l := measureLayout(t, name, page)
	if l.ClientWidth < pageWidth-40 || l.ClientWidth > pageWidth {
		t.Fatalf("%s: the page is %.0f px wide in the browser, want about %d: the check measures nothing", name, l.ClientWidth, pageWidth)
	}
	switch {
	case l.AnswerBottom < 0:
		t.Errorf("%s: no answer block (id=answer) on the page", name)
	case l.AnswerBottom > 600:
		t.Errorf("%s: the answer ends %.0f px down the page, want within the first 600 px", name, l.AnswerBottom)
	}
	if l.ScrollWidth > l.ClientWidth {
		t.Errorf("%s: the page scrolls sideways: %.0f px of content in %.0f px", name, l.ScrollWidth, l.ClientWidth)
	}
	list := func(what string, xs []string) {
		if len(xs) > 0 {
			if len(xs) > 12 {
				xs = append(xs[:12:12], fmt.Sprintf("... %d more", len(xs)-12))
			}
			t.Errorf("%s: %s:\n  %s", name, what, strings.Join(xs, "\n  "))
		}
	}
	list("elements wider than the page", l.Wide)
	list("chart texts outside their chart (truncated)", l.Clipped)
	list("texts overlap", l.Overlaps)
	if p := string(page); strings.Contains(p, "()") {
		i := strings.Index(p, "()")
		t.Errorf("%s: empty parentheses on the page: %q", name, p[max(0, i-60):i+2])
	}
	checkAnswerBlock(t, name, string(page))
	t.Logf("%s: the answer ends at %.0f px; the page is %.0f px wide, %.0f px high", name, l.AnswerBottom, l.ClientWidth, l.ScrollHeight)
}

// checkAnswerBlock reads the page's source: the answer comes before any
// chart or table, its headlines first, then the grade, then the caveats
// folded, then one chart.
func checkAnswerBlock(t *testing.T, name, p string) {
	t.Helper()
	start := strings.Index(p, `<section id="answer">`)
	if start < 0 {
		return // measureLayout's check says so
	}
	end := start + strings.Index(p[start:], "</section>")
	for _, what := range []string{"<svg", "<table", "<figure"} {
		if i := strings.Index(p, what); i >= 0 && i < start {
			t.Errorf("%s: a %s> before the answer", name, what)
		}
	}
	answer := p[start:end]
	if n := strings.Count(answer, `<figure class="chart">`); n != 1 {
		t.Errorf("%s: %d charts in the answer, want the one that shows it", name, n)
	}
	order := []string{`class="headline"`, `id="grade"`, `<details class="caveats">`, `<figure class="chart">`}
	last, lastWhat := -1, ""
	for _, what := range order {
		i := strings.Index(answer, what)
		if i < 0 {
			continue // no grade or caveats: none to show
		}
		if i < last {
			t.Errorf("%s: in the answer, %s comes before %s", name, what, lastWhat)
		}
		last, lastWhat = i, what
	}
	if !strings.Contains(answer, `class="headline"`) {
		t.Errorf("%s: no headline in the answer", name)
	}
	if strings.Contains(answer, "<details open") {
		t.Errorf("%s: the caveats are not folded", name)
	}
}

// Labels long enough to be truncated by a legend of fixed width.
const (
	longA = "postgres@managed (machine-a)"
	longB = "postgres@cloud (machine-b)"
)

// timed gives each run a throughput series of 30 s and its host's CPU
// over the same seconds, a little different run to run.
func timed(rs []*result.Run) {
	for i, r := range rs {
		r.Driver.WarmupS = 5
		r.Series = nil
		for k := range 30 {
			r.Series = append(r.Series, metrics.Interval{At: float64(k + 1), Seconds: 1, Phase: "measure",
				Commits: int64(900 + 10*i + 30*(k%3))})
		}
		for k := range 30 {
			from := r.Start.Add(time.Duration(k) * time.Second)
			r.OS.Series = append(r.OS.Series, ostat.Rates{From: from, To: from.Add(time.Second), IntervalS: 1,
				CPUUserPct: 40 + float64(k%5), CPUSystemPct: 10, CPUIowaitPct: 2, CPUStealPct: 1})
		}
	}
}

func comparePage(t *testing.T, c *Comparison) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := CompareHTML(&b, c); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sweepRuns are runs of label over param's values, n a step, each step's
// throughput scale times the sample's times gain, the server's CPU use
// rising with the step.
func sweepRuns(t *testing.T, label, param string, values []float64, n int, scale float64, gain func(v float64) float64) ([]*result.Run, []string) {
	var rs []*result.Run
	var files []string
	for _, v := range values {
		for k := range n {
			r := sample(t)
			r.Label, r.Partial, r.PartialReason = label, false, ""
			r.Warnings = nil
			r.Step = &result.Step{Param: param, Value: v}
			spread := 1 + 0.05*float64(k-n/2)
			switch param {
			case "users":
				r.Driver.Users = int(v)
				cores := 0.9 * v * spread / scale
				r.OS.Window.ServerCPUCores = &cores
			case "cpus":
				r.Target.CPUs = nil
				for c := range int(v) {
					r.Target.CPUs = append(r.Target.CPUs, c)
				}
				cores := 0.85 * v * spread
				r.OS.Window.ServerCPUCores = &cores
			}
			for i := range r.Transactions {
				r.Transactions[i].Committed = int64(float64(r.Transactions[i].Committed) * scale * gain(v) * spread)
			}
			rs, files = append(rs, r), append(files, fmt.Sprintf("%s-%s%g-%d.json", label, param, v, k+1))
		}
	}
	return rs, files
}

// The layout rule on the four kinds of page: two groups compared, a
// sweep over users of two groups, a sweep over cpus=1,2 of one group,
// one run (show --html).
func TestHTMLLayout(t *testing.T) {
	t.Parallel()
	chromium(t)
	t.Run("two groups", func(t *testing.T) {
		a, fa := runs(t, longA, 3, 1)
		b, fb := runs(t, longB, 3, 0.9)
		timed(append(a, b...))
		gs, err := compare.Groups(append(a, b...), append(fa, fb...), "")
		if err != nil {
			t.Fatal(err)
		}
		checkLayout(t, "compare-two-groups", comparePage(t, NewComparison(gs)))
	})
	t.Run("sweep over users, two groups", func(t *testing.T) {
		users := []float64{1, 2, 4, 8}
		gain := func(v float64) float64 { return v / (1 + 0.1*(v-1)) }
		a, fa := sweepRuns(t, longA, "users", users, 3, 1, gain)
		b, fb := sweepRuns(t, longB, "users", users, 3, 0.9, gain)
		timed(append(a, b...))
		c, err := NewComparisonWith([]compare.Group{{Label: longA, Runs: a, Files: fa}, {Label: longB, Runs: b, Files: fb}}, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := comparePage(t, c)
		checkLayout(t, "compare-sweep-users", p)
		checkSweepCharts(t, p, "users")
	})
	t.Run("sweep over cpus=1,2, one group", func(t *testing.T) {
		a, fa := sweepRuns(t, longA, "cpus", []float64{1, 2}, 3, 1, func(v float64) float64 { return 0.9 * v })
		timed(a)
		c, err := NewComparisonWith([]compare.Group{{Label: longA, Runs: a, Files: fa}}, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := comparePage(t, c)
		checkLayout(t, "compare-sweep-cpus", p)
		checkSweepCharts(t, p, "cpus")
	})
	t.Run("answer with a grade and caveats", func(t *testing.T) {
		// The grade and the caveats as the answer's author fills them:
		// the grade shows, the caveats fold, the answer still fits.
		a, fa := runs(t, longA, 3, 1)
		b, fb := runs(t, longB, 3, 0.9)
		timed(append(a, b...))
		gs, err := compare.Groups(append(a, b...), append(fa, fb...), "")
		if err != nil {
			t.Fatal(err)
		}
		c := NewComparison(gs)
		answer, charts := c.charts()
		var caveats []string
		for i := range 6 {
			caveats = append(caveats, fmt.Sprintf("caveat %d: %s's server used 42.0%% of its CPUs at cpus=2, below the 70%% of a CPU-bound server: something else limited throughput there (the driver, on the same host, or locks, IO)", i+1, longA))
		}
		var p bytes.Buffer
		if err := page.Execute(&p, pageData{Title: c.title(), Disclaimer: "TPC-C derived, not TPC-C compliant", Headlines: headlines(c.Answer()),
			Grade: "READ WITH CARE", Caveats: caveats, Answer: answer, Charts: charts, Tables: c.Tables()}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.String(), `<p id="grade" class="grade read-with-care">READ WITH CARE</p>`) ||
			!strings.Contains(p.String(), "<summary>6 caveats") {
			t.Error("the grade or the folded caveats are missing")
		}
		checkLayout(t, "compare-graded", p.Bytes())
	})
	t.Run("one run", func(t *testing.T) {
		r := sample(t)
		r.Label = longA
		timed([]*result.Run{r})
		// Outages close together: their names must not collide.
		r.Events = []result.Event{{Kind: "outage", Start: r.Start.Add(12 * time.Second), End: r.Start.Add(13 * time.Second), Failed: 12},
			{Kind: "outage", Start: r.Start.Add(13500 * time.Millisecond), End: r.Start.Add(15 * time.Second), Failed: 3}}
		var b bytes.Buffer
		if err := RunHTML(&b, r); err != nil {
			t.Fatal(err)
		}
		checkLayout(t, "show-run", b.Bytes())
	})
}

// checkSweepCharts reads the chart of throughput against the swept
// parameter: its ticks on that axis are whole numbers, and each step's
// runs are drawn at their step (a range per step), not as one band
// spanning the steps.
func checkSweepCharts(t *testing.T, page []byte, param string) {
	t.Helper()
	p := string(page)
	i := strings.Index(p, "throughput against "+param)
	if i < 0 {
		t.Fatalf("no chart of throughput against %s", param)
	}
	svg := p[i:]
	svg = svg[:strings.Index(svg, "</svg>")]
	if strings.Contains(svg, `class="band"`) {
		t.Errorf("the chart against %s draws the runs' range as one band across the steps", param)
	}
	if !strings.Contains(svg, `class="range"`) {
		t.Errorf("the chart against %s does not draw each step's runs at its step", param)
	}
	ticks := regexp.MustCompile(`<text[^>]*class="tk xt"[^>]*>([^<]*)</text>`).FindAllStringSubmatch(svg, -1)
	if len(ticks) < 2 {
		t.Fatalf("the chart against %s has %d ticks on its x axis", param, len(ticks))
	}
	for _, m := range ticks {
		if !regexp.MustCompile(`^\d+k?$`).MatchString(m[1]) {
			t.Errorf("a tick of %s reads %q: not a whole number", param, m[1])
		}
	}
}

// Ticks are nice numbers, whole where the axis counts, and read as such.
func TestTicks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		max       float64
		integer   bool
		step, top float64
	}{
		{2, true, 1, 2},        // cpus=1,2
		{8, true, 2, 8},        // users 1..8
		{87.3, true, 20, 100},  // CPU utilisation %
		{1.7, true, 1, 2},      // CPU used, cores
		{0.3, true, 0.05, 0.3}, // below one: fractions
		{1040, false, 200, 1200},
		{30, true, 5, 30},
	} {
		step, top := ticks(tc.max, tc.integer)
		if math.Abs(step-tc.step) > 1e-9 || math.Abs(top-tc.top) > 1e-9 {
			t.Errorf("ticks(%g, %v) = %g to %g, want %g to %g", tc.max, tc.integer, step, top, tc.step, tc.top)
		}
	}
	for _, tc := range []struct {
		v, step float64
		want    string
	}{{0, 1, "0"}, {2, 1, "2"}, {0.15, 0.05, "0.15"}, {1.5, 0.5, "1.5"}, {1200, 200, "1200"}, {15000, 5000, "15k"},
		{12500, 500, "12.5k"}, {2e6, 5e5, "2M"}, {1.5e6, 5e5, "1.5M"}} {
		if got := tickLabel(tc.v, tc.step); got != tc.want {
			t.Errorf("tickLabel(%g, %g) = %q, want %q", tc.v, tc.step, got, tc.want)
		}
	}
}

// A legend's name too long for a line wraps onto more lines, each within
// the width, every word kept.
func TestWrapText(t *testing.T) {
	t.Parallel()
	name := strings.Repeat(longA+" ", 8) + "averyveryveryveryveryveryveryveryveryveryveryveryveryveryveryverylongword"
	lines := wrapText(name, legendSize, 400)
	if len(lines) < 3 {
		t.Fatalf("%d lines: %q", len(lines), lines)
	}
	for _, l := range lines {
		if w := textWidth(l, legendSize); w > 400 {
			t.Errorf("line %q is %.0f wide, more than 400", l, w)
		}
	}
	if got := strings.Join(strings.Fields(strings.Join(lines, " ")), ""); got != strings.Join(strings.Fields(name), "") {
		t.Errorf("wrapping lost text: %q", lines)
	}
}
