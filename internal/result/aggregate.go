package result

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/metrics"
)

// Aggregate combines the runs of one multi-target run (driven at once,
// one part per target) into one run: counts and rates are summed,
// latency histograms merged exactly, the time series summed interval by
// interval (its percentiles are the highest of the parts'), and the parts
// kept whole in Parts. The profiles and waits are the targets' summed
// (each target's stays in its part); the counters and series stay in the
// parts; the driver's CPU is the process's, shared by all
// parts, and is recorded once, here.
func Aggregate(label string, parts []*Run) (*Run, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("aggregate: no parts")
	}
	first := parts[0]
	a := &Run{Schema: Schema, Tool: first.Tool, Label: label, Round: first.Round, Command: first.Command,
		Start: first.Start, End: first.End, MeasureStart: first.MeasureStart, MeasureEnd: first.MeasureEnd,
		Workload: first.Workload, Host: first.Host, Driver: first.Driver,
		Errors: map[string]int64{}, ErrorSamples: map[string]string{}, Phases: map[string]Phase{},
		OS: first.OS, DriverOS: first.DriverOS, Parts: parts}
	if d := first.Disclosure; d != nil {
		a.Disclosure = &Disclosure{Host: d.Host, HostSource: d.HostSource, DriverHost: d.DriverHost}
		// One server's CPU limit is not the servers' together.
		a.Disclosure.Host.Cgroup.Of = ""
	}
	a.Driver.Users, a.Driver.Reconnects = 0, 0
	var dialects, urls, versions []string
	sum := newTally(a)
	warned := map[string][]int{} // warning → the targets that gave it
	var warnings []string
	for i, p := range parts {
		if p.Workload.Name != first.Workload.Name || p.Workload.Version != first.Workload.Version {
			return nil, fmt.Errorf("aggregate: part %d ran %s v%s, part 1 %s v%s", i+1, p.Workload.Name, p.Workload.Version,
				first.Workload.Name, first.Workload.Version)
		}
		if !slices.Contains(dialects, p.Target.Dialect) {
			dialects = append(dialects, p.Target.Dialect)
		}
		if !slices.Contains(versions, p.Target.ServerVersion) {
			versions = append(versions, p.Target.ServerVersion)
		}
		urls = append(urls, p.Target.URL)
		a.Start, a.End = earlier(a.Start, p.Start), later(a.End, p.End)
		a.MeasureStart, a.MeasureEnd = earlier(a.MeasureStart, p.MeasureStart), later(a.MeasureEnd, p.MeasureEnd)
		if p.Partial && !a.Partial {
			a.Partial, a.PartialReason = true, fmt.Sprintf("target %d: %s", i+1, p.PartialReason)
		}
		if p.Failed && !a.Failed {
			a.Failed, a.FailedReason = true, fmt.Sprintf("target %d: %s", i+1, p.FailedReason)
		}
		a.Events = append(a.Events, p.Events...)
		a.Driver.Users += p.Driver.Users
		a.Driver.Reconnects += p.Driver.Reconnects
		a.Driver.CPUUserS = max(a.Driver.CPUUserS, p.Driver.CPUUserS)
		a.Driver.CPUSysS = max(a.Driver.CPUSysS, p.Driver.CPUSysS)
		a.Driver.TotalCPUS = max(a.Driver.TotalCPUS, p.Driver.TotalCPUS)
		// Each target's least round trip: the aggregate's is the least
		// of them, what every round trip cost at least.
		if rt := p.Driver.RoundTripMs; rt > 0 && (a.Driver.RoundTripMs == 0 || rt < a.Driver.RoundTripMs) {
			a.Driver.RoundTripMs = rt
		}
		a.CollectorStatements += p.CollectorStatements
		if err := sum.add(p, fmt.Sprintf("aggregate: target %d", i+1)); err != nil {
			return nil, err
		}
		a.Series = sumSeries(a.Series, p.Series)
		for _, w := range p.Warnings {
			if !slices.Contains(warned[w], i+1) {
				warned[w] = append(warned[w], i+1)
			}
			if len(warned[w]) == 1 {
				warnings = append(warnings, w)
			}
		}
		// The driver's CPU is the process's: kept once, above.
		p.Driver.CPUUserS, p.Driver.CPUSysS, p.Driver.TotalCPUS = 0, 0, 0
	}
	for _, w := range warnings {
		a.Warnings = append(a.Warnings, targets(warned[w], len(parts))+w)
	}
	if err := sum.finish(); err != nil {
		return nil, err
	}
	a.Target = Target{Dialect: strings.Join(dialects, "+"), ServerVersion: strings.Join(versions, ", "),
		URL: fmt.Sprintf("%d targets: %s", len(parts), strings.Join(urls, " "))}
	a.IO = aggregateIO(parts)
	a.LoadProfile = aggregateProfile(parts, func(r *Run) *Profile { return r.LoadProfile })
	a.IOProfile = aggregateProfile(parts, func(r *Run) *Profile { return r.IOProfile })
	a.Waits, a.TimedWaits = aggregateWaits(parts), aggregateTimedWaits(parts)
	a.OS = aggregateOS(parts)
	if a.Disclosure != nil {
		a.Disclosure.Database = aggregateDatabase(parts)
	}
	return a, nil
}

// aggregateOS is the first target's database host, with the database
// servers' CPU the sum of every target's: several servers on one host
// (each part sees the same host) are all the database's, not "other
// processes" competing with it. Targets on hosts of their own add their
// servers' CPU too, over all the hosts' CPUs, with the hosts' busy share
// together; the other host figures stay the first's (each part has its
// own).
func aggregateOS(parts []*Run) *OS {
	first := parts[0].OS
	if !first.HasWindow() || first.Window.ServerCPUCores == nil {
		return first
	}
	os := *first
	w := os.Window
	cores := 0.0
	sameHost := true
	for _, p := range parts {
		if !p.OS.HasWindow() || p.OS.Window.ServerCPUCores == nil {
			return first // a part without its server's CPU: no sum
		}
		cores += *p.OS.Window.ServerCPUCores
		sameHost = sameHost && hostOf(p) == hostOf(parts[0])
	}
	if !sameHost {
		// Hosts of their own: the CPUs are all of theirs, and the busy
		// share theirs together (each host counted once).
		seen := map[string]bool{}
		cpus, busy := 0, 0.0
		for _, p := range parts {
			if h := hostOf(p); !seen[h] {
				seen[h] = true
				cpus += p.OS.Window.NumCPU
				busy += p.OS.Window.CPUBusyPct / 100 * float64(p.OS.Window.NumCPU)
			}
		}
		if cpus > 0 {
			w.NumCPU, w.CPUBusyPct = cpus, 100*busy/float64(cpus)
		}
	}
	w.ServerCPUCores = &cores
	if w.NumCPU > 0 {
		pct := 100 * cores / float64(w.NumCPU)
		w.ServerCPUPct = &pct
	}
	if sameHost {
		w.OtherCPUCores = max(w.OtherCPUCores-(cores-*first.Window.ServerCPUCores), 0)
		if w.NumCPU > 0 {
			w.OtherCPUPct = 100 * w.OtherCPUCores / float64(w.NumCPU)
		}
	}
	os.Window = w
	return &os
}

// hostOf names the database host a part saw ("" when unknown).
func hostOf(r *Run) string {
	if r.Disclosure == nil {
		return ""
	}
	return r.Disclosure.HostSource + ":" + r.Disclosure.Host.Hostname
}

// aggregateDatabase describes the targets' servers as one: a setting or
// version the targets share as it is, one they do not as every value with
// its targets ("off (target 2) | on (targets 1, 3)"), so that "what
// differs" between two multi-target runs covers every target.
func aggregateDatabase(parts []*Run) *Database {
	var dbs []*Database
	for _, p := range parts {
		if p.Disclosure == nil || p.Disclosure.Database == nil {
			return nil
		}
		dbs = append(dbs, p.Disclosure.Database)
	}
	d := *dbs[0]
	d.Settings = map[string]string{}
	keys := map[string]bool{}
	for _, x := range dbs {
		for k := range x.Settings {
			keys[k] = true
		}
	}
	for k := range keys {
		vals := make([]string, len(dbs))
		for i, x := range dbs {
			vals[i] = x.Settings[k]
		}
		d.Settings[k] = joinValues(vals)
	}
	versions := make([]string, len(dbs))
	for i, x := range dbs {
		versions[i] = x.Version
	}
	d.Version = joinValues(versions)
	return &d
}

// joinValues is the one value all targets have, or each distinct value
// with the targets that have it.
func joinValues(vals []string) string {
	var distinct []string
	at := map[string][]int{}
	for i, v := range vals {
		if _, ok := at[v]; !ok {
			distinct = append(distinct, v)
		}
		at[v] = append(at[v], i+1)
	}
	if len(distinct) == 1 {
		return distinct[0]
	}
	var out []string
	for _, v := range distinct {
		out = append(out, fmt.Sprintf("%s (%s)", cmpOrAbsent(v), strings.TrimSuffix(targets(at[v], 0), ": ")))
	}
	return strings.Join(out, " | ")
}

func cmpOrAbsent(v string) string {
	if v == "" {
		return "absent"
	}
	return v
}

// tally sums runs' measured counts and merges their latency histograms
// exactly: what Aggregate (several targets) and Merge (several driver
// processes) both add up.
type tally struct {
	r      *Run
	lat    map[string]*metrics.Histogram
	commit *metrics.Histogram
}

func newTally(r *Run) *tally {
	return &tally{r: r, lat: map[string]*metrics.Histogram{}, commit: metrics.NewHistogram()}
}

// add sums p into the run; what names p in errors.
func (t *tally) add(p *Run, what string) error {
	r := t.r
	r.Statements += p.Statements
	r.RoundTrips += p.RoundTrips
	for k, v := range p.Errors {
		r.Errors[k] += v
	}
	for k, v := range p.ErrorSamples {
		if _, ok := r.ErrorSamples[k]; !ok {
			r.ErrorSamples[k] = v
		}
	}
	for name, ph := range p.Phases {
		rp, ok := r.Phases[name]
		if !ok {
			rp = Phase{Committed: map[string]int64{}, Rollbacks: map[string]int64{}, Errors: map[string]int64{}}
		}
		addCounts(rp.Committed, ph.Committed)
		addCounts(rp.Rollbacks, ph.Rollbacks)
		addCounts(rp.Errors, ph.Errors)
		rp.Statements += ph.Statements
		r.Phases[name] = rp
	}
	for _, x := range p.Transactions {
		h, err := x.Latency.Decode()
		if err != nil {
			return fmt.Errorf("%s, %s: %w", what, x.Name, err)
		}
		k := slices.IndexFunc(r.Transactions, func(y Transaction) bool { return y.Name == x.Name })
		if k < 0 {
			r.Transactions = append(r.Transactions, Transaction{Name: x.Name})
			t.lat[x.Name], k = metrics.NewHistogram(), len(r.Transactions)-1
		}
		t.lat[x.Name].Merge(h)
		rt := &r.Transactions[k]
		rt.Committed, rt.Rollbacks = rt.Committed+x.Committed, rt.Rollbacks+x.Rollbacks
		rt.Errors, rt.Retries = rt.Errors+x.Errors, rt.Retries+x.Retries
	}
	if p.Commit.HDR != "" {
		h, err := p.Commit.Decode()
		if err != nil {
			return fmt.Errorf("%s, commit: %w", what, err)
		}
		t.commit.Merge(h)
	}
	return nil
}

// finish encodes the merged histograms into the run.
func (t *tally) finish() error {
	for k := range t.r.Transactions {
		h, err := NewHistogram(t.lat[t.r.Transactions[k].Name])
		if err != nil {
			return err
		}
		t.r.Transactions[k].Latency = h
	}
	var err error
	t.r.Commit, err = NewHistogram(t.commit)
	return err
}

// aggregateIO sums the parts' IO units. Device figures are summed over
// distinct devices: targets on one host share its counters.
func aggregateIO(parts []*Run) *IOUnits {
	a := &IOUnits{}
	devices := map[string]bool{}
	seen := false
	for _, p := range parts {
		u := p.IO
		if u == nil {
			continue
		}
		seen = true
		a.LogicalReads = add(a.LogicalReads, u.LogicalReads)
		a.PhysicalReads = add(a.PhysicalReads, u.PhysicalReads)
		a.PhysicalWrites = add(a.PhysicalWrites, u.PhysicalWrites)
		a.EngineReadMB = add(a.EngineReadMB, u.EngineReadMB)
		a.RedoBytes = add(a.RedoBytes, u.RedoBytes)
		a.DataBytes += u.DataBytes
		a.BufferCacheBytes += u.BufferCacheBytes
		a.MemoryBytes = u.MemoryBytes
		dev := ""
		if p.OS != nil {
			dev = databaseHost(p) + ":" + p.OS.DataDevice
		}
		if u.ReadIOPS != nil && !devices[dev] {
			devices[dev] = true
			a.ReadIOPS, a.WriteIOPS = add(a.ReadIOPS, u.ReadIOPS), add(a.WriteIOPS, u.WriteIOPS)
			a.ReadMB, a.WriteMB = add(a.ReadMB, u.ReadMB), add(a.WriteMB, u.WriteMB)
		}
	}
	if !seen {
		return nil
	}
	if a.LogicalReads != nil && a.PhysicalReads != nil && *a.LogicalReads > 0 {
		a.CacheHitRatio = ptr(1 - *a.PhysicalReads / *a.LogicalReads)
	}
	if a.ReadIOPS != nil && a.PhysicalReads != nil && *a.PhysicalReads > 0 {
		a.DeviceShare = ptr(*a.ReadIOPS / *a.PhysicalReads)
	}
	a.ServedFrom, a.Statement = a.served()
	return a
}

// sumSeries adds b to a interval by interval; the parts started together,
// so their intervals line up. Percentiles are the highest of the parts'.
func sumSeries(a, b []metrics.Interval) []metrics.Interval {
	if a == nil {
		return append([]metrics.Interval(nil), b...)
	}
	for i := range min(len(a), len(b)) {
		x, y := &a[i], b[i]
		x.Commits, x.Rollbacks, x.Errors, x.Retries = x.Commits+y.Commits, x.Rollbacks+y.Rollbacks, x.Errors+y.Errors, x.Retries+y.Retries
		x.P50Micros, x.P95Micros, x.P99Micros = max(x.P50Micros, y.P50Micros), max(x.P95Micros, y.P95Micros), max(x.P99Micros, y.P99Micros)
		x.ActiveSess += y.ActiveSess
	}
	return a[:min(len(a), len(b))]
}

func addCounts(dst, src map[string]int64) {
	for k, v := range src {
		dst[k] += v
	}
}

func add(a, b *float64) *float64 {
	switch {
	case b == nil:
		return a
	case a == nil:
		return ptr(*b)
	}
	return ptr(*a + *b)
}

// targets names the targets a warning came from.
func targets(ids []int, of int) string {
	if len(ids) == of && of > 1 {
		return "every target: "
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	if len(ids) == 1 {
		return "target " + s[0] + ": "
	}
	return "targets " + strings.Join(s, ", ") + ": "
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
