package driver

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/workload"
)

// fakeConn is a connection that does nothing; the fake worker decides
// what happens.
type fakeConn struct{ n atomic.Int64 }

func (c *fakeConn) Exec(context.Context, string, ...any) (int64, error)        { c.n.Add(1); return 0, nil }
func (c *fakeConn) Query(context.Context, string, ...any) (engine.Rows, error) { return nil, nil }
func (c *fakeConn) QueryRow(context.Context, string, ...any) engine.Row        { return nil }
func (c *fakeConn) Begin(context.Context, engine.TxMode) error                 { return nil }
func (c *fakeConn) Commit(context.Context) error                               { return nil }
func (c *fakeConn) Rollback(context.Context) error                             { return nil }
func (c *fakeConn) CopyFrom(context.Context, string, []string, [][]any) (int64, error) {
	return 0, nil
}
func (c *fakeConn) SendBatch(context.Context, *engine.Batch) error { return nil }
func (c *fakeConn) Statements() int64                              { return c.n.Load() }
func (c *fakeConn) RoundTrips() int64                              { return c.n.Load() }
func (c *fakeConn) Lost() bool                                     { return false }
func (c *fakeConn) Close() error                                   { return nil }

// fakeWorker runs transactions of 1 ms: every 5th fails once with a
// serialization failure (then succeeds when retried), every 7th fails with
// a unique violation, every 11th rolls back by design.
type fakeWorker struct {
	i        int
	failOnce bool
	mode     string
}

var (
	serialization = &pgconn.PgError{Code: "40001"}
	uniqueViol    = &pgconn.PgError{Code: "23505"}
)

func (w *fakeWorker) Next() int {
	w.i++
	w.failOnce = w.i%5 == 0
	return w.i % 2
}

func (w *fakeWorker) Run(ctx context.Context, c engine.Conn) (workload.Outcome, error) {
	time.Sleep(time.Millisecond)
	c.Exec(ctx, "x")
	switch {
	case w.mode == "always-fail":
		return workload.Outcome{}, uniqueViol
	case w.mode == "always-serialization":
		return workload.Outcome{}, serialization
	case w.mode == "lose" && w.i%4 == 0:
		return workload.Outcome{}, io.EOF
	case w.failOnce:
		w.failOnce = false
		return workload.Outcome{}, serialization
	case w.i%7 == 0:
		return workload.Outcome{}, uniqueViol
	case w.i%11 == 0:
		return workload.Outcome{Rollback: true}, nil
	}
	return workload.Outcome{Commit: 100 * time.Microsecond}, nil
}

func config(mode string, connects *atomic.Int64) Config {
	return Config{
		Users: 3, Warmup: 200 * time.Millisecond, Duration: 600 * time.Millisecond, TxTypes: []string{"a", "b"},
		Tick:       100 * time.Millisecond,
		AbortAfter: 300 * time.Millisecond,
		NewWorker:  func(int) workload.Worker { return &fakeWorker{mode: mode} },
		Connect: func(context.Context) (engine.Conn, error) {
			if connects != nil {
				connects.Add(1)
			}
			return &fakeConn{}, nil
		},
	}
}

func sum(v []int64) (n int64) {
	for _, x := range v {
		n += x
	}
	return n
}

func TestRunCountsRetriesErrorsAndRollbacks(t *testing.T) {
	cfg := config("", nil)
	var phases []int
	var at []time.Time
	cfg.OnPhase = func(p int, t time.Time) { phases = append(phases, p); at = append(at, t) }
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Phases[Measure]
	committed, errs, retries, rollbacks := sum(m.Committed), sum(m.Errors), sum(m.Retries), sum(m.Rollbacks)
	if committed == 0 || errs == 0 || retries == 0 || rollbacks == 0 {
		t.Fatalf("committed %d errors %d retries %d rollbacks %d: each should be seen", committed, errs, retries, rollbacks)
	}
	// Serialization failures were retried and succeeded: never errors.
	if m.Classes["serialization_failure"] != 0 || m.Classes["sqlstate_23505"] != errs {
		t.Errorf("error classes %v, want only sqlstate_23505 = %d", m.Classes, errs)
	}
	if d := res.Measured(); d < 590*time.Millisecond || d > 700*time.Millisecond {
		t.Errorf("measured window %s, asked for 600ms", d)
	}
	var hist int64
	for _, h := range res.Latency {
		hist += h.Count()
	}
	if hist != committed+rollbacks {
		t.Errorf("latency histograms hold %d values, %d transactions completed", hist, committed+rollbacks)
	}
	if res.Commit.Count() != committed {
		t.Errorf("COMMIT histogram %d values, %d commits", res.Commit.Count(), committed)
	}
	// Every attempt ran one statement: retries included.
	if m.Statements != committed+rollbacks+errs+retries {
		t.Errorf("statements %d, attempts %d", m.Statements, committed+rollbacks+errs+retries)
	}
	var series int64
	for _, iv := range res.Series {
		if iv.Phase == "measure" {
			series += iv.Commits
		}
	}
	if series != committed {
		t.Errorf("series counts %d commits in the measured window, phases %d", series, committed)
	}
	if res.Partial {
		t.Errorf("complete run marked partial: %s", res.Reason)
	}
	if len(phases) != 2 || phases[0] != Measure || phases[1] != Drain || !at[0].Equal(res.MeasureStart) || !at[1].Equal(res.MeasureEnd) {
		t.Errorf("phase callbacks %v at %v, window %v..%v", phases, at, res.MeasureStart, res.MeasureEnd)
	}
	if res.FirstErrors["sqlstate_23505"] == "" {
		t.Error("no sample of the error class kept")
	}
}

func TestRetriesAreBounded(t *testing.T) {
	res, _ := Run(context.Background(), config("always-serialization", nil))
	all := res.Phases[Warmup]
	all.add(res.Phases[Measure])
	if e, r := sum(all.Errors), sum(all.Retries); e == 0 || r != e*maxRetries {
		t.Errorf("errors %d retries %d: each failing transaction should be tried %d more times", e, r, maxRetries)
	}
}

func TestAbortsWhenEverythingFails(t *testing.T) {
	start := time.Now()
	res, err := Run(context.Background(), config("always-fail", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial || res.Reason == "" || time.Since(start) > 2*time.Second {
		t.Errorf("partial %v reason %q after %s", res.Partial, res.Reason, time.Since(start))
	}
}

func TestInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := config("", nil)
	cfg.Duration = time.Hour
	time.AfterFunc(500*time.Millisecond, cancel)
	res, err := Run(ctx, cfg)
	if !errors.Is(err, ErrInterrupted) || !res.Partial || res.Reason != "interrupted" {
		t.Fatalf("err %v partial %v reason %q", err, res.Partial, res.Reason)
	}
	if d := res.Measured(); d < 200*time.Millisecond || d > 400*time.Millisecond {
		t.Errorf("measured %s: warm-up 200ms then interrupted at 500ms", d)
	}
}

func TestReconnectsAfterLostConnection(t *testing.T) {
	var connects atomic.Int64
	res, err := Run(context.Background(), config("lose", &connects))
	if err != nil {
		t.Fatal(err)
	}
	if res.Reconnects == 0 || connects.Load() != int64(3)+res.Reconnects {
		t.Errorf("reconnects %d, connects %d", res.Reconnects, connects.Load())
	}
	if res.Phases[Measure].Classes["connection"] == 0 {
		t.Errorf("lost connections not counted: %v", res.Phases[Measure].Classes)
	}
}

// thinker runs no-op transactions and thinks 20 ms after each.
type thinker struct{ fakeWorker }

func (w *thinker) Run(ctx context.Context, c engine.Conn) (workload.Outcome, error) {
	return workload.Outcome{}, nil
}
func (w *thinker) Think() time.Duration { return 20 * time.Millisecond }

// Think time paces a session and is in no latency; a stop wakes a
// thinking session at once.
func TestThinkTime(t *testing.T) {
	cfg := Config{Users: 2, Duration: 500 * time.Millisecond, TxTypes: []string{"a", "b"}, Tick: 100 * time.Millisecond,
		StopGrace: time.Second,
		NewWorker: func(int) workload.Worker { return &thinker{} },
		Connect:   func(context.Context) (engine.Conn, error) { return &fakeConn{}, nil }}
	var ready atomic.Int32
	cfg.Ready = func(context.Context) (time.Time, error) { ready.Add(1); return time.Time{}, nil }
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ready.Load() != 1 {
		t.Errorf("Ready called %d times", ready.Load())
	}
	var n int64
	for _, c := range res.Phases[Measure].Committed {
		n += c
	}
	// 2 sessions × 500 ms / 20 ms = 50 transactions at most; a busy machine
	// wakes sleepers late, so fewer (34 seen at a load average of 10).
	if n < 15 || n > 54 {
		t.Errorf("%d transactions in 500 ms with 20 ms think time and 2 sessions, want about 50", n)
	}
	for i, h := range res.Latency {
		if h.Count() > 0 && h.Max() > 5*time.Millisecond {
			t.Errorf("type %d: max latency %v includes think time", i, h.Max())
		}
	}
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Errorf("run took %v: thinking sessions did not stop promptly", d)
	}
}

func TestReadyErrorStopsTheRun(t *testing.T) {
	cfg := config("", nil)
	cfg.Ready = func(context.Context) (time.Time, error) { return time.Time{}, errors.New("another target failed") }
	if _, err := Run(context.Background(), cfg); err == nil || err.Error() != "another target failed" {
		t.Errorf("err = %v", err)
	}
}

// Runs that meet at Ready are given one instant: each starts then, and
// its warm-up ends that long after it, however late its own goroutine
// went on after the meeting (here an instant 1 s before Run: the window
// opens 1.2 s after it, not 1.2 s after Run went on).
func TestReadyGivesTheStart(t *testing.T) {
	cfg := config("", nil)
	cfg.Warmup, cfg.Duration = 1200*time.Millisecond, 100*time.Millisecond
	at := time.Now().Add(-time.Second)
	cfg.Ready = func(context.Context) (time.Time, error) { return at, nil }
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The timer may fire late on a busy machine, never early; 2.2 s
	// without the instant given.
	if d := res.MeasureStart.Sub(at); !res.Start.Equal(at) || d < cfg.Warmup || d > 1900*time.Millisecond {
		t.Errorf("start %v after the instant given, window %v after it; want 0 and 1.2 s", res.Start.Sub(at), d)
	}
}

// frozenWorker's transactions send one statement and then wait for an
// answer that never comes, as against a server stopped with SIGSTOP.
type frozenWorker struct{ fakeWorker }

func (w *frozenWorker) Run(ctx context.Context, c engine.Conn) (workload.Outcome, error) {
	c.Exec(ctx, "x")
	<-ctx.Done()
	return workload.Outcome{}, ctx.Err()
}

// A server that stops answering: the watchdog cuts every statement at the
// statement timeout, and the run aborts then, saying why, whatever the
// length of its window.
func TestFrozenServerTimesOutAndAborts(t *testing.T) {
	cfg := config("", nil)
	cfg.Warmup, cfg.Duration = 0, time.Hour
	cfg.StatementTimeout = 300 * time.Millisecond
	cfg.NewWorker = func(int) workload.Worker { return &frozenWorker{} }
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("ended after %s: %s", took, res.Reason)
	if !res.Aborted || !res.Partial || res.Reason != "aborted: server did not answer for 300ms" {
		t.Errorf("aborted %v partial %v reason %q", res.Aborted, res.Partial, res.Reason)
	}
	// Cut within a watch period (30 ms) of 300 ms, aborted at the next
	// tick (100 ms), sessions released at once.
	if took > 900*time.Millisecond {
		t.Errorf("took %s to end with a statement timeout of 300ms", took)
	}
	if n := res.Phases[Measure].Classes["timeout"]; n < 3 {
		t.Errorf("timeouts %d, want one per session at least: %v", n, res.Phases[Measure].Classes)
	}
	if len(res.Events) != 1 || res.Events[0].Kind != "outage" || !res.Events[0].End.IsZero() {
		t.Errorf("events %+v, want one outage still open at the end", res.Events)
	}
}

// A server that is down: every reconnect fails, and the sessions' back-off
// leaves whole ticks without an error. The run still aborts AbortAfter
// after its last commit, and the outage is recorded.
func TestServerDownAbortsWhateverTheBackoff(t *testing.T) {
	var down atomic.Bool
	cfg := config("", nil)
	cfg.Warmup, cfg.Duration = 0, time.Hour
	cfg.AbortAfter = 2 * time.Second
	cfg.NewWorker = func(int) workload.Worker { return &downWorker{down: &down} }
	cfg.Connect = func(context.Context) (engine.Conn, error) {
		if down.Load() {
			return nil, errors.New("connection refused")
		}
		return &fakeConn{}, nil
	}
	time.AfterFunc(300*time.Millisecond, func() { down.Store(true) })
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("ended after %s: %s", took, res.Reason)
	if !res.Aborted || !strings.Contains(res.Reason, "no transaction committed for 2s") {
		t.Errorf("aborted %v reason %q", res.Aborted, res.Reason)
	}
	if took < 2300*time.Millisecond || took > 3*time.Second {
		t.Errorf("took %s: down at 300ms, abort after 2s", took)
	}
	if len(res.Events) != 1 || res.Events[0].Failed < 3 || !res.Events[0].End.IsZero() ||
		!strings.HasPrefix(res.Events[0].Cause, "connection: ") {
		t.Errorf("events %+v", res.Events)
	}
}

// downWorker loses its connection once the server is down.
type downWorker struct {
	fakeWorker
	down *atomic.Bool
}

func (w *downWorker) Run(ctx context.Context, c engine.Conn) (workload.Outcome, error) {
	time.Sleep(time.Millisecond)
	if w.down.Load() {
		return workload.Outcome{}, io.EOF
	}
	return workload.Outcome{}, nil
}

// A server that goes away and comes back: the run goes on, and the outage
// is one event from the first failure to the first commit after it.
func TestOutageThenRecovery(t *testing.T) {
	var down atomic.Bool
	cfg := config("", nil)
	cfg.Warmup, cfg.Duration = 0, 3*time.Second
	cfg.NewWorker = func(int) workload.Worker { return &downWorker{down: &down} }
	cfg.Connect = func(context.Context) (engine.Conn, error) {
		if down.Load() {
			return nil, errors.New("connection refused")
		}
		return &fakeConn{}, nil
	}
	cfg.AbortAfter = 5 * time.Second
	time.AfterFunc(500*time.Millisecond, func() { down.Store(true) })
	// Up again at 1 s: the sessions' back-off (100, 200, 400 ms...) brings
	// them back by 1.2 s, well inside the window on a busy machine too.
	time.AfterFunc(time.Second, func() { down.Store(false) })
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Partial {
		t.Errorf("a run that recovered is partial: %s", res.Reason)
	}
	if len(res.Events) != 1 {
		t.Fatalf("events %+v, want one outage", res.Events)
	}
	e := res.Events[0]
	t.Logf("outage %s..%s, %d failed, %d reconnects", e.Start.Sub(res.Start), e.End.Sub(res.Start), e.Failed, e.Reconnects)
	if from, to := e.Start.Sub(res.Start), e.End.Sub(res.Start); e.Kind != "outage" || from < 450*time.Millisecond ||
		from > 700*time.Millisecond || to < time.Second || to > 3*time.Second {
		t.Errorf("outage %+v from %s to %s: down from 500ms to 1s", e, from, to)
	}
	// It ends at the first commit after it: the first session back.
	if e.Reconnects < 1 || e.Failed < 3 || res.Reconnects < 3 {
		t.Errorf("outage counted %d reconnects and %d failed, the run %d reconnects", e.Reconnects, e.Failed, res.Reconnects)
	}
}

// A failing OnInterval (the journal's disk is full) ends the run at once,
// aborted, with its error as the reason; ticks carry per-type counts and
// the last tick a checkpoint that agrees with the result.
func TestOnIntervalErrorAborts(t *testing.T) {
	cfg := config("", nil)
	cfg.Warmup, cfg.Duration = 0, time.Hour
	var ticks int
	var last Tick
	cfg.OnInterval = func(t Tick) error {
		ticks++
		last = t
		if ticks == 3 {
			return errors.New("journal: no space left on device")
		}
		return nil
	}
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Aborted || res.Reason != "aborted: journal: no space left on device" || time.Since(start) > time.Second {
		t.Errorf("aborted %v reason %q after %s", res.Aborted, res.Reason, time.Since(start))
	}
	if last.Checkpoint == nil {
		t.Fatal("no checkpoint on the last tick")
	}
	if a, b := sum(last.Checkpoint.Phases[Measure].Committed), sum(res.Phases[Measure].Committed); a != b {
		t.Errorf("last checkpoint %d commits, result %d", a, b)
	}
	if len(last.Types) != 2 {
		t.Errorf("tick types %+v", last.Types)
	}
}

// stepWorker's transaction sends steps statements, each after pause,
// and answers its context's end only when block is set (a frozen
// server); done counts the transactions that completed.
type stepWorker struct {
	steps int
	pause time.Duration
	block bool
	done  *atomic.Int64
}

func (w stepWorker) Next() int { return 0 }
func (w stepWorker) Run(ctx context.Context, c engine.Conn) (workload.Outcome, error) {
	for range w.steps {
		c.Exec(ctx, "step")
		if w.block {
			<-ctx.Done()
			return workload.Outcome{}, ctx.Err()
		}
		time.Sleep(w.pause)
	}
	w.done.Add(1)
	return workload.Outcome{}, nil
}

// Interrupted, sessions that send nothing for half a second are cut at
// once (a frozen server: the run ends well before the 2 s grace), and
// sessions still sending are granted the grace to finish.
func TestInterruptCutsStalledSessions(t *testing.T) {
	run := func(w stepWorker) (time.Duration, int64) {
		t.Helper()
		var done atomic.Int64
		w.done = &done
		ctx, cancel := context.WithCancel(context.Background())
		var at time.Time
		time.AfterFunc(300*time.Millisecond, func() { at = time.Now(); cancel() })
		_, err := Run(ctx, Config{Users: 2, Duration: time.Hour, TxTypes: []string{"t"}, Tick: 100 * time.Millisecond,
			NewWorker: func(int) workload.Worker { return w },
			Connect:   func(context.Context) (engine.Conn, error) { return &fakeConn{}, nil }})
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("err %v", err)
		}
		return time.Since(at), done.Load()
	}
	if took, _ := run(stepWorker{steps: 1, block: true}); took > 1500*time.Millisecond {
		t.Errorf("interrupted with every session waiting on its server: ended %s after, want well within the 2 s grace", took)
	}
	// Transactions of 1.2 s, a statement each 100 ms: the one under way
	// at the interrupt completes.
	took, done := run(stepWorker{steps: 12, pause: 100 * time.Millisecond})
	if done < 2 || took > 2500*time.Millisecond {
		t.Errorf("interrupted with sessions still sending: %d transactions completed, ended %s after", done, took)
	}
}
