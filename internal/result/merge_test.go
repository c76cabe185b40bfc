package result

import (
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
