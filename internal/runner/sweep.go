package runner

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/cpuset"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/workload"
)

// Sweepable are the parameters a sweep can step through.
var Sweepable = []string{"users", "rate", "warehouses", "cpus"}

// Side is one platform of a sweep: a target and its label.
type Side struct {
	Target Target
	Label  string // "": DefaultLabel's, said when the sweep starts
}

// SweepOptions are the options of `dbparity sweep`.
type SweepOptions struct {
	RunOptions           // every run's settings; the swept one is set per step
	Param      string    // users, rate, warehouses or cpus
	Values     []float64 // the steps, ascending
	// Sides are one target, or two run in interleaved rounds at every
	// step (as ab runs them), in an order drawn from the seed.
	Sides  []Side
	Repeat int // runs of each side at each step (rounds, with two sides)
	// UntilCPU, when above 0, ends the sweep after the first step at
	// which every side's database server reached this CPU utilisation
	// (in %, the median of the step's runs).
	UntilCPU float64
	Prefix   string // result files: PREFIX-LABEL-PARAM=VALUE-REPETITION.json
}

// SweepFile names the result file of one run of a sweep.
func SweepFile(prefix, label, param string, value float64, rep int) string {
	return fmt.Sprintf("%s-%s-%s=%s-%d.json", prefix, safeName(label), param, formatStep(value), rep)
}

func formatStep(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func (o *SweepOptions) validate() error {
	if !slices.Contains(Sweepable, o.Param) {
		return usage("--over %s: sweep one of %s (for example --over users=4,8,16)", o.Param, strings.Join(Sweepable, ", "))
	}
	if len(o.Values) == 0 {
		return usage("--over %s=: give the steps (for example %s=1,2,4 or %s=1..16 for doublings)", o.Param, o.Param, o.Param)
	}
	for i, v := range o.Values {
		switch {
		case !(v > 0) || math.IsInf(v, 0):
			return usage("--over %s: step %s must be above 0", o.Param, formatStep(v))
		case o.Param != "rate" && v != math.Trunc(v):
			return usage("--over %s: step %s must be a whole number", o.Param, formatStep(v))
		case i > 0 && v <= o.Values[i-1]:
			return usage("--over %s: steps must rise (%s after %s)", o.Param, formatStep(v), formatStep(o.Values[i-1]))
		}
	}
	switch {
	case o.Repeat < 1 || o.Repeat > 1000:
		return usage("--repeat %d: must be between 1 and 1000", o.Repeat)
	case len(o.Sides) < 1 || len(o.Sides) > 2:
		return usage("a sweep runs one target, or two (--a and --b) interleaved")
	case len(o.Sides) == 2 && o.Sides[0].Label == o.Sides[1].Label:
		return usage("--label-a and --label-b are both %q: name the two sides differently", o.Sides[0].Label)
	case o.UntilCPU < 0 || o.UntilCPU > 100:
		return usage("--until-cpu %g%%: must be between 0 and 100", o.UntilCPU)
	case o.UntilCPU > 0 && o.Param != "users" && o.Param != "rate":
		return usage("--until-cpu raises the load: sweep users= or rate= with it, not %s=", o.Param)
	case o.UntilCPU > 0 && o.Collect.Off:
		return usage("--until-cpu needs the collectors (the database host's CPU): drop --no-collect")
	case o.Param == "rate" && o.Rate > 0:
		return usage("--rate and --over rate= both given: the sweep sets the rate of each step")
	case o.Param == "users" && o.Users > 0:
		return usage("--users and --over users= both given: the sweep sets the users of each step")
	}
	if o.Param == "cpus" {
		avail, err := cpuset.Available()
		if err != nil {
			return err
		}
		if last := o.Values[len(o.Values)-1]; int(last) > len(avail) {
			return usage("--over cpus: %s CPUs asked, but this host lets dbparity use %d (%s)", formatStep(last), len(avail), cpuset.Format(avail))
		}
		for _, s := range o.Sides {
			if s.Target.Managed == "" {
				return usage("--over cpus confines a managed server's processes to CPUs: it needs --managed postgres (on another server, set its CPUs yourself and --label each run)")
			}
		}
	}
	if o.Param == "warehouses" {
		if _, ok := loadFlag(o.Workload, "warehouses"); !ok {
			return usage("--over warehouses: %s has no warehouses", o.Workload.Meta().Name)
		}
	}
	return nil
}

// Sweep runs every step of the sweep and returns the result files in the
// order written. Each step's runs are complete result files, with the
// step recorded, before the next step starts: a sweep that stops (Ctrl-C,
// a failed run) keeps every step it finished.
func Sweep(ctx context.Context, o SweepOptions) ([]string, error) {
	defaulted := map[string]bool{}
	o.Sides = slices.Clone(o.Sides)
	for k := range o.Sides {
		if o.Sides[k].Label == "" {
			o.Sides[k].Label = DefaultLabel(o.Sides[k].Target)
			defaulted[o.Sides[k].Label] = true
		}
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Prefix == "" {
		o.Prefix = filepath.Join(DefaultDataDir, "results", "sweep")
	}
	if o.Live == nil && o.MetricsAddr != "" {
		srv, err := startLive(o.MetricsAddr, o.MetricsLinger, "sweep", o.Workload.Meta().Name, nil, o.Stderr)
		if err != nil {
			return nil, err
		}
		defer srv.Close(ctx)
		o.Live = srv
	}
	for _, v := range o.Values {
		for _, s := range o.Sides {
			for rep := 1; rep <= o.Repeat; rep++ {
				if err := result.CheckWritable(SweepFile(o.Prefix, s.Label, o.Param, v, rep), o.Force); err != nil {
					return nil, UsageError{err}
				}
			}
		}
	}
	for _, s := range o.Sides {
		if defaulted[s.Label] {
			fmt.Fprintln(o.Stderr, labelNote(s.Label))
		}
	}
	g := rand.New(rand.NewPCG(o.Seed, 0x5EE9))
	var files []string
	reached := make([]float64, len(o.Sides)) // the highest utilisation each side reached
	for k, v := range o.Values {
		step := &result.Step{Param: o.Param, Value: v, Index: k + 1}
		fmt.Fprintf(o.Stderr, "step %d of %d: %s=%s\n", k+1, len(o.Values), o.Param, formatStep(v))
		if o.Param == "warehouses" {
			for _, s := range o.Sides {
				if err := o.loadStep(ctx, s, v); err != nil {
					return files, fmt.Errorf("%s=%s, %s: %w", o.Param, formatStep(v), s.Label, err)
				}
			}
		}
		use := make([][]float64, len(o.Sides))
		for rep := 1; rep <= o.Repeat; rep++ {
			order := []int{0}
			if len(o.Sides) == 2 {
				order = []int{0, 1}
				if g.IntN(2) == 1 {
					order = []int{1, 0}
				}
			}
			for _, i := range order {
				s := o.Sides[i]
				ro, err := o.stepRun(s, step, rep)
				if err != nil {
					return files, err
				}
				if err := Run(ctx, ro); err != nil {
					return files, fmt.Errorf("%s=%s, %s run %d: %w", o.Param, formatStep(v), s.Label, rep, err)
				}
				files = append(files, ro.Out)
				if o.UntilCPU > 0 {
					r, err := result.Read(ro.Out)
					if err != nil {
						return files, err
					}
					if u, ok := r.CPU(); ok {
						use[i] = append(use[i], u.Pct)
					}
				}
			}
		}
		if o.UntilCPU > 0 && o.untilCPU(v, use, reached) {
			return files, nil
		}
	}
	if o.UntilCPU > 0 {
		var got []string
		for i, s := range o.Sides {
			got = append(got, fmt.Sprintf("%s %.0f%%", s.Label, reached[i]))
		}
		fmt.Fprintf(o.Stderr, "the sweep ended at %s=%s without reaching %g%% CPU (highest: %s): add higher steps\n",
			o.Param, formatStep(o.Values[len(o.Values)-1]), o.UntilCPU, strings.Join(got, ", "))
	}
	return files, nil
}

// untilCPU reports the step's utilisation and whether every side has now
// reached the target; reached keeps each side's highest.
func (o *SweepOptions) untilCPU(v float64, use [][]float64, reached []float64) bool {
	all := true
	var got []string
	for i, s := range o.Sides {
		if len(use[i]) == 0 {
			got = append(got, s.Label+" unknown")
			all = false
			continue
		}
		m := compare.Median(use[i])
		reached[i] = max(reached[i], m)
		got = append(got, fmt.Sprintf("%s %.1f%%", s.Label, m))
		all = all && m >= o.UntilCPU
	}
	fmt.Fprintf(o.Stderr, "%s=%s: database server CPU %s (target %g%%)\n", o.Param, formatStep(v), strings.Join(got, ", "), o.UntilCPU)
	if all {
		fmt.Fprintf(o.Stderr, "reached %g%% CPU at %s=%s: the sweep stops here\n", o.UntilCPU, o.Param, formatStep(v))
	}
	return all
}

// stepRun is the run options of side s at step, repetition rep.
func (o *SweepOptions) stepRun(s Side, step *result.Step, rep int) (RunOptions, error) {
	ro := o.RunOptions
	ro.Target, ro.Label, ro.Step, ro.Repeat, ro.Brief = s.Target, s.Label, step, 1, true
	ro.Out = SweepFile(o.Prefix, s.Label, o.Param, step.Value, rep)
	if len(o.Sides) == 2 {
		ro.Round = rep // interleaved: compare pairs the sides by round
	}
	switch o.Param {
	case "users":
		ro.Users = int(step.Value)
	case "rate":
		ro.Rate = step.Value
	case "cpus":
		cpus, err := cpuset.Last(int(step.Value))
		if err != nil {
			return ro, UsageError{fmt.Errorf("cpus=%g: %w", step.Value, err)}
		}
		ro.Target.CPUs = cpus
	case "warehouses":
		ro.Explicit = append(slices.Clone(ro.Explicit), "warehouses")
	}
	return ro, nil
}

// loadStep loads side s with the step's warehouses, unless it holds them.
func (o *SweepOptions) loadStep(ctx context.Context, s Side, v float64) error {
	t, err := openTarget(ctx, s.Target)
	if err != nil {
		return err
	}
	defer t.close()
	// Prepare reads what is loaded into the workload's parameters.
	notLoaded, err := prepare(ctx, t, o.Workload, false)
	if err == nil && !notLoaded && jsonValue(o.Workload.Params()["warehouses"]) == formatStep(v) {
		return nil // already this step's scale
	}
	f, _ := loadFlag(o.Workload, "warehouses")
	if err := f.Value.Set(formatStep(v)); err != nil {
		return UsageError{fmt.Errorf("--over warehouses=%s: %w", formatStep(v), err)}
	}
	c := o.Common
	c.Target = s.Target
	return load(ctx, t, c, o.LoadWorkers)
}

// loadFlag finds a workload's flag by name.
func loadFlag(w workload.Workload, name string) (*flag.Flag, bool) {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	w.Flags(fs)
	f := fs.Lookup(name)
	return f, f != nil
}

// ParseSteps reads the values of --over PARAM=...: a list (4,8,16) or a
// range of doublings (1..64: 1, 2, 4, ..., 64).
func ParseSteps(s string) (param string, values []float64, err error) {
	param, list, ok := strings.Cut(s, "=")
	if !ok || param == "" {
		return "", nil, usage("--over %q: want PARAM=STEPS, for example users=4,8,16 or users=1..32 (doublings)", s)
	}
	if lo, hi, ok := strings.Cut(list, ".."); ok {
		a, err1 := strconv.ParseFloat(lo, 64)
		b, err2 := strconv.ParseFloat(hi, 64)
		if err1 != nil || err2 != nil || !(a > 0) || b < a || b > 1e9 {
			return "", nil, usage("--over %s: %q is not a range FROM..TO of positive numbers", param, list)
		}
		for v := a; v <= b; v *= 2 {
			values = append(values, v)
		}
		return param, values, nil
	}
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return "", nil, usage("--over %s: %q is not a number", param, f)
		}
		values = append(values, v)
	}
	return param, values, nil
}
