package driver

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/workload"
)

// serviceWorker takes exactly d per transaction: with n sessions the run's
// capacity is n/d transactions per second.
type serviceWorker struct{ d time.Duration }

func (w serviceWorker) Next() int { return 0 }
func (w serviceWorker) Run(context.Context, engine.Conn) (workload.Outcome, error) {
	time.Sleep(w.d)
	return workload.Outcome{}, nil
}

// openLoop runs 2 sessions of 4 ms transactions (capacity 500/s) at rate.
func openLoop(t *testing.T, rate float64, arrival string) *Result {
	t.Helper()
	res, err := Run(context.Background(), Config{
		Users: 2, Warmup: 300 * time.Millisecond, Duration: 2 * time.Second, TxTypes: []string{"t"},
		Tick:      100 * time.Millisecond,
		NewWorker: func(int) workload.Worker { return serviceWorker{4 * time.Millisecond} },
		Connect:   func(context.Context) (engine.Conn, error) { return &fakeConn{}, nil },
		Rate:      rate, Arrival: arrival, Seed: 7,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func served(res *Result) float64 {
	m := res.Phases[Measure]
	return float64(sum(m.Committed)+sum(m.Rollbacks)+sum(m.Errors)) / res.Measured().Seconds()
}

// Well under its capacity (a fifth of it: a host that doubles the 4 ms
// of service time, as one saturated by a second test suite did, still
// leaves it under half) an open-loop run serves the rate asked for,
// within 2%, and its transactions barely wait for a session.
func TestRateHoldsUnderCapacity(t *testing.T) {
	const rate = 100
	for _, arrival := range []string{Uniform, Poisson} {
		res := openLoop(t, rate, arrival)
		got := served(res)
		// Poisson arrivals vary by sqrt(n): 200 arrivals in 2 s are within
		// 2% only by chance, so that test allows 4 sd.
		tol := 0.02
		if arrival == Poisson {
			tol = max(tol, 4*math.Sqrt(2*rate)/(2*rate))
		}
		if math.Abs(got/rate-1) > tol {
			t.Errorf("%s: served %.1f/s of %d/s asked (%.1f%%)", arrival, got, rate, 100*got/rate)
		}
		if res.Rate == nil || res.Queue == nil {
			t.Fatalf("%s: no rate result", arrival)
		}
		if res.Rate.LagEnd > 200*time.Millisecond {
			t.Errorf("%s: %s behind schedule at the end under capacity", arrival, res.Rate.LagEnd)
		}
		// The wait counts from the intended start, so it holds the host's
		// lateness in waking a session as well as any queue: 0.55 ms with
		// a CPU hog on each core, up to 2.7 ms with four on each, 3.2 ms in
		// a CI run, 56 ms once beside a second suite (where this
		// process's timers fired up to 8-79 ms late). A queue that grows
		// puts it at hundreds of ms on a quiet host
		// (TestRateBehindAtTwiceCapacity): within 20 ms and the latest
		// this process's timers fired.
		q50 := res.Queue.Quantile(0.5)
		if arrival == Uniform && q50 > 20*time.Millisecond+res.Wake.Max {
			t.Errorf("%s: median wait for a session %s under capacity (timers fired up to %s late)", arrival, q50, res.Wake.Max)
		}
	}
}

// At twice its capacity the run serves what it can, falls behind
// schedule, and its latencies count from the intended start: they grow
// with the backlog instead of staying at the 4 ms of service time.
func TestRateBehindAtTwiceCapacity(t *testing.T) {
	res := openLoop(t, 1000, Uniform)
	got := served(res)
	if got > 0.6*1000 {
		t.Errorf("served %.1f/s at twice the capacity of 500/s", got)
	}
	// 1000/s asked, about 500/s served: the backlog grows half a second
	// per second of the 2 s window (the warm-up's was dropped).
	if res.Rate.LagEnd < 700*time.Millisecond {
		t.Errorf("behind schedule %s at the end, want about 1 s", res.Rate.LagEnd)
	}
	if res.Rate.Dropped < 50 {
		t.Errorf("warm-up backlog dropped: %d arrivals, want about 150", res.Rate.Dropped)
	}
	q50, l50 := res.Queue.Quantile(0.5), res.Latency[0].Quantile(0.5)
	if q50 < 200*time.Millisecond {
		t.Errorf("median wait for a session %s, want hundreds of ms", q50)
	}
	if l50 < q50 || l50 < 200*time.Millisecond {
		t.Errorf("median latency %s with a median wait of %s: latency must count from the intended start", l50, q50)
	}
	// The series shows the lag growing.
	var last int64
	for _, iv := range res.Series {
		if iv.Phase == "measure" {
			last = iv.LagMillis
		}
	}
	if last < 500 {
		t.Errorf("the series' last lag %d ms, want it near the end's", last)
	}
}

// The measured window never inherits the warm-up's backlog: at the
// window's start the schedule is rebased on the clock.
func TestRateDropsWarmupBacklog(t *testing.T) {
	s, err := newSchedule(100, Uniform, 1, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	s.claim()
	now := time.Unix(2, 0)
	s.rebase(now)
	if s.dropped < 195 || s.dropped > 200 {
		t.Errorf("dropped %d arrivals of a 2 s backlog at 100/s", s.dropped)
	}
	if got := s.claim(); !got.Equal(now) {
		t.Errorf("first arrival after the rebase at %s, want %s", got, now)
	}
	if _, err := newSchedule(0, Uniform, 1, now); err == nil {
		t.Error("rate 0 accepted")
	}
	if _, err := newSchedule(1, "bursty", 1, now); err == nil {
		t.Error("arrival bursty accepted")
	}
}

// Poisson gaps are random with the seed, and average 1/rate.
func TestPoissonGaps(t *testing.T) {
	a, _ := newSchedule(1000, Poisson, 3, time.Unix(0, 0))
	b, _ := newSchedule(1000, Poisson, 3, time.Unix(0, 0))
	var last time.Time
	for range 10000 {
		x, y := a.claim(), b.claim()
		if !x.Equal(y) {
			t.Fatal("the same seed gave other arrivals")
		}
		last = x
	}
	mean := last.Sub(time.Unix(0, 0)).Seconds() / 9999
	if math.Abs(mean/0.001-1) > 0.05 {
		t.Errorf("mean gap %.6f s, want 0.001", mean)
	}
}
