// Package compare decides whether two groups of runs differ and says
// how the platforms differ: it groups result files, pairs interleaved
// rounds, and gives each metric a verdict — Student's t on the logs of the
// runs' ratios, with each run's own noise (its per-second series by batch
// means) as a floor on their variance; throughput tested alone, the other
// metrics Holm-corrected among themselves (docs/statistics.md says why
// and how it was calibrated) — and lists the disclosed facts that differ.
// It reads results and never prints.
package compare

import (
	"math"
	"sort"
)

// Median returns the median of x (the mean of the middle two for an even
// count), or NaN for none.
func Median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Holm adjusts p-values for testing several metrics at once (Holm's
// step-down method): each adjusted value can be compared with alpha
// directly, and the family-wise error stays below alpha.
func Holm(p []float64) []float64 {
	m := len(p)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	adj := make([]float64, m)
	running := 0.0
	for rank, i := range idx {
		v := math.Min(1, float64(m-rank)*p[i])
		running = math.Max(running, v)
		adj[i] = running
	}
	return adj
}
