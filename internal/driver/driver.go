// Package driver runs a workload's sessions against a target: one goroutine
// and one connection per session, the phases of a run (warm-up, measured
// window, drain), retries of serialization failures and deadlocks,
// reconnects, and the client-side measurements (latency histograms per
// transaction type and for COMMIT, the per-interval series, error classes,
// the driver's own CPU time). It knows nothing of result files or reports.
package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/target"
	"github.com/dbparity/dbparity/internal/workload"
)

// Phases of a run. A transaction belongs to the phase in which it
// completed, so the measured window counts exactly what finished inside it.
const (
	Warmup = iota
	Measure
	Drain // after the measured window: sessions finish the transaction they are in
	numPhases
)

// PhaseNames are the phases' names in results.
var PhaseNames = [numPhases]string{"warmup", "measure", "drain"}

// maxRetries bounds how often one transaction is run again after a
// serialization failure or deadlock before it counts as an error.
const maxRetries = 10

// Config is one run.
type Config struct {
	Users    int
	Warmup   time.Duration
	Duration time.Duration
	TxTypes  []string
	// NewWorker returns session id's generator.
	NewWorker func(id int) workload.Worker
	Connect   func(ctx context.Context) (target.Conn, error)
	// Tick is the interval of the series and of progress (default 1s).
	Tick time.Duration
	// Progress, if set, is called once per tick from the monitor goroutine.
	Progress func(Status)
	// OnInterval, if set, receives every interval of the series as soon as
	// it is closed, from the monitor goroutine.
	OnInterval func(metrics.Interval)
	// OnPhase, if set, is called from the monitor goroutine the moment a
	// phase begins (Measure, Drain), so collectors can take their window
	// snapshots at the window's edges. It must return quickly.
	OnPhase func(phase int, at time.Time)
	// StopGrace is how long sessions may take to finish their current
	// transaction after the run stops before their statements are cancelled.
	StopGrace time.Duration
	// AbortAfter ends the run when every transaction has failed for this
	// long (default 10s): a broken run must not pass for a slow one.
	AbortAfter time.Duration
	// Ready, if set, is called once every session is connected, before the
	// clock starts; the run starts when it returns. Several runs driven at
	// once (one per target) meet there, so their windows coincide.
	Ready func(ctx context.Context) error
}

// Status is the live state shown on the progress line.
type Status struct {
	Elapsed  time.Duration
	Phase    string
	TPS      float64 // committed per second over the last tick
	P95      time.Duration
	Commits  int64 // all phases
	Errors   int64 // all phases
	Sessions int
}

// PhaseStats are the counts of one phase.
type PhaseStats struct {
	Committed  []int64 `json:"committed"` // per transaction type
	Rollbacks  []int64 `json:"rollbacks"` // rollbacks the workload asked for
	Errors     []int64 `json:"errors"`
	Retries    []int64 `json:"retries"`
	Classes    map[string]int64
	Statements int64
}

func newPhaseStats(n int) PhaseStats {
	return PhaseStats{Committed: make([]int64, n), Rollbacks: make([]int64, n), Errors: make([]int64, n),
		Retries: make([]int64, n), Classes: map[string]int64{}}
}

func (p *PhaseStats) add(o PhaseStats) {
	for i := range p.Committed {
		p.Committed[i] += o.Committed[i]
		p.Rollbacks[i] += o.Rollbacks[i]
		p.Errors[i] += o.Errors[i]
		p.Retries[i] += o.Retries[i]
	}
	for k, v := range o.Classes {
		p.Classes[k] += v
	}
	p.Statements += o.Statements
}

// CPU is user and system CPU time of this process.
type CPU struct{ User, Sys time.Duration }

// Total is user plus system time.
func (c CPU) Total() time.Duration { return c.User + c.Sys }

// ProcessCPU is the CPU this process has used so far (getrusage).
func ProcessCPU() CPU {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return CPU{}
	}
	return CPU{User: time.Duration(ru.Utime.Nano()), Sys: time.Duration(ru.Stime.Nano())}
}

// Sub is the CPU used between o and c.
func (c CPU) Sub(o CPU) CPU { return CPU{User: c.User - o.User, Sys: c.Sys - o.Sys} }

// Result is what a run measured.
type Result struct {
	Start, MeasureStart, MeasureEnd, End time.Time
	// Partial is set when the measured window did not run to its end.
	Partial bool
	Reason  string
	Phases  [numPhases]PhaseStats
	// Latency per transaction type and of COMMIT alone, measured window.
	Latency []*metrics.Histogram
	Commit  *metrics.Histogram
	Series  []metrics.Interval
	// FirstErrors holds the first message seen of each error class.
	FirstErrors map[string]string
	Reconnects  int64
	// CPU of this process during the measured window and the whole run.
	MeasureCPU, TotalCPU CPU
}

// Measured is the length of the measured window.
func (r *Result) Measured() time.Duration { return r.MeasureEnd.Sub(r.MeasureStart) }

// ErrInterrupted is returned (with a partial result) when ctx was cancelled
// before the measured window ended.
var ErrInterrupted = errors.New("run interrupted")

type session struct {
	mu sync.Mutex
	// Guarded by mu: the monitor reads them once per tick.
	phases   [numPhases]PhaseStats
	latency  []*metrics.Recorder
	commit   *metrics.Recorder
	interval *metrics.Recorder
	iv       metrics.Interval
	first    map[string]string
	reconn   int64
}

type run struct {
	cfg      Config
	phase    atomic.Int32
	stop     atomic.Bool
	stopped  chan struct{} // closed with stop: wakes sessions that think
	sessions []*session
}

// Run executes cfg. Cancelling ctx stops the run cleanly: sessions finish
// their current transaction and the result is returned marked partial with
// ErrInterrupted. Statements are cancelled only StopGrace after that.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 30 * time.Second
	}
	if cfg.AbortAfter <= 0 {
		cfg.AbortAfter = 10 * time.Second
	}
	r := &run{cfg: cfg, stopped: make(chan struct{})}
	n := len(cfg.TxTypes)
	conns, err := connectAll(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Ready != nil {
		if err := cfg.Ready(ctx); err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
	}
	for range cfg.Users {
		s := &session{commit: metrics.NewRecorder(), interval: metrics.NewRecorder(), first: map[string]string{}}
		for p := range s.phases {
			s.phases[p] = newPhaseStats(n)
		}
		for range n {
			s.latency = append(s.latency, metrics.NewRecorder())
		}
		r.sessions = append(r.sessions, s)
	}

	// hard is cancelled StopGrace after a stop, or when the run is over.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	m := &monitor{r: r, res: &Result{FirstErrors: map[string]string{}}, agg: metrics.NewHistogram(), cancelHard: cancelHard}
	res := m.res
	res.Start = time.Now()
	m.last = res.Start
	m.startCPU = ProcessCPU()
	m.measureCPU = m.startCPU
	// Phase changes run on their own timer, not on the tick, so the measured
	// window lasts what was asked to within timer precision.
	phaseTimer := time.NewTimer(cfg.Warmup)
	if cfg.Warmup <= 0 {
		m.setPhase(Measure, res.Start)
		res.MeasureStart = res.Start
		phaseTimer.Reset(cfg.Duration)
	}
	defer phaseTimer.Stop()
	var done sync.WaitGroup
	for i, s := range r.sessions {
		done.Add(1)
		go func() {
			defer done.Done()
			r.session(hard, i, s, conns[i])
		}()
	}
	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()

	ticker := time.NewTicker(cfg.Tick)
	defer ticker.Stop()
	var failingSince time.Time
	interrupted := false
	ctxDone := ctx.Done()
loop:
	for {
		select {
		case <-finished:
			break loop
		case <-ctxDone:
			ctxDone = nil
			interrupted = true
			m.stop(time.Now(), "interrupted")
		case <-phaseTimer.C:
			now := time.Now() // not the channel's value: both channels must agree on order
			if r.phase.Load() == Warmup {
				m.boundary(now)
				m.setPhase(Measure, now)
				res.MeasureStart = now
				m.measureCPU = ProcessCPU()
				phaseTimer.Reset(cfg.Duration)
				ticker.Reset(cfg.Tick) // intervals aligned on the measured window
			} else {
				m.stop(now, "")
			}
		case <-ticker.C:
			now := time.Now()
			iv := m.tick(now)
			if iv.Commits == 0 && iv.Errors > 0 {
				if failingSince.IsZero() {
					failingSince = now.Add(-time.Duration(iv.Seconds * float64(time.Second)))
				}
				if now.Sub(failingSince) >= cfg.AbortAfter {
					m.stop(now, fmt.Sprintf("aborted: every transaction failed for %s", cfg.AbortAfter))
				}
			} else {
				failingSince = time.Time{}
			}
			if cfg.Progress != nil {
				cfg.Progress(Status{Elapsed: now.Sub(res.Start), Phase: PhaseNames[r.phase.Load()],
					TPS: iv.TPS(), P95: time.Duration(iv.P95Micros) * time.Microsecond,
					Commits: m.commits, Errors: m.errors, Sessions: iv.ActiveSess})
			}
		}
	}
	res.End = time.Now()
	if res.End.Sub(m.last) > time.Millisecond {
		m.tick(res.End)
	}
	res.TotalCPU = ProcessCPU().Sub(m.startCPU)
	r.merge(res, n)
	if interrupted {
		return res, ErrInterrupted
	}
	return res, nil
}

// monitor is the state of the goroutine that ticks, changes phases and
// stops the run.
type monitor struct {
	r                    *run
	res                  *Result
	agg                  *metrics.Histogram
	last                 time.Time
	startCPU, measureCPU CPU
	commits, errors      int64
	cancelHard           context.CancelFunc
}

// tick closes the interval ending now and appends it to the series.
func (m *monitor) tick(now time.Time) metrics.Interval {
	iv := m.r.collect(now, m.last, m.res.Start, m.agg)
	m.last = now
	m.commits += iv.Commits
	m.errors += iv.Errors
	m.res.Series = append(m.res.Series, iv)
	if m.r.cfg.OnInterval != nil {
		m.r.cfg.OnInterval(iv)
	}
	return iv
}

func (m *monitor) setPhase(p int, at time.Time) {
	m.r.phase.Store(int32(p))
	if m.r.cfg.OnPhase != nil {
		m.r.cfg.OnPhase(p, at)
	}
}

// boundary closes the interval at a phase change, unless a tick has just
// closed one: a sliver of an interval would only add noise to the series.
func (m *monitor) boundary(now time.Time) {
	if now.Sub(m.last) >= m.r.cfg.Tick/10 {
		m.tick(now)
	}
}

// stop ends the measured window (if it is still open) and tells the
// sessions to finish; reason marks the result partial.
func (m *monitor) stop(now time.Time, reason string) {
	r, res := m.r, m.res
	if r.stop.Load() {
		return
	}
	if r.phase.Load() != Drain {
		m.boundary(now)
		res.MeasureEnd = now
		if res.MeasureStart.IsZero() {
			res.MeasureStart = now
		}
		res.MeasureCPU = ProcessCPU().Sub(m.measureCPU)
		m.setPhase(Drain, now)
	}
	r.stop.Store(true)
	close(r.stopped)
	if reason != "" {
		res.Partial, res.Reason = true, reason
	}
	time.AfterFunc(r.cfg.StopGrace, m.cancelHard)
}

// connectAll opens every session's connection before the clock starts:
// connection set-up is not part of the workload. At most 16 connect at a
// time, so a thousand sessions do not arrive at the server as one storm.
func connectAll(ctx context.Context, cfg Config) ([]target.Conn, error) {
	conns := make([]target.Conn, cfg.Users)
	errs := make([]error, cfg.Users)
	slots := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			conns[i], errs[i] = cfg.Connect(ctx)
		}()
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, fmt.Errorf("open %d sessions: %w", cfg.Users, err)
	}
	return conns, nil
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// collect takes the interval counters of every session.
func (r *run) collect(now, last, start time.Time, agg *metrics.Histogram) metrics.Interval {
	iv := metrics.Interval{At: now.Sub(start).Seconds(), Seconds: now.Sub(last).Seconds(), Phase: PhaseNames[r.phase.Load()]}
	agg.Reset()
	for _, s := range r.sessions {
		s.mu.Lock()
		iv.Commits += s.iv.Commits
		iv.Rollbacks += s.iv.Rollbacks
		iv.Errors += s.iv.Errors
		iv.Retries += s.iv.Retries
		iv.ActiveSess += s.iv.ActiveSess
		s.iv = metrics.Interval{ActiveSess: s.iv.ActiveSess}
		s.interval.MergeInto(agg)
		s.interval.Reset()
		s.mu.Unlock()
	}
	iv.P50Micros = int64(agg.Quantile(0.50) / time.Microsecond)
	iv.P95Micros = int64(agg.Quantile(0.95) / time.Microsecond)
	iv.P99Micros = int64(agg.Quantile(0.99) / time.Microsecond)
	return iv
}

func (r *run) merge(res *Result, n int) {
	for p := range res.Phases {
		res.Phases[p] = newPhaseStats(n)
	}
	for range n {
		res.Latency = append(res.Latency, metrics.NewHistogram())
	}
	res.Commit = metrics.NewHistogram()
	for _, s := range r.sessions {
		s.mu.Lock()
		for p := range res.Phases {
			res.Phases[p].add(s.phases[p])
		}
		for t, h := range s.latency {
			h.MergeInto(res.Latency[t])
		}
		s.commit.MergeInto(res.Commit)
		for k, v := range s.first {
			if _, ok := res.FirstErrors[k]; !ok {
				res.FirstErrors[k] = v
			}
		}
		res.Reconnects += s.reconn
		s.mu.Unlock()
	}
}

// session is one virtual user: draw, run, retry, record, until stopped.
func (r *run) session(ctx context.Context, id int, s *session, c target.Conn) {
	w := r.cfg.NewWorker(id)
	var sent int64 // statements of c already counted
	account := func(phase int) {
		if c != nil {
			n := c.Statements()
			s.phases[phase].Statements += n - sent
			sent = n
		}
	}
	s.mu.Lock()
	s.iv.ActiveSess = 1
	s.mu.Unlock()
	defer func() {
		if c != nil {
			c.Close()
		}
		s.mu.Lock()
		s.iv.ActiveSess = 0
		s.mu.Unlock()
	}()
	backoff := 100 * time.Millisecond
	th, thinks := w.(workload.Thinker)
	for !r.stop.Load() && ctx.Err() == nil {
		typ := w.Next()
		start := time.Now()
		var out workload.Outcome
		var err error
		var cls target.ErrorClass
		retries := 0
		for {
			if c == nil {
				if c, err = r.cfg.Connect(ctx); err != nil {
					c = nil
					cls = target.ErrorClass{Name: "connection", Lost: true}
					break
				}
				sent = 0
				s.mu.Lock()
				s.reconn++
				s.mu.Unlock()
			}
			out, err = w.Run(ctx, c)
			if err == nil {
				break
			}
			cls = target.Classify(err)
			if cls.Lost || c.Lost() {
				s.mu.Lock()
				account(int(r.phase.Load()))
				s.mu.Unlock()
				c.Close()
				c = nil
				break // the outcome is unknown: never run it again
			}
			if !cls.Retry || retries == maxRetries || ctx.Err() != nil {
				break
			}
			retries++
		}
		lat := time.Since(start)
		phase := int(r.phase.Load())
		s.mu.Lock()
		ps := &s.phases[phase]
		ps.Retries[typ] += int64(retries)
		s.iv.Retries += int64(retries)
		account(phase)
		switch {
		case err != nil:
			ps.Errors[typ]++
			ps.Classes[cls.Name]++
			s.iv.Errors++
			if _, seen := s.first[cls.Name]; !seen {
				s.first[cls.Name] = err.Error()
			}
		case out.Rollback:
			ps.Rollbacks[typ]++
			s.iv.Rollbacks++
		default:
			ps.Committed[typ]++
			s.iv.Commits++
		}
		if err == nil {
			s.interval.Record(lat)
			if phase == Measure {
				s.latency[typ].Record(lat)
				if out.Commit > 0 {
					s.commit.Record(out.Commit)
				}
			}
		}
		s.mu.Unlock()
		if err != nil && c == nil {
			// Lost or failed to connect: back off before trying again.
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			backoff = min(2*backoff, 2*time.Second)
		} else {
			backoff = 100 * time.Millisecond
		}
		if thinks {
			if d := th.Think(); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-r.stopped:
				case <-ctx.Done():
				}
				t.Stop()
			}
		}
	}
}
