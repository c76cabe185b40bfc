package replay

import (
	"context"
	"sort"
	"strings"
	"sync"
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
	// A statement that may write or lock also waits for the commits that
	// completed while it ran in the capture: it may have waited for
	// their locks, and must not take those locks first.
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
// in the capture; a statement needs the first need of them complete.
// done marks completion; prefix is how many, from the first, are all
// complete.
type syncer struct {
	need [][]int // per session, per statement: the prefix it needs
	pos  [][]int // per session, per statement: its place in end order, -1 when no one waits for it
	// owner of each place in end order: session and statement.
	owner []stmtRef
	// Events is how many statements others may wait for.
	events int

	mu      sync.Mutex
	done    []bool
	prefix  int
	waiters map[*waiter]bool
	// added, when set, is told (without blocking) of each new waiter.
	added chan struct{}
}

type stmtRef struct{ s, i int }

// waiter is a session waiting for the prefix to reach need.
type waiter struct {
	s, i    int
	need    int
	since   time.Time
	ch      chan struct{} // closed when it may go
	release bool          // let go by the cycle breaker, not by the prefix
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
func commitPoints(c *capture.Capture) [][]bool {
	out := make([][]bool, len(c.Sessions))
	for s, ss := range c.Sessions {
		out[s] = make([]bool, len(ss.Statements))
		var tx txState
		for i, st := range ss.Statements {
			text := c.Texts[st.Text]
			kind := txKindOf(text)
			inBlock, blockFailed := tx.inBlock, tx.failed
			committed, _ := tx.step(kind, st.Error != nil, "")
			switch {
			case st.Error != nil:
			case kind == txCommit:
				// Outside a block it commits what an implicit transaction
				// (MySQL's autocommit=0) did: counted, to be safe.
				out[s][i] = !inBlock || !blockFailed
			case kind == txOther && committed:
				out[s][i] = capture.Writes(text)
			case kind == txOther && commitPrepared(text):
				out[s][i] = true
			}
		}
	}
	return out
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
	// Commit order follows the log's order where the capture has it;
	// statement order keeps its times.
	bySeq := mode == SyncCommit
	if mode == SyncCommit {
		points = commitPoints(c)
	}
	var all []ref
	y := &syncer{need: make([][]int, len(c.Sessions)), pos: make([][]int, len(c.Sessions)), waiters: map[*waiter]bool{}}
	for s, ss := range c.Sessions {
		y.need[s], y.pos[s] = make([]int, len(ss.Statements)), make([]int, len(ss.Statements))
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
	y.events = len(all)
	for s, ss := range c.Sessions {
		// next is the place of the session's own next event: a statement
		// never waits for itself or for what its session does later.
		next := len(all)
		for i := len(ss.Statements) - 1; i >= 0; i-- {
			if y.pos[s][i] >= 0 {
				next = y.pos[s][i]
			}
			by := threshold(c, mode, ss.Statements, i)
			n := sort.Search(len(ends), func(k int) bool { return !before(ends[k], by, bySeq) })
			y.need[s][i] = min(n, next)
		}
	}
	y.done = make([]bool, len(all))
	return y
}

// threshold is the point in the capture before which every event must be
// complete for statement i to go.
//
// Statement order: the statement's start, by time (strictly before it,
// so that statements the log stamps alike stay concurrent).
//
// Commit order: the statement's end. A statement that ran while another
// session committed may have waited for that commit's locks, and must
// not take them first; the log knows the order in which statements
// ended, not when they started, so the commits that ended before this
// one did are those it waits for. A COMMIT waits only for what the
// statement before it waited for: commits of transactions that did not
// touch each other's rows commit in any order, as the server's group
// commit lets them.
func threshold(c *capture.Capture, mode string, sts []capture.Statement, i int) endKey {
	st := sts[i]
	if mode != SyncCommit {
		return endKey{at: st.Offset}
	}
	if txKindOf(c.Texts[st.Text]) == txCommit {
		if i == 0 {
			return endKey{at: st.Offset}
		}
		p := sts[i-1]
		return endKey{p.Offset + p.Duration, p.Seq}
	}
	return endKey{st.Offset + st.Duration, st.Seq}
}

// complete marks statement i of session s complete (run, failed or
// skipped) and lets go the waiters whose prefix is now complete.
func (y *syncer) complete(s, i int) {
	k := y.pos[s][i]
	if k < 0 {
		return // no one waits for it
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	y.done[k] = true
	for y.prefix < len(y.done) && y.done[y.prefix] {
		y.prefix++
	}
	for w := range y.waiters {
		if w.need <= y.prefix {
			close(w.ch)
			delete(y.waiters, w)
		}
	}
}

// wait blocks until statement i of session s may go: false when ctx ends
// first. It returns how long it waited.
func (y *syncer) wait(ctx context.Context, s, i int) (time.Duration, bool) {
	y.mu.Lock()
	need := y.need[s][i]
	if need <= y.prefix {
		y.mu.Unlock()
		return 0, ctx.Err() == nil
	}
	w := &waiter{s: s, i: i, need: need, since: time.Now(), ch: make(chan struct{})}
	y.waiters[w] = true
	y.mu.Unlock()
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
// own the incomplete events below each one's need. One pass over those
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
	sort.Slice(ws, func(a, b int) bool { return ws[a].need < ws[b].need })
	seen := make([]bool, len(y.need))
	var on []int
	k := y.prefix
	out := make([]waiting, 0, len(ws))
	for _, w := range ws {
		for ; k < w.need; k++ {
			if s := y.owner[k].s; !y.done[k] && !seen[s] {
				seen[s] = true
				on = append(on, s)
			}
		}
		out = append(out, waiting{s: w.s, i: w.i, since: w.since, on: on[:len(on):len(on)]})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].since.Before(out[b].since) })
	return out
}

// release lets session s's waiter go now, whatever it waits for; false
// when it was not waiting.
func (y *syncer) release(s int) bool {
	y.mu.Lock()
	defer y.mu.Unlock()
	for w := range y.waiters {
		if w.s == s {
			w.release = true
			close(w.ch)
			delete(y.waiters, w)
			return true
		}
	}
	return false
}
