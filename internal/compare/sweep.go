package compare

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/cpuset"
	"github.com/dbparity/dbparity/internal/result"
)

// A sweep is runs that step through one parameter: users, rate,
// warehouses or a managed server's CPUs. dbparity sweep records the step
// in every result; compare --over PARAM reads it from the runs' own
// settings instead. Per platform (group) a sweep shows the steps'
// medians, scaling normalised to the smallest step, a Universal
// Scalability Law fit, and throughput at equal CPU utilisation against
// the baseline: the studies' methods.

// Sweep is what compare shows of a sweep.
type Sweep struct {
	Param  string       `json:"param"`
	Groups []SweepGroup `json:"groups"`
	// Scaling says the parameter is a resource (users, cpus, warehouses),
	// so normalised throughput and gain per doubling mean something.
	Scaling bool `json:"scaling"`
	// EqualCPU is throughput at equal CPU utilisation, each group at
	// EqualAt % (NaN when the groups' utilisations do not overlap, or
	// were not measured; EqualNote says why).
	EqualAt   float64    `json:"equal_cpu_pct"`
	EqualCPU  []EqualCPU `json:"equal_cpu,omitempty"`
	EqualNote string     `json:"equal_cpu_note,omitempty"`
	CPUBasis  string     `json:"cpu_basis,omitempty"` // what the utilisation is a share of
	// AtEqual are the OS and load-profile figures of each group at the
	// equal-CPU point, interpolated between the steps around it as
	// throughput is (study 000's tables 2 and 3).
	AtEqual []EqualFigure `json:"at_equal_cpu,omitempty"`
	// Caveats say what undermines the sweep's headline: runs that were
	// driver-bound, contended or not stationary, an equal-CPU point below
	// the studies' range, a utilisation that does not rise with the load.
	Caveats []Caveat `json:"caveats,omitempty"`
}

// EqualFigure is one figure at the equal-CPU point: per group, in the
// groups' order (NaN where a group's steps do not give it).
type EqualFigure struct {
	Name   string    `json:"name"`
	Unit   string    `json:"unit"`
	Values []float64 `json:"values"`
}

// equalFigures are the figures interpolated at the equal-CPU point: the
// database host's CPU, disks and network (receive and send apart), and
// the load profile's per-second lines.
var equalFigures = []struct {
	name, unit string
	get        func(r *result.Run) (float64, bool)
}{
	{"host CPU busy", "%", func(r *result.Run) (float64, bool) { return r.OS.Window.CPUBusyPct, r.OS.HasWindow() }},
	{"database server CPU", "cores", func(r *result.Run) (float64, bool) {
		if !r.OS.HasWindow() || r.OS.Window.ServerCPUCores == nil {
			return 0, false
		}
		return *r.OS.Window.ServerCPUCores, true
	}},
	{"disk reads", "/s", disks(func(d ostat.DiskRates) float64 { return d.ReadsPerS })},
	{"disk writes", "/s", disks(func(d ostat.DiskRates) float64 { return d.WritesPerS })},
	{"disk read", "MB/s", disks(func(d ostat.DiskRates) float64 { return d.ReadMBPerS })},
	{"disk write", "MB/s", disks(func(d ostat.DiskRates) float64 { return d.WriteMBPerS })},
	{"network receive", "MB/s", nets(func(n ostat.NetRates) float64 { return n.RxMBPerS })},
	{"network send", "MB/s", nets(func(n ostat.NetRates) float64 { return n.TxMBPerS })},
}

func disks(f func(ostat.DiskRates) float64) func(*result.Run) (float64, bool) {
	return func(r *result.Run) (float64, bool) {
		if !r.OS.HasWindow() {
			return 0, false
		}
		v := 0.0
		for _, d := range r.OS.Window.Disks {
			if r.OS.DataDevice == "" || d.Name == r.OS.DataDevice {
				v += f(d)
			}
		}
		return v, true
	}
}

func nets(f func(ostat.NetRates) float64) func(*result.Run) (float64, bool) {
	return func(r *result.Run) (float64, bool) {
		if !r.OS.HasWindow() {
			return 0, false
		}
		v := 0.0
		for _, n := range r.OS.Window.Nets {
			if n.Name != "lo" {
				v += f(n)
			}
		}
		return v, true
	}
}

// atEqual interpolates each figure at s.EqualAt along each group's curve
// of (utilisation, figure) over its steps' medians.
func (s *Sweep) atEqual() {
	if math.IsNaN(s.EqualAt) {
		return
	}
	figure := func(g SweepGroup, get func(*result.Run) (float64, bool)) float64 {
		var pts []point
		for _, st := range g.Steps {
			var vs []float64
			for _, r := range st.runs {
				if v, ok := get(r); ok {
					vs = append(vs, v)
				}
			}
			if len(vs) > 0 && !math.IsNaN(st.CPU) {
				pts = append(pts, point{st.CPU, Median(vs)})
			}
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i].cpu < pts[j].cpu })
		v, _ := interpolate(pts, s.EqualAt)
		return v
	}
	for _, f := range equalFigures {
		e := EqualFigure{Name: f.name, Unit: f.unit}
		for _, g := range s.Groups {
			e.Values = append(e.Values, figure(g, f.get))
		}
		s.AtEqual = append(s.AtEqual, e)
	}
	// The load profile's lines, per second, by name.
	var names []string
	seen := map[string]bool{}
	for _, g := range s.Groups {
		for _, st := range g.Steps {
			for _, r := range st.runs {
				if r.LoadProfile == nil {
					continue
				}
				for _, l := range r.LoadProfile.Lines {
					if !seen[l.Name] && l.PerSecond != nil {
						seen[l.Name] = true
						names = append(names, l.Name)
					}
				}
			}
		}
	}
	for _, name := range names {
		e := EqualFigure{Name: name + " (load profile)", Unit: "/s"}
		get := func(r *result.Run) (float64, bool) {
			l := r.LoadProfile.Line(name)
			if l == nil || l.PerSecond == nil {
				return 0, false
			}
			return *l.PerSecond, true
		}
		for _, g := range s.Groups {
			e.Values = append(e.Values, figure(g, get))
		}
		s.AtEqual = append(s.AtEqual, e)
	}
}

// studiesCPU is the lowest utilisation the studies compare platforms at.
const studiesCPU = 50

// boundCPU is the utilisation of its CPUs above which a server is taken
// as CPU-bound: a CPU sweep's gain per doubling is the CPUs' gain only
// where each step's server is.
const boundCPU = 80

// SweepGroup is one platform's steps.
type SweepGroup struct {
	Label string `json:"label"`
	Steps []Step `json:"steps"`
	// GainPerDoubling is the throughput gained for each doubling of the
	// parameter from the first step to the last (1.87 = 87% more each
	// time); NaN for a rate sweep or a single step.
	GainPerDoubling float64 `json:"gain_per_doubling"`
	// Gain is the verdict behind GainPerDoubling: the last step's runs
	// against the first's (independent runs), its ratio and interval
	// taken to the power of one over the doublings between them.
	Gain    *Verdict `json:"gain,omitempty"`
	USL     *USL     `json:"usl,omitempty"`
	USLNote string   `json:"usl_note,omitempty"` // why there is no fit
}

// Step is one step of one platform: the median of its runs.
type Step struct {
	Value  float64 `json:"value"`
	Runs   int     `json:"runs"`
	TPS    float64 `json:"tps"` // median
	TPSMin float64 `json:"tps_min"`
	TPSMax float64 `json:"tps_max"`
	// CPU is the database server's utilisation (median, % of CPUs; NaN
	// when not measured), CostMs its CPU milliseconds per transaction.
	CPU    float64 `json:"cpu_pct"`
	CPUs   float64 `json:"cpus"`
	CostMs float64 `json:"cpu_ms_per_tx"`
	// P95Ms is the median p95 latency of the first transaction type.
	P95Ms float64 `json:"p95_ms"`
	// Normalised is TPS over the first step's, Gain the throughput gained
	// per doubling of the parameter since the previous step, Efficiency
	// Normalised over the parameter's own growth (1 = linear).
	Normalised float64 `json:"normalised"`
	Gain       float64 `json:"gain_per_doubling"`
	Efficiency float64 `json:"efficiency"`
	// ServerCPUs are the CPUs a managed server was confined to.
	ServerCPUs string `json:"server_cpus,omitempty"`
	// VsBaseline is this step's throughput verdict against the baseline
	// group's same step (nil for the baseline, or when it lacks the step).
	VsBaseline *Verdict `json:"vs_baseline,omitempty"`

	runs []*result.Run
}

// EqualCPU is one group's throughput at the sweep's equal utilisation.
type EqualCPU struct {
	Label  string  `json:"label"`
	TPS    float64 `json:"tps"`
	CostMs float64 `json:"cpu_ms_per_tx"`
	// Ratio is TPS over the baseline's, with a 95% bootstrap interval
	// over the runs of each step (NaN with one run a step).
	Ratio float64 `json:"ratio"`
	Lo    float64 `json:"ci_lo"`
	Hi    float64 `json:"ci_hi"`
}

// SweepParams are the parameters a sweep may step through.
var SweepParams = []string{"users", "rate", "warehouses", "cpus"}

// StepOf is the run's value of param: its recorded step, else its own
// setting.
func StepOf(r *result.Run, param string) (float64, bool) {
	if r.Step != nil && r.Step.Param == param {
		return r.Step.Value, true
	}
	switch param {
	case "users":
		return float64(r.Driver.Users), r.Driver.Users > 0
	case "rate":
		if r.Driver.Rate != nil {
			return r.Driver.Rate.TargetTPS, true
		}
	case "warehouses":
		switch v := r.Workload.Params["warehouses"].(type) {
		case float64:
			return v, true
		case int:
			return float64(v), true
		}
	case "cpus":
		if n := len(r.Target.CPUs); n > 0 {
			return float64(n), true
		}
		if r.OS.HasWindow() && r.OS.Window.NumCPU > 0 {
			return float64(r.OS.Window.NumCPU), true
		}
	}
	return 0, false
}

// SweepParam is the parameter the runs' recorded steps share, when every
// run has one and they take two values or more; "" otherwise.
func SweepParam(gs []Group) string {
	param := ""
	values := map[float64]bool{}
	for _, g := range gs {
		for _, r := range g.Runs {
			if r.Step == nil || param != "" && r.Step.Param != param {
				return ""
			}
			param = r.Step.Param
			values[r.Step.Value] = true
		}
	}
	if len(values) < 2 {
		return ""
	}
	return param
}

// NewSweep computes the sweep of gs over param. at is the utilisation to
// compare throughput at, in %; NaN chooses the highest every group
// reached.
func NewSweep(gs []Group, param string, at float64) (*Sweep, error) {
	if !slices.Contains(SweepParams, param) {
		return nil, fmt.Errorf("--over %s: a sweep steps through %v", param, SweepParams)
	}
	s := &Sweep{Param: param, Scaling: param != "rate", EqualAt: math.NaN()}
	for _, g := range gs {
		sg, err := sweepGroup(g, param)
		if err != nil {
			return nil, err
		}
		s.Groups = append(s.Groups, sg)
	}
	for i := range s.Groups[1:] {
		s.versus(gs, i+1)
	}
	if param != "cpus" { // utilisations of different CPU counts are not comparable
		s.equalCPU(at)
	} else {
		s.EqualNote = "throughput at equal CPU utilisation compares platforms of the same CPUs: not a cpus sweep"
	}
	s.atEqual()
	s.caveats(gs)
	return s, nil
}

// caveats fills s.Caveats from the runs and the curves.
func (s *Sweep) caveats(gs []Group) {
	s.Caveats = GroupCaveats(gs...)
	add := func(k Kind, text string) { s.Caveats = append(s.Caveats, Caveat{Kind: k, Text: text}) }
	if !math.IsNaN(s.EqualAt) && s.EqualAt < studiesCPU {
		add(KindLowCPU, fmt.Sprintf("the equal-CPU point is at %.1f%% utilisation, below the %d%% and more the studies compare at: the servers were mostly idle, add load (users, rate)",
			s.EqualAt, studiesCPU))
	}
	if !math.IsNaN(s.EqualAt) && len(s.EqualCPU) > 1 && !math.IsNaN(s.EqualCPU[1].Lo) {
		if n := s.fewestAround(); n < 3 {
			add(KindFewRuns, fmt.Sprintf("%d runs a step around the equal-CPU point: the bootstrap interval from so few runs is narrower than the truth (by about √2 with 2); --repeat 3 gives a fair one", n))
		}
	}
	if s.Param == "cpus" {
		for _, g := range s.Groups {
			for _, st := range g.Steps {
				if !math.IsNaN(st.CPU) && st.CPU < boundCPU {
					add(KindNotCPUBound, fmt.Sprintf("%s's server used %.1f%% of its CPUs at cpus=%g, below the %d%% of a CPU-bound server: something else limited throughput there (the driver, on the same host, or locks, IO), so the gain per doubling understates what the CPUs give; add load (users)",
						g.Label, st.CPU, st.Value, boundCPU))
				}
			}
		}
	}
	if s.Param == "users" || s.Param == "rate" {
		for _, g := range s.Groups {
			n := len(g.Steps)
			if n < 2 || math.IsNaN(g.Steps[0].CPU) || math.IsNaN(g.Steps[n-1].CPU) {
				continue
			}
			if first, last := g.Steps[0].CPU, g.Steps[n-1].CPU; last < 1.1*first {
				add(KindFlatCPU, fmt.Sprintf("%s's CPU utilisation does not rise with %s (%.1f%% at %s=%g, %.1f%% at %g): something else limits it (the driver, locks, IO)",
					g.Label, s.Param, first, s.Param, g.Steps[0].Value, last, g.Steps[n-1].Value))
			}
		}
	}
}

// fewestAround is the fewest runs of the steps each group's equal-CPU
// point lies between.
func (s *Sweep) fewestAround() int {
	fewest := math.MaxInt
	for _, g := range s.Groups {
		for k := range g.Steps {
			st := g.Steps[k]
			next := st
			if k+1 < len(g.Steps) {
				next = g.Steps[k+1]
			}
			lo, hi := min(st.CPU, next.CPU), max(st.CPU, next.CPU)
			if s.EqualAt >= lo && s.EqualAt <= hi {
				fewest = min(fewest, st.Runs, next.Runs)
			}
		}
	}
	if fewest == math.MaxInt {
		return 0
	}
	return fewest
}

func sweepGroup(g Group, param string) (SweepGroup, error) {
	sg := SweepGroup{Label: g.Label, GainPerDoubling: math.NaN()}
	at := map[float64]int{}
	for i, r := range g.Runs {
		v, ok := StepOf(r, param)
		if !ok {
			return sg, fmt.Errorf("%s has no %s to sweep by", g.Files[i], param)
		}
		k, seen := at[v]
		if !seen {
			k = len(sg.Steps)
			at[v] = k
			sg.Steps = append(sg.Steps, Step{Value: v})
		}
		sg.Steps[k].runs = append(sg.Steps[k].runs, r)
	}
	sort.Slice(sg.Steps, func(i, j int) bool { return sg.Steps[i].Value < sg.Steps[j].Value })
	var ns, xs []float64
	for k := range sg.Steps {
		st := &sg.Steps[k]
		st.fill()
		for _, r := range st.runs {
			ns, xs = append(ns, st.Value), append(xs, r.Summarize().TPS)
		}
		first := sg.Steps[0]
		st.Normalised, st.Gain, st.Efficiency = math.NaN(), math.NaN(), math.NaN()
		if param != "rate" && first.TPS > 0 {
			st.Normalised = st.TPS / first.TPS
			st.Efficiency = st.Normalised / (st.Value / first.Value)
			if k > 0 {
				prev := sg.Steps[k-1]
				st.Gain = perDoubling(st.TPS/prev.TPS, st.Value/prev.Value)
			}
		}
	}
	if n := len(sg.Steps); n > 1 && param != "rate" {
		first, last := sg.Steps[0], sg.Steps[n-1]
		sg.GainPerDoubling = perDoubling(last.TPS/first.TPS, last.Value/first.Value)
		sg.Gain = gainVerdict(first, last)
	}
	switch {
	case param != "users" && param != "cpus":
		sg.USLNote = "the Universal Scalability Law is fitted to users or cpus sweeps"
	default:
		u, err := FitUSL(ns, xs)
		switch {
		case err != nil:
			sg.USLNote = err.Error()
		case u.Failed() != "":
			sg.USLNote = "fit failed: " + u.Failed()
		default:
			sg.USL = &u
		}
	}
	return sg, nil
}

// gainVerdict is the gain per doubling from step first to step last with
// its interval: the verdict on the last step's throughput against the
// first's, its ratio and interval as gains per doubling.
func gainVerdict(first, last Step) *Verdict {
	var a, b []float64
	for _, r := range first.runs {
		a = append(a, r.Summarize().TPS)
	}
	for _, r := range last.runs {
		b = append(b, r.Summarize().TPS)
	}
	v := Unpaired("throughput (tps)", a, b, nil, nil)
	factor := last.Value / first.Value
	v.Ratio, v.Lo, v.Hi = perDoubling(v.Ratio, factor), perDoubling(v.Lo, factor), perDoubling(v.Hi, factor)
	v.Primary = true
	vs := []Verdict{v}
	Decide(vs)
	return &vs[0]
}

// perDoubling is the gain per doubling of a parameter that grew by
// factor and brought throughput ratio: ratio^(1/log2 factor).
func perDoubling(ratio, factor float64) float64 {
	if !(ratio > 0) || !(factor > 1) {
		return math.NaN()
	}
	return math.Pow(ratio, 1/math.Log2(factor))
}

// fill takes the step's medians from its runs.
func (st *Step) fill() {
	var tps, cpu, cost, p95 []float64
	cpus := map[string]bool{}
	for _, r := range st.runs {
		s := r.Summarize()
		tps = append(tps, s.TPS)
		if u, ok := r.CPU(); ok {
			cpu = append(cpu, u.Pct)
			st.CPUs = u.CPUs
			if s.TPS > 0 {
				cost = append(cost, u.Cores()/s.TPS*1000)
			}
		}
		if len(r.Transactions) > 0 && r.Transactions[0].Latency.Count > 0 {
			p95 = append(p95, r.Transactions[0].Latency.P95Ms)
		}
		if len(r.Target.CPUs) > 0 {
			cpus[cpuset.Format(r.Target.CPUs)] = true
		}
	}
	st.Runs = len(st.runs)
	st.TPS, st.TPSMin, st.TPSMax = Median(tps), slices.Min(tps), slices.Max(tps)
	st.CPU, st.CostMs, st.P95Ms = medianOrNaN(cpu), medianOrNaN(cost), medianOrNaN(p95)
	for _, k := range slices.Sorted(maps.Keys(cpus)) {
		if st.ServerCPUs != "" {
			st.ServerCPUs += "; "
		}
		st.ServerCPUs += k
	}
}

func medianOrNaN(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	return Median(x)
}

// versus sets each step's throughput verdict of group i against the
// baseline's same step (paired by round when the runs are interleaved).
func (s *Sweep) versus(gs []Group, i int) {
	base := s.Groups[0]
	ms := []Metric{{Name: "throughput (tps)", Get: func(r *result.Run) float64 { return r.Summarize().TPS }, Within: WithinThroughput}}
	for k := range s.Groups[i].Steps {
		st := &s.Groups[i].Steps[k]
		for _, b := range base.Steps {
			if b.Value != st.Value {
				continue
			}
			ga := Group{Label: gs[0].Label, Runs: b.runs}
			gb := Group{Label: gs[i].Label, Runs: st.runs}
			if vs := Verdicts(ga, gb, ms); len(vs) > 0 {
				st.VsBaseline = &vs[0]
			}
		}
	}
}

// point is one step on a throughput-against-utilisation curve.
type point struct{ cpu, tps float64 }

// curve is a group's steps as (utilisation, throughput), by utilisation.
func curve(steps []Step, pick func(st Step) (cpu, tps float64, ok bool)) []point {
	var pts []point
	for _, st := range steps {
		if c, t, ok := pick(st); ok && !math.IsNaN(c) {
			pts = append(pts, point{c, t})
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].cpu < pts[j].cpu })
	return pts
}

// interpolate is the throughput at utilisation at, by linear
// interpolation between the steps around it; false outside the curve.
func interpolate(pts []point, at float64) (float64, bool) {
	if len(pts) == 0 || at < pts[0].cpu || at > pts[len(pts)-1].cpu {
		return math.NaN(), false
	}
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if at <= b.cpu {
			if b.cpu == a.cpu {
				return (a.tps + b.tps) / 2, true
			}
			return a.tps + (b.tps-a.tps)*(at-a.cpu)/(b.cpu-a.cpu), true
		}
	}
	return pts[len(pts)-1].tps, true
}

func medians(st Step) (cpu, tps float64, ok bool) { return st.CPU, st.TPS, true }

// equalCPU compares the groups' throughput at one CPU utilisation: at, or
// the highest utilisation every group reached.
func (s *Sweep) equalCPU(at float64) {
	var curves [][]point
	lo, hi := math.Inf(-1), math.Inf(1)
	for _, g := range s.Groups {
		c := curve(g.Steps, medians)
		if len(c) == 0 {
			s.EqualNote = fmt.Sprintf("%s has no CPU utilisation measured (collectors off, or the database host not seen)", g.Label)
			return
		}
		curves = append(curves, c)
		lo, hi = max(lo, c[0].cpu), min(hi, c[len(c)-1].cpu)
		for _, st := range g.Steps {
			for _, r := range st.runs {
				if u, ok := r.CPU(); ok && s.CPUBasis == "" {
					s.CPUBasis = u.Basis()
				}
			}
		}
	}
	if math.IsNaN(at) {
		at = hi
	}
	if at < lo || at > hi {
		s.EqualNote = fmt.Sprintf("the groups' CPU utilisations overlap only from %.1f%% to %.1f%%: no equal-CPU comparison at %.1f%%", lo, hi, at)
		if lo > hi {
			s.EqualNote = fmt.Sprintf("the groups' CPU utilisations do not overlap (%s): add steps so that they do", s.ranges(curves))
		}
		return
	}
	s.EqualAt = at
	for i, g := range s.Groups {
		tps, _ := interpolate(curves[i], at)
		e := EqualCPU{Label: g.Label, TPS: tps, Ratio: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), CostMs: math.NaN()}
		if cpus := g.Steps[0].CPUs; cpus > 0 && tps > 0 {
			e.CostMs = at / 100 * cpus / tps * 1000
		}
		if i > 0 && s.EqualCPU[0].TPS > 0 {
			e.Ratio = tps / s.EqualCPU[0].TPS
			e.Lo, e.Hi = s.bootstrap(0, i, at)
		}
		s.EqualCPU = append(s.EqualCPU, e)
	}
}

func (s *Sweep) ranges(curves [][]point) string {
	out := ""
	for i, c := range curves {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s %.1f–%.1f%%", s.Groups[i].Label, c[0].cpu, c[len(c)-1].cpu)
	}
	return out
}

// bootstrap is a 95% interval of the equal-CPU ratio of group b to a:
// the runs of each step are drawn again with replacement, the curves
// rebuilt from the draws' medians and the ratio taken again, 2000 times
// (seeded, so a report is the same every time). NaN when no step of
// either group has two runs to draw from.
func (s *Sweep) bootstrap(a, b int, at float64) (lo, hi float64) {
	varied := false
	for _, g := range []SweepGroup{s.Groups[a], s.Groups[b]} {
		for _, st := range g.Steps {
			varied = varied || len(st.runs) > 1
		}
	}
	if !varied {
		return math.NaN(), math.NaN()
	}
	gen := rand.New(rand.NewPCG(2, 0xB007))
	draw := func(g SweepGroup) []point {
		var pts []point
		for _, st := range g.Steps {
			var cpu, tps []float64
			for range st.runs {
				r := st.runs[gen.IntN(len(st.runs))]
				if u, ok := r.CPU(); ok {
					cpu = append(cpu, u.Pct)
					tps = append(tps, r.Summarize().TPS)
				}
			}
			if len(cpu) > 0 {
				pts = append(pts, point{Median(cpu), Median(tps)})
			}
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i].cpu < pts[j].cpu })
		return pts
	}
	var ratios []float64
	const draws = 2000
	for range draws {
		ta, oka := interpolate(draw(s.Groups[a]), at)
		tb, okb := interpolate(draw(s.Groups[b]), at)
		if oka && okb && ta > 0 {
			ratios = append(ratios, tb/ta)
		}
	}
	// A draw whose curve no longer reaches the utilisation gives no
	// ratio; too many such draws and the interval would mislead.
	if len(ratios) < draws/2 {
		return math.NaN(), math.NaN()
	}
	sort.Float64s(ratios)
	q := func(p float64) float64 { return ratios[min(len(ratios)-1, int(p*float64(len(ratios))))] }
	return q(0.025), q(0.975)
}
