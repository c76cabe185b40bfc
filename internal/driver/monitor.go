package driver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/metrics"
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
	if reason == "" {
		time.AfterFunc(grace, m.cancelHard)
		return
	}
	go m.cutWhenStalled(grace)
}

// stallCut is how long the busy sessions of an interrupted or aborted
// run may send nothing before their statements are cut rather than
// granted the rest of the grace: Ctrl-C on a frozen server ends the run
// without waiting for answers that will not come (a run so interrupted
// took 5.16 s to end beside a second test suite, 2 s of it the grace).
const stallCut = 500 * time.Millisecond

// cutWhenStalled cancels the sessions' statements once grace has passed,
// or once the busy sessions sent no statement for stallCut; it returns
// at once when no session is busy any more.
func (m *monitor) cutWhenStalled(grace time.Duration) {
	start := time.Now()
	tick := time.NewTicker(stallCut / 5)
	defer tick.Stop()
	last, busy := m.busySent()
	since := start
	for busy {
		now := <-tick.C
		var n int64
		n, busy = m.busySent()
		if n != last {
			last, since = n, now
		}
		if now.Sub(start) >= grace || now.Sub(since) >= stallCut {
			break
		}
	}
	m.cancelHard()
}

// busySent is how many statements the busy sessions' connections have
// sent, and whether any session is busy.
func (m *monitor) busySent() (n int64, busy bool) {
	for _, s := range m.r.sessions {
		s.mu.Lock()
		if s.busy {
			busy = true
			if s.conn != nil {
				n += s.conn.Statements()
			}
		}
		s.mu.Unlock()
	}
	return n, busy
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
