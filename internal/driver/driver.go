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
	"fmt"
	"strings"
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
	// clock starts; the run starts when it returns. Several runs driven at
	// once (one per target) meet there, so their windows coincide.
	Ready func(ctx context.Context) error
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

// PhaseStats are the counts of one phase.
type PhaseStats struct {
	Committed  []int64 `json:"committed"` // per transaction type
	Rollbacks  []int64 `json:"rollbacks"` // rollbacks the workload asked for
	Errors     []int64 `json:"errors"`
	Retries    []int64 `json:"retries"`
	Classes    map[string]int64
	Statements int64
	RoundTrips int64
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
	p.RoundTrips += o.RoundTrips
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
	conn     target.Conn
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

// outages tracks the open outage. Sessions take its lock only on a failure
// or a reconnect, and on a commit while one is open (open is read first,
// without the lock), so it costs the hot path one atomic load.
type outages struct {
	open   atomic.Bool
	mu     sync.Mutex
	cur    Event
	down   bool // the open event met an unreachable server
	events []Event
}

// lost records a failure that lost the connection; unreachable says the
// server could not be reached at all.
func (o *outages) lost(at time.Time, cause string, unreachable bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.open.Load() {
		o.cur, o.down = Event{Start: at, Cause: cause}, false
		o.open.Store(true)
	}
	o.cur.Failed++
	o.down = o.down || unreachable
}

// count adds failed transactions and reconnects to the open event, if any.
func (o *outages) count(failed, reconnects int64) {
	if !o.open.Load() {
		return
	}
	o.mu.Lock()
	if o.open.Load() {
		o.cur.Failed += failed
		o.cur.Reconnects += reconnects
	}
	o.mu.Unlock()
}

func (o *outages) committed(at time.Time) {
	if !o.open.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.open.Load() || at.Before(o.cur.Start) {
		return
	}
	o.cur.End = at
	o.close()
}

// close files the open event; call with mu held.
func (o *outages) close() {
	o.cur.Kind = "disconnect"
	if o.cur.End.IsZero() || o.down {
		o.cur.Kind = "outage"
	}
	o.events = append(o.events, o.cur)
	o.open.Store(false)
}

// snapshot returns the events so far, the open one (no end) last.
func (o *outages) snapshot() []Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	ev := append([]Event(nil), o.events...)
	if o.open.Load() {
		cur := o.cur
		cur.Kind = "outage"
		ev = append(ev, cur)
	}
	return ev
}

// all returns every event, the one still open last.
func (o *outages) all() []Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open.Load() {
		o.close()
	}
	return o.events
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
	if cfg.Ready != nil {
		if err := cfg.Ready(ctx); err != nil {
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
	phaseTimer := time.NewTimer(cfg.Warmup)
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

// monitor is the state of the goroutine that ticks, changes phases,
// watches for statements the server does not answer and stops the run.
type monitor struct {
	r                    *run
	res                  *Result
	agg                  *metrics.Histogram
	last                 time.Time
	startCPU, measureCPU CPU
	schedStart           schedSnapshot
	wake                 *wakeProbe
	commits, errors      int64
	cancelHard           context.CancelFunc
	// Since the last interval with a commit: when it ended, the failures
	// since, how many of them were timeouts, and the last one.
	lastCommit     time.Time
	failed         int64
	timeouts       int64
	lastFailure    string
	lastCheckpoint time.Time
	checkpoints    int
	stopping       bool
	lagEnd         time.Duration // open loop: behind schedule at the window's end
	// series is bounded: a day-long run keeps as many points as an
	// hour-long one, each standing for more seconds (the journal has them
	// all).
	series *metrics.Series
}

// tick closes the interval ending now, appends it to the series and hands
// it to OnInterval, with a checkpoint when one is due (always on the last).
func (m *monitor) tick(now time.Time, last bool) metrics.Interval {
	return m.closeInterval(now, int(m.r.phase.Load()), last)
}

// closeInterval closes the interval of phase ending now. At a phase change
// an empty sliver of an interval is dropped: it would only add noise.
func (m *monitor) closeInterval(now time.Time, phase int, last bool) metrics.Interval {
	iv, types, fault := m.r.collect(now, m.last, m.res.Start, phase, m.agg)
	sliver := now.Sub(m.last) < m.r.cfg.Tick/10 && iv.Commits+iv.Rollbacks+iv.Errors+iv.Retries == 0
	m.last = now
	if sliver && !last {
		return iv
	}
	m.commits += iv.Commits
	m.errors += iv.Errors
	if iv.Commits > 0 {
		m.lastCommit, m.failed, m.timeouts, m.lastFailure = now, 0, 0, ""
	}
	m.failed += iv.Errors
	m.timeouts += fault.timeouts
	if fault.last != "" {
		m.lastFailure = fault.last
	}
	if !sliver {
		m.series.Add(iv)
	}
	if m.r.cfg.OnInterval == nil {
		return iv
	}
	t := Tick{Interval: iv, Types: types}
	if every := m.r.cfg.CheckpointEvery; every > 0 && (last || m.checkpoints == 0 || now.Sub(m.lastCheckpoint) >= every) {
		m.checkpoints++
		t.Checkpoint = m.checkpoint(now)
		m.lastCheckpoint = now
	}
	if err := m.r.cfg.OnInterval(t); err != nil {
		m.abort(now, err.Error())
	}
	return iv
}

// judge aborts a run in which nothing has committed for AbortAfter while
// transactions failed.
func (m *monitor) judge(now time.Time) {
	cfg := m.r.cfg
	if m.stopping || m.failed == 0 || now.Sub(m.lastCommit) < cfg.AbortAfter {
		return
	}
	reason := fmt.Sprintf("no transaction committed for %s; %d failed (last: %s)",
		cfg.AbortAfter, m.failed, m.lastFailure)
	if m.timeouts == m.failed {
		reason = fmt.Sprintf("server did not answer for %s", cfg.StatementTimeout)
	}
	m.abort(now, reason)
}

// abort ends the run because of a fault. It may be called while the run
// is already stopping (a journal that fails on the last tick): the result
// still says why it failed.
func (m *monitor) abort(now time.Time, reason string) {
	if m.res.Aborted {
		return
	}
	m.res.Aborted = true
	m.res.Partial, m.res.Reason = true, "aborted: "+reason
	m.stop(now, "", stopGraceFault)
}

// unanswered fails a run whose server stopped serving inside the measured
// window and never came back: its last stretch measured nothing, however
// few transactions failed. A timeout's outage begins at the session's last
// answer.
func (m *monitor) unanswered() {
	ev := m.res.Events
	if len(ev) == 0 || m.res.Aborted {
		return
	}
	last := ev[len(ev)-1]
	if !last.End.IsZero() {
		return
	}
	timeout := strings.HasPrefix(last.Cause, "timeout: ")
	if !last.Start.Before(m.res.MeasureEnd) {
		return
	}
	m.res.Aborted, m.res.Partial = true, true
	if timeout {
		m.res.Reason = fmt.Sprintf("aborted: server did not answer for %s", m.r.cfg.StatementTimeout)
	} else {
		m.res.Reason = fmt.Sprintf("aborted: server unreachable from %s into the run to its end (%s)",
			last.Start.Sub(m.res.Start).Round(100*time.Millisecond), last.Cause)
	}
}

// watch cancels the statement of every session that has had no answer for
// StatementTimeout: its statement count has not moved while it was busy.
func (m *monitor) watch(now time.Time) {
	timeout := m.r.cfg.StatementTimeout
	for _, s := range m.r.sessions {
		s.mu.Lock()
		if s.busy && !s.timedOut {
			n := int64(-1) // connecting
			if s.conn != nil {
				n = s.conn.Statements()
			}
			if n != s.wdCount {
				s.wdCount, s.wdAt = n, now
			} else if now.Sub(s.wdAt) >= timeout {
				s.timedOut = true
				s.cancel()
			}
		}
		s.mu.Unlock()
	}
}

// changePhase begins phase p: the phase changes first, then the old
// phase's interval closes (see session.iv), then the collectors are told.
func (m *monitor) changePhase(p int, at time.Time) {
	old := int(m.r.phase.Swap(int32(p)))
	if old != p {
		m.closeInterval(at, old, false)
	}
	if m.r.cfg.OnPhase != nil {
		m.r.cfg.OnPhase(p, at)
	}
}

// stop ends the measured window (if it is still open) and tells the
// sessions to finish within grace; reason marks the result partial.
func (m *monitor) stop(now time.Time, reason string, grace time.Duration) {
	r, res := m.r, m.res
	if m.stopping {
		return
	}
	m.stopping = true // before the interval closes: its OnInterval may abort
	if reason != "" && !res.Partial {
		res.Partial, res.Reason = true, reason
	}
	if r.phase.Load() != Drain {
		res.MeasureEnd = now
		if r.sched != nil {
			m.lagEnd = r.sched.lag(now)
		}
		if res.MeasureStart.IsZero() {
			res.MeasureStart = now
		}
		res.MeasureCPU = ProcessCPU().Sub(m.measureCPU)
		res.Sched = schedBetween(m.schedStart, readSched())
		res.Wake = m.wake.result()
		m.changePhase(Drain, now)
	}
	r.stop.Store(true)
	close(r.stopped)
	// A session opening a connection now would only find the run over.
	for _, s := range r.sessions {
		s.mu.Lock()
		if s.busy && s.conn == nil {
			s.cancel()
		}
		s.mu.Unlock()
	}
	time.AfterFunc(grace, m.cancelHard)
}

// connectAll opens every session's connection before the clock starts:
// connection set-up is not part of the workload. At most 16 connect at a
// time, so a thousand sessions do not arrive at the server as one storm,
// and the first failure stops the rest (the run cannot start without
// every session): a server with fewer slots than --users is told by its
// first refusal, not by --users refusals. Each attempt has
// StatementTimeout, so a server that accepts and never answers fails the
// run instead of hanging it.
func connectAll(ctx context.Context, cfg Config) ([]target.Conn, error) {
	conns := make([]target.Conn, cfg.Users)
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
			case errors.Is(err, target.ErrServerFull):
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

// collect takes every session's counts of phase for the interval.
func (r *run) collect(now, last, start time.Time, phase int, agg *metrics.Histogram) (metrics.Interval, []TypeCounts, faultCounts) {
	iv := metrics.Interval{At: now.Sub(start).Seconds(), Seconds: now.Sub(last).Seconds(), Phase: PhaseNames[phase]}
	types := make([]TypeCounts, len(r.cfg.TxTypes))
	var fault faultCounts
	agg.Reset()
	for _, s := range r.sessions {
		s.mu.Lock()
		c := &s.iv[phase]
		iv.Commits += c.commits
		iv.Rollbacks += c.rollbacks
		iv.Errors += c.errors
		iv.Retries += c.retries
		iv.ActiveSess += s.active
		c.commits, c.rollbacks, c.errors, c.retries = 0, 0, 0, 0
		for t, tc := range c.types {
			types[t].Committed += tc.Committed
			types[t].Rollbacks += tc.Rollbacks
			types[t].Errors += tc.Errors
			types[t].Retries += tc.Retries
			c.types[t] = TypeCounts{}
		}
		fault.timeouts += s.ivFault.timeouts
		if s.ivFault.last != "" {
			fault.last = s.ivFault.last
		}
		s.ivFault = faultCounts{}
		s.interval.MergeInto(agg)
		s.interval.Reset()
		s.fold(r.latency, r.commit, r.queue)
		s.mu.Unlock()
	}
	if r.sched != nil {
		iv.LagMillis = r.sched.lag(now).Milliseconds()
	}
	iv.P50Micros = int64(agg.Quantile(0.50) / time.Microsecond)
	iv.P95Micros = int64(agg.Quantile(0.95) / time.Microsecond)
	iv.P99Micros = int64(agg.Quantile(0.99) / time.Microsecond)
	return iv, types, fault
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

// merge sums every session's counts so far, and the run's histograms,
// into res (copies: the run goes on).
func (r *run) merge(res *Result) {
	n := len(r.cfg.TxTypes)
	for p := range res.Phases {
		res.Phases[p] = newPhaseStats(n)
	}
	res.Reconnects = 0
	for _, s := range r.sessions {
		s.mu.Lock()
		for p := range res.Phases {
			res.Phases[p].add(s.phases[p])
		}
		s.fold(r.latency, r.commit, r.queue)
		for k, v := range s.first {
			if _, ok := res.FirstErrors[k]; !ok {
				res.FirstErrors[k] = v
			}
		}
		res.Reconnects += s.reconn
		res.Gap += s.gap
		s.mu.Unlock()
	}
	res.Latency = nil
	for _, h := range r.latency {
		c := metrics.NewHistogram()
		c.Merge(h)
		res.Latency = append(res.Latency, c)
	}
	res.Commit = metrics.NewHistogram()
	res.Commit.Merge(r.commit)
}

// checkpoint is the run's measured state now; the window ends now if it
// is still open.
func (m *monitor) checkpoint(now time.Time) *Result {
	c := &Result{Start: m.res.Start, MeasureStart: m.res.MeasureStart, MeasureEnd: m.res.MeasureEnd, End: now,
		Partial: m.res.Partial, Reason: m.res.Reason, Aborted: m.res.Aborted, FirstErrors: map[string]string{},
		Events: m.r.out.snapshot()}
	if c.MeasureEnd.IsZero() && !c.MeasureStart.IsZero() {
		c.MeasureEnd = now
	}
	m.r.merge(c)
	return c
}

// session is one virtual user: draw, run, retry, record, until stopped.
// hard ends it; its statements run under a context of its own that the
// watchdog cancels when the server does not answer.
func (r *run) session(hard context.Context, id int, s *session, c target.Conn) {
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
		var cls target.ErrorClass
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
					cls = target.ErrorClass{Name: "connection", Lost: true}
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
			cls = target.Classify(err)
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
				cls, unreachable = target.ErrorClass{Name: "timeout", Lost: true}, true
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
