package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/dbparity/dbparity/internal/result"
)

func (c *Comparison) profiles() []Table {
	var ts []Table
	if t := c.loadProfile(); t != nil {
		ts = append(ts, *t)
	}
	var first *result.Profile
	c.each(func(r *result.Run) bool { first = r.IOProfile; return first != nil })
	if first == nil {
		return ts
	}
	t := c.header("io profile per second")
	for _, l := range first.Lines {
		vals := c.medians(profileValue(func(r *result.Run) *result.Profile { return r.IOProfile }, l.Name, false))
		if !empty(vals) {
			c.row(&t, l.Name+" ("+l.Unit+")", vals)
		}
	}
	ts = append(ts, t)
	if b := c.ioByBackend(); b != nil {
		ts = append(ts, *b)
	}
	return ts
}

// ioByBackend puts the engine's IO by backend type and context side by
// side: pg_stat_io's rows on 16+, what pg_stat_bgwriter says before (the
// rows a group's server does not count are n/a).
func (c *Comparison) ioByBackend() *Table {
	type key struct{ backend, context string }
	var keys []key
	seen := map[key]bool{}
	c.each(func(r *result.Run) bool {
		for _, b := range r.IOByBackend {
			if k := (key{b.Backend, b.Context}); !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		return false
	})
	if len(keys) == 0 {
		return nil
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].backend != keys[j].backend {
			return keys[i].backend < keys[j].backend
		}
		return keys[i].context < keys[j].context
	})
	t := c.header("io by backend per second (pg_stat_io on 16+; before, pg_stat_bgwriter's writes and the database's reads)")
	for _, k := range keys {
		name := k.backend
		if k.context != "" {
			name += " (" + k.context + ")"
		}
		for _, m := range []struct {
			label string
			get   func(b result.IOBackend) *float64
		}{
			{"reads", func(b result.IOBackend) *float64 { return b.Reads }},
			{"writes", func(b result.IOBackend) *float64 { return b.Writes }},
			{"extends", func(b result.IOBackend) *float64 { return b.Extends }},
			{"fsyncs", func(b result.IOBackend) *float64 { return b.Fsyncs }},
			{"read ms", func(b result.IOBackend) *float64 { return b.ReadMs }},
			{"write ms", func(b result.IOBackend) *float64 { return b.WriteMs }},
		} {
			vals := c.medians(func(r *result.Run) float64 {
				for _, b := range r.IOByBackend {
					if b.Backend == k.backend && b.Context == k.context {
						if v := m.get(b); v != nil {
							return *v
						}
					}
				}
				return math.NaN()
			})
			if !empty(vals) {
				c.row(&t, name+" "+m.label, vals)
			}
		}
	}
	return &t
}

// overHosts is the scale-out studies' table, when a group drove several
// targets at once: per group, the targets, and in total and per target
// the throughput, p95, the servers' CPU, the physical reads and the data
// devices' read IOPS (per database host); against
// the baseline, the efficiency of adding targets (throughput ratio over
// target ratio). The medians of each group's runs.
func (c *Comparison) overHosts() *Table {
	if !c.each(func(r *result.Run) bool { return len(r.Parts) > 1 }) {
		return nil
	}
	targets := func(r *result.Run) float64 { return float64(max(len(r.Parts), 1)) }
	perTarget := func(f func(r *result.Run) float64) func(r *result.Run) float64 {
		return func(r *result.Run) float64 { return f(r) / targets(r) }
	}
	tps := func(r *result.Run) float64 { return r.Summarize().TPS }
	cores := func(r *result.Run) float64 {
		if !r.OS.HasWindow() || r.OS.Window.ServerCPUCores == nil {
			return math.NaN()
		}
		return *r.OS.Window.ServerCPUCores
	}
	reads := func(r *result.Run) float64 {
		if r.IO == nil || r.IO.PhysicalReads == nil {
			return math.NaN()
		}
		return *r.IO.PhysicalReads
	}
	p95 := func(r *result.Run) float64 {
		if len(r.Transactions) == 0 || r.Transactions[0].Latency.Count == 0 {
			return math.NaN()
		}
		return r.Transactions[0].Latency.P95Ms
	}
	t := c.header("over the targets (several database hosts driven at once: in total and per target)")
	n := c.medians(targets)
	c.row(&t, "targets", n)
	c.row(&t, "database hosts", c.medians(func(r *result.Run) float64 { return float64(r.DatabaseHosts()) }))
	for _, row := range t.Rows[len(t.Rows)-2:] { // counts, not measurements
		for i := range n {
			if v, err := strconv.ParseFloat(row[1+i], 64); err == nil {
				row[1+i] = fmt.Sprintf("%g", v)
			}
		}
	}
	c.row(&t, "transactions/s", c.medians(tps))
	c.row(&t, "transactions/s per target", c.medians(perTarget(tps)))
	c.row(&t, "p95 ms (first transaction type, every target merged)", c.medians(p95))
	c.row(&t, "database servers CPU (cores)", c.medians(cores))
	c.row(&t, "database servers CPU per target (cores)", c.medians(perTarget(cores)))
	c.row(&t, "physical reads/s", c.medians(reads))
	c.row(&t, "physical reads/s per target", c.medians(perTarget(reads)))
	iops := func(r *result.Run) float64 {
		if r.IO == nil || r.IO.ReadIOPS == nil {
			return math.NaN()
		}
		return *r.IO.ReadIOPS
	}
	c.row(&t, "data device read IOPS (each host's devices once)", c.medians(iops))
	c.row(&t, "data device read IOPS per database host", c.medians(func(r *result.Run) float64 { return iops(r) / float64(r.DatabaseHosts()) }))
	total := c.medians(tps)
	eff := []float64{1}
	for i := 1; i < len(total); i++ {
		eff = append(eff, total[i]/total[0]/(n[i]/n[0]))
	}
	row := []string{"efficiency of the targets added (throughput ratio / targets ratio)"}
	for _, e := range eff {
		if math.IsNaN(e) || math.IsInf(e, 0) {
			row = append(row, "n/a")
			continue
		}
		row = append(row, fmt.Sprintf("%.0f%%", 100*e))
	}
	for range eff[1:] {
		row = append(row, "")
	}
	t.Rows = append(t.Rows, row)
	return &t
}

// loadProfile is AWR's load profile side by side: per second and per
// transaction in one table, each group's median; lines no group has, or
// that are zero in every group, are left out.
func (c *Comparison) loadProfile() *Table {
	var first *result.Profile
	c.each(func(r *result.Run) bool { first = r.LoadProfile; return first != nil })
	if first == nil {
		return nil
	}
	t := &Table{Title: "load profile (per second and per transaction, as AWR prints it; medians of each group's runs)", Columns: []string{"figure"}}
	for _, per := range []string{"/s", "/tx"} {
		for _, g := range c.Groups {
			t.Columns = append(t.Columns, g.Label+" "+per)
		}
		for _, col := range ratioColumns(c.Groups) {
			t.Columns = append(t.Columns, col+" "+per)
		}
	}
	get := func(r *result.Run) *result.Profile { return r.LoadProfile }
	for _, l := range first.Lines {
		ps := c.medians(profileValue(get, l.Name, false))
		pt := c.medians(profileValue(get, l.Name, true))
		if empty(ps) && empty(pt) {
			continue
		}
		t.Rows = append(t.Rows, append(append([]string{l.Name + " (" + l.Unit + ")"}, cells(ps)...), cells(pt)...))
	}
	return t
}

// profileValue reads one line of a run's profile, per second or per
// transaction; NaN when the run has no such figure.
func profileValue(get func(*result.Run) *result.Profile, name string, perTx bool) func(*result.Run) float64 {
	return func(r *result.Run) float64 {
		pl := get(r).Line(name)
		if pl == nil {
			return math.NaN()
		}
		v := pl.PerSecond
		if perTx {
			v = pl.PerTx
		}
		if v == nil {
			return math.NaN()
		}
		return *v
	}
}

// empty: no group has the figure, or it is zero in all of them.
func empty(vals []float64) bool {
	for _, v := range vals {
		if !math.IsNaN(v) && v != 0 {
			return false
		}
	}
	return true
}

// waits are the sampled wait events side by side, as AWR's top timed
// events: over all runs of each group, each event's samples, its time
// estimated as samples × the sampling interval, its share of DB time, and
// its class; the events in any group's top ten, most time first.
func (c *Comparison) waits() *Table {
	if !c.each(func(r *result.Run) bool { return r.Waits != nil }) {
		return nil
	}
	type sum struct {
		samples map[waitKey]int64
		active  int64
		secs    float64 // seconds a sample stands for: the sampling interval
	}
	sums := make([]sum, len(c.Groups))
	for i, g := range c.Groups {
		s := sum{samples: map[waitKey]int64{}}
		for _, r := range g.Runs {
			if r.Waits == nil {
				continue
			}
			s.active += r.Waits.ActiveSamples
			s.secs = r.Waits.IntervalMs / 1000
			for _, e := range r.Waits.Events {
				s.samples[waitKey{e.Class, e.Event}] += e.Samples
			}
		}
		sums[i] = s
	}
	weights := make([]map[waitKey]int64, len(sums))
	for i, s := range sums {
		weights[i] = s.samples
	}
	keys := topEvents(weights)
	title := "top wait events (sampled: every run of each group; time = samples × interval; per-wait time histograms n/a: sampling sees waits, not their lengths)"
	// MySQL's and MariaDB's samples are process list states, not waits.
	states := func(r *result.Run) bool { return r.Waits != nil && r.Waits.Source == "information_schema.PROCESSLIST" }
	switch {
	case c.each(states) && !c.each(func(r *result.Run) bool { return r.Waits != nil && !states(r) }):
		title = "top session states (sampled process list states, not wait events: every run of each group; time = samples × interval)"
	case c.each(states):
		title = "top wait events and session states (sampled: every run of each group; time = samples × interval; class state: MySQL's process list states, not wait events)"
	}
	t := &Table{Title: title, Columns: []string{"event"}}
	for _, g := range c.Groups {
		t.Columns = append(t.Columns, g.Label+" samples", g.Label+" time s", g.Label+" % DB time")
	}
	t.Columns = append(t.Columns, "class")
	for _, k := range keys {
		row := []string{k.event}
		for _, s := range sums {
			if s.active == 0 {
				row = append(row, "n/a", "n/a", "n/a")
				continue
			}
			n := s.samples[k]
			row = append(row, fmt.Sprint(n), fmt.Sprintf("%.1f", float64(n)*s.secs), fmt.Sprintf("%.1f", 100*float64(n)/float64(s.active)))
		}
		t.Rows = append(t.Rows, append(row, k.class))
	}
	return t
}

// timedWaits are the wait events the server times itself (MySQL's and
// MariaDB's performance_schema) side by side, in AWR's columns: over all
// runs of each group, the waits, their total time, the average wait and
// the share of all timed wait time, then the class; the events in any
// group's top ten, most time first.
func (c *Comparison) timedWaits() *Table {
	if !c.each(func(r *result.Run) bool { return r.TimedWaits != nil }) {
		return nil
	}
	type sum struct {
		count, secs map[waitKey]float64
		total       float64
		measured    bool
	}
	sums := make([]sum, len(c.Groups))
	for i, g := range c.Groups {
		s := sum{count: map[waitKey]float64{}, secs: map[waitKey]float64{}}
		for _, r := range g.Runs {
			if r.TimedWaits == nil {
				continue
			}
			s.measured = true
			for _, e := range r.TimedWaits.Events {
				k := waitKey{e.Class, e.Event}
				s.count[k] += e.Count
				s.secs[k] += e.Seconds
				s.total += e.Seconds
			}
		}
		sums[i] = s
	}
	weights := make([]map[waitKey]float64, len(sums))
	for i, s := range sums {
		weights[i] = s.secs
	}
	keys := topEvents(weights)
	t := &Table{Title: "timed wait events (the server's own timing, every run of each group; as AWR's top timed events)", Columns: []string{"event"}}
	for _, g := range c.Groups {
		t.Columns = append(t.Columns, g.Label+" waits", g.Label+" time s", g.Label+" avg ms", g.Label+" % wait time")
	}
	t.Columns = append(t.Columns, "class")
	for _, k := range keys {
		row := []string{k.event}
		for _, s := range sums {
			if !s.measured {
				row = append(row, "n/a", "n/a", "n/a", "n/a")
				continue
			}
			n, secs := s.count[k], s.secs[k]
			avg, pct := "-", "0.0"
			if n > 0 {
				avg = fmt.Sprintf("%.3f", 1000*secs/n)
			}
			if s.total > 0 {
				pct = fmt.Sprintf("%.1f", 100*secs/s.total)
			}
			row = append(row, fmt.Sprintf("%.0f", n), fmt.Sprintf("%.2f", secs), avg, pct)
		}
		t.Rows = append(t.Rows, append(row, k.class))
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// waitKey is a wait event.
type waitKey struct{ class, event string }

// topEvents are the events in any group's top ten by weight (samples, or
// seconds), the heaviest over all groups first.
func topEvents[N int64 | float64](weights []map[waitKey]N) []waitKey {
	top := map[waitKey]bool{}
	for _, w := range weights {
		keys := slices.Collect(maps.Keys(w))
		slices.SortFunc(keys, func(a, b waitKey) int { return cmp.Compare(w[b], w[a]) })
		for _, k := range keys[:min(len(keys), 10)] {
			top[k] = true
		}
	}
	keys := slices.Collect(maps.Keys(top))
	total := func(k waitKey) (n N) {
		for _, w := range weights {
			n += w[k]
		}
		return n
	}
	slices.SortFunc(keys, func(a, b waitKey) int {
		if d := cmp.Compare(total(b), total(a)); d != 0 {
			return d
		}
		return cmp.Compare(a.class+a.event, b.class+b.event)
	})
	return keys
}
