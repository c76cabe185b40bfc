// Package replay is the replay workload: it plays a capture (see package
// capture) against a PostgreSQL target, one connection per captured
// session, each opened at its captured start and issuing its statements in
// their captured order, at their captured offsets scaled by a speed (or as
// fast as possible), with their bind parameters and prepared statements as
// captured. It times every statement, compares each outcome with the
// captured one (the same error, a new one, one that vanished) and records
// how far it fell behind its schedule.
//
// Unlike the generated workloads it is not driven by package driver:
// sessions come and go on the capture's schedule instead of running for a
// window, so it has its own scheduler and reports its own Result.
package replay

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/target"
)

// Timing orders.
const (
	// OrderSession keeps each session's own order and timing (pgreplay-go's
	// model): sessions do not wait for each other, so a replay can diverge
	// where the capture relied on one session's statement before another's.
	OrderSession = "session"
	// OrderGlobal also issues statements across sessions in their captured
	// start order (pgreplay's model): a statement waits until every one
	// that started before it in the capture has been issued (not finished,
	// so that a statement blocked on a lock does not stop the others).
	OrderGlobal = "global"
)

// Options say what to replay and how.
type Options struct {
	Capture *capture.Capture
	// Speed scales the captured offsets: 1 replays at the captured pace, 2
	// twice as fast; 0 replays as fast as possible, order preserved.
	Speed float64
	Order string // OrderSession (default) or OrderGlobal
	// MapUser and MapDB rename captured users and databases.
	MapUser, MapDB map[string]string
	// Connect opens a session's connection; user or database "" keep the
	// target's.
	Connect func(ctx context.Context, user, database, app string) (target.ReplayConn, error)
	// Literals keeps one statement text per fingerprint, literals and all.
	Literals bool
	// Tick is the interval of the series (default 1s); Progress, if set,
	// is called once per tick.
	Tick     time.Duration
	Progress func(Progress)
	// OnInterval, if set, receives each interval of the series as it
	// closes (for a journal).
	OnInterval func(metrics.Interval)
	// Started, if set, is called when the replay's clock starts and when
	// it stops (collectors take their window there).
	Started, Stopped func(time.Time)
}

// Progress is the live state of a replay.
type Progress struct {
	Elapsed          time.Duration
	Issued, Total    int64
	Errors           int64
	Lag              time.Duration // the latest statement's lag behind its schedule
	ActiveSessions   int
	CaptureProgress  time.Duration // the capture time replayed so far
	CaptureTotal     time.Duration
	StatementsPerSec float64
}

// Run replays o.Capture. Cancelling ctx stops it: sessions issue nothing
// more, and the result is returned marked partial.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Capture == nil || len(o.Capture.Sessions) == 0 {
		return nil, errors.New("the capture holds no sessions")
	}
	if o.Speed < 0 {
		return nil, fmt.Errorf("speed %v: must be positive, or 0 for as fast as possible", o.Speed)
	}
	switch o.Order {
	case "":
		o.Order = OrderSession
	case OrderSession, OrderGlobal:
	default:
		return nil, fmt.Errorf("order %q: choose %s or %s", o.Order, OrderSession, OrderGlobal)
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	p := newPlay(o)
	return p.run(ctx)
}

// play is one replay in progress.
type play struct {
	o    Options
	c    *capture.Capture
	fps  []int // fingerprint index of each capture text
	rec  *recorder
	seq  [][]int64 // global order: each statement's ticket, by session
	turn struct {
		sync.Mutex
		next    int64                   // the ticket whose turn it is
		waiters map[int64]chan struct{} // closed when their ticket's turn comes
	}
	start time.Time
}

func newPlay(o Options) *play {
	c := o.Capture
	p := &play{o: o, c: c}
	p.turn.waiters = map[int64]chan struct{}{}
	fpIndex := map[string]int{}
	var fps []string
	for _, text := range c.Texts {
		f := capture.Fingerprint(text)
		i, ok := fpIndex[f]
		if !ok {
			i = len(fps)
			fpIndex[f] = i
			fps = append(fps, f)
		}
		p.fps = append(p.fps, i)
	}
	p.rec = newRecorder(c, fps, p.fps, o.Literals)
	if o.Order == OrderGlobal {
		p.seq = tickets(c)
	}
	return p
}

// tickets numbers every statement in captured start order (ties: session
// order, then position).
func tickets(c *capture.Capture) [][]int64 {
	type ref struct {
		at   time.Duration
		s, i int
	}
	var all []ref
	seq := make([][]int64, len(c.Sessions))
	for s, ss := range c.Sessions {
		seq[s] = make([]int64, len(ss.Statements))
		for i, st := range ss.Statements {
			all = append(all, ref{st.Offset, s, i})
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].at < all[b].at })
	for n, r := range all {
		seq[r.s][r.i] = int64(n)
	}
	return seq
}

// at is when a capture offset falls in the replay.
func (p *play) at(offset time.Duration) time.Time {
	if p.o.Speed == 0 {
		return p.start
	}
	return p.start.Add(time.Duration(float64(offset) / p.o.Speed))
}

func (p *play) run(ctx context.Context) (*Result, error) {
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	p.start = time.Now()
	p.rec.start(p.start)
	if p.o.Started != nil {
		p.o.Started(p.start)
	}
	var wg sync.WaitGroup
	for i := range p.c.Sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.session(stopCtx, i)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(p.o.Tick)
	defer tick.Stop()
	interrupted := false
loop:
	for {
		select {
		case <-done:
			break loop
		case <-ctx.Done():
			interrupted = true
		case now := <-tick.C:
			pr, iv := p.rec.tick(now)
			if p.o.OnInterval != nil && iv.Seconds > 0 {
				p.o.OnInterval(iv)
			}
			pr.CaptureTotal = p.c.End.Sub(p.c.Start)
			if p.o.Speed > 0 {
				pr.CaptureProgress = time.Duration(float64(now.Sub(p.start)) * p.o.Speed)
			}
			if p.o.Progress != nil {
				p.o.Progress(pr)
			}
		}
	}
	end := time.Now()
	if p.o.Stopped != nil {
		p.o.Stopped(end)
	}
	p.rec.tick(end)
	r := p.rec.result(p.c, p.o, p.start, end)
	if interrupted {
		r.Partial, r.PartialReason = true, "interrupted"
		return r, ctx.Err()
	}
	return r, nil
}

// session replays captured session i.
func (p *play) session(ctx context.Context, i int) {
	s := &p.c.Sessions[i]
	// Statements not reached are counted, and in global order hand on
	// their tickets.
	next, why := 0, "replay stopped"
	defer func() {
		for ; next < len(s.Statements); next++ {
			p.skip(ctx, i, next, why)
		}
	}()
	if !sleepUntil(ctx, p.at(s.Start)) {
		return
	}
	user, db := mapped(p.o.MapUser, s.User), mapped(p.o.MapDB, s.Database)
	app := s.Application
	if app == "" {
		app = "dbparity-replay"
	}
	conn, err := p.o.Connect(ctx, user, db, app)
	var ce *target.ConnectError
	if err != nil && errors.As(err, &ce) && ce.Refused() && (user != "" || db != "") {
		// Credentials do not allow this user or database: the target's own.
		if conn, err = p.o.Connect(ctx, "", "", app); err == nil {
			p.rec.note(fmt.Sprintf("sessions of %s@%s ran as the target's user and database: %s", user, db, ce.Error()))
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			why = "the session could not connect"
			p.rec.sessionFailed(err)
		}
		return
	}
	p.rec.sessionStarted()
	defer func() {
		conn.Close()
		p.rec.sessionEnded()
	}()
	for ; next < len(s.Statements); next++ {
		st := &s.Statements[next]
		if ctx.Err() != nil {
			return
		}
		if st.ParamsTruncated {
			p.skip(ctx, i, next, "parameters truncated in the log")
			continue
		}
		due := p.at(st.Offset)
		if !sleepUntil(ctx, due) || !p.waitTurn(ctx, i, next) {
			return
		}
		issued := time.Now()
		// The next statement in global order may go once this one is on
		// the wire, not when it is answered.
		sent := func() { p.passTurn(i, next) }
		var tag string
		var err error
		text := p.c.Texts[st.Text]
		switch {
		case st.Prepared != "":
			tag, err = conn.Prepared(ctx, st.Prepared, text, st.Params, sent)
		case st.Extended:
			tag, err = conn.Extended(ctx, text, st.Params, sent)
		default:
			tag, err = conn.Simple(ctx, text, sent)
		}
		lag := time.Duration(-1)
		if p.o.Speed > 0 {
			lag = max(0, issued.Sub(due))
		}
		p.rec.statement(p.c, i, next, time.Since(issued), lag, tag, err)
	}
	// Hold the connection until the captured disconnection.
	sleepUntil(ctx, p.at(s.End))
}

// skip accounts for a statement that is not replayed, handing on its
// ticket in global order.
func (p *play) skip(ctx context.Context, s, i int, reason string) {
	if p.seq != nil && p.waitTurn(ctx, s, i) {
		p.passTurn(s, i)
	} else if p.seq != nil {
		// Stopping: hand the ticket on anyway so no one waits forever.
		p.passTurn(s, i)
	}
	p.rec.skipped(reason)
}

// waitTurn blocks, in global order, until every earlier statement was
// issued; it returns false when the replay stops.
func (p *play) waitTurn(ctx context.Context, s, i int) bool {
	if p.seq == nil {
		return true
	}
	mine := p.seq[s][i]
	p.turn.Lock()
	if p.turn.next >= mine {
		p.turn.Unlock()
		return ctx.Err() == nil
	}
	// Only the owner of the next ticket is woken, not every session.
	ch := make(chan struct{})
	p.turn.waiters[mine] = ch
	p.turn.Unlock()
	select {
	case <-ch:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

func (p *play) passTurn(s, i int) {
	if p.seq == nil {
		return
	}
	p.turn.Lock()
	defer p.turn.Unlock()
	if t := p.seq[s][i]; t >= p.turn.next {
		p.turn.next = t + 1
		if ch, ok := p.turn.waiters[t+1]; ok {
			close(ch)
			delete(p.turn.waiters, t+1)
		}
	}
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func mapped(m map[string]string, name string) string {
	if v, ok := m[name]; ok {
		return v
	}
	return name
}

// sqlState is the SQLSTATE of a replay error, "" for none and "other" for
// an error that is not the server's (a lost connection).
func sqlState(err error) string {
	if err == nil {
		return ""
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return "other"
}

// isBegin reports whether a statement opens a transaction block.
func isBegin(text string) bool {
	f := strings.Fields(strings.ToUpper(text))
	if len(f) == 0 {
		return false
	}
	w := strings.TrimSuffix(f[0], ";")
	return w == "BEGIN" || (w == "START" && len(f) > 1 && strings.HasPrefix(f[1], "TRANSACTION"))
}

// isCommit reports whether a statement ends a transaction with a commit.
func isCommit(text string) bool {
	f := strings.Fields(strings.ToUpper(strings.TrimLeft(text, " \t\r\n(")))
	if len(f) == 0 {
		return false
	}
	w := strings.TrimSuffix(f[0], ";")
	return w == "COMMIT" || (w == "END" && (len(f) == 1 || strings.HasPrefix(f[1], "TRANSACTION") || strings.HasPrefix(f[1], "WORK") || f[1] == ";"))
}
