// Package compare holds the statistics that decide whether two groups of
// runs differ: medians with order-statistic intervals, Mann-Whitney U for
// unpaired groups, Wilcoxon's signed-rank test for interleaved pairs, a
// bootstrap interval on the ratio of medians, and Holm's correction across
// metrics. Every test is distribution-free: run-to-run noise on shared
// machines is neither normal nor symmetric. It knows nothing of result
// files or of how verdicts are printed.
package compare

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Median returns the median of x (the mean of the middle two for an even
// count), or NaN for none.
func Median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := sorted(x)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func sorted(x []float64) []float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return s
}

// binomCDF is P(X <= k) for X ~ Binomial(n, 1/2).
func binomCDF(k, n int) float64 {
	if k < 0 {
		return 0
	}
	var sum float64
	for i := 0; i <= k && i <= n; i++ {
		sum += math.Exp(lchoose(n, i) - float64(n)*math.Ln2)
	}
	return math.Min(sum, 1)
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// MedianCI returns a distribution-free interval for the median with at
// least the given confidence: the order statistics x(k) and x(n+1-k) with
// the largest k such that P(Binomial(n, 1/2) < k) <= (1-conf)/2. ok is
// false when the sample is too small for any such interval (n < 6 at 95%).
func MedianCI(x []float64, conf float64) (lo, hi float64, ok bool) {
	n := len(x)
	alpha := (1 - conf) / 2
	k := 0
	for k+1 <= n/2 && binomCDF(k, n) <= alpha {
		k++
	}
	if k == 0 {
		return math.NaN(), math.NaN(), false
	}
	s := sorted(x)
	return s[k-1], s[n-k], true
}

// MinMedianCI is the smallest sample with a median interval at conf.
func MinMedianCI(conf float64) int {
	for n := 1; n < 100; n++ {
		if binomCDF(0, n) <= (1-conf)/2 {
			return n
		}
	}
	return 100
}

// ranks gives the average ranks (1-based) of x, and the tie correction
// term Σ(t³ - t) over groups of ties.
func ranks(x []float64) (r []float64, ties float64) {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r = make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		t := float64(j - i + 1)
		ties += t*t*t - t
		i = j + 1
	}
	return r, ties
}

// exactLimit bounds the sample sizes for which exact null distributions are
// computed; beyond it the normal approximation is accurate.
const exactLimit = 50

// MannWhitney tests whether two independent samples come from the same
// distribution, two-sided. U is the statistic of a (the count of pairs
// where a's value is larger, ties counting one half). The p-value is
// exact when there are no ties and both samples have at most 50 values,
// else from the normal approximation with tie and continuity corrections.
func MannWhitney(a, b []float64) (u, p float64) {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return math.NaN(), math.NaN()
	}
	all := append(append([]float64(nil), a...), b...)
	r, ties := ranks(all)
	var r1 float64
	for i := range a {
		r1 += r[i]
	}
	u = r1 - float64(n1*(n1+1))/2
	if ties == 0 && n1 <= exactLimit && n2 <= exactLimit {
		return u, exactMannWhitney(u, n1, n2)
	}
	mu := float64(n1*n2) / 2
	n := float64(n1 + n2)
	sigma := math.Sqrt(float64(n1*n2) / 12 * ((n + 1) - ties/(n*(n-1))))
	if sigma == 0 {
		return u, 1
	}
	z := (math.Abs(u-mu) - 0.5) / sigma
	return u, math.Min(1, 2*normalSF(math.Max(z, 0)))
}

// exactMannWhitney is the two-sided p-value of U = u under the null: the
// number of arrangements with each U value, counted by recursion on the
// largest value (it belongs to one sample or the other).
func exactMannWhitney(u float64, n1, n2 int) float64 {
	max := n1 * n2
	// f[i][j][k]: arrangements of i a-values and j b-values with U = k,
	// built one sample size at a time.
	prev := make([][]float64, n2+1) // i-1
	for j := range prev {
		prev[j] = make([]float64, max+1)
		prev[j][0] = 1 // i = 0: U is 0 whatever j
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		cur[0] = make([]float64, max+1)
		cur[0][0] = 1
		for j := 1; j <= n2; j++ {
			cur[j] = make([]float64, max+1)
			for k := 0; k <= i*j; k++ {
				// The largest value is a's: it beats all j b-values.
				if k >= j {
					cur[j][k] += prev[j][k-j]
				}
				// It is b's: it adds nothing to U.
				cur[j][k] += cur[j-1][k]
			}
		}
		prev = cur
	}
	return twoSided(prev[n2], u)
}

// twoSided is the two-sided p-value of a statistic whose null
// distribution counts dist[k] ways of taking the value k.
func twoSided(dist []float64, stat float64) float64 {
	var total, below, above float64
	for k, c := range dist {
		total += c
		if float64(k) <= stat {
			below += c
		}
		if float64(k) >= stat {
			above += c
		}
	}
	return math.Min(1, 2*math.Min(below, above)/total)
}

// Wilcoxon is the signed-rank test that the differences d (B - A of each
// interleaved pair, or the log of each pair's ratio) are centred on zero,
// two-sided. Zero differences are dropped. W is the sum of the ranks of the
// positive differences; n the differences kept. The p-value is exact when
// there are no ties and at most 50 differences, else from the normal
// approximation with tie and continuity corrections.
func Wilcoxon(d []float64) (w float64, n int, p float64) {
	var nz []float64
	for _, x := range d {
		if x != 0 {
			nz = append(nz, x)
		}
	}
	n = len(nz)
	if n == 0 {
		return 0, 0, 1
	}
	abs := make([]float64, n)
	for i, x := range nz {
		abs[i] = math.Abs(x)
	}
	r, ties := ranks(abs)
	for i, x := range nz {
		if x > 0 {
			w += r[i]
		}
	}
	if ties == 0 && n <= exactLimit {
		return w, n, exactWilcoxon(w, n)
	}
	mu := float64(n*(n+1)) / 4
	sigma := math.Sqrt(float64(n*(n+1)*(2*n+1))/24 - ties/48)
	if sigma == 0 {
		return w, n, 1
	}
	z := (math.Abs(w-mu) - 0.5) / sigma
	return w, n, math.Min(1, 2*normalSF(math.Max(z, 0)))
}

// exactWilcoxon counts the subsets of the ranks 1..n by their sum.
func exactWilcoxon(w float64, n int) float64 {
	max := n * (n + 1) / 2
	dist := make([]float64, max+1)
	dist[0] = 1
	for r := 1; r <= n; r++ {
		for s := max; s >= r; s-- {
			dist[s] += dist[s-r]
		}
	}
	return twoSided(dist, w)
}

// MinPaired is the fewest interleaved pairs for which the signed-rank test
// can reach significance level alpha (two-sided): 6 at 0.05.
func MinPaired(alpha float64) int {
	for n := 1; n < 100; n++ {
		if 2/math.Pow(2, float64(n)) <= alpha {
			return n
		}
	}
	return 100
}

// MinUnpaired is the fewest runs per group (equal groups) for which the
// Mann-Whitney test can reach alpha (two-sided): 4 at 0.05.
func MinUnpaired(alpha float64) int {
	for n := 1; n < 100; n++ {
		if 2/math.Exp(lchoose(2*n, n)) <= alpha {
			return n
		}
	}
	return 100
}

func normalSF(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// BootstrapRatio returns a percentile bootstrap interval for
// median(b)/median(a), resampling each group with replacement. The
// resampling is seeded, so the same data give the same interval.
func BootstrapRatio(a, b []float64, conf float64, iters int, seed uint64) (lo, hi float64) {
	g := rand.New(rand.NewPCG(seed, 0xB007))
	ra, rb := make([]float64, len(a)), make([]float64, len(b))
	ratios := make([]float64, 0, iters)
	for range iters {
		for i := range ra {
			ra[i] = a[g.IntN(len(a))]
		}
		for i := range rb {
			rb[i] = b[g.IntN(len(b))]
		}
		if m := Median(ra); m != 0 {
			ratios = append(ratios, Median(rb)/m)
		}
	}
	if len(ratios) == 0 {
		return math.NaN(), math.NaN()
	}
	sort.Float64s(ratios)
	at := func(q float64) float64 {
		i := int(math.Round(q * float64(len(ratios)-1)))
		return ratios[i]
	}
	return at((1 - conf) / 2), at(1 - (1-conf)/2)
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
