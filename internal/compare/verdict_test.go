package compare

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/result"
)

// noisy returns n throughputs around mean with ±3% of uniform noise.
func noisy(g *rand.Rand, n int, mean float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = mean * (1 + 0.06*(g.Float64()-0.5))
	}
	return x
}

// A against itself: no verdict of difference, for many draws (at most the
// 5% the level allows, and in practice far fewer).
func TestAAGivesNoDifference(t *testing.T) {
	g := rand.New(rand.NewPCG(1, 2))
	flagged := 0
	for range 200 {
		vs := []Verdict{Unpaired("tps", noisy(g, 10, 1000), noisy(g, 10, 1000))}
		Decide(vs)
		if vs[0].Different {
			flagged++
		}
		if vs[0].Different != !strings.HasPrefix(vs[0].String(), "~") {
			t.Fatalf("verdict %q disagrees with Different=%v", vs[0], vs[0].Different)
		}
	}
	if flagged > 10 {
		t.Errorf("A/A flagged as different %d times in 200", flagged)
	}
}

// A clear 10% shift is flagged, with B below A.
func TestTenPercentShiftIsFlagged(t *testing.T) {
	g := rand.New(rand.NewPCG(3, 4))
	a, b := noisy(g, 10, 1000), noisy(g, 10, 900)
	vs := []Verdict{Unpaired("tps", a, b)}
	Decide(vs)
	v := vs[0]
	if !v.Different || v.Ratio > 0.93 || v.Ratio < 0.87 || v.Hi >= 1 || v.P > 0.001 {
		t.Fatalf("10%% slower B: %+v", v)
	}
	if s := v.String(); !strings.HasPrefix(s, fmt.Sprintf("%.2fx (worse), 95%% CI", v.Ratio)) || !strings.Contains(s, "n=10+10") {
		t.Errorf("verdict reads %q", s)
	}
	// The same in interleaved rounds.
	p := []Verdict{Paired("tps", a, b)}
	Decide(p)
	if !p[0].Different || p[0].Hi >= 1 || !strings.Contains(p[0].String(), "n=10 rounds") {
		t.Errorf("paired: %+v %q", p[0], p[0])
	}
}

func TestTooFewRunsSaySo(t *testing.T) {
	vs := []Verdict{Unpaired("tps", []float64{100, 101}, []float64{90, 91, 92}), Paired("tps", []float64{1, 2, 3}, []float64{1, 2, 3})}
	Decide(vs)
	if !strings.Contains(vs[0].Insufficient, "at least 4") || vs[0].Different {
		t.Errorf("2+3 runs: %+v", vs[0])
	}
	if !strings.Contains(vs[1].Insufficient, "at least 6") {
		t.Errorf("3 rounds: %+v", vs[1])
	}
	if !strings.Contains(vs[0].String(), "0.91x") {
		t.Errorf("the ratio is still shown: %q", vs[0])
	}
}

func TestHighVariationIsFlagged(t *testing.T) {
	v := Unpaired("tps", []float64{100, 140, 70, 120, 90}, []float64{100, 101, 99, 100, 100})
	if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "high variation in A") {
		t.Errorf("notes %q", v.Notes)
	}
}

// Holm across metrics: a p-value that passes alone can fail among many.
func TestDecideCorrectsAcrossMetrics(t *testing.T) {
	vs := []Verdict{{P: 0.03, Lo: 0.8, Hi: 0.95}, {P: 0.5, Lo: 0.9, Hi: 1.1}, {P: 0.6, Lo: 0.9, Hi: 1.1}}
	Decide(vs)
	if vs[0].Different || vs[0].PAdj != 0.09 {
		t.Errorf("p=0.03 among 3 metrics: %+v", vs[0])
	}
}

// Four runs a side can reach 0.029 at best: enough alone, not once
// corrected for eleven metrics. The verdict says how many runs would do.
func TestTooFewRunsForTheFamily(t *testing.T) {
	a, b := []float64{100, 101, 102, 103}, []float64{120, 121, 122, 123}
	vs := []Verdict{Unpaired("tps", a, b)}
	Decide(vs)
	if !vs[0].Different {
		t.Fatalf("alone, 4+4 separated runs differ: %+v", vs[0])
	}
	for range 10 {
		vs = append(vs, Unpaired("lat", a, a))
	}
	Decide(vs)
	if vs[0].Different || !strings.Contains(vs[0].Insufficient, "with 11 metrics corrected together the test needs at least 6") {
		t.Errorf("among 11 metrics: %+v", vs[0])
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
	v := Verdict{Ratio: 0.8, Lo: 0.7, Hi: 0.9, Different: true, LowerIsBetter: true}
	if !strings.Contains(v.String(), "(better)") {
		t.Errorf("20%% lower latency: %q", v)
	}
	v.LowerIsBetter = false
	if !strings.Contains(v.String(), "(worse)") {
		t.Errorf("20%% lower throughput: %q", v)
	}
}
