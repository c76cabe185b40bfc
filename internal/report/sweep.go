package report

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/dbparity/dbparity/internal/compare"
)

// sweepTables are a sweep's sections: throughput per step with each
// group's ratio to the baseline, scaling, the USL fits, and throughput at
// equal CPU utilisation.
func (c *Comparison) sweepTables() []Table {
	s := c.Sweep
	if s == nil {
		return nil
	}
	base := s.Groups[0]
	f := func(v float64, format string) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "n/a"
		}
		return fmt.Sprintf(format, v)
	}
	values := sweepValues(s)
	steps := Table{Title: fmt.Sprintf("sweep over %s: throughput at each step (medians of the runs; CPU is %s)", s.Param, cmpOr(s.CPUBasis, "the database server's")),
		Columns: []string{s.Param}}
	cpus := false
	for _, g := range s.Groups {
		for _, st := range g.Steps {
			cpus = cpus || st.ServerCPUs != ""
		}
	}
	for i, g := range s.Groups {
		steps.Columns = append(steps.Columns, g.Label+" tps", g.Label+" runs", g.Label+" CPU %")
		if s.Param == "rate" {
			steps.Columns = append(steps.Columns, g.Label+" p95 ms")
		}
		if cpus {
			steps.Columns = append(steps.Columns, g.Label+" server CPUs")
		}
		if i > 0 {
			steps.Columns = append(steps.Columns, g.Label+"/"+base.Label)
		}
	}
	for _, v := range values {
		row := []string{stepValue(v)}
		for i, g := range s.Groups {
			st, ok := stepAt(g, v)
			if !ok {
				row = append(row, "-", "0", "-")
				if s.Param == "rate" {
					row = append(row, "-")
				}
				if cpus {
					row = append(row, "-")
				}
				if i > 0 {
					row = append(row, "")
				}
				continue
			}
			row = append(row, f(st.TPS, "%.1f"), fmt.Sprint(st.Runs), f(st.CPU, "%.1f"))
			if s.Param == "rate" {
				row = append(row, f(st.P95Ms, "%.2f"))
			}
			if cpus {
				row = append(row, cmpOr(st.ServerCPUs, "all"))
			}
			if i > 0 {
				row = append(row, stepRatio(st.VsBaseline))
			}
		}
		steps.Rows = append(steps.Rows, row)
	}
	ts := []Table{steps}

	if s.Scaling {
		sc := Table{Title: fmt.Sprintf("scaling over %s, normalised to the smallest step (gain per doubling of %s; efficiency = normalised / ideal)", s.Param, s.Param),
			Columns: []string{s.Param}}
		for _, g := range s.Groups {
			sc.Columns = append(sc.Columns, g.Label+" normalised", g.Label+" gain per doubling", g.Label+" efficiency")
		}
		for _, v := range values {
			row := []string{stepValue(v)}
			for _, g := range s.Groups {
				st, ok := stepAt(g, v)
				if !ok {
					row = append(row, "-", "-", "-")
					continue
				}
				row = append(row, f(st.Normalised, "%.2fx"), f(st.Gain, "%.2fx"), f(100*st.Efficiency, "%.0f%%"))
			}
			sc.Rows = append(sc.Rows, row)
		}
		row := []string{"first to last"}
		for _, g := range s.Groups {
			n := len(g.Steps)
			row = append(row, f(g.Steps[n-1].Normalised, "%.2fx"), f(g.GainPerDoubling, "%.2fx"), f(100*g.Steps[n-1].Efficiency, "%.0f%%"))
		}
		sc.Rows = append(sc.Rows, row)
		ts = append(ts, sc)
	}

	usl := Table{Title: "Universal Scalability Law: X(N) = λN / (1 + σ(N−1) + κN(N−1)), fitted to every run",
		Columns: []string{"group", "λ (tps of one)", "σ contention", "κ coherency", "knee N*", "peak tps", "R²", "reading"}}
	for _, g := range s.Groups {
		if g.USL == nil {
			usl.Rows = append(usl.Rows, []string{g.Label, "", "", "", "", "", "", g.USLNote})
			continue
		}
		u := g.USL
		usl.Rows = append(usl.Rows, []string{g.Label, f(u.Lambda, "%.1f"), f(u.Sigma, "%.4f"), f(u.Kappa, "%.6f"),
			f(u.Knee, "%.1f"), f(u.Peak, "%.1f"), f(u.R2, "%.4f"), u.Note})
	}
	if s.Param == "users" || s.Param == "cpus" {
		ts = append(ts, usl)
	}

	eq := Table{Title: "throughput at equal CPU utilisation", Columns: []string{"group", "tps", "CPU ms per transaction", "against " + base.Label}}
	if math.IsNaN(s.EqualAt) {
		eq.Rows = append(eq.Rows, []string{s.EqualNote, "", "", ""})
	} else {
		eq.Title = fmt.Sprintf("throughput at equal CPU utilisation: %.1f%% of %s, interpolated between steps (the studies compare platforms there)", s.EqualAt, s.CPUBasis)
		for _, e := range s.EqualCPU {
			vs := ""
			if !math.IsNaN(e.Ratio) {
				vs = fmt.Sprintf("%.1f%%", 100*e.Ratio)
				if !math.IsNaN(e.Lo) {
					vs += fmt.Sprintf(" (95%% CI %.1f–%.1f%%)", 100*e.Lo, 100*e.Hi)
				} else {
					vs += " (one run a step: --repeat 3 gives an interval)"
				}
			}
			eq.Rows = append(eq.Rows, []string{e.Label, f(e.TPS, "%.1f"), f(e.CostMs, "%.3f"), vs})
		}
	}
	if s.Param != "cpus" {
		ts = append(ts, eq)
	}
	if len(s.AtEqual) > 0 {
		at := Table{Title: fmt.Sprintf("at equal CPU (%.1f%%): the database hosts and load profiles, interpolated between the steps around it as throughput is", s.EqualAt),
			Columns: []string{"figure"}}
		for i, g := range s.Groups {
			at.Columns = append(at.Columns, g.Label)
			if i > 0 {
				at.Columns = append(at.Columns, g.Label+"/"+base.Label)
			}
		}
		for _, e := range s.AtEqual {
			row := []string{e.Name + " " + e.Unit}
			shown := false
			for i, v := range e.Values {
				row = append(row, f(v, "%.2f"))
				shown = shown || !math.IsNaN(v)
				if i > 0 {
					ratio := math.NaN()
					if e.Values[0] > 0 {
						ratio = v / e.Values[0]
					}
					row = append(row, f(ratio, "%.2fx"))
				}
			}
			if shown {
				at.Rows = append(at.Rows, row)
			}
		}
		if len(at.Rows) > 0 {
			ts = append(ts, at)
		}
	}
	return ts
}

// stepRatio is a step's throughput ratio against the baseline, with its
// interval when the runs give one.
func stepRatio(v *compare.Verdict) string {
	switch {
	case v == nil || math.IsNaN(v.Ratio):
		return ""
	case math.IsNaN(v.Lo):
		return fmt.Sprintf("%.2fx (no interval)", v.Ratio)
	case !v.Different:
		return fmt.Sprintf("~%.2fx [%.2f, %.2f]", v.Ratio, v.Lo, v.Hi)
	}
	return fmt.Sprintf("%.2fx [%.2f, %.2f]", v.Ratio, v.Lo, v.Hi)
}

// sweepValues are the steps any group ran, ascending.
func sweepValues(s *compare.Sweep) []float64 {
	seen := map[float64]bool{}
	var out []float64
	for _, g := range s.Groups {
		for _, st := range g.Steps {
			if !seen[st.Value] {
				seen[st.Value] = true
				out = append(out, st.Value)
			}
		}
	}
	slices.Sort(out)
	return out
}

func stepAt(g compare.SweepGroup, v float64) (compare.Step, bool) {
	for _, st := range g.Steps {
		if st.Value == v {
			return st, true
		}
	}
	return compare.Step{}, false
}

// stepValue writes a step as the command line gave it: 4, 2.5.
func stepValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func cmpOr(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

// finite is v for encoding/json with every NaN or infinite number as
// null (JSON has neither): structs become objects by their json tags,
// values that marshal themselves (a verdict) are kept.
func finite(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if v.Type().Implements(reflect.TypeFor[json.Marshaler]()) && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		return v.Interface()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return finite(v.Elem())
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return v.Interface()
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = finite(v.Index(i))
		}
		return out
	case reflect.Struct:
		out := map[string]any{}
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if strings.Contains(opts, "omitempty") && v.Field(i).IsZero() {
				continue
			}
			out[name] = finite(v.Field(i))
		}
		return out
	}
	return v.Interface()
}
