package metrics

import (
	"fmt"
	"runtime"
	"testing"
)

// interval is the i-th raw point of a test series: one second, counts
// that differ from point to point, so that a lost or doubled point shows.
func interval(i int, phase string) Interval {
	return Interval{At: float64(i + 1), Seconds: 1, Phase: phase, Commits: int64(i%7 + 1), Rollbacks: int64(i % 2),
		Errors: int64(i % 3), Retries: int64(i % 5), P50Micros: int64(100 + i%11), P95Micros: int64(900 + i%13),
		P99Micros: int64(5000 + i%17), ActiveSess: 64}
}

type totals struct {
	seconds                             float64
	commits, rollbacks, errors, retries int64
	maxP50, maxP95, maxP99              int64
}

func sum(ivs []Interval) totals {
	var t totals
	for _, iv := range ivs {
		t.seconds += iv.Seconds
		t.commits += iv.Commits
		t.rollbacks += iv.Rollbacks
		t.errors += iv.Errors
		t.retries += iv.Retries
		t.maxP50, t.maxP95, t.maxP99 = max(t.maxP50, iv.P50Micros), max(t.maxP95, iv.P95Micros), max(t.maxP99, iv.P99Micros)
	}
	return t
}

func TestSeriesKeepsTotalsAndBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int
		phases []int // raw points in warmup, measure, cooldown
	}{
		{"short, never halved", 16, []int{3, 10, 2}},
		{"exactly full", 16, []int{0, 16, 0}},
		{"one phase, many halvings", 16, []int{0, 1000, 0}},
		{"three phases", 10, []int{37, 500, 3}},
		{"odd bound", 7, []int{5, 333, 1}},
		{"default bound, a day at 1 s", 0, []int{600, 86400, 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSeries(tc.max)
			var raw []Interval
			for p, n := range tc.phases {
				for range n {
					iv := interval(len(raw), []string{"warmup", "measure", "cooldown"}[p])
					raw = append(raw, iv)
					s.Add(iv)
				}
			}
			got := s.Points()
			bound := tc.max
			if bound == 0 {
				bound = DefaultSeriesPoints
			}
			if len(got) > bound+2+1 { // + one point per phase edge + the pending one
				t.Fatalf("%d points, bound %d", len(got), bound)
			}
			if s.Added() != int64(len(raw)) || s.Len() != len(got) {
				t.Fatalf("Added %d Len %d, want %d and %d", s.Added(), s.Len(), len(raw), len(got))
			}
			if w, g := sum(raw), sum(got); w != g {
				t.Fatalf("totals %+v, want %+v", g, w)
			}
			if len(raw) > 0 && got[len(got)-1].At != raw[len(raw)-1].At {
				t.Fatalf("series ends at %v, want %v", got[len(got)-1].At, raw[len(raw)-1].At)
			}
			// Phases never mix, and each phase's own totals are kept.
			for p, name := range []string{"warmup", "measure", "cooldown"} {
				var want, have []Interval
				for _, iv := range raw {
					if iv.Phase == name {
						want = append(want, iv)
					}
				}
				for _, iv := range got {
					if iv.Phase == name {
						have = append(have, iv)
					}
				}
				if sum(want) != sum(have) {
					t.Fatalf("phase %d (%s): %+v, want %+v", p, name, sum(have), sum(want))
				}
			}
			for i := 1; i < len(got); i++ {
				if got[i].At <= got[i-1].At {
					t.Fatalf("point %d at %v after %v", i, got[i].At, got[i-1].At)
				}
			}
			// Within the measured window the points are evenly spaced:
			// every one but the last of the phase covers a whole step.
			var measure []Interval
			for _, iv := range got {
				if iv.Phase == "measure" {
					measure = append(measure, iv)
				}
			}
			for i, iv := range measure[:max(0, len(measure)-1)] {
				if iv.Seconds != measure[0].Seconds {
					t.Fatalf("measure point %d covers %v s, the first %v s", i, iv.Seconds, measure[0].Seconds)
				}
			}
		})
	}
}

func TestMergeIntervals(t *testing.T) {
	a := Interval{At: 10, Seconds: 1, Phase: "measure", Commits: 5, Rollbacks: 1, Errors: 2, Retries: 3,
		P50Micros: 100, P95Micros: 900, P99Micros: 2000, ActiveSess: 64}
	b := Interval{At: 11.5, Seconds: 1.5, Phase: "measure", Commits: 7, Rollbacks: 0, Errors: 1, Retries: 0,
		P50Micros: 120, P95Micros: 800, P99Micros: 3000, ActiveSess: 60}
	want := Interval{At: 11.5, Seconds: 2.5, Phase: "measure", Commits: 12, Rollbacks: 1, Errors: 3, Retries: 3,
		P50Micros: 120, P95Micros: 900, P99Micros: 3000, ActiveSess: 60}
	if got := MergeIntervals(a, b); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// An Add never costs more than O(max) memory, however many points come.
func TestBoundedMemoryAfterMillionAdds(t *testing.T) {
	const n = 1_000_000
	s := NewSeries(0)
	var before, after runtime.MemStats
	for i := range 10 * DefaultSeriesPoints { // past the first halvings
		s.Add(interval(i, "measure"))
	}
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		s.Add(interval(i, "measure"))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if s.Len() > DefaultSeriesPoints+1 {
		t.Fatalf("%d points after %d adds", s.Len(), n)
	}
	if cap(s.pts) > DefaultSeriesPoints+1 {
		t.Fatalf("capacity %d after %d adds", cap(s.pts), n)
	}
	// The series' own array is about 100 KB; a leak of even 8 bytes an
	// Add would be 8 MB.
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 1<<20 {
		t.Fatalf("heap grew %d bytes over %d adds", grown, n)
	}
	if got := sum(s.Points()).seconds; got != float64(n+10*DefaultSeriesPoints) {
		t.Fatalf("%v seconds, want %d", got, n+10*DefaultSeriesPoints)
	}
}

// A series cut by an edge at every point cannot halve; it must still add
// in constant time (not halve on every Add) and keep every point.
func TestBoundedEveryPointAnEdge(t *testing.T) {
	s := NewBounded(4, MergeIntervals, SamePhase)
	for i := range 100 {
		s.Add(interval(i, fmt.Sprint(i)))
	}
	if s.Len() != 100 {
		t.Fatalf("%d points, want 100 (none may merge)", s.Len())
	}
}

func TestNewBoundedSmallMax(t *testing.T) {
	s := NewBounded(1, func(a, b int) int { return a + b }, nil)
	total := 0
	for i := range 1000 {
		s.Add(i)
		total += i
	}
	got := 0
	for _, p := range s.Points() {
		got += p
	}
	if got != total || s.Len() > 3 {
		t.Fatalf("sum %d (want %d), %d points", got, total, s.Len())
	}
}
