package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/testhost"
)

// check is one figure of one run's database host, seen from the driver
// (the run's sql or node-exporter source) and read inside the host over
// the same window.
type check struct {
	study, run, host, figure string
	outside, inside          float64
}

func (c check) diffPct() float64 {
	if c.inside == 0 {
		if c.outside == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return 100 * (c.outside/c.inside - 1)
}

// The figures compared, in the order printed.
var figures = []string{"eth0 bytes received", "eth0 bytes sent", "eth0 packets received", "eth0 packets sent", "server CPU seconds", "context switches"}

// checkRun compares a run's database host figures (one target's) with
// h's readings over the run's window.
func (b *bench) checkRun(st, run string, r *result.Run, h *testhost.Host, rs testhost.Readings) []check {
	if r == nil || !r.OS.HasWindow() || (r.OS.Source != "sql" && r.OS.Source != "node-exporter") {
		return nil
	}
	w := r.OS.Window
	in, ok := rs.Between(w.From, w.To)
	if !ok {
		logf("%s: %s: the readings inside %s do not span its window", st, run, h.Hostname)
		return nil
	}
	var cs []check
	add := func(figure string, outside, inside float64) {
		cs = append(cs, check{study: st, run: run, host: h.Hostname, figure: figure, outside: outside, inside: inside})
	}
	const mib = 1 << 20
	for _, n := range w.Nets {
		if n.Name != "eth0" {
			continue
		}
		d := in.Nets["eth0"]
		add(figures[0], n.RxMBPerS*mib*w.IntervalS, d.RxBytes)
		add(figures[1], n.TxMBPerS*mib*w.IntervalS, d.TxBytes)
		add(figures[2], n.RxPacketsPerS*w.IntervalS, d.RxPackets)
		add(figures[3], n.TxPacketsPerS*w.IntervalS, d.TxPackets)
	}
	if w.ServerCPUCores != nil {
		add(figures[4], *w.ServerCPUCores*w.IntervalS, in.ServerCPUS)
	}
	add(figures[5], w.ContextSwitchesPerS*w.IntervalS, in.ContextSwitches)
	b.mu.Lock()
	b.checks = append(b.checks, cs...)
	b.mu.Unlock()
	return cs
}

// checkTable is a study's checks by figure: how many windows, the sums
// both ways, and the range of the differences.
func checkTable(st string, cs []check) string {
	var w strings.Builder
	printChecks(&w, "study "+st, cs, false)
	return w.String()
}

func printChecks(w io.Writer, title string, cs []check, summary bool) {
	if len(cs) == 0 {
		fmt.Fprintf(w, "\nseen from the driver against read inside the host (%s): no run had figures from outside\n", title)
		return
	}
	if summary {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "seen from the driver against read inside the host, same windows (%s)\n\n", title)
	fmt.Fprintf(w, "| figure | windows | outside, total | inside, total | difference, least to most |\n|---|---:|---:|---:|---|\n")
	var worst check
	for _, f := range figures {
		var n int
		var out, in float64
		lo, hi := math.Inf(1), math.Inf(-1)
		var runWorst check
		for _, c := range cs {
			if c.figure != f {
				continue
			}
			n++
			out += c.outside
			in += c.inside
			d := c.diffPct()
			lo, hi = math.Min(lo, d), math.Max(hi, d)
			if math.Abs(d) >= math.Abs(runWorst.diffPct()) || runWorst.figure == "" {
				runWorst = c
			}
		}
		if n == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %+.2f%% to %+.2f%% |\n", f, n, num(out), num(in), lo, hi)
		if worst.figure == "" || math.Abs(runWorst.diffPct()) > math.Abs(worst.diffPct()) {
			worst = runWorst
		}
	}
	fmt.Fprintf(w, "\nlargest difference: %s of %s (%s, study %s): %s outside, %s inside (%+.2f%%)\n",
		worst.figure, worst.run, worst.host, worst.study, num(worst.outside), num(worst.inside), worst.diffPct())
}

// num prints a count whole and a figure below 100 (CPU seconds) with
// three significant digits.
func num(x float64) string {
	if math.Abs(x) >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3g", x)
}
