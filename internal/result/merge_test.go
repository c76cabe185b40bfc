package result

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	entries := []JournalEntry{{Part: b.Part}}
	for s := 1; s <= 6; s++ {
		phase := "measure"
		if s == 1 {
			phase = "warmup"
		}
		entries = append(entries, JournalEntry{Interval: &metrics.Interval{At: float64(s), Seconds: 1, Phase: phase, Commits: 100},
			Types: []TypeCounts{{Committed: 100}}})
		if s == 5 {
			entries = append(entries, JournalEntry{Checkpoint: &cp})
		}
	}
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
