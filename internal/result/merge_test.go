package result

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/metrics"
)

// splitPart makes part i of 2 of run "r": n transactions of latency lat, the
// series of 1 s intervals from start, this host's clock offset off.
func splitPart(t *testing.T, i int, start time.Time, off time.Duration, n int64, lat time.Duration, rate float64) *Run {
	t.Helper()
	h := metrics.NewHistogram()
	for k := range n {
		h.Record(lat + time.Duration(k)*time.Microsecond)
	}
	enc, err := NewHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	r := &Run{Schema: Schema, Label: "x", Start: start, End: start.Add(12 * time.Second),
		MeasureStart: start.Add(time.Second), MeasureEnd: start.Add(11 * time.Second),
		Workload: Workload{Name: "order-entry", Version: "1"}, Commit: enc, Errors: map[string]int64{},
		Transactions: []Transaction{{Name: "new_order", Committed: n, Latency: enc}},
		Phases:       map[string]Phase{"measure": {Committed: map[string]int64{"new_order": n}}},
		Driver:       Driver{Users: 2, Seed: 1, CPUs: 2, CPUShare: 0.1 * float64(i+1), CPUUserS: 1},
		Part: &Part{Index: i, Of: 2, RunID: "r", Users: 4, Sessions: []int{i, i + 2}, Host: []string{"a", "b"}[i],
			Sync: "barrier", ClockOffsetMs: float64(off) / 1e6}}
	for s := 1; s <= 12; s++ {
		r.Series = append(r.Series, metrics.Interval{At: float64(s), Seconds: 1, Phase: "measure", Commits: 10})
	}
	if rate > 0 {
		r.Driver.Rate = &Rate{TargetTPS: rate, AchievedTPS: rate, Queue: enc, Arrival: "uniform"}
	}
	return r
}

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	// Host b's clock runs 2 s ahead of the database's; its part started
	// at the same moment, 2 s later by its own clock.
	a := splitPart(t, 0, t0, 0, 1000, time.Millisecond, 50)
	b := splitPart(t, 1, t0.Add(2*time.Second+20*time.Millisecond), 2*time.Second, 3000, 3*time.Millisecond, 50)
	m, err := Merge([]*Run{b, a}, []string{"b.json", "a.json"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.Transactions[0].Committed != 4000 || m.Commit.Count != 4000 || m.Driver.Users != 4 || m.Driver.CPUUserS != 2 {
		t.Errorf("merged %+v, driver %+v", m.Transactions, m.Driver)
	}
	if m.Merged.SkewMs < 19 || m.Merged.SkewMs > 21 || m.Merged.Busiest != 1 || m.Driver.CPUShare != 0.2 {
		t.Errorf("skew %.1f ms (want 20: the offsets put both on the database's clock), busiest %d share %.2f", m.Merged.SkewMs, m.Merged.Busiest, m.Driver.CPUShare)
	}
	// 3/4 of the values at 3 ms and up: p50 from b's.
	if m.Transactions[0].Latency.P50Ms < 3 || m.Transactions[0].Latency.P50Ms > 4.1 {
		t.Errorf("merged p50 %.2f ms", m.Transactions[0].Latency.P50Ms)
	}
	// The seconds line up (b's shifted by its offset): 12 intervals of 20.
	if len(m.Series) != 12 || m.Series[0].Commits != 20 || m.Series[11].Commits != 20 {
		t.Errorf("series %+v", m.Series)
	}
	if rt := m.Driver.Rate; rt == nil || rt.TargetTPS != 100 || rt.Queue.Count != 4000 || rt.Behind {
		t.Errorf("rate %+v", rt)
	}
	if !m.MeasureStart.Equal(t0.Add(time.Second + 10*time.Millisecond)) {
		t.Errorf("window starts %s, want the parts' mean on part 0's clock", m.MeasureStart)
	}

	for _, c := range []struct {
		parts []*Run
		want  string
	}{
		{[]*Run{a}, "part 1 of 2 missing"},
		{[]*Run{a, a}, "part 0 is given twice"},
		{[]*Run{a, splitPart(t, 1, t0.Add(300*time.Millisecond), 0, 10, time.Millisecond, 0)}, "300ms apart"},
	} {
		files := []string{"a.json", "b.json"}[:len(c.parts)]
		if _, err := Merge(c.parts, files, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: want an error naming %q", err, c.want)
		}
		f, err := Merge(c.parts, files, true)
		if err != nil || len(f.Merged.Forced) == 0 || !strings.Contains(f.Warnings[len(f.Warnings)-1], "--force") {
			t.Errorf("forced: %v %+v", err, f)
		}
	}
	whole := *a
	whole.Part = nil
	if _, err := Merge([]*Run{&whole}, []string{"w.json"}, true); err == nil || !strings.Contains(err.Error(), "not a part") {
		t.Errorf("a whole run merged: %v", err)
	}
}

// A part's drain interval, 0.3 s long, ends in the same rounded second as
// the other part's last measured one: it stays in the drain, so the merged
// series counts in the window what the parts counted there.
func TestMergeSeriesKeepsPhases(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	a := splitPart(t, 0, t0, 0, 100, time.Millisecond, 0)
	b := splitPart(t, 1, t0.Add(10*time.Millisecond), 0, 100, time.Millisecond, 0)
	for _, p := range []*Run{a, b} {
		p.Series = []metrics.Interval{{At: 1, Seconds: 1, Phase: "warmup", Commits: 7}}
		for s := 2; s <= 11; s++ {
			p.Series = append(p.Series, metrics.Interval{At: float64(s), Seconds: 1, Phase: "measure", Commits: 10})
		}
	}
	b.Series = append(b.Series, metrics.Interval{At: 11.3, Seconds: 0.3, Phase: "drain", Commits: 6})
	m, err := Merge([]*Run{a, b}, []string{"a.json", "b.json"}, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for i, iv := range m.Series {
		got[iv.Phase] += iv.Commits
		if i > 0 && iv.At < m.Series[i-1].At {
			t.Errorf("interval %d at %.0f s after one at %.0f s", i, iv.At, m.Series[i-1].At)
		}
	}
	if got["warmup"] != 14 || got["measure"] != 200 || got["drain"] != 6 || m.Series[len(m.Series)-1].Phase != "drain" {
		t.Errorf("merged series by phase %v, want warmup 14, measure 200, drain 6 last", got)
	}
}

// A part killed outright and recovered from its journal merges with the
// others without --force: the journal holds the part (its header) and how
// its start was agreed (a line written then), the end of its window is
// not held against it, and the merged run says it is partial and
// recovered, naming the part.
func TestMergeRecoveredPart(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	a := splitPart(t, 0, t0, 0, 1000, time.Millisecond, 0)
	// Part 1 runs on a host whose clock is 2 s ahead; it died 5 s into
	// its window, after a checkpoint at 4 s.
	b := splitPart(t, 1, t0.Add(2*time.Second), 2*time.Second, 500, time.Millisecond, 0)
	head := *b
	hp := *b.Part
	hp.Sync, hp.ClockOffsetMs, hp.StartAt = "", 0, time.Time{}
	head.Part, head.Series, head.Transactions, head.Phases = &hp, nil, nil, nil
	out := filepath.Join(t.TempDir(), "part-1.json")
	j, err := OpenJournal(out, &head)
	if err != nil {
		t.Fatal(err)
	}
	cp := *b
	cp.Part, cp.Series = nil, nil
	cp.End, cp.MeasureEnd = b.Start.Add(5*time.Second), b.Start.Add(4*time.Second)
	cp.Phases = map[string]Phase{"measure": {Committed: map[string]int64{"new_order": 500}, Rollbacks: map[string]int64{}, Errors: map[string]int64{}}}
	entries := append([]JournalEntry{{Part: b.Part}}, sixSeconds(&cp, 5)...)
	for _, e := range entries {
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	j.Close(false)
	rec, err := Recover(JournalPath(out))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Part == nil || rec.Part.Index != 1 || rec.Part.Sync != "barrier" || rec.Part.ClockOffsetMs != 2000 || !rec.Recovered {
		t.Fatalf("recovered part %+v, recovered %v", rec.Part, rec.Recovered)
	}
	m, err := Merge([]*Run{a, rec}, []string{"part-0.json", "part-1.json"}, false)
	if err != nil {
		t.Fatalf("merge of a recovered part: %v", err)
	}
	if !m.Partial || !m.Recovered || !strings.HasPrefix(m.PartialReason, "part 1: recovered from part-1.json.journal") || len(m.Merged.Forced) != 0 {
		t.Errorf("merged: partial %v (%q), recovered %v, forced %q", m.Partial, m.PartialReason, m.Recovered, m.Merged.Forced)
	}
	if m.Transactions[0].Committed != 1000+500+100 || m.Driver.Users != 4 || m.Merged.SkewMs > 1 {
		t.Errorf("merged %d committed (want 1600: part 1's checkpoint and its last interval), users %d, skew %.1f ms",
			m.Transactions[0].Committed, m.Driver.Users, m.Merged.SkewMs)
	}
	if w := strings.Join(m.Warnings, "\n"); !strings.Contains(w, "part 1's window ended 5s before the last part's") {
		t.Errorf("warnings %q", w)
	}
	// The recovered part has no driver figures, whatever its header held:
	// the run's sums and maxima over the parts are absent (they were part
	// 0's alone), the busiest driver the measured part's.
	if d := rec.Driver; d.CPUUserS != 0 || d.CPUs != 0 || d.CPUShare != 0 || rec.Statements != 0 || d.Reconnects != 0 {
		t.Errorf("the recovered part's driver %+v, statements %d", d, rec.Statements)
	}
	if d := m.Driver; d.CPUUserS != 0 || d.TotalCPUS != 0 || d.CPUs != 0 || d.CPUShare != 0 || d.SchedP99Ms != 0 || d.GapUsPerTx != 0 ||
		m.Statements != 0 || m.RoundTrips != 0 || m.Merged.Busiest != 0 || !m.Merged.Parts[1].Recovered || m.Merged.Parts[0].Recovered {
		t.Errorf("merged with a recovered part: driver %+v, statements %d, busiest %d, parts %+v", d, m.Statements, m.Merged.Busiest, m.Merged.Parts)
	}
	// Two partial parts: both named.
	i := *a
	i.Partial, i.PartialReason = true, "interrupted"
	if m, err := Merge([]*Run{&i, rec}, []string{"part-0.json", "part-1.json"}, false); err != nil ||
		!strings.HasPrefix(m.PartialReason, "part 0: interrupted; part 1: recovered") {
		t.Errorf("two partial parts: %v, %+v", err, m)
	}
	// A whole part whose window ended early is still refused.
	short := *a
	short.MeasureEnd = short.MeasureEnd.Add(-time.Second)
	if _, err := Merge([]*Run{&short, b}, []string{"part-0.json", "part-1.json"}, false); err == nil || !strings.Contains(err.Error(), "1s apart") {
		t.Errorf("a whole part that ended 1 s early: %v", err)
	}
}

// collectorsOn gives p what part 0's collectors give it: the database's
// description (every part describes its platform, collectors on or off).
func collectorsOn(p *Run) {
	p.Disclosure = &Disclosure{Database: &Database{Product: "x"}}
}

// The load profile part 0's collectors made counts the server's work, of
// every part, except its lines from the driver's own counts (keys
// DriverKeyPrefix...), its part's only: merged, those are the parts'
// sums, and when the profile divided by the driver's transactions
// (MySQL without performance_schema's transactions) every per-transaction
// figure divides by the merged run's. Before, the merged profile was part
// 0's: Executes 5000 of the run's 20000, per transaction over part 0's
// 1000 transactions.
func TestMergeDriverSideProfileLines(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	a := splitPart(t, 0, t0, 0, 1000, time.Millisecond, 0)
	b := splitPart(t, 1, t0, 0, 3000, time.Millisecond, 0)
	a.Statements, b.Statements = 5000, 15000
	b.Disclosure = &Disclosure{} // collectors off: the platform only
	collectorsOn(a)
	v := func(x float64) *float64 { return &x }
	a.LoadProfile = &Profile{Source: "mysql 8", Seconds: 10, Transactions: 1000, Lines: []ProfileLine{
		{Name: "Logical reads", Total: v(80000), PerSecond: v(8000), PerTx: v(80), Source: "status.Innodb_buffer_pool_read_requests"},
		{Name: "Executes", Total: v(5000), PerSecond: v(500), PerTx: v(5), Source: driverStatementsKey},
		{Name: "Transactions", Total: v(1000), PerSecond: v(100), PerTx: v(1), Source: driverTransactionsKey},
		{Name: "Deadlocks", Total: v(2), PerSecond: v(0.2), Source: "status.Innodb_deadlocks"},
		{Name: "Redo waits", Source: "not available", Note: "needs status.Innodb_log_waits"},
	}}
	m, err := Merge([]*Run{a, b}, []string{"a.json", "b.json"}, false)
	if err != nil {
		t.Fatal(err)
	}
	lp := m.LoadProfile
	want := map[string][3]float64{ // total, per second, per transaction (-1: none)
		"Logical reads": {80000, 8000, 20}, "Executes": {20000, 2000, 5}, "Transactions": {4000, 400, 1}, "Deadlocks": {2, 0.2, -1},
	}
	if lp.Transactions != 4000 {
		t.Errorf("divisor %.0f, want the merged run's 4000 transactions", lp.Transactions)
	}
	for name, w := range want {
		l := lp.Line(name)
		if *l.Total != w[0] || *l.PerSecond != w[1] || (w[2] < 0) != (l.PerTx == nil) || l.PerTx != nil && *l.PerTx != w[2] {
			t.Errorf("%s: %v %v %v, want %v", name, *l.Total, *l.PerSecond, l.PerTx, w)
		}
	}
	if l := lp.Line("Redo waits"); l.Total != nil || l.Note != "needs status.Innodb_log_waits" {
		t.Errorf("an unavailable line: %+v", l)
	}
	if !strings.Contains(lp.Note, "Executes, Transactions summed over the parts") {
		t.Errorf("note %q", lp.Note)
	}
	if *a.LoadProfile.Line("Executes").Total != 5000 || a.LoadProfile.Transactions != 1000 {
		t.Error("merge changed part 0's own profile")
	}
	for _, w := range m.Warnings {
		if strings.Contains(w, "collectors ran on parts") {
			t.Errorf("part 1 ran without collectors: %q", w)
		}
	}

	// SQLite runs in each driver process: its CPU, statements and
	// transactions are the parts' summed; its page counts and series,
	// part 0's process only, n/a.
	a.Target.Dialect, b.Target.Dialect = "sqlite", "sqlite"
	a.LoadProfile = &Profile{Source: "sqlite 3", Seconds: 10, Transactions: 1000, Lines: []ProfileLine{
		{Name: "DB CPU", Total: v(1), PerSecond: v(0.1), PerTx: v(0.001), Source: "dbparity process CPU"},
		{Name: "Logical reads", Total: v(9000), PerSecond: v(900), PerTx: v(9), Source: "sqlite.cache_hit + sqlite.cache_miss"},
		{Name: "Executes", Total: v(5000), PerSecond: v(500), PerTx: v(5), Source: "statements the driver sent"},
		{Name: "Transactions", Total: v(1000), PerSecond: v(100), PerTx: v(1), Source: "transactions the driver completed"},
	}}
	a.DBSeries = []DBInterval{{At: 1, Seconds: 1}}
	m, err = Merge([]*Run{a, b}, []string{"a.json", "b.json"}, false)
	if err != nil {
		t.Fatal(err)
	}
	lp = m.LoadProfile
	for name, w := range map[string][3]float64{"DB CPU": {2, 0.2, 0.0005}, "Executes": {20000, 2000, 5}, "Transactions": {4000, 400, 1}} {
		l := lp.Line(name)
		if *l.Total != w[0] || *l.PerSecond != w[1] || *l.PerTx != w[2] {
			t.Errorf("sqlite %s: %v %v %v, want %v", name, *l.Total, *l.PerSecond, *l.PerTx, w)
		}
	}
	if l := lp.Line("Logical reads"); l.Total != nil || l.PerSecond != nil || !strings.Contains(l.Note, "only part 0's collectors ran") {
		t.Errorf("sqlite's page counts of part 0's process as the run's: %+v", l)
	}
	if m.DBSeries != nil || !strings.Contains(strings.Join(m.Warnings, "\n"), "SQLite counts in each driver process") {
		t.Errorf("sqlite's series of part 0's process as the run's: %v, %q", m.DBSeries, m.Warnings)
	}
}

// The database host's OS section counts the collectors' driver as
// dbparity's CPU and the other parts' drivers on that host as other
// processes': merged, theirs is dbparity's too. A driver host's OS
// section is one host's: kept when every part ran there, else left out.
func TestMergeDriversOnTheHosts(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	parts := func(hostB string) (*Run, *Run) {
		a := splitPart(t, 0, t0, 0, 1000, time.Millisecond, 0)
		b := splitPart(t, 1, t0, 0, 1000, time.Millisecond, 0)
		a.Part.Host, b.Part.Host = "h", hostB
		collectorsOn(a)
		a.OS = &OS{Source: "local", Window: ostat.Rates{IntervalS: 10, NumCPU: 4, SelfCPUCores: 0.1, SelfCPUPct: 2.5, OtherCPUCores: 1.5, OtherCPUPct: 37.5}}
		a.DriverOS = &OS{Source: "local", Window: ostat.Rates{IntervalS: 10, NumCPU: 4, SelfCPUCores: 0.1, SelfCPUPct: 2.5, OtherCPUCores: 0.5, OtherCPUPct: 12.5}}
		return a, b // each driver 1 s of CPU over its 10 s window: 0.1 core
	}
	a, b := parts("h")
	m, err := Merge([]*Run{a, b}, []string{"a.json", "b.json"}, false)
	if err != nil {
		t.Fatal(err)
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	if w := m.OS.Window; !near(w.SelfCPUCores, 0.2) || !near(w.OtherCPUCores, 1.4) || !near(w.SelfCPUPct, 5) || !near(w.OtherCPUPct, 35) {
		t.Errorf("the database host's CPU: dbparity %.2f cores (%.1f%%), other %.2f (%.1f%%), want 0.2 (5%%) and 1.4 (35%%)",
			w.SelfCPUCores, w.SelfCPUPct, w.OtherCPUCores, w.OtherCPUPct)
	}
	if m.DriverOS == nil || !near(m.DriverOS.Window.SelfCPUCores, 0.2) || !near(m.DriverOS.Window.OtherCPUCores, 0.4) {
		t.Errorf("the driver host's section: %+v", m.DriverOS)
	}
	if a.OS.Window.SelfCPUCores != 0.1 {
		t.Error("merge changed part 0's own OS section")
	}
	a, b = parts("other")
	if m, err = Merge([]*Run{a, b}, []string{"a.json", "b.json"}, false); err != nil {
		t.Fatal(err)
	}
	if m.OS.Window.SelfCPUCores != 0.1 || m.DriverOS != nil || !strings.Contains(strings.Join(m.Warnings, "\n"), "several driver hosts") {
		t.Errorf("a part on another host: dbparity %.2f cores on the database host, driver OS %v, %q", m.OS.Window.SelfCPUCores, m.DriverOS, m.Warnings)
	}
	// A part on the host whose driver CPU is not known (recovered): left
	// with the other processes', and said.
	a, b = parts("h")
	b.Recovered, b.Partial, b.PartialReason = true, true, "recovered"
	if m, err = Merge([]*Run{a, b}, []string{"a.json", "b.json"}, false); err != nil {
		t.Fatal(err)
	}
	if m.OS.Window.SelfCPUCores != 0.1 || !strings.Contains(strings.Join(m.Warnings, "\n"), "part 1 ran on the database host and its driver's CPU is not known") {
		t.Errorf("a recovered part on the host: dbparity %.2f cores, %q", m.OS.Window.SelfCPUCores, m.Warnings)
	}
}

// sixSeconds are a journal's six one-second intervals of 100 commits (the
// first of the warm-up), with cp after interval at.
func sixSeconds(cp *Run, at int) []JournalEntry {
	var entries []JournalEntry
	for s := 1; s <= 6; s++ {
		phase := "measure"
		if s == 1 {
			phase = "warmup"
		}
		entries = append(entries, JournalEntry{Interval: &metrics.Interval{At: float64(s), Seconds: 1, Phase: phase, Commits: 100},
			Types: []TypeCounts{{Committed: 100}}})
		if s == at {
			entries = append(entries, JournalEntry{Checkpoint: cp})
		}
	}
	return entries
}
