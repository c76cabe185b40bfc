package compare

import (
	"fmt"
	"math"
)

// Alpha is the significance level of every verdict, after Holm's
// correction across the metrics compared together.
const Alpha = 0.05

// Verdict compares one metric of group B with group A.
type Verdict struct {
	Metric           string  `json:"metric"`
	Paired           bool    `json:"paired"` // interleaved rounds, tested by signed ranks
	NA               int     `json:"n_a"`
	NB               int     `json:"n_b"`
	MedianA, MedianB float64 `json:"-"`
	Ratio            float64 `json:"ratio"` // B / A: of medians, or the median of the pairs' ratios
	Lo               float64 `json:"ci_lo"` // 95% interval of the ratio (NaN when too few runs)
	Hi               float64 `json:"ci_hi"`
	P                float64 `json:"p"`      // NaN when too few runs for the test
	PAdj             float64 `json:"p_holm"` // after Holm's correction
	// Insufficient says why there is no verdict and how many runs are needed.
	Insufficient string `json:"insufficient,omitempty"`
	// minP is the smallest p-value the test can give with these sizes.
	minP      float64
	Different bool `json:"different"`
	// LowerIsBetter is set for latency and cost: a ratio below 1 is then
	// the better side.
	LowerIsBetter bool     `json:"lower_is_better,omitempty"`
	Notes         []string `json:"notes,omitempty"` // high variation and the like
}

// variationNote flags a group whose spread (median absolute deviation over
// the median) exceeds 5%: its runs disagree more than a platform
// difference worth reporting.
func variationNote(label string, x []float64) string {
	if len(x) < 3 {
		return ""
	}
	m := Median(x)
	dev := make([]float64, len(x))
	for i, v := range x {
		dev[i] = math.Abs(v - m)
	}
	if m == 0 {
		return ""
	}
	if cv := 1.4826 * Median(dev) / math.Abs(m); cv > 0.05 {
		return fmt.Sprintf("high variation in %s: %.1f%% (robust coefficient of variation)", label, 100*cv)
	}
	return ""
}

// Unpaired compares independent runs of A and B: Mann-Whitney U and a
// bootstrap interval on the ratio of medians.
func Unpaired(metric string, a, b []float64) Verdict {
	v := Verdict{Metric: metric, NA: len(a), NB: len(b), MedianA: Median(a), MedianB: Median(b), P: math.NaN(),
		Lo: math.NaN(), Hi: math.NaN()}
	v.Ratio = v.MedianB / v.MedianA
	for _, n := range []string{variationNote("A", a), variationNote("B", b)} {
		if n != "" {
			v.Notes = append(v.Notes, n)
		}
	}
	need := MinUnpaired(Alpha)
	if len(a) < need || len(b) < need {
		v.Insufficient = fmt.Sprintf("no verdict: %d+%d runs, the test needs at least %d in each group", len(a), len(b), need)
		return v
	}
	_, v.P = MannWhitney(a, b)
	v.minP = 2 / math.Exp(lchoose(len(a)+len(b), len(a)))
	v.Lo, v.Hi = BootstrapRatio(a, b, 1-Alpha, 10000, 1)
	return v
}

// Paired compares interleaved rounds (a[i] and b[i] ran in the same
// round): the signed-rank test on the log of each round's ratio, and the
// order-statistic interval of their median.
func Paired(metric string, a, b []float64) Verdict {
	n := min(len(a), len(b))
	v := Verdict{Metric: metric, Paired: true, NA: n, NB: n, MedianA: Median(a[:n]), MedianB: Median(b[:n]), P: math.NaN(),
		Lo: math.NaN(), Hi: math.NaN()}
	logs := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		if a[i] > 0 && b[i] > 0 {
			logs = append(logs, math.Log(b[i]/a[i]))
		}
	}
	v.Ratio = math.Exp(Median(logs))
	if n := variationNote("the rounds' ratios", logs); n != "" {
		v.Notes = append(v.Notes, n)
	}
	need := max(MinPaired(Alpha), MinMedianCI(1-Alpha))
	if len(logs) < need {
		v.Insufficient = fmt.Sprintf("no verdict: %d rounds, the test needs at least %d", len(logs), need)
		return v
	}
	_, _, v.P = Wilcoxon(logs)
	v.minP = 2 / math.Pow(2, float64(len(logs)))
	lo, hi, _ := MedianCI(logs, 1-Alpha)
	v.Lo, v.Hi = math.Exp(lo), math.Exp(hi)
	return v
}

// Decide applies Holm's correction across the verdicts compared together
// and marks those that differ: adjusted p below Alpha and an interval that
// excludes 1. A test whose sizes cannot reach Alpha once corrected for
// every metric gives no verdict, and says how many runs would.
func Decide(vs []Verdict) {
	var ps []float64
	var at []int
	for i, v := range vs {
		if !math.IsNaN(v.P) {
			ps = append(ps, v.P)
			at = append(at, i)
		}
	}
	adj := Holm(ps)
	m := float64(len(ps))
	for k, i := range at {
		v := &vs[i]
		v.PAdj = adj[k]
		v.Different = v.PAdj < Alpha && (v.Lo > 1 || v.Hi < 1)
		if v.minP*m >= Alpha {
			v.Different = false
			if v.Paired {
				v.Insufficient = fmt.Sprintf("no verdict: %d rounds; with %d metrics corrected together the test needs at least %d",
					v.NA, len(ps), MinPaired(Alpha/m))
			} else {
				v.Insufficient = fmt.Sprintf("no verdict: %d+%d runs; with %d metrics corrected together the test needs at least %d in each group",
					v.NA, v.NB, len(ps), MinUnpaired(Alpha/m))
			}
		}
	}
	for i := range vs {
		if math.IsNaN(vs[i].P) {
			vs[i].PAdj = math.NaN()
		}
	}
}

// String reads like the paper: "0.90x, 95% CI [0.88, 0.92], p=0.002,
// n=10+10", or "~" when no difference is detectable above the noise.
func (v Verdict) String() string {
	n := fmt.Sprintf("n=%d+%d", v.NA, v.NB)
	if v.Paired {
		n = fmt.Sprintf("n=%d rounds", v.NA)
	}
	switch {
	case v.Insufficient != "":
		return fmt.Sprintf("%.2fx (%s)", v.Ratio, v.Insufficient)
	case !v.Different:
		return fmt.Sprintf("~ (%.2fx, 95%% CI [%.2f, %.2f], p=%.2g, %s: no difference above the noise)", v.Ratio, v.Lo, v.Hi, v.PAdj, n)
	}
	better := (v.Ratio > 1) != v.LowerIsBetter
	word := "worse"
	if better {
		word = "better"
	}
	return fmt.Sprintf("%.2fx (%s), 95%% CI [%.2f, %.2f], p=%.2g, %s", v.Ratio, word, v.Lo, v.Hi, v.PAdj, n)
}
