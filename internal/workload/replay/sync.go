package replay

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
)

// Synchronisation modes.
const (
	// SyncCapture sends a statement only after every statement of another
	// session that ended before it started in the capture has completed in
	// the replay: what the capture proves happened before it happens
	// before it again, and what was concurrent stays concurrent.
	SyncCapture = "capture"
	// SyncNone keeps each session's own order and pace only
	// (pgreplay-go's model): sessions never wait for each other.
	SyncNone = "none"
)

// syncer enforces SyncCapture. The statements are numbered in the order
// their capture ends; a statement that started at time t needs the first
// need of them complete, those that ended by t. done marks completion;
// prefix is how many, from the first, are all complete.
type syncer struct {
	need [][]int // per session, per statement: the prefix it needs
	pos  [][]int // per session, per statement: its place in end order
	// owner of each place in end order: session and statement.
	owner []stmtRef

	mu      sync.Mutex
	done    []bool
	prefix  int
	waiters map[*waiter]bool
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

func newSyncer(c *capture.Capture) *syncer {
	type ref struct {
		end  time.Duration
		s, i int
	}
	var all []ref
	y := &syncer{need: make([][]int, len(c.Sessions)), pos: make([][]int, len(c.Sessions)), waiters: map[*waiter]bool{}}
	for s, ss := range c.Sessions {
		y.need[s], y.pos[s] = make([]int, len(ss.Statements)), make([]int, len(ss.Statements))
		for i, st := range ss.Statements {
			all = append(all, ref{st.Offset + st.Duration, s, i})
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].end < all[b].end })
	ends := make([]time.Duration, len(all))
	y.owner = make([]stmtRef, len(all))
	for k, r := range all {
		y.pos[r.s][r.i], ends[k], y.owner[k] = k, r.end, stmtRef{r.s, r.i}
	}
	for s, ss := range c.Sessions {
		for i, st := range ss.Statements {
			// Every statement that ended by this one's start: strictly
			// before it, so that statements the log stamps alike (its clock
			// has milliseconds) stay concurrent, as they may have been.
			n := sort.Search(len(ends), func(k int) bool { return ends[k] >= st.Offset })
			// A session's own earlier statements are in it (they ended
			// before), and its later ones are not: n never counts itself.
			y.need[s][i] = min(n, y.pos[s][i])
		}
	}
	y.done = make([]bool, len(all))
	return y
}

// complete marks statement i of session s complete (run, failed or
// skipped) and lets go the waiters whose prefix is now complete.
func (y *syncer) complete(s, i int) {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.done[y.pos[s][i]] = true
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

// blocked lists the waiters and whom they wait for.
func (y *syncer) blocked() []waiting {
	y.mu.Lock()
	defer y.mu.Unlock()
	var out []waiting
	for w := range y.waiters {
		seen := map[int]bool{}
		var on []int
		for k := y.prefix; k < w.need; k++ {
			if !y.done[k] && !seen[y.owner[k].s] {
				seen[y.owner[k].s] = true
				on = append(on, y.owner[k].s)
			}
		}
		out = append(out, waiting{s: w.s, i: w.i, since: w.since, on: on})
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
