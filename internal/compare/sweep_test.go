package compare

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/result"
)

// stepRun is a run of a sweep: tps over a 10 s window, the server using
// cpuPct of 2 CPUs.
func stepRun(label, param string, value, tps, cpuPct float64) *result.Run {
	start := time.Unix(1000, 0)
	cores := cpuPct / 100 * 2
	r := &result.Run{Label: label, MeasureStart: start, MeasureEnd: start.Add(10 * time.Second),
		Step:         &result.Step{Param: param, Value: value},
		Driver:       result.Driver{Users: int(value)},
		Transactions: []result.Transaction{{Name: "t", Committed: int64(tps * 10)}},
		OS:           &result.OS{Window: ostat.Rates{IntervalS: 10, NumCPU: 2, ServerCPUCores: &cores}}}
	return r
}

func group(label string, runs ...*result.Run) Group {
	g := Group{Label: label, Runs: runs}
	for range runs {
		g.Files = append(g.Files, label+".json")
	}
	return g
}

// Scaling: 1, 2, 4 users at 100, 187, 350 tps normalise to 1, 1.87, 3.5,
// gain 1.87 then 1.87 per doubling (3.5 = 1.87^2), efficiency 3.5/4.
func TestSweepScaling(t *testing.T) {
	a := group("a", stepRun("a", "users", 1, 100, 20), stepRun("a", "users", 2, 187, 38), stepRun("a", "users", 4, 349.69, 70))
	if p := SweepParam([]Group{a}); p != "users" {
		t.Fatalf("sweep param %q", p)
	}
	s, err := NewSweep([]Group{a}, "users", math.NaN())
	if err != nil {
		t.Fatal(err)
	}
	st := s.Groups[0].Steps
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-3*math.Abs(want) {
			t.Errorf("%s %.5f, want %.5f", what, got, want)
		}
	}
	near("normalised at 1", st[0].Normalised, 1)
	near("normalised at 2", st[1].Normalised, 1.87)
	near("normalised at 4", st[2].Normalised, 3.4969)
	near("gain 1→2", st[1].Gain, 1.87)
	near("gain 2→4", st[2].Gain, 1.87)
	near("gain first to last", s.Groups[0].GainPerDoubling, 1.87)
	near("efficiency at 4", st[2].Efficiency, 3.4969/4)
	near("cost at 4 (ms CPU per tx)", st[2].CostMs, 0.70*2/349.69*1000)
	// A constant gain per doubling is a power law, not the USL: its exact
	// fit through 3 steps needs κ < 0, so it is not drawn and says why.
	if g := s.Groups[0]; g.USL != nil || !strings.HasPrefix(g.USLNote, "fit failed: κ") {
		t.Errorf("a power law's USL fit: %+v, %q", g.USL, g.USLNote)
	}
	// Steps from the law itself are fitted and kept.
	truth := USL{Lambda: 100, Sigma: 0.05, Kappa: 0.002}
	u := group("u", stepRun("u", "users", 1, truth.At(1), 20), stepRun("u", "users", 2, truth.At(2), 38), stepRun("u", "users", 4, truth.At(4), 70))
	if s, err := NewSweep([]Group{u}, "users", math.NaN()); err != nil || s.Groups[0].USL == nil {
		t.Errorf("no USL fit on 3 steps of the law: %v %s", err, s.Groups[0].USLNote)
	}
}

// Equal CPU: a reaches 30–70%, b 20–60% at 1.2× a's throughput per CPU;
// compared at the highest both reached (60%), where a interpolates to
// 600 and b gives 720: b = 120% of a. With 3 runs a step that vary, the
// bootstrap interval holds the answer.
func TestSweepEqualCPU(t *testing.T) {
	var ra, rb []*result.Run
	for _, u := range []float64{1, 2, 4} {
		for _, noise := range []float64{-0.02, 0, 0.02} {
			ca := map[float64]float64{1: 30, 2: 50, 4: 70}[u] + noise*10
			cb := map[float64]float64{1: 20, 2: 40, 4: 60}[u] + noise*10
			ra = append(ra, stepRun("a", "users", u, 10*ca*(1+noise), ca))
			rb = append(rb, stepRun("b", "users", u, 12*cb*(1-noise), cb))
		}
	}
	s, err := NewSweep([]Group{group("a", ra...), group("b", rb...)}, "users", math.NaN())
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.EqualAt-60) > 1e-9 {
		t.Fatalf("compared at %.1f%%, want 60%% (the highest both reached): %s", s.EqualAt, s.EqualNote)
	}
	a, b := s.EqualCPU[0], s.EqualCPU[1]
	if math.Abs(a.TPS-600) > 1e-6 || math.Abs(b.TPS-720) > 1e-6 || math.Abs(b.Ratio-1.2) > 1e-9 {
		t.Errorf("equal CPU: a %.1f b %.1f ratio %.3f, want 600, 720, 1.2", a.TPS, b.TPS, b.Ratio)
	}
	if !(b.Lo < 1.2 && b.Hi > 1.2 && b.Lo > 1.05 && b.Hi < 1.35) {
		t.Errorf("bootstrap interval [%.3f, %.3f] of a ratio of 1.2 from runs within ±2%%", b.Lo, b.Hi)
	}
	// Cost: 60% of 2 CPUs over the throughput, in CPU ms per transaction.
	if math.Abs(b.CostMs-1.2/720*1000) > 1e-9 {
		t.Errorf("cost %.4f ms", b.CostMs)
	}
	// The steps are paired against the baseline's.
	if v := s.Groups[1].Steps[0].VsBaseline; v == nil || v.NA != 3 {
		t.Errorf("step verdict %+v", v)
	}
	// A chosen utilisation outside the overlap is refused with the range.
	s, _ = NewSweep([]Group{group("a", ra...), group("b", rb...)}, "users", 25)
	if !math.IsNaN(s.EqualAt) || s.EqualNote == "" {
		t.Errorf("25%% is below a's curve: %+v", s.EqualNote)
	}
}

// Rate sweeps have no scaling; cpus sweeps no equal-CPU comparison.
func TestSweepKinds(t *testing.T) {
	a := group("a", stepRun("a", "rate", 100, 100, 10), stepRun("a", "rate", 200, 200, 20))
	s, err := NewSweep([]Group{a}, "rate", math.NaN())
	if err != nil {
		t.Fatal(err)
	}
	if s.Scaling || !math.IsNaN(s.Groups[0].Steps[1].Normalised) || s.Groups[0].USL != nil {
		t.Errorf("rate sweep: scaling %v normalised %v usl %v", s.Scaling, s.Groups[0].Steps[1].Normalised, s.Groups[0].USL)
	}
	c := group("c", stepRun("c", "cpus", 1, 100, 45), stepRun("c", "cpus", 2, 180, 90))
	c.Runs[0].Target.CPUs, c.Runs[1].Target.CPUs = []int{1}, []int{0, 1}
	s, err = NewSweep([]Group{c}, "cpus", math.NaN())
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(s.EqualAt) || s.Groups[0].Steps[0].ServerCPUs != "1" || s.Groups[0].Steps[1].ServerCPUs != "0-1" {
		t.Errorf("cpus sweep: equal at %v, server CPUs %q %q", s.EqualAt, s.Groups[0].Steps[0].ServerCPUs, s.Groups[0].Steps[1].ServerCPUs)
	}
	// Utilisation on 1 CPU is a share of that CPU: 0.9 cores used is 90%.
	if got := s.Groups[0].Steps[0].CPU; math.Abs(got-90) > 1e-9 {
		t.Errorf("utilisation on 1 CPU %.1f%%, want 90%%", got)
	}
	if len(s.Caveats) != 0 {
		t.Errorf("CPU-bound at each step, yet: %+v", s.Caveats)
	}
	// A server that does not use its CPUs at a step says its gain per
	// doubling is not the CPUs' (study 001 on 2 CPUs with the driver on
	// the same host: 58%).
	d := group("d", stepRun("d", "cpus", 1, 100, 45), stepRun("d", "cpus", 2, 130, 58))
	d.Runs[0].Target.CPUs, d.Runs[1].Target.CPUs = []int{1}, []int{0, 1}
	s, err = NewSweep([]Group{d}, "cpus", math.NaN())
	if err != nil {
		t.Fatal(err)
	}
	if j := strings.Join(Assess(s.Caveats, 2).Lines, "\n"); !strings.Contains(j, "d's server used 58.0% of its CPUs at cpus=2") || strings.Contains(j, "cpus=1") {
		t.Errorf("caveats %+v", s.Caveats)
	}
}

// What undermines a sweep is said beside its figures: a run whose
// database host other processes shared, an equal-CPU point where the
// servers were mostly idle, a utilisation that does not rise with load;
// and the same contention is a caveat on a comparison's primary verdict.
func TestSweepCaveats(t *testing.T) {
	contended := stepRun("b", "users", 4, 300, 26)
	contended.OS.Window.OtherCPUCores = 1.24
	a := group("a", stepRun("a", "users", 1, 100, 20), stepRun("a", "users", 4, 390, 40))
	b := group("b", stepRun("b", "users", 1, 110, 25), contended)
	s, err := NewSweep([]Group{a, b}, "users", math.NaN())
	if err != nil {
		t.Fatal(err)
	}
	as := Assess(s.Caveats, 4)
	joined := strings.Join(as.Lines, "\n")
	for _, want := range []string{"HOST BUSY: 1 of 4 runs shared their database host with other processes using a quarter of its CPUs or more (b.json, 1.24 cores of 2)", "the equal-CPU point is at 26.0% utilisation",
		"b's CPU utilisation does not rise with users"} {
		if !strings.Contains(joined, want) {
			t.Errorf("caveats lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "a's CPU utilisation does not rise") {
		t.Errorf("a's utilisation rose from 20%% to 40%%:\n%s", joined)
	}
	if as.Grade != NotAFinding || as.Label != "NOT A FINDING (HOST BUSY)" {
		t.Errorf("a database host busy with other work: %s", as.Label)
	}
	// A comparison's runs carry the same caveat.
	ga, gb := group("a", stepRun("a", "users", 4, 390, 40)), group("b", contended)
	if as := Assess(GroupCaveats(ga, gb), 2); as.Grade != NotAFinding || !strings.Contains(strings.Join(as.Lines, "\n"), "1.24 cores") {
		t.Errorf("the comparison does not carry the contention: %+v", as)
	}
}

// A group whose runs do not share the server's version or settings is not
// one platform: compare says so (it reads each group's first run for
// "what differs").
func TestWithinGroup(t *testing.T) {
	r1, r2 := stepRun("a", "users", 1, 100, 20), stepRun("a", "users", 2, 190, 38)
	r1.Target.ServerVersion, r2.Target.ServerVersion = "15.18", "15.20"
	notes := RunNotes(Group{Label: "a", Runs: []*result.Run{r1, r2}, Files: []string{"a-1.json", "a-2.json"}})
	if !strings.Contains(strings.Join(notes, "\n"), `group a is not one platform: target.server_version is "15.18" in a-1.json, "15.20" in a-2.json`) {
		t.Errorf("notes %q", notes)
	}
	r2.Target.ServerVersion = "15.18"
	if n := WithinGroup(Group{Label: "a", Runs: []*result.Run{r1, r2}}); len(n) != 0 {
		t.Errorf("runs alike but for the swept users: %q", n)
	}
}

// The database host's figures at the equal-CPU point are interpolated
// between the steps around it, as throughput is, with the network's
// receive and send apart.
func TestSweepFiguresAtEqualCPU(t *testing.T) {
	withNet := func(r *result.Run, rx, tx, busy float64) *result.Run {
		r.OS.Window.Nets = []ostat.NetRates{{Name: "eth0", RxMBPerS: rx, TxMBPerS: tx}, {Name: "lo", RxMBPerS: 99}}
		r.OS.Window.CPUBusyPct = busy
		return r
	}
	a := group("a", withNet(stepRun("a", "users", 1, 100, 20), 1, 2, 30), withNet(stepRun("a", "users", 2, 200, 60), 3, 6, 70))
	b := group("b", withNet(stepRun("b", "users", 1, 90, 20), 2, 4, 25), withNet(stepRun("b", "users", 2, 180, 40), 4, 8, 45))
	s, err := NewSweep([]Group{a, b}, "users", math.NaN())
	if err != nil {
		t.Fatal(err)
	}
	// Equal CPU at 40% (b's highest): a halfway between its steps.
	got := map[string][]float64{}
	for _, e := range s.AtEqual {
		got[e.Name] = e.Values
	}
	near := func(name string, want ...float64) {
		t.Helper()
		v := got[name]
		if len(v) != len(want) {
			t.Fatalf("%s: %v, want %v", name, v, want)
		}
		for i := range want {
			if math.Abs(v[i]-want[i]) > 1e-9 {
				t.Errorf("%s: %v, want %v", name, v, want)
			}
		}
	}
	if s.EqualAt != 40 {
		t.Fatalf("equal CPU at %v%%, want 40", s.EqualAt)
	}
	near("network receive", 2, 4)
	near("network send", 4, 8)
	near("host CPU busy", 50, 45)
}
