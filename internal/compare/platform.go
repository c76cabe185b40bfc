package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/result"
)

// PlatformWait is one way the platform takes time from the database, in
// seconds per second of the measured window.
type PlatformWait struct {
	Short string                              // as a table row names it
	Name  string                              // as a sentence names it
	Get   func(w ostat.Rates) (float64, bool) // from a run's database host window
}

func stallOf(p *ostat.PressureRates) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return p.SomePct / 100, true
}

func ptrOf(v *float64) (float64, bool) {
	if v == nil {
		return 0, false
	}
	return *v, true
}

// PlatformWaits are the platform-side waits, none of which the anchors
// report: the server's and the host's run-queue delay, CPU steal and
// pressure stall.
var PlatformWaits = []PlatformWait{
	{"server run-queue delay", "waited for a CPU (the server's run-queue delay)", func(w ostat.Rates) (float64, bool) { return ptrOf(w.ServerRunDelayPerS) }},
	{"host run-queue delay", "had tasks waiting for a CPU (the host's run-queue delay)", func(w ostat.Rates) (float64, bool) { return ptrOf(w.RunDelayPerS) }},
	{"steal", "lost CPU to other guests (steal)", func(w ostat.Rates) (float64, bool) { return w.CPUStealPct / 100 * float64(w.NumCPU), true }},
	{"pressure cpu", "stalled on CPU (pressure)", func(w ostat.Rates) (float64, bool) { return stallOf(w.CPUPressure) }},
	{"pressure io", "stalled on IO (pressure)", func(w ostat.Rates) (float64, bool) { return stallOf(w.IOPressure) }},
	{"pressure memory", "stalled on memory (pressure)", func(w ostat.Rates) (float64, bool) { return stallOf(w.MemoryPressure) }},
}

// minPlatformWait is the difference below which no platform wait is named.
const minPlatformWait = 0.01

// PlatformSentence names the largest difference in the platform's waits
// between g and the baseline (medians of their runs), in seconds per
// second; "" when either group has no database host figures over a
// measured window (a recovered run has none: absent is not zero).
func PlatformSentence(base, g Group) string {
	s, _ := PlatformFinding(base, g)
	return s
}

// platformValues are the runs' readings of pw over their windows.
func platformValues(gr Group, pw PlatformWait) []float64 {
	var v []float64
	for _, r := range gr.Runs {
		if !r.OS.HasWindow() {
			continue
		}
		if x, ok := pw.Get(r.OS.Window); ok {
			v = append(v, x)
		}
	}
	return v
}

// PlatformFinding is PlatformSentence with whether the difference it
// names passed a test against the runs' own spread: every run of one
// group (two or more each) on one side of every run of the other, so
// that a same-host noise difference is not read as a finding.
func PlatformFinding(base, g Group) (string, bool) {
	best, bestDiff, any := -1, 0.0, false
	var bestA, bestB float64
	for i, pw := range PlatformWaits {
		va, vb := platformValues(base, pw), platformValues(g, pw)
		if len(va) == 0 || len(vb) == 0 {
			continue
		}
		any = true
		a, b := Median(va), Median(vb)
		if d := b - a; math.Abs(d) > math.Abs(bestDiff) {
			best, bestDiff, bestA, bestB = i, d, a, b
		}
	}
	switch {
	case !any:
		return "", false
	case math.Abs(bestDiff) < minPlatformWait:
		return fmt.Sprintf("%s against %s: no platform-side wait differs by more than %.2f s/s", g.Label, base.Label, minPlatformWait), false
	}
	more := "more"
	if bestDiff < 0 {
		more = "less"
	}
	va, vb := platformValues(base, PlatformWaits[best]), platformValues(g, PlatformWaits[best])
	tested := len(va) >= 2 && len(vb) >= 2 && (slices.Max(va) < slices.Min(vb) || slices.Max(vb) < slices.Min(va))
	return fmt.Sprintf("%s's database host %s %.2f s/s %s than %s's (%.3f against %.3f s/s)%s",
		g.Label, PlatformWaits[best].Name, math.Abs(bestDiff), more, base.Label, bestB, bestA, stealNote(base, g)), tested
}

// stealNote adds the steal of both when either lost more than 1%.
func stealNote(base, g Group) string {
	steal := func(gr Group) float64 {
		var v []float64
		for _, r := range gr.Runs {
			if r.OS.HasWindow() {
				v = append(v, r.OS.Window.CPUStealPct)
			}
		}
		return Median(v)
	}
	a, b := steal(base), steal(g)
	if math.IsNaN(a) || math.IsNaN(b) || max(a, b) < 1 {
		return ""
	}
	return fmt.Sprintf("; steal %.1f%% against %.1f%%", b, a)
}

// HostSource is the source of a run's database host figures, "local" for
// results from before it was recorded.
func HostSource(r *result.Run) string {
	switch {
	case r.OS != nil && r.OS.Source != "":
		return r.OS.Source
	case r.Disclosure != nil && r.Disclosure.HostSource != "":
		return r.Disclosure.HostSource
	}
	return "local"
}

// HostSources names each group's database host source (its first run's).
func HostSources(gs []Group) string {
	s := ""
	for i, g := range gs {
		if i > 0 {
			s += ", "
		}
		s += g.Label + " " + HostSource(g.Runs[0])
	}
	return s
}
