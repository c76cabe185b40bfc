package report

import (
	"bytes"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// chromium finds the distribution's Chromium, or skips (fails under
// CI=true, where .ci/run installs it).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but Chromium is not installed (.ci/run installs it)")
	}
	t.Skip("Chromium is not installed: apt-get install chromium")
	return ""
}

// chromiumFlags run Chromium headless, offline and with a profile of its
// own under dir.
func chromiumFlags(dir string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + filepath.Join(dir, "profile")}
}

// The HTML report loads in a real headless browser without errors, fetches
// nothing, and its charts render: the DOM holds them and the screenshot
// has their ink.
func TestCompareHTMLInChromium(t *testing.T) {
	t.Parallel()
	a, fa := runs(t, "native", 6, 1)
	b, fb := runs(t, "vm", 6, 0.9)
	for i, r := range append(a, b...) { // a throughput series for the chart
		for k := range 20 {
			r.Series = append(r.Series, metrics.Interval{At: float64(k + 1), Seconds: 1, Phase: "measure",
				Commits: int64(900 + 10*i + 30*(k%3))})
		}
	}
	gs, err := compare.Groups(append(a, b...), append(fa, fb...), "")
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := CompareHTML(&page, NewComparison(gs)); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, banned := range []string{"http://", "https://", "<script src", "<link"} {
		if strings.Contains(strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, ""), banned) {
			t.Errorf("the page refers to %q: it must work offline", banned)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	os.WriteFile(file, page.Bytes(), 0o644)
	bin := chromium(t)
	flags := append(chromiumFlags(dir), "--enable-logging=stderr", "--v=0")
	out, err := exec.Command(bin, append(flags, "--dump-dom", "file://"+file)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	dom := string(out)
	if !strings.Contains(dom, "<polyline") {
		t.Error("the throughput chart has no line in the rendered DOM")
	}
	if n := strings.Count(dom, "<svg"); n < 3 {
		t.Errorf("%d charts in the rendered DOM, want at least 3", n)
	}
	if !strings.Contains(dom, `class="bar"`) || !strings.Contains(dom, "<table>") {
		t.Error("histogram bars or tables missing from the rendered DOM")
	}
	shot := filepath.Join(dir, "shot.png")
	if p := os.Getenv("DBPARITY_KEEP_SCREENSHOT"); p != "" {
		shot = p // to look at it
	}
	cmd := exec.Command(bin, append(flags, "--screenshot="+shot, "--window-size=1100,900", "file://"+file)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --screenshot: %v", err)
	}
	if s := stderr.String(); strings.Contains(s, "Uncaught") || strings.Contains(s, "CONSOLE") {
		t.Errorf("the page logged script errors:\n%s", s)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The first chart's coloured bars/lines: count pixels of the palette's
	// saturated colours (not grey text, not white).
	coloured := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			mx, mn := max(r, g, b), min(r, g, b)
			if mx-mn > 0x4000 {
				coloured++
			}
		}
	}
	if coloured < 500 {
		t.Errorf("the screenshot has %d coloured pixels: the charts did not render", coloured)
	}
}

// overlapScript, appended to a copy of the report, measures every text of
// every chart in the browser and writes the pairs whose boxes overlap.
const overlapScript = `<script>
window.addEventListener("load", function () {
  var found = [];
  document.querySelectorAll("svg").forEach(function (svg, si) {
    var ts = Array.prototype.slice.call(svg.querySelectorAll("text")).map(function (t) {
      return {s: t.textContent, r: t.getBoundingClientRect()};
    });
    for (var i = 0; i < ts.length; i++) for (var j = i + 1; j < ts.length; j++) {
      var a = ts[i].r, b = ts[j].r;
      if (a.width && b.width && a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
        found.push("chart " + si + ": \"" + ts[i].s + "\" and \"" + ts[j].s + "\"");
    }
  });
  var p = document.createElement("pre");
  p.id = "overlaps";
  p.textContent = "overlaps=" + found.length + "\n" + found.join("\n");
  document.body.appendChild(p);
});
</script>`

// No two labels of a chart overlap, measured in a real browser, with a
// latency histogram spread over many buckets (whose labels must thin out)
// and the throughput chart's warm-up label beside its ticks.
func TestHTMLLabelsDoNotOverlap(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	a, fa := runs(t, "native", 3, 1)
	b, fb := runs(t, "vm", 3, 0.9)
	for i, r := range append(a, b...) {
		r.Driver.WarmupS = 5
		for k := range 30 {
			r.Series = append(r.Series, metrics.Interval{At: float64(k + 1), Seconds: 1, Phase: "measure", Commits: int64(900 + 10*i + 30*(k%3))})
		}
		// Latencies from 1 µs to 20 s: about 25 log2 buckets.
		h := metrics.NewHistogram()
		for us := int64(1); us < 20_000_000; us = us*3/2 + 1 {
			h.Record(time.Duration(us) * time.Microsecond)
		}
		hist, err := result.NewHistogram(h)
		if err != nil {
			t.Fatal(err)
		}
		r.Commit = hist
	}
	gs, err := compare.Groups(append(a, b...), append(fa, fb...), "")
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := CompareHTML(&page, NewComparison(gs)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `class="headline">vm is `) || !strings.Contains(page.String(), `class="band"`) ||
		!strings.Contains(page.String(), `class="shade"`) {
		t.Error("the report does not open with the headline, or has no band or warm-up shade")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	os.WriteFile(file, []byte(strings.Replace(page.String(), "</body>", overlapScript+"</body>", 1)), 0o644)
	out, err := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1100,900", "--virtual-time-budget=3000",
		"--dump-dom", "file://"+file).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	dom := html.UnescapeString(string(out))
	i := strings.Index(dom, `<pre id="overlaps">`)
	if i < 0 {
		t.Fatal("the measuring script did not run")
	}
	res := dom[i+len(`<pre id="overlaps">`):]
	if end := strings.Index(res, "</pre>"); end >= 0 {
		res = res[:end]
	}
	if !strings.HasPrefix(res, "overlaps=0") {
		t.Errorf("labels overlap in the rendered charts:\n%s", res)
	}
}

// show --html: one run's page loads in headless Chromium, fetches
// nothing, draws its throughput (with the warm-up and an outage shaded),
// its latency histograms and the host's CPU, carries show's full text, and
// no two labels of a chart overlap.
func TestRunHTMLInChromium(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	r := sample(t)
	r.Driver.WarmupS = 3
	r.Series = nil
	for k := range 20 {
		r.Series = append(r.Series, metrics.Interval{At: float64(k + 1), Seconds: 1, Phase: "measure", Commits: int64(900 + 30*(k%3))})
	}
	r.Events = []result.Event{{Kind: "outage", Start: r.Start.Add(8 * time.Second), End: r.Start.Add(11 * time.Second), Failed: 12}}
	var page bytes.Buffer
	if err := RunHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	p := page.String()
	for _, banned := range []string{"http://", "https://", "<script src", "<link"} {
		if strings.Contains(strings.ReplaceAll(p, `xmlns="http://www.w3.org/2000/svg"`, ""), banned) {
			t.Errorf("the page refers to %q: it must work offline", banned)
		}
	}
	if !strings.Contains(p, HTMLGenerator) {
		t.Error("the page does not mark itself as dbparity's (show --html would not replace it)")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "run.html")
	os.WriteFile(file, []byte(strings.Replace(p, "</body>", overlapScript+"</body>", 1)), 0o644)
	out, err := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1100,900", "--virtual-time-budget=3000",
		"--dump-dom", "file://"+file).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	dom := html.UnescapeString(string(out))
	if n := strings.Count(dom, "<svg"); n < 2 || !strings.Contains(dom, "<polyline") || !strings.Contains(dom, `class="bar"`) {
		t.Errorf("%d charts in the rendered DOM (want the throughput line and the latency bars)", n)
	}
	if strings.Count(dom, `class="shade"`) < 2 {
		t.Error("the warm-up and the outage are not both shaded")
	}
	if !strings.Contains(dom, "the run in full (dbparity show)") || !strings.Contains(dom, "transaction  count") {
		t.Error("show's text is not on the page")
	}
	i := strings.Index(dom, `<pre id="overlaps">`)
	if i < 0 {
		t.Fatal("the measuring script did not run")
	}
	if res := dom[i+len(`<pre id="overlaps">`):]; !strings.HasPrefix(res, "overlaps=0") {
		t.Errorf("labels overlap in the rendered charts:\n%.500s", res)
	}
}
