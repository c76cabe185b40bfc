package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// Alpha is the significance level. The primary metric (throughput) is
// tested alone at Alpha: it is the question users ask, and adding a
// transaction type must never take the headline away. The secondary
// metrics (latency percentiles and the like) are Holm-corrected among
// themselves. docs/statistics.md gives the method and its calibration.
const Alpha = 0.05

// MinRuns is the fewest runs per group, or interleaved rounds, that the
// test runs on: two, the fewest a variance can be estimated from. An
// interval needs more (minDF): two rounds give a ratio and no interval.
const MinRuns = 2

// Verdict compares one metric of group B with group A.
type Verdict struct {
	Metric  string `json:"metric"`
	Primary bool   `json:"primary,omitempty"` // tested alone, not corrected with the others
	LabelA  string `json:"label_a,omitempty"`
	LabelB  string `json:"label_b,omitempty"`
	Paired  bool   `json:"paired"` // interleaved rounds: the rounds' ratios are the sample
	// SliceS is set when every round ran its sides in turns (ab --slice):
	// the slice, in seconds.
	SliceS float64 `json:"slice_s,omitempty"`
	NA     int     `json:"n_a"`
	NB     int     `json:"n_b"`
	// MedianA and MedianB are the groups' medians, for the side-by-side
	// tables.
	MedianA, MedianB float64 `json:"-"`
	// Ratio is B / A as a geometric mean: of the rounds' ratios, or of
	// B's runs over A's. Lo and Hi are its 95% interval (NaN when there
	// are too few runs).
	Ratio float64 `json:"ratio"`
	Lo    float64 `json:"ci_lo"`
	Hi    float64 `json:"ci_hi"`
	P     float64 `json:"p"`     // NaN when too few runs
	PAdj  float64 `json:"p_adj"` // Holm-corrected among the secondary metrics; P for the primary
	DF    float64 `json:"df"`    // the t test's degrees of freedom
	// Floored says the runs agreed more closely than each run's own
	// noise allows (its per-second series by batch means), so the
	// interval uses that noise instead: with three runs a small spread is
	// often luck.
	Floored bool `json:"within_run_floor,omitempty"`
	// Resolution is the smallest ratio difference (as a fraction) this
	// comparison would detect with 80% power: what "no difference" means.
	Resolution float64 `json:"resolution,omitempty"`
	// Insufficient says why there is no verdict and how many runs are needed.
	Insufficient string `json:"insufficient,omitempty"`
	Different    bool   `json:"different"`
	// LowerIsBetter is set for latency and cost: a ratio below 1 is then
	// the better side.
	LowerIsBetter bool     `json:"lower_is_better,omitempty"`
	Notes         []string `json:"notes,omitempty"`
}

// MarshalJSON writes the verdict with its word and with null for the
// numbers there are not (NaN, which JSON cannot hold).
func (v Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict // without this method
	num := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	return json.Marshal(struct {
		plain
		Ratio      *float64 `json:"ratio"`
		Lo         *float64 `json:"ci_lo"`
		Hi         *float64 `json:"ci_hi"`
		P          *float64 `json:"p"`
		PAdj       *float64 `json:"p_adj"`
		DF         *float64 `json:"df,omitempty"`
		Resolution *float64 `json:"resolution,omitempty"`
		Verdict    string   `json:"verdict"`
		Text       string   `json:"text"`
	}{plain(v), num(v.Ratio), num(v.Lo), num(v.Hi), num(v.P), num(v.PAdj), num(v.DF), num(v.Resolution), v.Word(), v.String()})
}

// Word is the verdict in one word: "better", "worse", "same" (no
// difference detectable) or "none" (too few runs).
func (v Verdict) Word() string {
	switch {
	case v.Insufficient != "":
		return "none"
	case !v.Different:
		return "same"
	case (v.Ratio > 1) != v.LowerIsBetter:
		return "better"
	}
	return "worse"
}

// logs returns the logs of the positive values.
func logs(x []float64) []float64 {
	out := make([]float64, 0, len(x))
	for _, v := range x {
		if v > 0 && !math.IsInf(v, 0) {
			out = append(out, math.Log(v))
		}
	}
	return out
}

func meanVar(x []float64) (m, v float64) {
	for _, e := range x {
		m += e
	}
	m /= float64(len(x))
	for _, e := range x {
		v += (e - m) * (e - m)
	}
	if len(x) > 1 {
		v /= float64(len(x) - 1)
	}
	return m, v
}

// meanOf is the mean of the values that are numbers; NaN when none is.
func meanOf(x []float64) float64 {
	var s float64
	n := 0
	for _, v := range x {
		if !math.IsNaN(v) {
			s += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

// Paired compares interleaved rounds: a[i] and b[i] ran in the same round.
// The sample is the log of each round's ratio; the interval and the test
// are Student's t on its mean. within[i], when known (not NaN), is round
// i's own noise: the variance of the log ratio from each run's per-second
// series; their mean is the least variance the rounds can have.
func Paired(metric string, a, b, within []float64) Verdict {
	n := min(len(a), len(b))
	v := Verdict{Metric: metric, Paired: true, NA: n, NB: n, MedianA: Median(a[:n]), MedianB: Median(b[:n]),
		P: math.NaN(), PAdj: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	var d, w []float64
	for i := 0; i < n; i++ {
		if a[i] > 0 && b[i] > 0 {
			d = append(d, math.Log(b[i]/a[i]))
			if i < len(within) {
				w = append(w, within[i])
			}
		}
	}
	if len(d) == 0 {
		v.Ratio = math.NaN()
		v.Insufficient = "no verdict: no round has the metric on both sides"
		return v
	}
	m, s2 := meanVar(d)
	v.Ratio, v.NA, v.NB = math.Exp(m), len(d), len(d)
	if len(d) < MinRuns {
		v.Insufficient = fmt.Sprintf("%d round gives no interval; 3 rounds or more give one", len(d))
		return v
	}
	if f := meanOf(w); f > s2 {
		s2, v.Floored = f, true
	}
	v.tTest(m, math.Sqrt(s2/float64(len(d))), float64(len(d)-1))
	v.informative()
	return v
}

// Unpaired compares independent runs: Welch's t on the logs of each
// group's runs. withinA and withinB, when known, are each run's own
// noise (the variance of the log of its figure), the least variance the
// group can have.
func Unpaired(metric string, a, b, withinA, withinB []float64) Verdict {
	la, lb := logs(a), logs(b)
	v := Verdict{Metric: metric, NA: len(la), NB: len(lb), MedianA: Median(a), MedianB: Median(b),
		P: math.NaN(), PAdj: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Ratio: math.NaN()}
	if len(la) == 0 || len(lb) == 0 {
		v.Insufficient = "no verdict: a group has no run with the metric"
		return v
	}
	ma, va := meanVar(la)
	mb, vb := meanVar(lb)
	v.Ratio = math.Exp(mb - ma)
	if len(la) < MinRuns || len(lb) < MinRuns {
		v.Insufficient = fmt.Sprintf("%d+%d runs give no interval; 3 runs in each group or more give one", len(la), len(lb))
		return v
	}
	if f := meanOf(withinA); f > va {
		va, v.Floored = f, true
	}
	if f := meanOf(withinB); f > vb {
		vb, v.Floored = f, true
	}
	qa, qb := va/float64(len(la)), vb/float64(len(lb))
	se := math.Sqrt(qa + qb)
	// Welch-Satterthwaite; with no spread at all, the pooled df.
	df := float64(len(la) + len(lb) - 2)
	if qa+qb > 0 {
		df = (qa + qb) * (qa + qb) / (qa*qa/float64(len(la)-1) + qb*qb/float64(len(lb)-1))
	}
	v.tTest(mb-ma, se, df)
	v.informative()
	return v
}

// minDF is the fewest degrees of freedom that give an interval. At one
// (two rounds) Student's multiplier is 12.7, against 4.3 at two: two
// rounds that differ by chance gave intervals such as 0.1%–118084%.
const minDF = 2

// maxSpan is the widest interval, as Hi/Lo, that still informs when it
// holds 1: beyond it the runs allow anything from half to twice.
const maxSpan = 2.0

// informative drops an interval that cannot inform: from too few
// degrees of freedom, or holding 1 and spanning more than maxSpan. The
// ratio stays; Insufficient says why there is no interval and what would
// give one.
func (v *Verdict) informative() {
	more := "runs in each group"
	if v.Paired {
		more = "rounds"
	}
	switch {
	case v.DF < minDF:
		v.Insufficient = fmt.Sprintf("%s give no interval (%.1f degrees of freedom); 3 %s or more give one", v.sample(), v.DF, more)
	case v.Lo <= 1 && v.Hi >= 1 && v.Hi/v.Lo > maxSpan:
		v.Insufficient = fmt.Sprintf("no useful interval: %s disagree too much (their 95%% interval would span more than a factor of %g); more %s, longer windows or ab --slice narrow it",
			v.sample(), maxSpan, more)
	default:
		return
	}
	v.Lo, v.Hi, v.P, v.PAdj, v.Resolution = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
}

// tTest sets the p-value, the interval of the ratio and the resolution
// from the mean log ratio m, its standard error and degrees of freedom.
func (v *Verdict) tTest(m, se, df float64) {
	v.DF = df
	crit := tQuantile(1-Alpha/2, df)
	switch {
	case se > 0:
		v.P = tTwoSided(m/se, df)
	case m == 0:
		v.P = 1
	default:
		v.P = 0
	}
	v.PAdj = v.P
	v.Lo, v.Hi = math.Exp(m-crit*se), math.Exp(m+crit*se)
	// The true difference found 80% of the time at this noise.
	v.Resolution = math.Expm1((crit + tQuantile(0.8, df)) * se)
}

// Decide marks the verdicts that differ: the primary one at Alpha alone,
// the others after Holm's correction among themselves; a difference needs
// the adjusted p below Alpha and an interval that excludes 1.
func Decide(vs []Verdict) {
	var ps []float64
	var at []int
	for i, v := range vs {
		if !math.IsNaN(v.P) && !v.Primary {
			ps = append(ps, v.P)
			at = append(at, i)
		}
	}
	for k, p := range Holm(ps) {
		vs[at[k]].PAdj = p
	}
	for i := range vs {
		v := &vs[i]
		v.Different = !math.IsNaN(v.PAdj) && v.PAdj < Alpha && (v.Lo > 1 || v.Hi < 1)
	}
}

// pct formats a ratio as a percentage of A.
func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// sample names the runs behind a verdict: "3 interleaved rounds", "3+3 runs".
func (v Verdict) sample() string {
	if v.Paired && v.SliceS > 0 {
		return fmt.Sprintf("%d sliced rounds (%s turns)", v.NA, time.Duration(v.SliceS*float64(time.Second)))
	}
	if v.Paired {
		return fmt.Sprintf("%d interleaved rounds", v.NA)
	}
	return fmt.Sprintf("%d+%d runs", v.NA, v.NB)
}

// Headline reads like the studies: "B throughput = 90.2% of A (95% CI
// 88.1–92.4%), p=0.004, 3 interleaved rounds", or "~ no difference
// detectable (B = 99.1% of A, 95% CI 96.0–102.3%), ...".
func (v Verdict) Headline() string {
	a, b := v.LabelA, v.LabelB
	if a == "" {
		a, b = "A", "B"
	}
	metric, _, _ := strings.Cut(v.Metric, " (") // "throughput (tps)" reads as "throughput"
	switch {
	case v.Insufficient != "":
		return fmt.Sprintf("%s %s = %s of %s (%s)", b, metric, pct(v.Ratio), a, v.Insufficient)
	case !v.Different:
		return fmt.Sprintf("~ no difference detectable in %s (%s = %s of %s, 95%% CI %s–%s), p=%.2g, %s",
			metric, b, pct(v.Ratio), a, pct(v.Lo), pct(v.Hi), v.PAdj, v.sample())
	}
	return fmt.Sprintf("%s %s = %s of %s (95%% CI %s–%s), p=%.2g, %s",
		b, metric, pct(v.Ratio), a, pct(v.Lo), pct(v.Hi), v.PAdj, v.sample())
}

// Sentence is the primary verdict as a report opens with it: the
// direction in words, then the figure with its interval ("b is 12.3%
// slower than a: throughput 87.7% of a (95% CI 80.1–95.9%, p=0.01, 3
// interleaved rounds)"). at places it ("at users=8"). Without an
// interval the sentence gives the ratio and says why there is none.
func (v Verdict) Sentence(at string) string {
	a, b := v.LabelA, v.LabelB
	if a == "" {
		a, b = "A", "B"
	}
	if at != "" {
		at = " " + at
	}
	metric, _, _ := strings.Cut(v.Metric, " (")
	fig := fmt.Sprintf("%s %s of %s", metric, pct(v.Ratio), a)
	switch {
	case v.Insufficient != "":
		return fmt.Sprintf("%s%s: %s; %s", b, at, fig, v.Insufficient)
	case !v.Different:
		return fmt.Sprintf("no difference detectable between %s and %s%s: %s (95%% CI %s–%s, p=%.2g, %s)",
			b, a, at, fig, pct(v.Lo), pct(v.Hi), v.PAdj, v.sample())
	}
	dir := "slower"
	d := 1 - v.Ratio
	if v.Ratio > 1 {
		dir, d = "faster", v.Ratio-1
	}
	if v.LowerIsBetter {
		dir = map[string]string{"slower": "lower", "faster": "higher"}[dir]
	}
	return fmt.Sprintf("%s is %.1f%% %s than %s%s: %s (95%% CI %s–%s, p=%.2g, %s)",
		b, 100*d, dir, a, at, fig, pct(v.Lo), pct(v.Hi), v.PAdj, v.sample())
}

// String is a secondary metric's verdict: "0.90x (worse), 95% CI [0.88,
// 0.92], p=0.002, 3 interleaved rounds", or "~" when no difference is
// detectable; the primary one reads as its Headline.
func (v Verdict) String() string {
	if v.Primary {
		return v.Headline()
	}
	switch {
	case math.IsNaN(v.Ratio):
		return "n/a (" + strings.TrimPrefix(v.Insufficient, "no verdict: ") + ")"
	case v.Insufficient != "":
		return fmt.Sprintf("%.2fx (%s)", v.Ratio, v.Insufficient)
	case !v.Different:
		return fmt.Sprintf("~ (%.2fx, 95%% CI [%.2f, %.2f], p=%.2g, %s: no difference above the noise)", v.Ratio, v.Lo, v.Hi, v.PAdj, v.sample())
	}
	return fmt.Sprintf("%.2fx (%s), 95%% CI [%.2f, %.2f], p=%.2g, %s", v.Ratio, v.Word(), v.Lo, v.Hi, v.PAdj, v.sample())
}

// resolutionNote says what "no difference" means for the primary metric
// when the comparison cannot resolve a 5% difference: the runs vary too
// much for their number.
func (v *Verdict) resolutionNote() {
	if v.Insufficient != "" || !(v.Resolution > 0.05) {
		return
	}
	hint := ""
	if v.Paired && v.SliceS == 0 {
		hint = ", and so does ab --slice, which cancels the host's slow noise within each round (not for storage comparisons)"
	}
	v.Notes = append(v.Notes, fmt.Sprintf(
		"high variation for %s: the smallest difference it would find 4 times in 5 is %.0f%%; more runs narrow it (as the square root of their number)%s",
		v.sample(), 100*v.Resolution, hint))
}
