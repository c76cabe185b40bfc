// Package driver runs a workload's sessions against a target: one goroutine
// and one connection per session, the phases of a run (warm-up, measured
// window, drain), retries of serialization failures and deadlocks,
// reconnects, and the client-side measurements (latency histograms per
// transaction type and for COMMIT, the per-interval series, error classes,
// the driver's own CPU time). It knows nothing of result files or reports.
package driver

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/metrics"
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
	Connect   func(ctx context.Context) (engine.Conn, error)
	// Tick is the interval of the series and of progress (default 1s).
	Tick time.Duration
	// Progress, if set, is called once per tick from the monitor goroutine.
	Progress func(Status)
	// Observer, if set, is told of each transaction as it ends and of
	// each reconnect, from the sessions' goroutines (live metrics).
	Observer Observer
	// OnInterval, if set, receives every interval of the series as soon as
	// it is closed, from the monitor goroutine. An error ends the run,
	// aborted, with the error as its reason: a run whose journal cannot be
	// written must not go on as if it could.
	OnInterval func(Tick) error
	// CheckpointEvery is how often a Tick carries a Checkpoint, the run's
	// cumulative counts and histograms (default 1 min; negative: never).
	CheckpointEvery time.Duration
	// OnPhase, if set, is called from the monitor goroutine the moment a
	// phase begins (Measure, Drain), so collectors can take their window
	// snapshots at the window's edges. It must not block: the monitor is
	// what ends a run.
	OnPhase func(phase int, at time.Time)
	// StopGrace is how long sessions may take to finish their current
	// transaction after the measured window before their statements are
	// cancelled (default StatementTimeout). After an interrupt or an abort
	// they get at most stopGraceFault.
	StopGrace time.Duration
	// StatementTimeout is how long a session waits for the server to answer
	// one statement, or to accept a connection (default 30s). Then the
	// statement is cancelled, the connection dropped and the transaction
	// counted as failed ("timeout"). The monitor watches each session's
	// statement count, so the cut comes within a watch period (a tenth of
	// the timeout, at most a tick) after the deadline, at no cost per
	// statement.
	StatementTimeout time.Duration
	// AbortAfter ends the run, aborted, when no transaction has committed
	// for this long and transactions failed meanwhile (default 10s). A
	// frozen server fails its statements at StatementTimeout, so it aborts
	// then; a server that refuses connections aborts after AbortAfter,
	// whatever the sessions' reconnect back-off.
	AbortAfter time.Duration
	// SeriesPoints bounds the series kept in memory and in the result
	// (default metrics.DefaultSeriesPoints): past it, adjacent points merge.
	SeriesPoints int
	// Ready, if set, is called once every session is connected, before the
	// clock starts; the run starts when it returns, at the instant it
	// returns when that is not zero (and not in the future): several runs
	// driven at once (one per target) meet there and are given one
	// instant, so that their windows coincide however late each of them
	// is scheduled after the meeting.
	Ready func(ctx context.Context) (time.Time, error)
	// Rate, when above 0, makes the run open-loop: transactions arrive at
	// Rate per second for the whole run (Arrival: Uniform or Poisson,
	// drawn from Seed) and whichever session is free takes the next one.
	// A transaction's latency counts from its intended start, so the time
	// it waited for a session is in it (no coordinated omission); that
	// wait is also recorded apart (Result.Queue). The warm-up's backlog is
	// dropped when the measured window begins. Think times are not taken.
	Rate    float64
	Arrival string
	Seed    uint64
	// Gate, if set, lets the sessions start transactions only while it is
	// open: two runs driven at once take turns (see Gate). The measured
	// window's throughput, driver CPU and Result.Active are then those of
	// the slices the gate was open. Not with Rate.
	Gate *Gate
}

// stopGraceFault is how long sessions may finish their transaction after
// an interrupt or an abort: Ctrl-C must end a run within seconds even when
// the server does not answer.
const stopGraceFault = 2 * time.Second

// Tick is one closed interval: the series' point, the counts of each
// transaction type in it, and now and then the run's cumulative state.
type Tick struct {
	Interval metrics.Interval
	Types    []TypeCounts
	// Checkpoint is what the run has measured so far, as a Result (no
	// series, no CPU): set on the first tick, every CheckpointEvery, and
	// on the last tick, so that a journal of ticks can stand in for a run
	// that died.
	Checkpoint *Result
}

// TypeCounts are one transaction type's counts in one interval.
type TypeCounts struct {
	Committed int64 `json:"c,omitempty"`
	Rollbacks int64 `json:"r,omitempty"`
	Errors    int64 `json:"e,omitempty"`
	Retries   int64 `json:"rt,omitempty"`
}

// Event is a time the server did not serve the sessions: connections
// lost, refused or timed out, until a transaction committed again.
type Event struct {
	// Kind is "outage" when the server could not be reached (a connect
	// failed, a statement timed out) or it lasted to the end of the run;
	// "disconnect" when connections were lost but could be opened again
	// at once (backends terminated, say).
	Kind  string
	Start time.Time
	// End is the first commit after Start; zero when the run ended first.
	End time.Time
	// Failed transactions and successful reconnects while it lasted.
	Failed     int64
	Reconnects int64
	// Cause is the error that began it, "class: message".
	Cause string
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
	Outage   bool          // the server does not serve the sessions now
	RateLag  time.Duration // an open loop's sessions behind its schedule
}

// Observer receives each transaction as it ends; its methods must be
// cheap and safe for concurrent use.
type Observer interface {
	// Transaction: typ is the type's name, outcome one of OutcomeCommitted,
	// OutcomeRolledBack, OutcomeFailed; class the error class of a
	// failure; latency as the result records it.
	Transaction(typ, outcome, class string, retries int, latency time.Duration)
	Reconnect()
}

// Outcomes an Observer is told.
const (
	OutcomeCommitted  = "committed"
	OutcomeRolledBack = "rolled_back"
	OutcomeFailed     = "failed"
)

// Result is what a run measured.
type Result struct {
	Start, MeasureStart, MeasureEnd, End time.Time
	// Partial is set when the measured window did not run to its end.
	Partial bool
	Reason  string
	// Aborted is set when a fault ended the run (AbortAfter, a failed
	// OnInterval), not the clock or the user.
	Aborted bool
	Phases  [numPhases]PhaseStats
	// Latency per transaction type and of COMMIT alone, measured window.
	Latency []*metrics.Histogram
	Commit  *metrics.Histogram
	// Queue is, in an open-loop run (Config.Rate), the time from each
	// transaction's intended start to its start, measured window; Rate
	// is what the schedule measured. Both nil in a closed-loop run.
	Queue  *metrics.Histogram
	Rate   *RateResult
	Series []metrics.Interval
	// SeriesStep is how many ticks a point of Series stands for (1 until
	// the series reached Config.SeriesPoints).
	SeriesStep int
	// Events are the outages the sessions met, in order.
	Events []Event
	// FirstErrors holds the first message seen of each error class.
	FirstErrors map[string]string
	Reconnects  int64
	// CPU of this process during the measured window and the whole run.
	MeasureCPU, TotalCPU CPU
	// Sched is the Go scheduler's latency over the measured window, and
	// Gap the time sessions spent between one transaction's end and the
	// next one's start for the driver's own work (drawing, recording,
	// waiting to run), think times and a target rate's waits excluded.
	Sched SchedLatency
	Gap   time.Duration
	// Wake is how late a timer of this process fired over the measured
	// window: its threads' wait for a CPU, which Sched does not see.
	Wake WakeLatency
	// Active is, in a gated run (Config.Gate), the time the gate was open
	// in the measured window, and Slices the slices wholly inside it;
	// MeasureCPU is then the driver's CPU over those slices.
	Active time.Duration
	Slices []Span
}

// Measured is the length of the measured window.
func (r *Result) Measured() time.Duration { return r.MeasureEnd.Sub(r.MeasureStart) }

// ErrInterrupted is returned (with a partial result) when ctx was cancelled
// before the measured window ended.
var ErrInterrupted = errors.New("run interrupted")

type run struct {
	cfg      Config
	phase    atomic.Int32
	stop     atomic.Bool
	stopped  chan struct{} // closed with stop: wakes sessions that think
	sessions []*session
	out      outages
	// The measured window's latencies so far: every tick the monitor folds
	// the sessions' recorders into these and empties them, so a session's
	// recorder holds one tick of values, not the whole run's (they grew
	// about 4 MB an hour at 64 sessions). Owned by the monitor goroutine.
	latency []*metrics.Histogram
	commit  *metrics.Histogram
	queue   *metrics.Histogram
	// sched is the arrival schedule of an open-loop run; nil otherwise.
	sched *schedule
}

// Run executes cfg. Cancelling ctx stops the run cleanly: sessions finish
// their current transaction and the result is returned marked partial with
// ErrInterrupted. Statements are cancelled stopGraceFault after that.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.StatementTimeout <= 0 {
		cfg.StatementTimeout = 30 * time.Second
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = cfg.StatementTimeout
	}
	if cfg.AbortAfter <= 0 {
		cfg.AbortAfter = 10 * time.Second
	}
	if cfg.CheckpointEvery == 0 {
		cfg.CheckpointEvery = time.Minute
	}
	if cfg.Gate != nil && cfg.Rate > 0 {
		return nil, errors.New("a gated run cannot keep a target rate")
	}
	r := &run{cfg: cfg, stopped: make(chan struct{}), commit: metrics.NewHistogram(), queue: metrics.NewHistogram()}
	n := len(cfg.TxTypes)
	for range n {
		r.latency = append(r.latency, metrics.NewHistogram())
	}
	conns, err := connectAll(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var startAt time.Time
	if cfg.Ready != nil {
		var err error
		if startAt, err = cfg.Ready(ctx); err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
	}
	for range cfg.Users {
		s := &session{commit: metrics.NewRecorder(), queue: metrics.NewRecorder(), interval: metrics.NewRecorder(),
			first: map[string]string{}}
		for p := range s.iv {
			s.iv[p].types = make([]TypeCounts, n)
		}
		for p := range s.phases {
			s.phases[p] = newPhaseStats(n)
		}
		for range n {
			s.latency = append(s.latency, metrics.NewRecorder())
		}
		r.sessions = append(r.sessions, s)
	}

	// hard is cancelled a grace period after a stop, or when the run is over.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	m := &monitor{r: r, res: &Result{FirstErrors: map[string]string{}}, agg: metrics.NewHistogram(), cancelHard: cancelHard,
		series: metrics.NewSeries(cfg.SeriesPoints)}
	res := m.res
	res.Start = time.Now()
	if !startAt.IsZero() && startAt.Before(res.Start) {
		res.Start = startAt
	}
	if cfg.Rate > 0 {
		if r.sched, err = newSchedule(cfg.Rate, cfg.Arrival, cfg.Seed, res.Start); err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
	}
	m.last, m.lastCommit, m.lastCheckpoint = res.Start, res.Start, res.Start
	m.startCPU = ProcessCPU()
	m.measureCPU = m.startCPU
	// Phase changes run on their own timer, not on the tick, so the measured
	// window lasts what was asked to within timer precision.
	phaseTimer := time.NewTimer(time.Until(res.Start.Add(cfg.Warmup)))
	m.wake = startWakeProbe()
	defer m.wake.result() // stops it
	if cfg.Warmup <= 0 {
		m.schedStart = readSched()
		m.changePhase(Measure, res.Start)
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
	watchdog := time.NewTicker(min(cfg.Tick, max(cfg.StatementTimeout/10, 10*time.Millisecond)))
	defer watchdog.Stop()
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
			m.stop(time.Now(), "interrupted", stopGraceFault)
		case <-phaseTimer.C:
			now := time.Now() // not the channel's value: both channels must agree on order
			if r.phase.Load() == Warmup {
				if r.sched != nil {
					r.sched.rebase(now)
				}
				res.MeasureStart = now
				m.measureCPU = ProcessCPU()
				m.schedStart = readSched()
				m.wake.restart()
				m.changePhase(Measure, now)
				phaseTimer.Reset(cfg.Duration)
				ticker.Reset(cfg.Tick) // intervals aligned on the measured window
			} else {
				m.stop(now, "", cfg.StopGrace)
			}
		case <-watchdog.C:
			m.watch(time.Now())
		case <-ticker.C:
			now := time.Now()
			iv := m.tick(now, false)
			m.judge(now)
			if cfg.Progress != nil {
				st := Status{Elapsed: now.Sub(res.Start), Phase: PhaseNames[r.phase.Load()],
					TPS: iv.TPS(), P95: time.Duration(iv.P95Micros) * time.Microsecond,
					Commits: m.commits, Errors: m.errors, Sessions: iv.ActiveSess, Outage: r.out.open.Load()}
				if r.sched != nil {
					st.RateLag = r.sched.lag(now)
				}
				cfg.Progress(st)
			}
		}
	}
	res.End = time.Now()
	m.tick(res.End, true)
	res.TotalCPU = ProcessCPU().Sub(m.startCPU)
	if cfg.Gate != nil && !res.MeasureStart.IsZero() {
		res.Active, res.MeasureCPU, res.Slices = Within(cfg.Gate.Spans(), res.MeasureStart, res.MeasureEnd)
	}
	r.merge(res)
	res.Series, res.SeriesStep = m.series.Points(), m.series.Step()
	if r.sched != nil {
		res.Queue = metrics.NewHistogram()
		res.Queue.Merge(r.queue)
		res.Rate = &RateResult{Target: cfg.Rate, Arrival: cmp.Or(cfg.Arrival, Uniform), Dropped: r.sched.dropped, LagEnd: m.lagEnd}
	}
	res.Events = r.out.all()
	m.unanswered()
	if interrupted {
		return res, ErrInterrupted
	}
	return res, nil
}
