package replay

import (
	"context"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
)

// Synchronisation modes.
const (
	// SyncCommit (the default) sends a statement only after every commit
	// of another session that completed before it started in the
	// capture: COMMITs, and autocommit statements that may have changed
	// data. What a statement could see of the others' work it sees again;
	// everything else is left to the server's own locks, as it was in
	// production (Oracle Database Replay's commit-order synchronisation).
	// The commits that ended while it ran in the capture it may have
	// waited for (their locks): it is sent once they have been sent, so
	// that it queues behind them at the server, as it did.
	SyncCommit = "commit"
	// SyncStatement sends a statement only after every statement of
	// another session that ended before it started in the capture: the
	// strictest order, which contends with the server's lock waits.
	SyncStatement = "statement"
	// SyncCapture is SyncStatement's earlier name.
	SyncCapture = "capture"
	// SyncNone keeps each session's own order and pace only
	// (pgreplay-go's model): sessions never wait for each other.
	SyncNone = "none"
)

// syncer enforces SyncCommit or SyncStatement. The events others wait
// for (commits, or every statement) are numbered in the order they ended
// in the capture; a statement needs the first need of them complete, and
// the first needSent of them at least sent to the server. done and sent
// mark them; prefix and prefixSent are how many, from the first, are all
// complete, or all sent.
type syncer struct {
	need     [][]int // per session, per statement: the prefix it needs complete
	needSent [][]int // per session, per statement: the prefix it needs sent (>= need)
	pos      [][]int // per session, per statement: its place in end order, -1 when no one waits for it
	// owner of each place in end order: session and statement.
	owner []stmtRef

	mu         sync.Mutex
	done, sent []bool
	prefix     int
	prefixSent int
	waiters    map[*waiter]bool
	// free marks the sessions let go to break a cycle, until their
	// transaction ends: each of their statements until then would close
	// the same cycle again (they hold the lock the other session waits
	// for until they commit).
	free []bool
	// writer marks, in a log written as statements arrive, the writers
	// others wait for (issued holds them back until they settle).
	writer [][]bool
	// added, when set, is told (without blocking) of each new waiter.
	added chan struct{}
	// connEvt is, per session, the place of the event that creates its
	// database, which it waits for before it connects; -1 for none.
	connEvt []int
	// reads marks the capture texts that neither write nor lock
	// (capture.Writes) nor end a transaction: a read's answer time is how
	// long a statement takes to reach its rows, a writer's also what it
	// waited for locks, and a COMMIT's its log flush.
	reads []bool
	// readAnswer and answer are moving means of the reads' and of every
	// statement's answer times (ns, each at most maxSettle), readDev the
	// reads' mean deviation from theirs: what a writer is given to reach
	// its locks (settle).
	readAnswer, readDev, answer atomic.Int64
}

type stmtRef struct{ s, i int }

// waiter is a session waiting for the prefixes to reach need and
// needSent.
type waiter struct {
	s, i           int
	need, needSent int
	evt            int // an event it waits for besides (connecting: its database's creation), -1 none
	since          time.Time
	ch             chan struct{} // closed when it may go
	release        bool          // let go by the cycle breaker, not by the prefix
}

// endKey orders statements by when they ended in the capture: by their
// place in the log (Seq) when the capture has it, since the log's lines
// come in the order statements ended while its clock has milliseconds
// only; else by the time.
type endKey struct {
	at  time.Duration
	seq int64
}

func before(a, b endKey, bySeq bool) bool {
	if bySeq {
		return a.seq < b.seq
	}
	return a.at < b.at
}

// commitPoints marks, per session, the statements that committed in the
// capture: a COMMIT (or END) of a block that had not failed, a COMMIT
// PREPARED, and a successful autocommit statement that may have written.
func commitPoints(c *capture.Capture, t texts) [][]bool {
	out := make([][]bool, len(c.Sessions))
	for s, ss := range c.Sessions {
		out[s] = make([]bool, len(ss.Statements))
		tx := txState{mysql: c.Engine == capture.EngineMySQL}
		for i, st := range ss.Statements {
			text := c.Texts[st.Text]
			kind := t.kind[st.Text]
			inBlock, blockFailed := tx.inBlock, tx.failed
			committed, _ := tx.step(kind, errState(st.Error), "")
			switch {
			case st.Error != nil:
			case kind == txCommit:
				// Outside a block it commits what an implicit transaction
				// (MySQL's autocommit=0) did: counted, to be safe.
				out[s][i] = !inBlock || !blockFailed
			case kind == txOther && committed:
				out[s][i] = t.writes[st.Text]
			case kind == txOther && commitPrepared(text):
				out[s][i] = true
			}
		}
	}
	return out
}

// texts is what synchronisation reads of each capture text, once per
// text: a capture repeats a few texts a million times.
type texts struct {
	kind   []int  // txKindOf
	writes []bool // capture.Writes
	ddl    []bool // capture.DDL
	// creates is the database a CREATE DATABASE (MySQL's CREATE SCHEMA
	// too) makes, "" for other texts.
	creates []string
	// newRows marks the INSERTs that only add rows (capture.NewRowsOnly).
	newRows []bool
}

func classify(c *capture.Capture) texts {
	n := len(c.Texts)
	t := texts{kind: make([]int, n), writes: make([]bool, n), ddl: make([]bool, n), creates: make([]string, n), newRows: make([]bool, n)}
	mysql := c.Engine == capture.EngineMySQL
	for i, text := range c.Texts {
		t.kind[i], t.writes[i], t.ddl[i] = txKindOf(text), capture.Writes(text), capture.DDL(text)
		t.newRows[i] = t.writes[i] && capture.NewRowsOnly(text)
		if t.ddl[i] {
			if verb, name, _, _ := capture.Database(text, mysql); verb == "CREATE" {
				t.creates[i] = name
			}
		}
	}
	return t
}

func commitPrepared(text string) bool {
	w := strings.Fields(strings.ToUpper(firstN(strings.TrimSpace(text), 40)))
	return len(w) >= 2 && w[0] == "COMMIT" && w[1] == "PREPARED"
}

func newSyncer(c *capture.Capture, mode string) *syncer {
	type ref struct {
		end  endKey
		s, i int
	}
	var points [][]bool
	classes := classify(c)
	// Commit order follows the log's order where the capture has it;
	// statement order keeps its times.
	bySeq := mode == SyncCommit || mode == SyncNone
	// (Only where the log gives the line order: the writers are ordered
	// by it.)
	start := mode == SyncCommit && startLogged(c) && sequenced(c)
	switch mode {
	case SyncCommit:
		points = commitPoints(c, classes)
	case SyncNone:
		points = make([][]bool, len(c.Sessions))
		for s, ss := range c.Sessions {
			points[s] = make([]bool, len(ss.Statements))
		}
	}
	if start {
		// A log written as statements arrive orders the writers too: each
		// is an event the others' later writers wait to see sent (and
		// settled, see issued), so that they queue for its rows' locks
		// behind it, as they arrived at the server.
		for s, ss := range c.Sessions {
			for i, st := range ss.Statements {
				if classes.writes[st.Text] && classes.kind[st.Text] == txOther {
					points[s][i] = true
				}
			}
		}
	}
	// DDL is an event in every mode: a statement waits for the DDL
	// captured before it (ddlNeed), and a session for the statement that
	// creates its database (connEvt).
	ddl := ddlEvents(c, classes)
	if points != nil {
		for s, ss := range c.Sessions {
			for i := range ss.Statements {
				points[s][i] = points[s][i] || ddl[s][i]
			}
		}
	}
	var all []ref
	y := &syncer{need: make([][]int, len(c.Sessions)), needSent: make([][]int, len(c.Sessions)),
		pos: make([][]int, len(c.Sessions)), waiters: map[*waiter]bool{}, reads: make([]bool, len(c.Texts))}
	for i := range y.reads {
		y.reads[i] = classes.kind[i] == txOther && !classes.writes[i]
	}
	for s, ss := range c.Sessions {
		y.need[s], y.needSent[s], y.pos[s] = make([]int, len(ss.Statements)), make([]int, len(ss.Statements)), make([]int, len(ss.Statements))
		for i, st := range ss.Statements {
			y.pos[s][i] = -1
			bySeq = bySeq && st.Seq > 0
			if points == nil || points[s][i] {
				all = append(all, ref{endKey{st.Offset + st.Duration, st.Seq}, s, i})
			}
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return before(all[a].end, all[b].end, bySeq) })
	ends := make([]endKey, len(all))
	y.owner = make([]stmtRef, len(all))
	for k, r := range all {
		y.pos[r.s][r.i], ends[k], y.owner[k] = k, r.end, stmtRef{r.s, r.i}
	}
	// latest[k] is the latest time among the first k+1 events.
	latest := make([]time.Duration, len(all))
	for k, e := range ends {
		latest[k] = e.at
		if k > 0 {
			latest[k] = max(latest[k], latest[k-1])
		}
	}
	prefix := func(by endKey) int {
		return sort.Search(len(ends), func(k int) bool { return !before(ends[k], by, bySeq) })
	}
	// In a log written as statements arrive, an event is known to have
	// ended once its session's next statement arrived: known[k] is the
	// latest such arrival among the first k+1 events, so a statement
	// that arrived after it follows all of them complete.
	var known []int64
	if start {
		known = make([]int64, len(all))
		for k, r := range all {
			ss := c.Sessions[r.s].Statements
			n := ss[r.i].Seq + tieLines // its session's last: soon after, presumably
			if r.i+1 < len(ss) {
				n = ss[r.i+1].Seq
			}
			known[k] = n
			if k > 0 {
				known[k] = max(n, known[k-1])
			}
		}
		y.writer = make([][]bool, len(c.Sessions))
		for s, ss := range c.Sessions {
			y.writer[s] = make([]bool, len(ss.Statements))
			for i, st := range ss.Statements {
				y.writer[s][i] = points[s][i] && classes.kind[st.Text] == txOther && classes.writes[st.Text] && !classes.newRows[st.Text]
			}
		}
	}
	ddlNeed := ddlPrefix(c, ddl, y.pos)
	y.connEvt = connEvents(c, classes, y.pos)
	// Synchronisation alone never waits in a circle: a statement waits
	// only for events placed before its own session's next event, so
	// along any chain of waits the places fall.
	for s, ss := range c.Sessions {
		// free marks the statements sent outside a transaction block.
		free := make([]bool, len(ss.Statements))
		tx := txState{mysql: c.Engine == capture.EngineMySQL}
		for i, st := range ss.Statements {
			free[i] = !tx.inBlock
			tx.step(classes.kind[st.Text], errState(st.Error), "")
		}
		// next is the place of the session's own next event: a statement
		// never waits for itself or for what its session does later.
		next := len(all)
		for i := len(ss.Statements) - 1; i >= 0; i-- {
			if y.pos[s][i] >= 0 {
				next = y.pos[s][i]
			}
			st := ss.Statements[i]
			// The DDL captured before it, whatever the mode.
			ddl := min(ddlNeed(st, free[i]), next)
			switch mode {
			case SyncNone:
				y.need[s][i], y.needSent[s][i] = ddl, ddl
				continue
			case SyncStatement:
				// Every statement that ended by this one's start, by time:
				// strictly before it, so that statements the log stamps
				// alike stay concurrent, as they may have been.
				n := max(min(prefix(endKey{at: st.Offset}), next), ddl)
				y.need[s][i], y.needSent[s][i] = n, n
				continue
			}
			// A COMMIT waits only for what the statement before it
			// waited for: commits of transactions that did not touch
			// each other's rows commit in any order, as the server's
			// group commit lets them.
			k := i
			for k > 0 && classes.kind[ss.Statements[k].Text] == txCommit {
				k--
			}
			st = ss.Statements[k]
			// Sent: every commit logged before it ended. Complete: those
			// that ended before it started, as far as the log can tell:
			// logged before the session's previous statement ended, or
			// earlier by the clock by more than its step.
			sent := prefix(endKey{st.Offset + st.Duration, st.Seq})
			if bySeq && k == i && classes.writes[st.Text] && known == nil {
				// A writer that waited for a lock ends right after the
				// commit that freed it, and its line may reach the log
				// first (the committer, descheduled, writes its own a
				// little later): the commits logged within a few lines
				// and the clock's step after it are sent before it too.
				// Any of them it did not wait for did not wait for it
				// either.
				j := sent
				for j < len(ends) && ends[j].seq <= st.Seq+tieLines && ends[j].at < st.Offset+st.Duration+clockStep {
					j++
				}
				sent = j
			}
			done := 0
			switch {
			case known != nil:
				done = sort.Search(len(known), func(j int) bool { return known[j] >= st.Seq })
			case bySeq:
				if k > 0 {
					p := ss.Statements[k-1]
					done = prefix(endKey{p.Offset + p.Duration, p.Seq})
				}
				done = max(done, sort.Search(len(latest), func(j int) bool { return latest[j] >= st.Offset-clockStep }))
			default:
				if k > 0 {
					p := ss.Statements[k-1]
					done = prefix(endKey{p.Offset + p.Duration, p.Seq})
				}
				done = max(done, prefix(endKey{at: st.Offset}))
			}
			y.need[s][i] = max(min(done, sent, next), ddl)
			y.needSent[s][i] = max(min(sent, next), y.need[s][i])
		}
	}
	y.done, y.sent = make([]bool, len(all)), make([]bool, len(all))
	y.free = make([]bool, len(c.Sessions))
	return y
}

// startLogged tells a capture read from a log written as statements
// arrive (MySQL's general log, PostgreSQL's log_statement alone): no
// statement in it has a duration, where a log written as they end gives
// each that succeeded its own.
func startLogged(c *capture.Capture) bool {
	for _, ss := range c.Sessions {
		for _, st := range ss.Statements {
			if st.Duration > 0 {
				return false
			}
		}
	}
	return true
}

// sequenced tells a capture whose statements all have their place in the
// log's line order (Seq).
func sequenced(c *capture.Capture) bool {
	for _, ss := range c.Sessions {
		for _, st := range ss.Statements {
			if st.Seq <= 0 {
				return false
			}
		}
	}
	return true
}

// clockStep is the resolution of the log's clock: times closer than
// this cannot be ordered by it.
const clockStep = time.Millisecond

// tieLines is how far apart in the log two lines of one millisecond may
// be written in the other order than their statements ended (measured:
// pgbench's TPC-B on one row, 4 and 200 clients, 2 cores).
const tieLines = 8

// complete marks statement i of session s complete (run, failed or
// skipped) and lets go the waiters whose prefixes are now complete.
func (y *syncer) complete(s, i int) { y.mark(s, i, true) }

// issued marks statement i of session s sent to the server.
//
// A writer of a log written as statements arrive counts as sent only
// once it has settled: answered, or at the server for settle, since it
// is then queued for its locks (and another sent at once might overtake
// it on its way to them).
func (y *syncer) issued(s, i int) {
	if y.writer != nil && y.writer[s][i] {
		time.AfterFunc(y.settle(), func() { y.mark(s, i, false) })
		return
	}
	y.mark(s, i, false)
}

// A writer is given the time by which a read sent with it would almost
// surely have been answered: twice the replay's reads' mean answer time,
// or that mean and four times their mean deviation from it when longer
// (TCP's retransmission timeout, RFC 6298), at least minSettle, before
// the others' writers may follow it. A read's answer (sent, parsed,
// planned, its rows reached and returned) takes longer than a writer's
// way to its rows, and grows with the host's load as that way does; on
// a saturated host the way's tail is long, and the deviation follows it.
// Before any read was answered, and in a replay with no reads, it is
// given the mean answer time of all statements, at least settleAfter.
// At most maxSettle either way: a lock wait says nothing of the host's
// speed.
//
// On a saturated host a writer sent waits for a CPU before it reaches
// its locks: with a second test suite beside, a hot row's UPDATE sent
// 1 ms after another's overtook it, and one sent twice the reads' mean
// after (no deviation counted) too (the row's last writer then differed
// from the capture's). On a quiet one a fixed 1 ms was what made the
// writers of a MariaDB general log one after another slower than their
// capture (sysbench 1.20x, mysqlslap 2.30x): point reads answer there
// in about 0.1 ms.
const (
	minSettle   = 200 * time.Microsecond
	settleAfter = time.Millisecond
	maxSettle   = 20 * time.Millisecond
)

// settle is how long a writer sent now is given to reach its locks.
func (y *syncer) settle() time.Duration {
	if r := time.Duration(y.readAnswer.Load()); r > 0 {
		dev := time.Duration(y.readDev.Load())
		return min(max(minSettle, 2*r, r+4*dev), maxSettle)
	}
	return max(settleAfter, time.Duration(y.answer.Load()))
}

// observe adds the answer time of a statement of capture text text (from
// its send to its answer, at most maxSettle) to the moving means settle
// reads. Sessions that observe at once may lose one another's sample: a
// mean for a timer, not a count.
func (y *syncer) observe(text int, took time.Duration) {
	took = min(took, maxSettle)
	ewma(&y.answer, took, 32)
	if text >= 0 && text < len(y.reads) && y.reads[text] {
		if mean := y.readAnswer.Load(); mean > 0 {
			ewma(&y.readDev, time.Duration(abs(int64(took)-mean)), 4)
		}
		ewma(&y.readAnswer, took, 8)
	}
}

// ewma moves the mean m by a gain-th of the way to took; its first
// sample is taken whole.
func ewma(m *atomic.Int64, took time.Duration, gain int64) {
	old := m.Load()
	if old == 0 {
		m.Store(max(int64(took), 1))
		return
	}
	m.Store(old + (int64(took)-old)/gain)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func (y *syncer) mark(s, i int, done bool) {
	k := y.pos[s][i]
	if k < 0 {
		return // no one waits for it
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	y.sent[k] = true
	if done {
		y.done[k] = true
	}
	for y.prefix < len(y.done) && y.done[y.prefix] {
		y.prefix++
	}
	y.prefixSent = max(y.prefixSent, y.prefix)
	for y.prefixSent < len(y.sent) && y.sent[y.prefixSent] {
		y.prefixSent++
	}
	for w := range y.waiters {
		if w.need <= y.prefix && w.needSent <= y.prefixSent && (w.evt < 0 || y.done[w.evt]) {
			close(w.ch)
			delete(y.waiters, w)
		}
	}
}

// ready tells, without waiting, whether statement i of session s may go.
func (y *syncer) ready(s, i int) bool {
	y.mu.Lock()
	defer y.mu.Unlock()
	return y.free[s] || (y.need[s][i] <= y.prefix && y.needSent[s][i] <= y.prefixSent)
}

// unfree ends session s's freedom from synchronisation (its transaction
// ended).
func (y *syncer) unfree(s int) {
	y.mu.Lock()
	y.free[s] = false
	y.mu.Unlock()
}

// wait blocks until statement i of session s may go: false when ctx ends
// first. It returns how long it waited.
func (y *syncer) wait(ctx context.Context, s, i int) (time.Duration, bool) {
	y.mu.Lock()
	need, needSent := y.need[s][i], y.needSent[s][i]
	if y.free[s] || (need <= y.prefix && needSent <= y.prefixSent) {
		y.mu.Unlock()
		return 0, ctx.Err() == nil
	}
	w := &waiter{s: s, i: i, need: need, needSent: needSent, evt: -1, since: time.Now(), ch: make(chan struct{})}
	y.waiters[w] = true
	y.mu.Unlock()
	return y.await(ctx, w)
}

// await waits for w, registered, to be let go: false when ctx ends
// first. It returns how long it waited.
func (y *syncer) await(ctx context.Context, w *waiter) (time.Duration, bool) {
	if y.added != nil {
		select {
		case y.added <- struct{}{}:
		default:
		}
	}
	select {
	case <-w.ch:
		return time.Since(w.since), ctx.Err() == nil
	case <-ctx.Done():
		y.mu.Lock()
		delete(y.waiters, w)
		y.mu.Unlock()
		return time.Since(w.since), false
	}
}

// waiting is what each waiting session waits for: the sessions that own
// the incomplete statements of its prefix, and since when.
type waiting struct {
	s, i  int
	since time.Time
	on    []int // sessions
	// creator is, for a session waiting to connect, the session whose
	// statement creates its database; -1 otherwise.
	creator int
}

// waitCount says how many sessions wait, and since when the oldest.
func (y *syncer) waitCount() (int, time.Time) {
	y.mu.Lock()
	defer y.mu.Unlock()
	var oldest time.Time
	for w := range y.waiters {
		if oldest.IsZero() || w.since.Before(oldest) {
			oldest = w.since
		}
	}
	return len(y.waiters), oldest
}

// blocked lists the waiters and whom they wait for: the sessions that
// own the incomplete events below each one's needSent. One pass over those
// events serves every waiter: taken in order of need, each waits for the
// sessions met so far.
func (y *syncer) blocked() []waiting {
	y.mu.Lock()
	defer y.mu.Unlock()
	if len(y.waiters) == 0 {
		return nil
	}
	ws := make([]*waiter, 0, len(y.waiters))
	for w := range y.waiters {
		ws = append(ws, w)
	}
	// A waiter waits for the events below needSent that are not
	// complete (those only sent are COMMITs under way, which wait for no
	// lock): the sessions that own them.
	sort.Slice(ws, func(a, b int) bool { return ws[a].needSent < ws[b].needSent })
	seen := make([]bool, len(y.need))
	var on []int
	k := y.prefix
	out := make([]waiting, 0, len(ws))
	for _, w := range ws {
		for ; k < w.needSent; k++ {
			if s := y.owner[k].s; !y.done[k] && !seen[s] {
				seen[s] = true
				on = append(on, s)
			}
		}
		wt := waiting{s: w.s, i: w.i, since: w.since, on: on[:len(on):len(on)], creator: -1}
		if w.evt >= 0 {
			wt.creator = y.owner[w.evt].s
		}
		out = append(out, wt)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].since.Before(out[b].since) })
	return out
}

// release lets session s's waiter go now, whatever it waits for, and
// its statements after it until its transaction ends (unfree); false
// when it was not waiting.
func (y *syncer) release(s int) bool {
	y.mu.Lock()
	defer y.mu.Unlock()
	for w := range y.waiters {
		if w.s == s {
			y.free[s] = true
			w.release = true
			close(w.ch)
			delete(y.waiters, w)
			return true
		}
	}
	return false
}
