package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// lognormal returns n throughputs around mean with a run-to-run noise of
// cv (the log's standard deviation): the model the t test assumes.
func lognormal(g *rand.Rand, n int, mean, cv float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = mean * math.Exp(cv*g.NormFloat64())
	}
	return x
}

// Under the model, the level holds at the counts users run: A against
// itself is called different in 5% of 4,000 seeded draws of 3 rounds and
// of 3+3 runs (the draws are fixed, so this cannot flake).
func TestFalsePositivesAtThreeRuns(t *testing.T) {
	g := rand.New(rand.NewPCG(1, 2))
	const draws = 4000
	var paired, unpaired int
	for range draws {
		a, b := lognormal(g, 3, 1000, 0.03), lognormal(g, 3, 1000, 0.03)
		if v := Paired("tps", a, b, nil); v.P < Alpha {
			paired++
		}
		if v := Unpaired("tps", a, b, nil, nil); v.P < Alpha {
			unpaired++
		}
	}
	// Binomial(4000, 0.05): sd 14, so ±45 is over 3 sd. Welch's t is
	// conservative at 3+3 (its degrees of freedom are estimated): below
	// 5%, never above.
	if paired < 200-45 || paired > 200+45 {
		t.Errorf("3 rounds: %d false positives in %d A/A draws, want about 200 (5%%)", paired, draws)
	}
	if unpaired < 80 || unpaired > 200+45 {
		t.Errorf("3+3 runs: %d false positives in %d A/A draws, want 2-5%%", unpaired, draws)
	}
	t.Logf("false positives at the 5%% level: 3 rounds %.1f%%, 3+3 runs %.1f%%", 100*float64(paired)/draws, 100*float64(unpaired)/draws)
}

// A known answer: three rounds with B 10% slower each time, within 1%.
func TestThreeRoundsKnownAnswer(t *testing.T) {
	a := []float64{1000, 1010, 990}
	b := []float64{900, 915, 885}
	vs := []Verdict{Paired("throughput", a, b, nil)}
	vs[0].Primary, vs[0].LabelA, vs[0].LabelB = true, "native", "vm"
	Decide(vs)
	v := vs[0]
	if !v.Different || math.Abs(v.Ratio-0.9) > 0.002 || v.Hi >= 1 || v.Lo < 0.85 || v.DF != 2 {
		t.Fatalf("10%% slower in 3 rounds: %+v", v)
	}
	if h := v.Headline(); !strings.HasPrefix(h, "vm throughput = 90.0% of native (95% CI ") || !strings.HasSuffix(h, ", 3 interleaved rounds") {
		t.Errorf("headline %q", h)
	}
	if v.Word() != "worse" {
		t.Errorf("word %q", v.Word())
	}
	// The same runs as independent groups: Welch's t.
	u := Unpaired("throughput", a, b, nil, nil)
	if u.P >= Alpha || u.Hi >= 1 || !strings.Contains(u.String(), "3+3 runs") {
		t.Errorf("3+3 runs: %+v", u)
	}
}

// No difference reads as such, with what the interval allows.
func TestNoDifferenceHeadline(t *testing.T) {
	v := Paired("throughput", []float64{1000, 1010, 990}, []float64{995, 1012, 985}, nil)
	v.Primary = true
	Decide([]Verdict{v})
	if h := v.Headline(); !strings.HasPrefix(h, "~ no difference detectable in throughput (B = 99.7% of A, 95% CI ") {
		t.Errorf("headline %q", h)
	}
}

func TestTooFewRunsSaySo(t *testing.T) {
	vs := []Verdict{Unpaired("tps", []float64{100}, []float64{90, 91, 92}, nil, nil), Paired("tps", []float64{1}, []float64{2}, nil)}
	Decide(vs)
	if !strings.Contains(vs[0].Insufficient, "1+3 runs give no interval; 3 runs in each group or more give one") || vs[0].Different {
		t.Errorf("1+3 runs: %+v", vs[0])
	}
	if !strings.Contains(vs[1].Insufficient, "1 round gives no interval; 3 rounds or more give one") {
		t.Errorf("1 round: %+v", vs[1])
	}
	if !strings.Contains(vs[0].String(), "0.91x") {
		t.Errorf("the ratio is still shown: %q", vs[0])
	}
}

// Three rounds that agree by luck more closely than each run's own noise
// allows get the run's noise as their variance: a wider, honest interval.
func TestWithinRunFloor(t *testing.T) {
	a, b := []float64{1000, 1000, 1000}, []float64{980, 980.5, 979.5}
	bare := Paired("tps", a, b, nil)
	floored := Paired("tps", a, b, []float64{0.0004, 0.0004, 0.0004}) // 2% per round
	if bare.Floored || !floored.Floored || floored.Hi-floored.Lo <= bare.Hi-bare.Lo {
		t.Errorf("floor not applied: bare [%v, %v], floored %v [%v, %v]", bare.Lo, bare.Hi, floored.Floored, floored.Lo, floored.Hi)
	}
	if floored.P < Alpha {
		t.Errorf("2%% apart with 2%% of noise per round must not be a verdict: p=%v", floored.P)
	}
}

// The primary metric is tested alone; the others are corrected among
// themselves, so adding transaction types never takes the headline away.
func TestPrimaryIsNotCorrected(t *testing.T) {
	vs := []Verdict{{Primary: true, P: 0.03, PAdj: 0.03, Lo: 0.8, Hi: 0.95}}
	for range 10 {
		vs = append(vs, Verdict{P: 0.03, Lo: 0.8, Hi: 0.95})
	}
	Decide(vs)
	if !vs[0].Different || vs[0].PAdj != 0.03 {
		t.Errorf("primary among 11 metrics: %+v", vs[0])
	}
	if vs[1].Different || !near(vs[1].PAdj, 0.3, 1e-12) {
		t.Errorf("secondary p=0.03 among 10: %+v", vs[1])
	}
}

// A comparison too noisy to resolve 5% says what it can resolve.
func TestResolutionNote(t *testing.T) {
	v := Paired("tps", []float64{1000, 1000, 1000}, []float64{900, 1100, 1000}, nil)
	v.resolutionNote()
	if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "the smallest difference it would find 4 times in 5 is") {
		t.Errorf("notes %q (resolution %v)", v.Notes, v.Resolution)
	}
	q := Paired("tps", []float64{1000, 1001, 999}, []float64{1000, 1000, 1001}, nil)
	q.resolutionNote()
	if len(q.Notes) != 0 {
		t.Errorf("a quiet comparison got %q", q.Notes)
	}
}

func TestRoundsPairRuns(t *testing.T) {
	mk := func(label string, rounds ...int) Group {
		g := Group{Label: label}
		for _, r := range rounds {
			g.Runs = append(g.Runs, &result.Run{Label: label, Round: r})
		}
		return g
	}
	if ra, rb, ok := Rounds(mk("a", 1, 2, 3), mk("b", 3, 1, 2)); !ok || ra[0].Round != 3 || rb[0].Round != 3 {
		t.Errorf("rounds 1-3 not paired: %v", ok)
	}
	for _, tc := range [][2]Group{{mk("a", 1, 2), mk("b", 1, 3)}, {mk("a", 0, 1), mk("b", 0, 1)}, {mk("a", 1, 1), mk("b", 1, 2)}, {mk("a", 1), mk("b", 1, 2)}} {
		if _, _, ok := Rounds(tc[0], tc[1]); ok {
			t.Errorf("paired %v with %v", tc[0].Runs, tc[1].Runs)
		}
	}
}

func TestGroupByFact(t *testing.T) {
	var runs []*result.Run
	var files []string
	for i, users := range []int{8, 16, 8, 16} {
		runs = append(runs, &result.Run{Label: "same", Driver: result.Driver{Users: users}})
		files = append(files, fmt.Sprintf("r%d.json", i))
	}
	gs, err := GroupBy(runs, files, "driver.users", "driver.users=16")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].Label != "driver.users=16" || len(gs[0].Runs) != 2 || gs[1].Label != "driver.users=8" {
		t.Errorf("groups %+v", gs)
	}
	if _, err := GroupBy(runs, files, "no.such.fact", ""); err == nil || !strings.Contains(err.Error(), "no such fact") {
		t.Errorf("unknown fact: %v", err)
	}
	if _, err := Groups(runs, files, ""); err == nil || !strings.Contains(err.Error(), "two labels") {
		t.Errorf("one label: %v", err)
	}
}

func TestLowerIsBetter(t *testing.T) {
	v := Verdict{Ratio: 0.8, Lo: 0.7, Hi: 0.9, PAdj: 0.01, Different: true, LowerIsBetter: true}
	if !strings.Contains(v.String(), "(better)") {
		t.Errorf("20%% lower latency: %q", v)
	}
	v.LowerIsBetter = false
	if !strings.Contains(v.String(), "(worse)") {
		t.Errorf("20%% lower throughput: %q", v)
	}
}

// slicedRun is a sliced run of n slices of 2 s: the host's level at slice
// i is host(i), which both sides of a round see, times the side's own
// factor; the other side's slices start 2 s later.
func slicedRun(label string, round int, factor float64, offset float64, host func(i int) float64, n int) *result.Run {
	r := &result.Run{Label: label, Round: round, Driver: result.Driver{Slicing: &result.Slicing{SliceS: 2, With: "x"}}}
	var commits int64
	for i := range n {
		c := int64(2 * 1000 * factor * host(i))
		r.Driver.Slicing.Slices = append(r.Driver.Slicing.Slices, result.Slice{T: offset + 4*float64(i), S: 2, Commits: c})
		commits += c
	}
	r.Driver.Slicing.ActiveS = 2 * float64(n)
	r.Transactions = []result.Transaction{{Name: "t", Committed: commits}}
	return r
}

// A sliced run's throughput is over its own slices, its drift and own
// noise are read from them; and sliced rounds are tested on their ratios
// alone, with no floor: each run alone sees the host's wander (here ±30%
// over the round), which the slices cancel in the ratio.
func TestSlicedRounds(t *testing.T) {
	wander := func(i int) float64 { return 1 + 0.3*math.Sin(float64(i)/3) }
	a := slicedRun("a", 1, 1, 0, wander, 15)
	if got := a.Summarize(); got.DurationS != 30 || math.Abs(got.TPS-1000*meanOf(hostLevels(wander, 15))) > 1 {
		t.Errorf("summary of a sliced run: %.1f s, %.1f tps", got.DurationS, got.TPS)
	}
	if w := WithinThroughput(a); !(w > 1e-3) {
		t.Errorf("the run alone must see the host's wander: %v", w)
	}
	if d := Drift(a); d == 0 {
		t.Errorf("drift of a sliced run read from its slices: %v", d)
	}
	ga, gb := Group{Label: "a"}, Group{Label: "b"}
	for r := 1; r <= 3; r++ {
		ga.Runs = append(ga.Runs, slicedRun("a", r, 1, 0, wander, 15))
		gb.Runs = append(gb.Runs, slicedRun("b", r, 0.9+0.01*float64(r), 2, wander, 15))
	}
	v := Verdicts(ga, gb, Metrics(ga.Runs[0])[:1])[0]
	if h := v.Headline(); v.SliceS != 2 || v.Floored || !v.Different || !strings.Contains(h, "3 sliced rounds (2s turns)") {
		t.Errorf("headline %q, slice %v, floored %v", h, v.SliceS, v.Floored)
	}
	// The same runs unsliced: each run's wander floors the rounds, and
	// 9-11% apart is no verdict.
	for _, r := range append(slices.Clone(ga.Runs), gb.Runs...) {
		r.Driver.Slicing = nil
		r.MeasureEnd = r.MeasureStart.Add(30 * time.Second)
		for i := range 30 {
			r.Series = append(r.Series, metrics.Interval{Phase: "measure", Seconds: 1, Commits: int64(1000 * wander(i/2))})
		}
	}
	if v := Verdicts(ga, gb, Metrics(ga.Runs[0])[:1])[0]; !v.Floored {
		t.Errorf("unsliced runs that wander: floored %v", v.Floored)
	}
}

func hostLevels(f func(int) float64, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

// Two rounds give a ratio and no interval: Student's multiplier at one
// degree of freedom is 12.7, and two rounds 30% apart gave intervals such
// as 20.6%–553.9% as headlines. Three rounds give one; an interval that
// holds 1 and spans more than a factor of 2 is not given either.
func TestSmallSampleRefusal(t *testing.T) {
	two := Paired("throughput (tps)", []float64{100, 100}, []float64{80, 110}, nil)
	if two.Insufficient == "" || !math.IsNaN(two.Lo) || !math.IsNaN(two.Hi) || !math.IsNaN(two.P) {
		t.Fatalf("2 rounds gave an interval: %+v", two)
	}
	if !strings.Contains(two.Insufficient, "2 interleaved rounds give no interval") || !strings.Contains(two.Insufficient, "3 rounds or more give one") {
		t.Errorf("2 rounds: %q does not say what would give an interval", two.Insufficient)
	}
	if math.Abs(two.Ratio-math.Sqrt(0.8*1.1)) > 1e-9 {
		t.Errorf("the ratio is the rounds' geometric mean: %v", two.Ratio)
	}
	two.Primary = true
	if h := two.Headline(); strings.Contains(h, "CI") || !strings.Contains(h, "93.8% of A") {
		t.Errorf("2 rounds' headline: %q", h)
	}
	// The same spread over three rounds gives an interval.
	three := Paired("throughput (tps)", []float64{100, 100, 100}, []float64{95, 100, 105}, nil)
	if three.Insufficient != "" || math.IsNaN(three.Lo) {
		t.Errorf("3 rounds gave no interval: %+v", three)
	}
	// Three rounds that disagree wildly: the interval would hold 1 and
	// span more than twice: no interval.
	wild := Paired("throughput (tps)", []float64{100, 100, 100}, []float64{40, 100, 250}, nil)
	if !strings.Contains(wild.Insufficient, "no useful interval") || !math.IsNaN(wild.Lo) {
		t.Errorf("a 3-round interval spanning more than 2x was given: %+v", wild)
	}
	// Wide but away from 1: the direction is a finding, the interval kept.
	far := Paired("throughput (tps)", []float64{100, 100, 100}, []float64{300, 500, 900}, nil)
	if far.Insufficient != "" || !(far.Lo > 1) {
		t.Errorf("an interval clear of 1 was dropped: %+v", far)
	}
	// 2+2 independent runs: Welch's degrees of freedom are below 2.
	if u := Unpaired("tps", []float64{100, 104}, []float64{90, 99}, nil, nil); u.Insufficient == "" || !math.IsNaN(u.Lo) {
		t.Errorf("2+2 runs gave an interval: %+v", u)
	}
}
