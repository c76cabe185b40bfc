package result

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/metrics"
)

// Part is what a result of one part of a run split over several driver
// processes (run --part) says of the split: which share of the sessions
// it ran and how its start was agreed with the other parts.
type Part struct {
	Index int    `json:"index"` // from 0
	Of    int    `json:"of"`
	RunID string `json:"run_id"`
	// Users are the whole run's sessions; Sessions the global ids of
	// this part's.
	Users    int    `json:"users"`
	Sessions []int  `json:"sessions"`
	Host     string `json:"host"`
	// Sync is "barrier" (the parts registered in the target database and
	// started at a time read there) or "start-at" (a time given to all).
	Sync    string    `json:"sync"`
	StartAt time.Time `json:"start_at"` // this host's clock
	// ClockOffsetMs is this host's clock minus the database server's, as
	// measured through the barrier, ClockErrMs its bound.
	ClockOffsetMs float64 `json:"clock_offset_ms,omitempty"`
	ClockErrMs    float64 `json:"clock_err_ms,omitempty"`
}

// Merged says how a run was merged from its parts (dbparity merge).
type Merged struct {
	RunID string `json:"run_id"`
	// SkewMs is how far apart the parts' measured windows started (or
	// ended, whichever is more), on one clock: the database's when the
	// parts measured their offsets to it.
	SkewMs float64      `json:"skew_ms"`
	Parts  []PartDriver `json:"parts"`
	// Busiest is the index of the part whose driver used the largest share
	// of its CPUs: the proof that no driver was the bottleneck.
	Busiest int `json:"busiest"`
	// CollectorsFrom is the part whose collectors the run's database and
	// OS sections come from (-1: none ran).
	CollectorsFrom int `json:"collectors_from"`
	// Forced lists what merge would have refused without --force.
	Forced []string `json:"forced,omitempty"`
}

// PartDriver is one part's driver: its host and what driving cost it.
type PartDriver struct {
	Index        int       `json:"index"`
	Host         string    `json:"host"`
	File         string    `json:"file"`
	Users        int       `json:"users"`
	Committed    int64     `json:"committed"`
	MeasureStart time.Time `json:"measure_start"`
	MeasureEnd   time.Time `json:"measure_end"`
	// Driver is the part's driver; a part recovered from its journal
	// (Recovered) has none of its CPU, share or scheduler figures: they
	// are absent, not zero.
	Driver    Driver `json:"driver"`
	Recovered bool   `json:"recovered,omitempty"`
}

// DriverKeyPrefix begins the keys of the figures a load profile takes from
// the driver process's own counts instead of the server's counters
// (counters.ExtraClientStmt, "statements the driver sent", and
// mystat.ExtraClientTx). In a run split over driver processes the
// server's counters count every part's work, the same in each part; a
// driver's counts are its own part's only: merge recomputes the lines
// that take them from the merged run's counts.
const DriverKeyPrefix = "client."

// The driver-side keys merge knows how to recompute.
const (
	driverStatementsKey   = DriverKeyPrefix + "statements"
	driverTransactionsKey = DriverKeyPrefix + "transactions"
)

// MaxSkew is how far apart the parts' windows may be for merge to accept
// them without --force.
const MaxSkew = 100 * time.Millisecond

// Merge combines the results of the parts of one run into one result, as
// if one process had run all the sessions: counts summed, latency
// histograms merged exactly, the per-second series aligned by wall-clock
// second and summed (their percentiles are the highest of the parts'),
// the database and OS sections taken from the part whose collectors ran
// (they count every part's work: the server's counters), except what
// those collectors took from their own driver, which is recomputed over
// every part (mergeCollected). Each part's driver is kept in
// Merged.Parts; the run's driver CPU is the sum of the parts' and its
// share the busiest part's. A figure a part does not have (one recovered
// from its journal has no driver CPU, scheduler latencies or statement
// counts) leaves the merged run's absent, never a sum of the others'.
// Parts of different runs, a missing or repeated part, sessions run twice
// or windows more than MaxSkew apart are refused unless force, which
// merges them and says so (Merged.Forced, and a warning).
func Merge(parts []*Run, files []string, force bool) (*Run, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("merge: no result files given")
	}
	problems, err := checkParts(parts, files)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 && !force {
		return nil, fmt.Errorf("merge: %s (pass --force to merge them all the same, flagged)", problems[0])
	}
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return parts[order[a]].Part.Index < parts[order[b]].Part.Index })
	first := parts[order[0]]
	// Every time on part 0's clock: another host's times moved by the
	// difference of the two hosts' offsets to the database.
	shift := func(p *Run, t time.Time) time.Time {
		return t.Add(-msDuration(p.Part.ClockOffsetMs - first.Part.ClockOffsetMs))
	}
	m := &Merged{RunID: first.Part.RunID, Busiest: -1, CollectorsFrom: -1, Forced: problems}
	r := &Run{Schema: Schema, Tool: first.Tool, Label: first.Label, Round: first.Round, Step: first.Step,
		Command: first.Command, Workload: first.Workload, Target: first.Target, Host: first.Host,
		Errors: map[string]int64{}, ErrorSamples: map[string]string{}, Phases: map[string]Phase{}, Merged: m}
	r.Driver = Driver{Users: 0, WarmupS: first.Driver.WarmupS, DurationS: first.Driver.DurationS, Seed: first.Driver.Seed,
		Think: first.Driver.Think}
	rate, err := mergeRates(parts)
	if err != nil {
		return nil, err
	}
	r.Driver.Rate = rate
	var starts, ends []time.Time
	sum := newTally(r)
	var gapUs, done float64
	for _, i := range order {
		p := parts[i]
		ms, me := shift(p, p.MeasureStart), shift(p, p.MeasureEnd)
		starts, ends = append(starts, ms), append(ends, me)
		if r.Start.IsZero() || shift(p, p.Start).Before(r.Start) {
			r.Start = shift(p, p.Start)
		}
		if e := shift(p, p.End); e.After(r.End) {
			r.End = e
		}
		var committed int64
		for _, t := range p.Transactions {
			committed += t.Committed
		}
		m.Parts = append(m.Parts, PartDriver{Index: p.Part.Index, Host: p.Part.Host, File: files[i], Users: p.Driver.Users,
			Committed: committed, MeasureStart: p.MeasureStart, MeasureEnd: p.MeasureEnd, Driver: p.Driver, Recovered: p.Recovered})
		d := &r.Driver
		d.Users += p.Driver.Users
		d.Reconnects += p.Driver.Reconnects
		d.CPUUserS += p.Driver.CPUUserS
		d.CPUSysS += p.Driver.CPUSysS
		d.TotalCPUS += p.Driver.TotalCPUS
		d.SchedP99Ms, d.SchedMaxMs = max(d.SchedP99Ms, p.Driver.SchedP99Ms), max(d.SchedMaxMs, p.Driver.SchedMaxMs)
		d.WakeP99Ms, d.WakeMaxMs = max(d.WakeP99Ms, p.Driver.WakeP99Ms), max(d.WakeMaxMs, p.Driver.WakeMaxMs)
		if _, measured := p.DriverCPU(); measured && (m.Busiest < 0 || p.Driver.CPUShare > d.CPUShare) {
			m.Busiest, d.CPUShare, d.CPUs = p.Part.Index, p.Driver.CPUShare, p.Driver.CPUs
		}
		if p.Driver.Bound && !d.Bound {
			d.Bound, d.BoundReason = true, fmt.Sprintf("part %d (%s): %s", p.Part.Index, p.Part.Host, p.Driver.BoundReason)
		}
		tx := float64(committed)
		for _, t := range p.Transactions {
			tx += float64(t.Rollbacks + t.Errors)
		}
		gapUs, done = gapUs+p.Driver.GapUsPerTx*tx, done+tx
		if p.Partial {
			why := fmt.Sprintf("part %d: %s", p.Part.Index, p.PartialReason)
			if r.Partial {
				why = r.PartialReason + "; " + why
			}
			r.Partial, r.PartialReason = true, why
		}
		if p.Failed && !r.Failed {
			r.Failed, r.FailedReason = true, fmt.Sprintf("part %d: %s", p.Part.Index, p.FailedReason)
		}
		r.Recovered = r.Recovered || p.Recovered
		for _, e := range p.Events {
			e.Cause = fmt.Sprintf("part %d: %s", p.Part.Index, e.Cause)
			e.Start = shift(p, e.Start)
			if !e.End.IsZero() {
				e.End = shift(p, e.End)
			}
			r.Events = append(r.Events, e)
		}
		if err := sum.add(p, "merge: "+files[i]); err != nil {
			return nil, err
		}
		if m.CollectorsFrom < 0 && collected(p) {
			m.CollectorsFrom = p.Part.Index
			takeCollectors(r, p)
		} else if collected(p) {
			r.Warnings = append(r.Warnings, fmt.Sprintf("collectors ran on parts %d and %d: the database's figures are part %d's",
				m.CollectorsFrom, p.Part.Index, m.CollectorsFrom))
		}
		for _, w := range p.Warnings {
			w = fmt.Sprintf("part %d: %s", p.Part.Index, w)
			if !slices.Contains(r.Warnings, w) {
				r.Warnings = append(r.Warnings, w)
			}
		}
	}
	if done > 0 {
		r.Driver.GapUsPerTx = gapUs / done
	}
	if err := sum.finish(); err != nil {
		return nil, err
	}
	unmeasured(r, parts, order)
	// The window: the parts' mean start and end, so that rates over it
	// are the parts' summed (the windows differ by the skew at most).
	r.MeasureStart, r.MeasureEnd = meanTime(starts), meanTime(ends)
	m.SkewMs = float64(max(spread(starts), spread(wholeEnds(parts, ends, order)))) / 1e6
	for k, i := range order {
		if p := parts[i]; p.Partial {
			if d := slices.MaxFunc(ends, func(a, b time.Time) int { return a.Compare(b) }).Sub(ends[k]); d > MaxSkew {
				r.Warnings = append(r.Warnings, fmt.Sprintf("part %d's window ended %s before the last part's (%s): the merged series hold the other parts only after it",
					p.Part.Index, d.Round(100*time.Millisecond), p.PartialReason))
			}
		}
	}
	r.Series = alignSeries(parts, order, shift, r.Start)
	r.Driver.SeriesStep = first.Driver.SeriesStep
	if m.CollectorsFrom >= 0 {
		mergeCollected(r, parts, order)
	} else if first.Disclosure != nil {
		r.Disclosure = first.Disclosure // the platform, which every part describes
	}
	for _, f := range problems {
		r.Warnings = append(r.Warnings, "merged with --force: "+f)
	}
	return r, nil
}

// mergeRates combines the parts' open-loop schedules (each part kept its
// share of the rate): rates and backlogs summed, queue times merged, the
// lag the worst part's; nil when the run was closed-loop.
func mergeRates(parts []*Run) (*Rate, error) {
	var out *Rate
	queue := metrics.NewHistogram()
	users, window := 0, 0.0
	for _, p := range parts {
		pr := p.Driver.Rate
		if pr == nil {
			continue
		}
		users, window = users+p.Driver.Users, max(window, p.MeasureEnd.Sub(p.MeasureStart).Seconds())
		if out == nil {
			out = &Rate{Arrival: pr.Arrival}
		}
		out.TargetTPS += pr.TargetTPS
		out.AchievedTPS += pr.AchievedTPS
		out.WarmupBacklog += pr.WarmupBacklog
		out.LagEndS, out.MaxLagS = max(out.LagEndS, pr.LagEndS), max(out.MaxLagS, pr.MaxLagS)
		h, err := pr.Queue.Decode()
		if err != nil {
			return nil, fmt.Errorf("merge: part %d, queue: %w", p.Part.Index, err)
		}
		queue.Merge(h)
	}
	if out == nil {
		return nil, nil
	}
	q, err := NewHistogram(queue)
	if err != nil {
		return nil, err
	}
	out.Queue = q
	out.Judge(users, window)
	return out, nil
}

// checkParts returns what merge refuses without --force, and an error
// for files that are no parts at all.
func checkParts(parts []*Run, files []string) ([]string, error) {
	var problems []string
	for i, p := range parts {
		switch {
		case p.Part == nil && p.Merged != nil:
			return nil, fmt.Errorf("merge: %s is already a merged run", files[i])
		case p.Part == nil:
			return nil, fmt.Errorf("merge: %s is not a part of a run (made without run --part)", files[i])
		}
	}
	first := parts[0]
	byIndex := map[int]string{}
	owner := map[int]int{} // session → part
	var starts, ends []time.Time
	for i, p := range parts {
		pp := p.Part
		switch {
		case pp.RunID != first.Part.RunID:
			problems = append(problems, fmt.Sprintf("%s is part of run %q, %s of run %q", files[i], pp.RunID, files[0], first.Part.RunID))
		case pp.Of != first.Part.Of || pp.Users != first.Part.Users:
			problems = append(problems, fmt.Sprintf("%s is part %d of %d (%d sessions in all), %s part %d of %d (%d sessions)",
				files[i], pp.Index, pp.Of, pp.Users, files[0], first.Part.Index, first.Part.Of, first.Part.Users))
		case p.Workload.Name != first.Workload.Name || p.Workload.Version != first.Workload.Version ||
			fmt.Sprint(p.Workload.Params) != fmt.Sprint(first.Workload.Params) || p.Driver.Seed != first.Driver.Seed ||
			p.Target.URL != first.Target.URL:
			problems = append(problems, fmt.Sprintf("%s ran another workload, seed or target than %s", files[i], files[0]))
		}
		if f, ok := byIndex[pp.Index]; ok {
			problems = append(problems, fmt.Sprintf("part %d is given twice (%s and %s)", pp.Index, f, files[i]))
		}
		byIndex[pp.Index] = files[i]
		for _, g := range pp.Sessions {
			if o, ok := owner[g]; ok && o != i {
				problems = append(problems, fmt.Sprintf("session %d ran in %s and in %s", g, files[o], files[i]))
				break
			}
			owner[g] = i
		}
		off := msDuration(pp.ClockOffsetMs)
		starts, ends = append(starts, p.MeasureStart.Add(-off)), append(ends, p.MeasureEnd.Add(-off))
	}
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	ends = wholeEnds(parts, ends, order)
	var missing []string
	for k := range first.Part.Of {
		if _, ok := byIndex[k]; !ok {
			missing = append(missing, fmt.Sprint(k))
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("part %s of %d missing", strings.Join(missing, ", "), first.Part.Of))
	}
	if s := max(spread(starts), spread(ends)); s > MaxSkew {
		problems = append(problems, fmt.Sprintf("the parts' measured windows are %s apart (more than %s): they did not run at once",
			s.Round(time.Millisecond), MaxSkew))
	}
	return problems, nil
}

// wholeEnds are the ends of the windows of the parts that are not partial
// (ends[k] is that of parts[order[k]]): a partial part's window ended early,
// interrupted, aborted or cut by a crash (recovered from its journal),
// which the merged run says (partial, the part's reason) instead of
// refusing it.
func wholeEnds(parts []*Run, ends []time.Time, order []int) []time.Time {
	var out []time.Time
	for k, i := range order {
		if !parts[i].Partial {
			out = append(out, ends[k])
		}
	}
	return out
}

// collected tells whether p's collectors ran. Every result describes its
// platform (Disclosure), collectors on or off: only the database's
// description there says they ran.
func collected(p *Run) bool {
	return p.LoadProfile != nil || p.DBSeries != nil || p.OS != nil || p.Waits != nil || p.DBCounters != nil ||
		p.Disclosure != nil && p.Disclosure.Database != nil
}

// takeCollectors copies what p's collectors saw into r.
func takeCollectors(r, p *Run) {
	r.Disclosure, r.LoadProfile, r.IOProfile, r.Waits, r.TimedWaits = p.Disclosure, p.LoadProfile, p.IOProfile, p.Waits, p.TimedWaits
	r.DBSeries, r.DBCounters, r.OS, r.DriverOS, r.IO = p.DBSeries, p.DBCounters, p.OS, p.DriverOS, p.IO
	r.IOByBackend, r.CollectorStatements, r.Host = p.IOByBackend, p.CollectorStatements, p.Host
}

// unmeasured leaves out of the merged run the driver's figures that a part
// does not have. A part recovered from its journal has no CPU readings,
// no scheduler or timer latencies and no statement, round trip or
// reconnect counts after its last checkpoint: the run's sums, maxima and
// means over the parts are then not known either, and are absent (left
// out of the file, n/a in reports), never the other parts' alone. The
// measured parts' own figures stay in Merged.Parts; a measured part that
// was driver-bound still marks the run.
func unmeasured(r *Run, parts []*Run, order []int) {
	var missing []string
	for _, i := range order {
		if p := parts[i]; p.Recovered {
			missing = append(missing, fmt.Sprint(p.Part.Index))
		}
	}
	if len(missing) == 0 {
		return
	}
	d := &r.Driver
	d.CPUUserS, d.CPUSysS, d.TotalCPUS, d.CPUs, d.CPUShare = 0, 0, 0, 0, 0
	d.SchedP99Ms, d.SchedMaxMs, d.WakeP99Ms, d.WakeMaxMs, d.GapUsPerTx = 0, 0, 0, 0, 0
	d.Reconnects, r.Statements, r.RoundTrips = 0, 0, 0
	for k, ph := range r.Phases {
		ph.Statements = 0
		r.Phases[k] = ph
	}
	r.Warnings = append(r.Warnings, fmt.Sprintf("part %s was recovered from its journal, which holds no driver CPU, scheduler latencies or statement counts: "+
		"the merged run's are n/a (each measured part's are in merged.parts)", strings.Join(missing, ", ")))
}

// mergeCollected makes what the collectors' part saw the merged run's.
// The server's counters (the load and IO profiles' lines, the waits, the
// database series) count every part's work: they stand as they are. What
// those collectors took from their own driver process is that part's
// share only, and is recomputed over every part: the load profile's
// driver-side lines (mergedProfile), dbparity's CPU on the database host
// (the other parts' drivers there added), the driver host's OS section
// (kept only when every part ran on that host). SQLite counts in each
// driver process: the engine's counters and series of the collectors'
// part are its own only, and are left out.
func mergeCollected(r *Run, parts []*Run, order []int) {
	if len(parts) < 2 {
		return
	}
	var from *Run
	for _, i := range order {
		if parts[i].Part.Index == r.Merged.CollectorsFrom {
			from = parts[i]
			break
		}
	}
	sqlite := r.Target.Dialect == "sqlite"
	if r.LoadProfile != nil {
		r.LoadProfile = mergedProfile(r.LoadProfile, r, parts, sqlite)
	}
	if sqlite && (r.DBSeries != nil || r.DBCounters != nil) {
		r.DBSeries, r.DBCounters = nil, nil
		r.Warnings = append(r.Warnings, fmt.Sprintf("SQLite counts in each driver process and only part %d's collectors ran: "+
			"the engine's counters and their series, its part's only, are left out of the merged run", from.Part.Index))
	}
	if r.IO != nil {
		r.IO = r.ComputeIOUnits()
	}
	var same []*Run
	everyPart := true
	for _, i := range order {
		p := parts[i]
		switch {
		case p == from:
		case p.Part.Host == from.Part.Host:
			same = append(same, p)
		default:
			everyPart = false
		}
	}
	if r.OS != nil && (r.OS.Source == "" || r.OS.Source == "local") {
		r.OS = withDrivers(r, r.OS, same, "database host")
	}
	if r.DriverOS != nil {
		if everyPart {
			r.DriverOS = withDrivers(r, r.DriverOS, same, "driver host")
		} else {
			r.DriverOS = nil
			r.Warnings = append(r.Warnings, fmt.Sprintf("the parts ran on several driver hosts and only part %d's collectors read its own (%s): "+
				"the driver host's OS section is left out (each part's driver CPU is in merged.parts)", from.Part.Index, from.Part.Host))
		}
	}
}

// withDrivers adds the drivers of the parts in same, which ran on the
// host o describes beside the collectors' part, to o's window: their CPU
// is dbparity's, not another process's. A part without its CPU (recovered
// from its journal) stays in the other processes' share, which a warning
// says.
func withDrivers(r *Run, o *OS, same []*Run, what string) *OS {
	if !o.HasWindow() || len(same) == 0 {
		return o
	}
	out := *o
	w := &out.Window
	var add float64
	var unknown []string
	for _, p := range same {
		cpu, ok := p.DriverCPU()
		secs := p.MeasureEnd.Sub(p.MeasureStart).Seconds()
		if !ok || secs <= 0 {
			unknown = append(unknown, fmt.Sprint(p.Part.Index))
			continue
		}
		add += cpu / secs
	}
	w.SelfCPUCores += add
	w.OtherCPUCores = max(w.OtherCPUCores-add, 0)
	if w.NumCPU > 0 {
		w.SelfCPUPct, w.OtherCPUPct = 100*w.SelfCPUCores/float64(w.NumCPU), 100*w.OtherCPUCores/float64(w.NumCPU)
	}
	if len(unknown) > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("part %s ran on the %s and its driver's CPU is not known (recovered from its journal): "+
			"the %s's CPU used by dbparity leaves it out, and counts it with the other processes'", strings.Join(unknown, ", "), what, what))
	}
	return &out
}

// mergedProfile is the collectors' load profile lp as the merged run r's.
// Its lines from the server's counters count every part's work and stand;
// a line from the driver's own counts (a key beginning with
// DriverKeyPrefix: the statements or transactions the driver sent) is
// recomputed from the merged run's counts, n/a when a part does not have
// them; with SQLite every line is the driver process's (the engine runs
// in it): its statements, transactions, rollbacks and CPU are the merged
// run's, its cache and page counts n/a (the other parts' collectors did
// not run). Per-second figures are over the profile's window, per
// transaction over its divisor, the merged run's transactions when the
// profile took the driver's.
func mergedProfile(lp *Profile, r *Run, parts []*Run, sqlite bool) *Profile {
	s := r.Summarize()
	tx, rollbacks := float64(s.Commits+s.Rollbacks), float64(s.Rollbacks)
	var stmts, cpu *float64
	recovered := slices.ContainsFunc(parts, func(p *Run) bool { return p.Recovered })
	if !recovered {
		stmts = ptr(float64(r.Statements))
		if c, ok := r.DriverCPU(); ok {
			cpu = &c
		}
	}
	value := func(l ProfileLine) (*float64, string) {
		why := "a part recovered from its journal has no statement counts"
		if sqlite {
			switch l.Name {
			case "DB CPU":
				return cpu, "a part recovered from its journal has no CPU readings"
			case "Executes":
				return stmts, why
			case "Transactions":
				return &tx, ""
			case "Rollbacks":
				return &rollbacks, ""
			}
			return nil, fmt.Sprintf("SQLite counts in each driver process and only part %d's collectors ran: the other parts' are not known", r.Merged.CollectorsFrom)
		}
		switch l.Source {
		case driverStatementsKey:
			return stmts, why
		case driverTransactionsKey:
			return &tx, ""
		}
		return nil, fmt.Sprintf("%s: a driver's own count, of its part only, which merge cannot sum", l.Source)
	}
	out := *lp
	out.Lines = slices.Clone(lp.Lines)
	if l := lp.Line("Transactions"); l != nil && l.Total != nil && (sqlite || driverSide(l.Source)) {
		out.Transactions = tx // the divisor was the driver's transactions
	}
	var summed, lost []string
	for i := range out.Lines {
		l := &out.Lines[i]
		if l.Total == nil {
			continue
		}
		if sqlite || driverSide(l.Source) {
			v, why := value(*l)
			if v == nil {
				l.Total, l.PerSecond, l.PerTx, l.Note = nil, nil, nil, why
				lost = append(lost, l.Name)
				continue
			}
			l.Total = ptr(*v)
			if out.Seconds > 0 {
				l.PerSecond = ptr(*v / out.Seconds)
			}
			summed = append(summed, l.Name)
		}
		if l.PerTx != nil {
			l.PerTx = nil
			if out.Transactions > 0 {
				l.PerTx = ptr(*l.Total / out.Transactions)
			}
		}
	}
	note := fmt.Sprintf("merged from %d parts: the server's counters count every part's work", len(parts))
	if sqlite {
		note = fmt.Sprintf("merged from %d parts: SQLite runs in each driver process", len(parts))
	}
	if len(summed) > 0 {
		note += "; " + strings.Join(summed, ", ") + " summed over the parts"
	}
	if len(lost) > 0 {
		note += "; " + strings.Join(lost, ", ") + " n/a"
	}
	out.Note = strings.TrimPrefix(out.Note+"; "+note, "; ")
	return &out
}

// driverSide tells whether a profile line's source (its keys, joined by
// " + ") takes any of the driver's own counts.
func driverSide(source string) bool {
	for _, k := range strings.Split(source, " + ") {
		if strings.HasPrefix(k, DriverKeyPrefix) {
			return true
		}
	}
	return false
}

// alignSeries sums the parts' series by wall-clock second (on part 0's
// clock) from start; percentiles are the highest of the parts'.
func alignSeries(parts []*Run, order []int, shift func(*Run, time.Time) time.Time, start time.Time) []metrics.Interval {
	// An interval is keyed by its phase and its rounded end: a part's short
	// drain interval ending 0.3 s after the window must not fold into
	// another part's last measured second (a merged series counted 27
	// commits in the window where the run counted 21).
	type key struct {
		phase string
		at    int64
	}
	byKey := map[key]*metrics.Interval{}
	var keys []key
	for _, i := range order {
		p := parts[i]
		base := shift(p, p.Start).Sub(start).Seconds()
		for _, iv := range p.Series {
			k := key{iv.Phase, int64(math.Round(base + iv.At))}
			x, ok := byKey[k]
			if !ok {
				c := iv
				c.At = float64(k.at)
				byKey[k], keys = &c, append(keys, k)
				continue
			}
			x.Commits, x.Rollbacks, x.Errors, x.Retries = x.Commits+iv.Commits, x.Rollbacks+iv.Rollbacks, x.Errors+iv.Errors, x.Retries+iv.Retries
			x.P50Micros, x.P95Micros, x.P99Micros = max(x.P50Micros, iv.P50Micros), max(x.P95Micros, iv.P95Micros), max(x.P99Micros, iv.P99Micros)
			x.ActiveSess += iv.ActiveSess
			x.LagMillis = max(x.LagMillis, iv.LagMillis)
			x.Seconds = max(x.Seconds, iv.Seconds)
		}
	}
	rank := map[string]int{"warmup": 0, "measure": 1, "drain": 2}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(rank[a.phase], rank[b.phase]))
	})
	out := make([]metrics.Interval, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * 1e6) }

// spread is the time between the earliest and the latest of ts.
func spread(ts []time.Time) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	lo, hi := ts[0], ts[0]
	for _, t := range ts[1:] {
		lo, hi = earlier(lo, t), later(hi, t)
	}
	return hi.Sub(lo)
}

// meanTime is the mean of ts.
func meanTime(ts []time.Time) time.Time {
	var sum time.Duration
	for _, t := range ts[1:] {
		sum += t.Sub(ts[0])
	}
	return ts[0].Add(sum / time.Duration(len(ts)))
}
