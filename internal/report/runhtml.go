package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// RunHTML writes one run as a self-contained page in the compare report's
// style (show --html): the answer first (throughput, sessions and errors,
// their grade and caveats, throughput over time with the warm-up and the
// outages shaded), each transaction type's latency histogram, the database
// host's CPU over time, the load and IO profiles and top waits as tables,
// and show's full text (the disclosure of the platform included). Inline
// SVG only: it fetches nothing.
func RunHTML(w io.Writer, r *result.Run) error {
	s := r.Summarize()
	unit := "transactions/s"
	if r.Replay != nil {
		unit = "statements/s"
	}
	var answer template.HTML
	var charts []template.HTML
	if len(r.Series) > 0 {
		l := line{name: r.Label, colour: colour(0)}
		for _, iv := range r.Series {
			if iv.Seconds > 0.5 { // not the sliver at a phase's end
				l.x, l.y = append(l.x, iv.At), append(l.y, iv.TPS())
			}
		}
		shades := []shade{{name: "warm-up", to: r.Driver.WarmupS}}
		for _, e := range r.Events {
			from := e.Start.Sub(r.Start).Seconds()
			to := r.End.Sub(r.Start).Seconds()
			if !e.End.IsZero() {
				to = e.End.Sub(r.Start).Seconds()
			}
			shades = append(shades, shade{name: e.Kind, from: from, to: to})
		}
		// The answer's chart: the throughput the headline gives, over time.
		answer = lineChart(chart{title: "throughput over time (shaded: the warm-up, and each outage)", xLabel: "seconds from the start",
			yLabel: unit, intX: true, plotH: answerPlotH}, []line{l}, shades...)
	}
	// Every type's latency in one chart: log2 buckets, % of its count.
	var names []string
	var bs [][]metrics.Bucket
	for _, t := range r.Transactions {
		if h, err := t.Latency.Decode(); err == nil && h.Count() > 0 {
			names, bs = append(names, t.Name), append(bs, metrics.Log2Buckets(h))
		}
	}
	if len(names) > 0 {
		charts = append(charts, bucketChart("latency by transaction type, log2 buckets (measured window)", "% of the type's transactions", names, bs))
	}
	if r.OS != nil && len(r.OS.Series) > 0 {
		charts = append(charts, hostCPUChart("database host CPU over time (source "+compare.HostSource(r)+")", r.OS))
	}
	var tables []Table
	for _, p := range []struct {
		title string
		p     *result.Profile
	}{{"load profile", r.LoadProfile}, {"io profile", r.IOProfile}} {
		if p.p == nil {
			continue
		}
		t := Table{Title: p.title + " (" + p.p.Source + ")", Columns: []string{"", "unit", "per second", "per transaction", "source"}}
		for _, l := range p.p.Lines {
			src := l.Source
			if l.Total == nil {
				src = l.Note
			}
			t.Rows = append(t.Rows, []string{l.Name, l.Unit, num(l.PerSecond), num(l.PerTx), src})
		}
		tables = append(tables, t)
	}
	if ws := r.Waits; ws != nil {
		t := Table{Title: fmt.Sprintf("%s (%s, %d samples)", waitsTitle(ws), ws.Source, ws.Samples), Columns: []string{"class", "event", "% DB time", "avg active", "samples"}}
		for i, e := range ws.Events {
			if i == topWaits {
				break
			}
			t.Rows = append(t.Rows, []string{e.Class, e.Event, fmt.Sprintf("%.1f", e.PctDBTime), fmt.Sprintf("%.2f", e.AvgActive), fmt.Sprint(e.Samples)})
		}
		tables = append(tables, t)
	}
	var text bytes.Buffer
	if err := Text(&text, r); err != nil {
		return err
	}
	headlines := []string{fmt.Sprintf("%.1f %s over %.0f s, %d sessions; %d errors", s.TPS, unit, s.DurationS, r.Driver.Users, s.Errors)}
	if r.Replay != nil {
		headlines = []string{replayAnswer(r.Replay)}
	}
	a := RunAssessment(r)
	return runPage.Execute(w, pageData{Title: fmt.Sprintf("%s: %s", r.Label, r.Workload.Name), Disclaimer: r.Workload.Disclaimer,
		Headlines: headlines, Grade: a.Label, Caveats: a.Lines, Answer: answer, Charts: charts, Tables: tables, Text: text.String()})
}

// runPage is the compare report's page with show's text at its end.
var runPage = template.Must(template.Must(page.Clone()).Parse(`{{define "extra"}}<h2>the run in full (dbparity show)</h2><pre>{{.Text}}</pre>{{end}}`))
