// Package replay is the replay workload: it plays a capture (see package
// capture) against a PostgreSQL target, one connection per captured
// session, each opened at its captured start and issuing its statements in
// their captured order, at their captured offsets scaled by a speed (or as
// fast as possible), with their bind parameters and prepared statements as
// captured. A statement waits for the commits of other sessions that
// completed before it started in the capture (SyncCommit), or for every
// statement that ended before it (SyncStatement), and in every mode for
// the DDL captured before it (a session, before it connects, for the
// statement that creates its database); a monitor breaks, as soon as it
// forms, a cycle of such waits with the server's lock waits, and reports
// what stalls. It times every statement, compares each outcome with the
// captured one (the same error, a new one, one that vanished, the data
// the log did not hold; apart, those that ended otherwise inside a
// transaction that rolled back as captured, and failures a log without
// errors cannot tell) and records how far it fell behind its schedule and
// how long it waited for the others.
//
// Unlike the generated workloads it is not driven by package driver:
// sessions come and go on the capture's schedule instead of running for a
// window, so it has its own scheduler and reports its own Result.
package replay

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/metrics"
)

// Options say what to replay and how.
type Options struct {
	Capture *capture.Capture
	// Speed scales the captured offsets: 1 replays at the captured pace, 2
	// twice as fast; 0 replays as fast as possible, order preserved.
	Speed float64
	// Sync is SyncCommit (the default), SyncStatement or SyncNone.
	Sync string
	// StallTimeout is how long a statement may run, or a session wait for
	// synchronisation, before it is reported stalled (default 60s).
	StallTimeout time.Duration
	// MapUser and MapDB rename captured users and databases.
	MapUser, MapDB map[string]string
	// Connect opens a session's connection; user or database "" keep the
	// target's.
	Connect func(ctx context.Context, user, database, app string) (engine.ReplayConn, error)
	// Keep, when set, says whether a captured session is replayed (the
	// session filters); ExcludeStatement skips statements whose text it
	// matches; ReplayAdmin sends the statements that change the server
	// (ALTER SYSTEM, pg_reload_conf(), ...), skipped otherwise.
	Keep             func(s *capture.Session) bool
	ExcludeStatement *regexp.Regexp
	ReplayAdmin      bool
	// Types are the parameter type OIDs to bind each capture text with
	// (by text index; nil: as the server infers), from Type.
	Types map[int][]uint32
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
	// SyncWaiting counts the sessions waiting for synchronisation now;
	// Stalled those stalled past the stall timeout; Released the waits
	// let go to break a cycle with the server's lock waits, so far.
	SyncWaiting, Stalled int
	Released             int64
}

// Run replays o.Capture. Cancelling ctx stops it: sessions issue nothing
// more, statements in flight are cancelled, and the result is returned
// marked partial.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Capture == nil || len(o.Capture.Sessions) == 0 {
		return nil, errors.New("the capture holds no sessions")
	}
	if o.Speed < 0 {
		return nil, fmt.Errorf("speed %v: must be positive, or 0 for as fast as possible", o.Speed)
	}
	switch o.Sync {
	case "":
		o.Sync = SyncCommit
	case SyncCapture:
		o.Sync = SyncStatement
	case SyncCommit, SyncStatement, SyncNone:
	default:
		return nil, fmt.Errorf("sync %q: choose %s, %s or %s", o.Sync, SyncCommit, SyncStatement, SyncNone)
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 60 * time.Second
	}
	p := newPlay(o)
	return p.run(ctx)
}

// play is one replay in progress.
type play struct {
	o   Options
	c   *capture.Capture
	fps []int // fingerprint index of each capture text
	rec *recorder
	// sync orders the sessions: by commits or statements as o.Sync says,
	// and by DDL in every mode (with SyncNone by DDL alone; nil when the
	// capture holds none).
	sync *syncer
	live *liveState
	keep []bool // the sessions the filters keep
	// why is, per capture text, why it is not sent as captured: ""
	// (sent), or a reason to skip it, or capture.NoCopyData (sent empty).
	why   []string
	kinds []int // txKindOf of each capture text
	// sql is each capture text as sent: the text, or with the database
	// it names renamed by MapDB (USE, CREATE and DROP DATABASE).
	sql []string
	// insertLike marks the texts (INSERT, REPLACE with VALUES or SET)
	// that a MySQL capture's insert ids are sent with (withInsertID). An
	// INSERT ... SELECT is not given its: InnoDB reserves values ahead
	// for it, and one given its first value reserves none, which would
	// leave the table's counter lower than the capture's.
	insertLike []bool
	// errorsKnown: the capture holds its statements' errors (a wire
	// capture, PostgreSQL's logs), so that one without is one that
	// succeeded.
	errorsKnown bool
	start       time.Time
}

func newPlay(o Options) *play {
	c := o.Capture
	p := &play{o: o, c: c, live: newLiveState(len(c.Sessions)), keep: make([]bool, len(c.Sessions)), errorsKnown: c.ErrorsKnown()}
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
		p.why = append(p.why, p.reason(text))
		p.kinds = append(p.kinds, txKindOf(text))
		p.sql = append(p.sql, renameDatabase(text, c.Engine == capture.EngineMySQL, o.MapDB))
		p.insertLike = append(p.insertLike, c.Engine == capture.EngineMySQL && capture.InsertLike(text) && !capture.InsertSelect(text))
	}
	for i := range c.Sessions {
		p.keep[i] = o.Keep == nil || o.Keep(&c.Sessions[i])
	}
	p.rec = newRecorder(c, fps, p.fps, p.kinds, p.keep, p.why, o.Literals)
	if o.Sync != SyncNone || slices.ContainsFunc(c.Texts, capture.DDL) {
		p.sync = newSyncer(c, o.Sync)
		p.sync.added = make(chan struct{}, 1)
	}
	return p
}

// renameDatabase writes, in a statement that names a whole database (USE,
// CREATE or DROP DATABASE), the name MapDB gives it: the replay's
// sessions connect to the renamed database, and a workload that makes
// its own makes (and drops) the renamed one, never the captured one.
func renameDatabase(text string, mysql bool, m map[string]string) string {
	if len(m) == 0 {
		return text
	}
	_, name, at, end := capture.Database(text, mysql)
	to, ok := m[name]
	if name == "" || !ok || to == name {
		return text
	}
	q := "\""
	if mysql {
		q = "`"
	}
	return text[:at] + q + strings.ReplaceAll(to, q, q+q) + q + text[end:]
}

// Reasons a statement is not sent.
const (
	skipTruncated = "parameters truncated in the log"
	skipFiltered  = "session excluded by --include-session / --exclude-session"
	skipExcluded  = "excluded by --exclude-statement"
	skipAdmin     = "changes the server (skipped; --replay-admin sends it)"
	skipStopped   = "replay stopped"
	skipNoConnect = "the session could not connect"
)

// reason says why a capture text is not sent as captured, if it is not.
func (p *play) reason(text string) string {
	switch {
	case p.o.ExcludeStatement != nil && p.o.ExcludeStatement.MatchString(text):
		return skipExcluded
	case !p.o.ReplayAdmin && capture.Admin(text) != "":
		return skipAdmin
	}
	return capture.Unreplayable(text)
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
	// The statements of sessions the filters leave out are complete from
	// the start: no one waits for them.
	for i, s := range p.c.Sessions {
		if !p.keep[i] {
			for k := range s.Statements {
				p.rec.skipped(skipFiltered)
				if p.sync != nil {
					p.sync.complete(i, k)
				}
			}
		}
	}
	p.start = time.Now()
	p.rec.start(p.start)
	if p.o.Started != nil {
		p.o.Started(p.start)
	}
	var wg sync.WaitGroup
	for i := range p.c.Sessions {
		if !p.keep[i] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.session(stopCtx, i)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	mon := newMonitor(p)
	monDone := make(chan struct{})
	go func() { defer close(monDone); mon.run(stopCtx, done) }()
	tick := time.NewTicker(p.o.Tick)
	defer tick.Stop()
	interrupted := false
	ctxDone := ctx.Done()
loop:
	for {
		select {
		case <-done:
			break loop
		case <-ctxDone:
			// Sessions stop at once; statements in flight are cancelled
			// through their context.
			interrupted, ctxDone = true, nil
			stop()
		case now := <-tick.C:
			pr, iv := p.rec.tick(now)
			if p.o.OnInterval != nil && iv.Seconds > 0 {
				p.o.OnInterval(iv)
			}
			pr.CaptureTotal = p.c.End.Sub(p.c.Start)
			if p.o.Speed > 0 {
				pr.CaptureProgress = time.Duration(float64(now.Sub(p.start)) * p.o.Speed)
			}
			pr.SyncWaiting, pr.Stalled, pr.Released = mon.status()
			if p.o.Progress != nil {
				p.o.Progress(pr)
			}
		}
	}
	// Sessions stopped by the interrupt may all be done before the loop
	// saw it (both ready at once, select took done): interrupted all the
	// same.
	interrupted = interrupted || ctx.Err() != nil
	end := time.Now()
	stop()
	<-monDone
	if p.o.Stopped != nil {
		p.o.Stopped(end)
	}
	p.rec.tick(end)
	r := p.rec.result(p.c, p.o, p.start, end)
	mon.report(r)
	if interrupted {
		r.Partial, r.PartialReason = true, "interrupted"
		return r, ctx.Err()
	}
	return r, nil
}

// session replays captured session i.
func (p *play) session(ctx context.Context, i int) {
	s := &p.c.Sessions[i]
	// Outcomes held for a block still open are settled: the server rolls
	// the block back as the connection closes.
	defer func() { p.rec.sessionDone(i, ctx.Err() != nil) }()
	// Statements not reached are counted, and complete for the others.
	next, why := 0, skipStopped
	defer func() {
		for ; next < len(s.Statements); next++ {
			p.skip(i, next, why)
		}
	}()
	var clock pacer
	defer clock.stop()
	if !clock.sleepUntil(ctx, p.at(s.Start)) {
		return
	}
	user, db := mapped(p.o.MapUser, s.User), mapped(p.o.MapDB, s.Database)
	app := s.Application
	if app == "" {
		app = "dbparity-replay"
	}
	// A database the capture creates exists once its statement is done.
	if p.sync != nil && p.sync.connEvt[i] >= 0 {
		p.live.syncing(i, 0)
		if _, ok := p.sync.waitConnect(ctx, i); !ok {
			return
		}
	}
	conn, err := p.o.Connect(ctx, user, db, app)
	var ce *engine.ConnectError
	if err != nil && errors.As(err, &ce) && ce.Refused() && (user != "" || db != "") {
		// Credentials do not allow this user or database: the target's own.
		if conn, err = p.o.Connect(ctx, "", "", app); err == nil {
			p.rec.note(fmt.Sprintf("sessions of %s@%s ran as the target's user and database: %s", user, db, ce.Error()))
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			why = skipNoConnect
			p.rec.sessionFailed(err)
		}
		return
	}
	p.rec.sessionStarted()
	p.live.connected(i, conn.PID())
	defer func() {
		p.live.connected(i, 0)
		conn.Close()
		p.rec.sessionEnded()
	}()
	inBlock := false // in an explicit transaction block, as captured
	blockStart := -1 // the statement that began the block
	for ; next < len(s.Statements); next++ {
		st := &s.Statements[next]
		if ctx.Err() != nil {
			return
		}
		how := p.why[st.Text]
		if st.ParamsTruncated {
			how = skipTruncated
		}
		copyData := how == capture.NoCopyData && st.CopyData != nil
		if copyData {
			how = "" // a wire capture kept the data: sent as the client sent it
		}
		if how != "" && how != capture.NoCopyData {
			p.skip(i, next, how)
			continue
		}
		due := p.at(st.Offset)
		if !clock.sleepUntil(ctx, due) {
			return
		}
		var waited time.Duration
		if p.sync != nil {
			p.live.syncing(i, next)
			w, ok := p.sync.wait(ctx, i, next)
			if !ok {
				return
			}
			waited = w
		}
		if batch := p.batchFrom(conn, i, next, inBlock); len(batch) > 1 {
			if !inBlock && p.kinds[st.Text] == txBegin {
				blockStart = next
			}
			ran, ok := p.sendBatch(ctx, conn, i, batch, waited, blockStart)
			for _, j := range batch[:ran] {
				inBlock = blockAfter(inBlock, p.kinds[s.Statements[j].Text])
			}
			if !inBlock && p.sync != nil {
				p.sync.unfree(i)
			}
			if !ok {
				next += ran
				return
			}
			next += ran - 1
			continue
		}
		if !inBlock && p.kinds[st.Text] == txBegin {
			blockStart = next
		}
		inBlock = blockAfter(inBlock, p.kinds[st.Text])
		issued := p.live.begin(i, next)
		if p.sync != nil {
			p.sync.issued(i, next)
		}
		tag, err := p.send(ctx, conn, st, how)
		if blockStart >= 0 && inBlock && p.retriable(st, err) {
			tag, err = p.retry(ctx, conn, i, blockStart, next, err)
		}
		took := p.live.end(i)
		if p.sync != nil && err == nil {
			p.sync.observe(st.Text, took)
		}
		if ctx.Err() != nil && err != nil {
			// Cancelled by the stop: neither the capture's outcome nor a
			// new one, so not recorded as either.
			p.rec.skipped(skipStopped)
			p.completed(i, next)
			next++
			return
		}
		lag := time.Duration(-1)
		if p.o.Speed > 0 {
			lag = max(0, issued.Sub(due))
		}
		p.rec.statement(p.c, i, next, took, lag, waited, tag, err, how)
		if err == nil && inBlock && p.rolledBackByServer(st) {
			// The server rolled the captured transaction back with its
			// deadlock and the client went on without a ROLLBACK of its
			// own (sysbench begins again): the replay, which escaped the
			// deadlock, ends its transaction the same way, or it would
			// commit what the server threw away.
			if _, rerr := conn.Simple(ctx, "ROLLBACK"); rerr == nil {
				inBlock = false
				p.rec.serverRollback(i, next)
			}
		}
		p.completed(i, next)
		if !inBlock && p.sync != nil {
			p.sync.unfree(i)
		}
	}
	// Hold the connection until the captured disconnection.
	clock.sleepUntil(ctx, p.at(s.End))
}

// send sends one statement of a session on conn as captured; how is why
// it is sent otherwise (capture.NoCopyData: a COPY whose rows the
// capture does not hold, sent without them).
func (p *play) send(ctx context.Context, conn engine.ReplayConn, st *capture.Statement, how string) (string, error) {
	text := p.sql[st.Text]
	types := p.o.Types[st.Text]
	switch {
	case st.CopyData != nil: // a wire capture kept the rows: as the client sent them
		return conn.CopyIn(ctx, text, st.CopyData)
	case how == capture.NoCopyData:
		return conn.CopyIn(ctx, text, nil)
	case st.Prepared != "":
		return conn.Prepared(ctx, st.Prepared, text, st.Params, types)
	case st.Extended:
		return conn.Extended(ctx, text, st.Params, types)
	default:
		return conn.Simple(ctx, p.withInsertID(conn, st, text))
	}
}

// maxRetries bounds how many times a block goes again after deadlocks
// the capture had not met.
const maxRetries = 3

// retriable is whether err, a replayed statement's, is a deadlock or a
// serialization failure (SQLSTATE 40001, PostgreSQL's 40P01) where the
// captured statement succeeded: the server ended the replay's
// transaction for an order of lock requests the capture did not have
// (two sessions' requests that cross; which of them the server picks as
// the victim depends on which closes the cycle). Only a capture that
// holds its errors can say the statement succeeded: MySQL's and
// MariaDB's logs hold none, and a client's own retry of a deadlocked
// transaction is in them, which a replay's retry would apply twice.
func (p *play) retriable(st *capture.Statement, err error) bool {
	if err == nil || st.Error != nil || !p.errorsKnown {
		return false
	}
	switch sqlState(err) {
	case "40001", "40P01":
		return true
	}
	return false
}

// retry runs session s's block again, from its first statement b up to
// statement j, which met first (a deadlock the capture had not, see
// retriable), after a ROLLBACK: what the captured client does with a
// deadlock, and what makes the replay end as the capture did, where
// this transaction committed (MySQL and MariaDB choose the victim by
// the transactions' weight, then which closed the cycle). The earlier
// statements' outcomes stay those already recorded; j's is returned:
// the last try's, or first when a statement before it failed otherwise
// than captured. At most maxRetries tries; each try is counted.
func (p *play) retry(ctx context.Context, conn engine.ReplayConn, s, b, j int, first error) (string, error) {
	sts := p.c.Sessions[s].Statements
	tag, err := "", first
	for try := 0; try < maxRetries && p.retriable(&sts[j], err) && ctx.Err() == nil; try++ {
		p.rec.retried()
		if _, rerr := conn.Simple(ctx, "ROLLBACK"); rerr != nil {
			return "", rerr
		}
		again := false
		for k := b; k < j && !again; k++ {
			st := &sts[k]
			how := p.why[st.Text]
			if st.ParamsTruncated || (how != "" && how != capture.NoCopyData) {
				continue // not sent the first time either
			}
			_, kerr := p.send(ctx, conn, st, how)
			switch {
			case p.retriable(st, kerr):
				again = true
			case kerr != nil && (st.Error == nil || sqlState(kerr) != st.Error.SQLState):
				return "", first // the block does not run as captured
			}
		}
		if again {
			continue
		}
		tag, err = p.send(ctx, conn, &sts[j], p.why[sts[j].Text])
	}
	return tag, err
}

// rolledBackByServer is whether a captured statement's error rolled its
// whole transaction back on the server without the client asking: a
// MySQL or MariaDB deadlock (SQLSTATE 40001). PostgreSQL's errors leave
// the block aborted until the client's own ROLLBACK, which the capture
// holds.
func (p *play) rolledBackByServer(st *capture.Statement) bool {
	return p.c.Engine == capture.EngineMySQL && st.Error != nil && st.Error.SQLState == "40001"
}

// maxBatch bounds the statements sent in one round trip.
const maxBatch = 64

// blockAfter is whether a session is in an explicit transaction block
// after a statement of this kind.
func blockAfter(in bool, kind int) bool {
	switch kind {
	case txBegin:
		return true
	case txCommit, txRollback, txPrepare:
		return false
	}
	return in
}

// batchFrom returns the statements of session s from i on to send in one
// round trip, when the replay is behind its schedule: i (due, and free to
// go) and those after it of the same explicit transaction block that are
// due already, free to go as far as the synchronisation is concerned,
// and sent as captured, up to the block's end. Outside a block each
// statement is its own transaction and goes alone, as it did. Fewer than
// two: none.
func (p *play) batchFrom(conn engine.ReplayConn, s, i int, inBlock bool) []int {
	sts := p.c.Sessions[s].Statements
	if i+1 >= len(sts) || !p.at(sts[i+1].Offset).Before(time.Now()) {
		return nil // on schedule: each statement at its time
	}
	var out []int
	for j := i; j < len(sts) && len(out) < maxBatch; j++ {
		st := &sts[j]
		kind := p.kinds[st.Text]
		switch {
		case p.why[st.Text] != "" || st.ParamsTruncated:
			return out
		case p.rolledBackByServer(st):
			return out // alone: what follows depends on its outcome
		case kind == txBegin && j > i:
			return out
		case j > i && (!p.at(st.Offset).Before(time.Now()) || (p.sync != nil && !p.sync.ready(s, j))):
			return out
		}
		ok, last := conn.Batchable(st.Prepared, p.sql[st.Text], st.Extended || st.Prepared != "")
		if !ok {
			return out
		}
		inBlock = blockAfter(inBlock, kind)
		if !inBlock && kind != txCommit && kind != txRollback && kind != txPrepare {
			return out
		}
		out = append(out, j)
		if !inBlock || last {
			return out // the block's end, or the connection's
		}
	}
	return out
}

// sendBatch sends the statements idx of session s in one round trip and
// records each as its answer comes. It returns how many were answered
// and recorded (at least one unless the replay stopped; the rest go
// again), and false when the replay stopped.
func (p *play) sendBatch(ctx context.Context, conn engine.ReplayConn, s int, idx []int, waited time.Duration, blockStart int) (int, bool) {
	sts := p.c.Sessions[s].Statements
	batch := make([]engine.BatchStatement, len(idx))
	for k, j := range idx {
		st := &sts[j]
		batch[k] = engine.BatchStatement{Name: st.Prepared, SQL: p.withInsertID(conn, st, p.sql[st.Text]), Params: st.Params, Types: p.o.Types[st.Text]}
	}
	// Each statement counts as sent once the one before it is answered:
	// what others wait to see sent (a COMMIT, so that they queue behind
	// it) must not be stuck behind its own session's lock wait.
	issued := p.live.begin(s, idx[0])
	if p.sync != nil {
		p.sync.issued(s, idx[0])
	}
	stopped := false
	// A deadlock the capture had not met ends the batch (it stops at a
	// failure): its block goes again once the batch's answers are read,
	// and the statement's outcome is recorded then.
	retryK, retryTook, retryErr, retried := -1, time.Duration(0), error(nil), false
	record := func(k int, tag string, err error, took time.Duration) {
		j := idx[k]
		inside := blockStart >= 0 && blockStart < j && blockAfter(true, p.kinds[sts[j].Text]) // not its BEGIN or its end
		if !retried && inside && p.retriable(&sts[j], err) && ctx.Err() == nil {
			retryK, retryTook, retryErr = k, took, err
			return
		}
		if ctx.Err() != nil && err != nil {
			p.rec.skipped(skipStopped)
			p.completed(s, j)
			stopped = true
			return
		}
		lag := time.Duration(-1)
		if p.o.Speed > 0 {
			lag = max(0, issued.Sub(p.at(sts[j].Offset)))
		}
		w := time.Duration(0)
		if k == 0 {
			w = waited
		}
		p.rec.statement(p.c, s, j, took, lag, w, tag, err, "")
		if p.sync != nil && err == nil {
			p.sync.observe(sts[j].Text, took)
		}
		p.completed(s, j)
		if k+1 < len(idx) && !retried { // after a retry the batch is over
			p.live.begin(s, idx[k+1])
			if p.sync != nil {
				p.sync.issued(s, idx[k+1])
			}
		}
	}
	ran, err := conn.Batch(ctx, batch, record)
	if retryK >= 0 {
		t0 := time.Now()
		tag, rerr := p.retry(ctx, conn, s, blockStart, idx[retryK], retryErr)
		k := retryK
		retryK, retried = -1, true
		record(k, tag, rerr, retryTook+time.Since(t0))
	}
	if err != nil && ran < len(idx) && !stopped {
		// The connection failed: the outcome of the statement it was on.
		record(ran, "", err, p.live.end(s))
		ran++
	}
	p.live.end(s)
	if stopped || ctx.Err() != nil {
		return ran, false
	}
	return ran, true
}

// withInsertID is the text to send for a statement whose capture knows
// the first AUTO_INCREMENT value it took (a MySQL or MariaDB wire
// capture, a slow log that holds SET insert_id): made to take that value
// again where the connection can (MariaDB). Concurrent sessions' inserts
// between the same commits reach the server in any order, and would
// take the values in that order; each takes its own instead, and the
// rows end with the ids they had (and the rows that took an id from
// them, through LAST_INSERT_ID() or the application, with theirs).
func (p *play) withInsertID(conn engine.ReplayConn, st *capture.Statement, text string) string {
	if st.InsertID <= 0 || !p.insertLike[st.Text] {
		return text
	}
	if c, ok := conn.(engine.InsertIDs); ok {
		if with, ok := c.WithInsertID(text, st.InsertID); ok {
			return with
		}
	}
	return text
}

// completed marks a statement done for synchronisation.
func (p *play) completed(s, i int) {
	if p.sync != nil {
		p.sync.complete(s, i)
	}
}

// skip accounts for a statement that is not sent.
func (p *play) skip(s, i int, reason string) {
	p.rec.notSent(p.c, s, i, reason)
	p.completed(s, i)
}

// pacer sleeps a session until its statements' times, with one timer
// for all its sleeps.
type pacer struct{ t *time.Timer }

// minSleep is the shortest sleep taken: a statement due sooner is sent
// at once (a timer's wake-up comes later than that anyway).
const minSleep = 50 * time.Microsecond

// sleepUntil waits until t: false when ctx ends first.
func (c *pacer) sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d < minSleep {
		return ctx.Err() == nil
	}
	if c.t == nil {
		c.t = time.NewTimer(d)
	} else {
		c.t.Reset(d) // stopped or fired: since Go 1.23 no stale value waits
	}
	select {
	case <-c.t.C:
		return true
	case <-ctx.Done():
		c.t.Stop()
		return false
	}
}

func (c *pacer) stop() {
	if c.t != nil {
		c.t.Stop()
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
func sqlState(err error) string { return engine.SQLState(err) }
