package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/workload"
)

type session struct {
	mu sync.Mutex
	// Guarded by mu: the monitor reads them once per tick.
	phases   [numPhases]PhaseStats
	latency  []*metrics.Recorder
	commit   *metrics.Recorder
	queue    *metrics.Recorder // open loop: the wait for a session
	interval *metrics.Recorder
	// iv are the counts of the interval in progress, per phase: a
	// transaction reads the phase under mu, and the monitor changes the
	// phase before it takes the old phase's counts, so each counts in the
	// interval of its own phase, exactly.
	iv      [numPhases]ivCounts
	active  int           // 1 while the session runs
	gap     time.Duration // between transactions, measured window (see Result.Gap)
	ivFault faultCounts
	first   map[string]string
	reconn  int64
	// The watchdog's view, guarded by mu: busy while a transaction (or a
	// reconnect) is under way; conn is the connection it runs on; wdCount
	// and wdAt are its statement count when last seen to change.
	busy     bool
	timedOut bool
	conn     engine.Conn
	cancel   context.CancelFunc
	wdCount  int64
	wdAt     time.Time
}

// ivCounts are a session's counts of one phase in the interval in progress.
type ivCounts struct {
	commits, rollbacks, errors, retries int64
	types                               []TypeCounts
}

// faultCounts are what the monitor needs of an interval's failures to
// decide on an abort and to say why.
type faultCounts struct {
	timeouts int64
	last     string // the last failure, "class: message"
}

// connectAll opens every session's connection before the clock starts:
// connection set-up is not part of the workload. At most 16 connect at a
// time, so a thousand sessions do not arrive at the server as one storm,
// and the first failure stops the rest (the run cannot start without
// every session): a server with fewer slots than --users is told by its
// first refusal, not by --users refusals. Each attempt has
// StatementTimeout, so a server that accepts and never answers fails the
// run instead of hanging it.
func connectAll(ctx context.Context, cfg Config) ([]engine.Conn, error) {
	conns := make([]engine.Conn, cfg.Users)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu     sync.Mutex
		first  error
		opened int
	)
	slots := make(chan struct{}, 16)
	var wg sync.WaitGroup
launch:
	for i := range conns {
		select {
		case slots <- struct{}{}:
		case <-sctx.Done():
			break launch
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			cctx, cancel := context.WithTimeout(sctx, cfg.StatementTimeout)
			defer cancel()
			c, err := cfg.Connect(cctx)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				conns[i] = c
				opened++
				return
			case first != nil || sctx.Err() != nil && cctx.Err() != context.DeadlineExceeded:
				return // stopped by another's failure, or by ctx
			case errors.Is(err, engine.ErrServerFull):
				err = fmt.Errorf("the server refused session %d with %d open: %w: raise max_connections on the server (or lower --users)", i+1, opened, err)
			case cctx.Err() == context.DeadlineExceeded:
				err = fmt.Errorf("the server did not accept a connection within %s (--statement-timeout)", cfg.StatementTimeout)
			}
			first = err
			stop()
		}()
	}
	wg.Wait()
	err := first
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, fmt.Errorf("open %d sessions: %w", cfg.Users, err)
	}
	return conns, nil
}

// fold moves the session's latencies into the run's histograms; call
// with s.mu held, from the monitor.
func (s *session) fold(latency []*metrics.Histogram, commit, queue *metrics.Histogram) {
	for t, h := range s.latency {
		if h.Count() > 0 {
			h.MergeInto(latency[t])
			h.Reset()
		}
	}
	if s.commit.Count() > 0 {
		s.commit.MergeInto(commit)
		s.commit.Reset()
	}
	if s.queue.Count() > 0 {
		s.queue.MergeInto(queue)
		s.queue.Reset()
	}
}

// session is one virtual user: draw, run, retry, record, until stopped.
// hard ends it; its statements run under a context of its own that the
// watchdog cancels when the server does not answer.
func (r *run) session(hard context.Context, id int, s *session, c engine.Conn) {
	w := r.cfg.NewWorker(id)
	var sent, trips int64 // statements and round trips of c already counted
	account := func(phase int) {
		if c != nil {
			n, t := c.Statements(), c.RoundTrips()
			s.phases[phase].Statements += n - sent
			s.phases[phase].RoundTrips += t - trips
			sent, trips = n, t
		}
	}
	ctx, cancel := context.WithCancel(hard)
	s.mu.Lock()
	s.active = 1
	s.conn, s.cancel = c, cancel
	s.mu.Unlock()
	defer func() {
		if c != nil {
			c.Close()
		}
		s.mu.Lock()
		s.active = 0
		s.conn = nil
		s.cancel()
		s.mu.Unlock()
	}()
	backoff := 100 * time.Millisecond
	th, thinks := w.(workload.Thinker)
	thinks = thinks && r.sched == nil
	var ended time.Time // the last transaction's end, plus any wait meant
	gate := r.cfg.Gate
	for !r.stop.Load() && hard.Err() == nil {
		if gate != nil {
			if !gate.enter(r.stopped, hard.Done()) {
				break
			}
			ended = time.Now() // a closed gate is not the driver's cost
		}
		var intended time.Time
		if r.sched != nil {
			intended = r.sched.claim()
			if !r.until(intended, hard) {
				break
			}
			if intended.After(ended) {
				ended = intended // waiting for the schedule is not the driver's cost
			}
		}
		typ := w.Next()
		start := time.Now()
		from := start // latency counts from here: the intended start in an open loop
		if r.sched != nil {
			from = intended
		}
		var out workload.Outcome
		var err error
		var cls engine.ErrorClass
		retries := 0
		unreachable := false // a connect failed or a statement timed out
		s.mu.Lock()
		s.busy, s.wdAt, s.wdCount = true, start, -1
		if c != nil {
			s.wdCount = c.Statements()
		}
		began := int(r.phase.Load())
		s.mu.Unlock()
		for {
			if c == nil {
				if c, err = r.cfg.Connect(ctx); err != nil {
					c = nil
					cls = engine.ErrorClass{Name: "connection", Lost: true}
					unreachable = true
					break
				}
				sent, trips = 0, 0
				s.mu.Lock()
				s.reconn++
				s.conn = c
				s.mu.Unlock()
				r.out.count(0, 1)
				if r.cfg.Observer != nil {
					r.cfg.Observer.Reconnect()
				}
			}
			out, err = w.Run(ctx, c)
			if err == nil {
				break
			}
			cls = engine.Classify(err)
			if cls.Lost || c.Lost() {
				break // the outcome is unknown: never run it again
			}
			if !cls.Retry || retries == maxRetries || ctx.Err() != nil {
				break
			}
			retries++
		}
		end := time.Now()
		lat := end.Sub(from)
		s.mu.Lock()
		phase := int(r.phase.Load()) // under mu: see session.iv
		s.busy = false
		timedOut := s.timedOut
		lostAt := end // when the server was last seen serving this session
		if timedOut {
			lostAt = s.wdAt // its last answer
			s.timedOut = false
			ctx, cancel = context.WithCancel(hard)
			s.cancel = cancel
			if err != nil {
				cls, unreachable = engine.ErrorClass{Name: "timeout", Lost: true}, true
				err = fmt.Errorf("server did not answer for %s: %w", r.cfg.StatementTimeout, err)
			}
		}
		if err != nil && (cls.Lost || (c != nil && c.Lost())) && c != nil {
			account(phase)
			c.Close()
			c = nil
			s.conn = nil
		}
		ps := &s.phases[phase]
		iv := &s.iv[phase]
		tc := &iv.types[typ]
		ps.Retries[typ] += int64(retries)
		tc.Retries += int64(retries)
		iv.retries += int64(retries)
		account(phase)
		var cause string
		switch {
		case err != nil:
			if timedOut && began == Measure && phase == Drain {
				// It stopped being answered in the window, which closed
				// while the watchdog waited: a failure of the window.
				ps = &s.phases[Measure]
			}
			ps.Errors[typ]++
			tc.Errors++
			ps.Classes[cls.Name]++
			iv.errors++
			cause = cls.Name + ": " + err.Error()
			if _, seen := s.first[cls.Name]; !seen {
				s.first[cls.Name] = err.Error()
			}
			s.ivFault.last = cause
			if cls.Name == "timeout" {
				s.ivFault.timeouts++
			}
		case out.Rollback:
			ps.Rollbacks[typ]++
			tc.Rollbacks++
			iv.rollbacks++
		default:
			ps.Committed[typ]++
			tc.Committed++
			iv.commits++
		}
		if phase == Measure && !ended.IsZero() {
			s.gap += start.Sub(ended)
		}
		if err == nil {
			s.interval.Record(lat)
			if phase == Measure {
				s.latency[typ].Record(lat)
				if r.sched != nil {
					s.queue.Record(start.Sub(from))
				}
				if out.Commit > 0 {
					s.commit.Record(out.Commit)
				}
			}
		}
		s.mu.Unlock()
		if o := r.cfg.Observer; o != nil {
			switch {
			case err != nil:
				o.Transaction(r.cfg.TxTypes[typ], OutcomeFailed, cls.Name, retries, lat)
			case out.Rollback:
				o.Transaction(r.cfg.TxTypes[typ], OutcomeRolledBack, "", retries, lat)
			default:
				o.Transaction(r.cfg.TxTypes[typ], OutcomeCommitted, "", retries, lat)
			}
		}
		if gate != nil {
			gate.leave(err == nil && !out.Rollback)
		}
		switch {
		case err != nil && cls.Lost:
			r.out.lost(lostAt, cause, unreachable)
		case err != nil:
			r.out.count(1, 0)
		case !out.Rollback:
			r.out.committed(end)
		}
		if err != nil && c == nil {
			// Lost or failed to connect: back off before trying again.
			select {
			case <-time.After(backoff):
			case <-r.stopped:
			case <-hard.Done():
			}
			backoff = min(2*backoff, 2*time.Second)
			ended = time.Now() // the back-off is not the driver's cost
		} else {
			backoff = 100 * time.Millisecond
			ended = end // what follows, recording included, is
		}
		if thinks {
			if d := th.Think(); d > 0 {
				r.until(time.Now().Add(d), hard)
				ended = time.Now() // a pause meant, not the driver's cost
			}
		}
	}
}

// until waits for t; false when the run stopped first.
func (r *run) until(t time.Time, hard context.Context) bool {
	d := time.Until(t)
	if d <= 0 {
		return !r.stop.Load()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return !r.stop.Load()
	case <-r.stopped:
	case <-hard.Done():
	}
	return false
}
