package counters

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/result"
)

type eventKey struct{ class, event string }

// Sampler counts session states, like ASH, through its own connection.
// It counts only while Counting is on (the measured window).
type Sampler struct {
	c        engine.Conn
	interval time.Duration
	q        SampleQuery

	mu       sync.Mutex
	all      int64 // every sample taken: each one a transaction on the server
	counting bool
	rounds   int64
	missed   int64 // samples of the window that failed
	active   int64
	events   map[eventKey]int64
	err      error
}

// SampleQuery is how an engine's sessions are sampled: SQL returning a
// row per state (class, event, sessions) of the active sessions but the
// collectors'; an empty class is a session on CPU. Source names the view
// in the result.
type SampleQuery struct {
	SQL    string
	Args   []any
	Source string
}

// NewSampler samples every interval through c, which it uses alone.
func NewSampler(c engine.Conn, interval time.Duration, q SampleQuery) *Sampler {
	return &Sampler{c: c, interval: interval, q: q, events: map[eventKey]int64{}}
}

// Run samples until ctx ends. Each sample is one statement, so one
// transaction in the server's counters: Transactions says how many. A
// sample that fails (the server is down or frozen) is counted as missed
// and sampling goes on: the connection may come back (see Missed).
func (s *Sampler) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Sample(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				s.fail(err)
			}
		}
	}
}

func (s *Sampler) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
	if s.counting {
		s.missed++
	}
}

// Missed is how many samples of the window failed.
func (s *Sampler) Missed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.missed
}

// Sample takes one sample now.
func (s *Sampler) Sample(ctx context.Context) error {
	rows, err := s.c.Query(ctx, s.q.SQL, s.q.Args...)
	if err != nil {
		return fmt.Errorf("sample %s: %w", s.q.Source, err)
	}
	defer rows.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all++
	counting := s.counting
	if counting {
		s.rounds++
	}
	for rows.Next() {
		var k eventKey
		var n int64
		if err := rows.Scan(&k.class, &k.event, &n); err != nil {
			return fmt.Errorf("sample %s: %w", s.q.Source, err)
		}
		if k.class == "" {
			k = eventKey{"CPU", "CPU"}
		}
		if counting {
			s.events[k] += n
			s.active += n
		}
	}
	return rows.Err()
}

// Count turns counting on (the measured window starts) or off (it ends).
func (s *Sampler) Count(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counting = on
}

// Result summarises what was counted: top events with their share of DB
// time and average active sessions.
func (s *Sampler) Result() (*result.Waits, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &result.Waits{Source: s.q.Source, IntervalMs: float64(s.interval) / float64(time.Millisecond),
		Samples: s.rounds, ActiveSamples: s.active}
	if s.rounds > 0 {
		w.AvgActiveSessions = float64(s.active) / float64(s.rounds)
	}
	for k, n := range s.events {
		e := result.WaitEvent{Class: k.class, Event: k.event, Samples: n}
		if s.active > 0 {
			e.PctDBTime = 100 * float64(n) / float64(s.active)
		}
		if s.rounds > 0 {
			e.AvgActive = float64(n) / float64(s.rounds)
		}
		w.Events = append(w.Events, e)
	}
	sort.Slice(w.Events, func(i, j int) bool {
		if w.Events[i].Samples != w.Events[j].Samples {
			return w.Events[i].Samples > w.Events[j].Samples
		}
		return w.Events[i].Class+w.Events[i].Event < w.Events[j].Class+w.Events[j].Event
	})
	return w, s.err
}

// Transactions is the number of samples taken so far, each one a
// transaction in the server's counters.
func (s *Sampler) Transactions() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all
}

// DBTime returns the sampled DB time and DB CPU over secs seconds:
// average active sessions (and those on CPU) × secs. The averages come
// from the samples that were answered, so secs is the time the
// counterpart figures cover (a frozen server's time is in neither).
func (s *Sampler) DBTime(secs float64) (dbTime, cpu float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rounds == 0 {
		return 0, 0
	}
	return float64(s.active) / float64(s.rounds) * secs, float64(s.events[eventKey{"CPU", "CPU"}]) / float64(s.rounds) * secs
}
