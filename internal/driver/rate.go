package driver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Arrival processes of an open-loop run (Config.Rate).
const (
	Uniform = "uniform" // arrivals evenly spaced, 1/rate apart
	Poisson = "poisson" // exponential gaps of mean 1/rate, drawn from the seed
)

// schedule hands out the intended start times of an open-loop run: one
// arrival stream for the whole run, served by whichever session is free
// (a queue in front of the sessions, as an application's requests queue
// for its connection pool). A session claims the next arrival, waits for
// its time if it lies ahead, and its latency counts from that time, so
// the time an arrival waited for a free session is measured, not omitted.
type schedule struct {
	rate    float64
	poisson bool
	mu      sync.Mutex
	next    time.Time // intended start of the next arrival
	g       *rand.Rand
	// dropped counts the arrivals of the warm-up's backlog left out when
	// the measured window began.
	dropped int64
}

func newSchedule(rate float64, arrival string, seed uint64, start time.Time) (*schedule, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("rate %g: must be above 0", rate)
	}
	s := &schedule{rate: rate, next: start, g: rand.New(rand.NewPCG(seed, 0x0A221)), poisson: arrival == Poisson}
	if arrival != Uniform && arrival != Poisson && arrival != "" {
		return nil, fmt.Errorf("arrival %q: choose %s or %s", arrival, Uniform, Poisson)
	}
	return s, nil
}

// gap is the time to the arrival after the one at hand; call with mu held.
func (s *schedule) gap() time.Duration {
	mean := float64(time.Second) / s.rate
	if s.poisson {
		return time.Duration(s.g.ExpFloat64() * mean)
	}
	return time.Duration(mean)
}

// claim returns the intended start of the next arrival.
func (s *schedule) claim() time.Time {
	s.mu.Lock()
	t := s.next
	s.next = s.next.Add(s.gap())
	s.mu.Unlock()
	return t
}

// lag is how far the schedule is behind now: the age of the oldest
// arrival no session has taken yet (zero when none is waiting).
func (s *schedule) lag(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(0, now.Sub(s.next))
}

// rebase starts the schedule afresh at now, dropping the arrivals that
// were due and not yet taken: the measured window never inherits the
// warm-up's backlog.
func (s *schedule) rebase(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if behind := now.Sub(s.next); behind > 0 {
		s.dropped += int64(behind.Seconds() * s.rate)
		s.next = now
	}
}

// RateResult is what an open-loop run measured of its schedule.
type RateResult struct {
	Target  float64 // arrivals per second asked for
	Arrival string
	// Dropped is the warm-up's backlog left out at the window's start.
	Dropped int64
	// LagEnd is how far behind schedule the run was when the measured
	// window ended: zero when it kept up.
	LagEnd time.Duration
}
