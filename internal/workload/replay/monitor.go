package replay

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
)

// liveState is what each session is doing, for the monitor: its backend,
// the statement it is sending (since when), or the one it waits to send.
type liveState struct {
	mu       sync.Mutex
	pid      []uint32    // backend; 0 when not connected
	stmt     []int       // statement in flight, -1 none
	since    []time.Time // when it was sent
	syncStmt []int       // statement waiting for synchronisation
}

func newLiveState(n int) *liveState {
	l := &liveState{pid: make([]uint32, n), stmt: make([]int, n), since: make([]time.Time, n), syncStmt: make([]int, n)}
	for i := range l.stmt {
		l.stmt[i], l.syncStmt[i] = -1, -1
	}
	return l
}

func (l *liveState) connected(s int, pid uint32) {
	l.mu.Lock()
	l.pid[s] = pid
	l.mu.Unlock()
}

func (l *liveState) syncing(s, i int) {
	l.mu.Lock()
	l.syncStmt[s] = i
	l.mu.Unlock()
}

// begin marks statement i of session s sent now, and returns now.
func (l *liveState) begin(s, i int) time.Time {
	now := time.Now()
	l.mu.Lock()
	l.stmt[s], l.since[s], l.syncStmt[s] = i, now, -1
	l.mu.Unlock()
	return now
}

// end marks session s's statement answered and returns how long it took.
func (l *liveState) end(s int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stmt[s] = -1
	return time.Since(l.since[s])
}

// inFlight is a statement the server has not answered yet.
type inFlight struct {
	s, i  int
	pid   uint32
	since time.Time
}

func (l *liveState) inFlight() []inFlight {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []inFlight
	for s, i := range l.stmt {
		if i >= 0 && l.pid[s] != 0 {
			out = append(out, inFlight{s, i, l.pid[s], l.since[s]})
		}
	}
	return out
}

// Release is one synchronisation wait let go to break a cycle.
type Release struct {
	At      time.Duration // from the replay's start
	Session int           // the session let go (index in the capture)
	// Statement is the one it then sent; Waited how long it had waited.
	Statement int
	Waited    time.Duration
	// Cycle names the sessions in the cycle and what each waited for.
	Cycle string
}

// Stall is a statement that ran, or a session that waited for
// synchronisation, longer than the stall timeout.
type Stall struct {
	At        time.Duration // from the replay's start, when it was seen
	Session   int
	Statement int
	Seconds   float64 // how long it had lasted when last seen
	What      string  // "statement" or "synchronisation"
	// Waiting says what it waited for: the backends holding its locks,
	// or the sessions whose statements it waits for.
	Waiting string
}

// monitor watches the sessions every checkEvery: it breaks cycles of
// synchronisation waits and the server's lock waits, and reports
// stalls.
type monitor struct {
	p *play
	// conn asks the server which backends block which; opened on first
	// need, nil when it cannot be.
	conn       engine.ReplayConn
	noConn     bool
	mu         sync.Mutex
	waiting    int // sessions waiting for synchronisation now
	stalledNow int // statements and waits past the stall timeout now
	stalled    map[[2]int]*Stall
	release    []Release
}

const (
	// checkEvery is how often stalls are looked for.
	checkEvery = 50 * time.Millisecond
	// While a session waits for synchronisation and another has a
	// statement at the server, a cycle may be forming: the monitor looks
	// every hotEvery, and at once when a new wait begins.
	hotEvery = 2 * time.Millisecond
	// A statement answered within suspectAfter is not asked about: most
	// are, and only a statement that waits for a lock can close a cycle.
	suspectAfter = time.Millisecond
)

func newMonitor(p *play) *monitor { return &monitor{p: p, stalled: map[[2]int]*Stall{}} }

func (m *monitor) run(ctx context.Context, done <-chan struct{}) {
	defer func() {
		if m.conn != nil {
			m.conn.Close()
		}
	}()
	var added chan struct{}
	if m.p.sync != nil {
		added = m.p.sync.added
	}
	t := time.NewTimer(checkEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-added:
		case <-t.C:
		}
		next, t0 := checkEvery, time.Now()
		if m.check(ctx, t0) {
			// As often as it takes, up to a fifth of a CPU: with hundreds
			// of sessions waiting a look costs more.
			next = min(max(hotEvery, 4*time.Since(t0)), checkEvery)
		}
		t.Stop()
		select {
		case <-t.C:
		default:
		}
		t.Reset(next)
	}
}

// status is the progress line's view.
func (m *monitor) status() (waiting, stalled int, released int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waiting, m.stalledNow, int64(len(m.release))
}

// check looks at the sessions now: it reports stalls and breaks a cycle
// of synchronisation and lock waits as soon as the server shows one. It
// says whether a cycle may be forming (a session waits for the others
// while a statement is at the server), to be looked at again soon.
func (m *monitor) check(ctx context.Context, now time.Time) (hot bool) {
	nwaits, oldest := 0, time.Time{}
	if m.p.sync != nil {
		nwaits, oldest = m.p.sync.waitCount()
	}
	flying := m.p.live.inFlight()
	limit := m.p.o.StallTimeout
	var slow []inFlight
	stalled := 0
	for _, f := range flying {
		d := now.Sub(f.since)
		if d >= suspectAfter {
			slow = append(slow, f)
		}
		if d >= limit {
			stalled++
		}
	}
	// The server is asked only when a cycle is possible (a session waits
	// for synchronisation while another's statement is slow at the
	// server) or a statement stalled, whose report says what it waits for.
	var blockers map[uint32][]uint32
	asked := now
	if len(slow) > 0 && (nwaits > 0 || stalled > 0) {
		blockers, asked = m.blockers(ctx, slow)
	}
	for _, f := range flying {
		if d := now.Sub(f.since); d >= limit {
			m.stall(now, f.s, f.i, d, "statement", m.holders(blockers[f.pid]))
		}
	}
	// Who waits for whom is worked out only when it can matter: a lock
	// wait among the replay's sessions, or a wait past the stall timeout.
	locks := m.lockEdges(slow, blockers)
	var waits []waiting
	if nwaits > 0 && (len(locks) > 0 || now.Sub(oldest) >= limit) {
		waits = m.p.sync.blocked()
	}
	for _, w := range waits {
		if d := now.Sub(w.since); d >= limit {
			stalled++
			what := "the statements of sessions " + m.names(w.on)
			if w.creator >= 0 {
				what = fmt.Sprintf("session %d's statement that creates its database, to connect", w.creator)
			}
			m.stall(now, w.s, w.i, d, "synchronisation", what)
		}
	}
	m.mu.Lock()
	m.waiting, m.stalledNow = nwaits, stalled
	m.mu.Unlock()
	// A cycle is broken only on what was true when the server was asked:
	// a session that began to wait since may hold other locks than those
	// seen (its transaction committed and the next began), and the lock
	// wait seen may be over. It is looked at again at the next check.
	waits = slices.DeleteFunc(waits, func(w waiting) bool { return w.since.After(asked) })
	if len(waits) > 0 && len(locks) > 0 {
		m.breakCycles(waits, locks)
	}
	return nwaits > 0 && len(flying) > 0
}

// lockEdges are the server's lock waits among the replay's sessions:
// for each session whose statement waits for a lock, the sessions that
// hold it.
func (m *monitor) lockEdges(slow []inFlight, blockers map[uint32][]uint32) map[int][]int {
	if len(blockers) == 0 {
		return nil
	}
	session := map[uint32]int{}
	for s, pid := range m.p.live.pids() {
		if pid != 0 {
			session[pid] = s
		}
	}
	out := map[int][]int{}
	for _, f := range slow {
		for _, b := range blockers[f.pid] {
			if s, ok := session[b]; ok && s != f.s {
				out[f.s] = append(out[f.s], s)
			}
		}
	}
	return out
}

// holders says which backends hold the locks a statement waits for, and
// whose they are.
func (m *monitor) holders(pids []uint32) string {
	if len(pids) == 0 {
		return "the server (no lock wait seen)"
	}
	session := map[uint32]int{}
	for s, pid := range m.p.live.pids() {
		if pid != 0 {
			session[pid] = s
		}
	}
	out := "a lock held by"
	for i, p := range pids {
		if i > 0 {
			out += ","
		}
		if s, ok := session[p]; ok {
			out += fmt.Sprintf(" backend %d (session %d)", p, s)
		} else {
			out += fmt.Sprintf(" backend %d (not the replay's)", p)
		}
	}
	return out
}

// blockers asks the server which backends block the slow statements',
// and says when it asked.
func (m *monitor) blockers(ctx context.Context, slow []inFlight) (map[uint32][]uint32, time.Time) {
	if m.conn == nil && !m.noConn {
		c, err := m.p.o.Connect(ctx, "", "", "dbparity-replay-monitor")
		if err != nil {
			m.noConn = true
			m.p.rec.note(fmt.Sprintf("the replay's monitor could not connect (%v): cycles of synchronisation and lock waits cannot be broken, only reported as stalls", err))
			return nil, time.Now()
		}
		m.conn = c
	}
	if m.conn == nil {
		return nil, time.Now()
	}
	pids := make([]uint32, len(slow))
	for i, f := range slow {
		pids[i] = f.pid
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	b, asked, err := m.conn.Blockers(qctx, pids)
	if err != nil {
		return nil, time.Now()
	}
	return b, asked
}

// breakCycles lets go, in each cycle of waits, one synchronisation wait:
// a session that waits for another session's commit which waits, at the
// server, for a lock held by the first (directly or through other
// sessions' waits of either kind). Synchronisation alone never waits in
// a circle, so every cycle holds a lock wait a -> h, and is found by
// searching from h for a way back to a. The search is linear in the
// sessions however many wait: each waiter waits for a prefix of one list
// of sessions (syncer.blocked), so the part of that list already taken
// is not taken again.
func (m *monitor) breakCycles(waits []waiting, locks map[int][]int) {
	n := len(m.p.c.Sessions)
	waitOf := make([]int, n) // index into waits, -1 for none
	for i := range waitOf {
		waitOf[i] = -1
	}
	for i, w := range waits {
		waitOf[w.s] = i
	}
	// All waiters' lists are prefixes of the longest.
	var list []int
	for _, w := range waits {
		if len(w.on) > len(list) {
			list = w.on
		}
	}
	released := make([]bool, n)
	holders := make([]int, 0, len(locks))
	for a := range locks {
		holders = append(holders, locks[a]...)
	}
	slices.Sort(holders)
	holders = slices.Compact(holders)
	for _, h := range holders {
		path := findCycle(h, locks, waits, waitOf, list, released)
		if path == nil {
			continue
		}
		// Let go the oldest synchronisation wait on the cycle.
		var pick *waiting
		for _, st := range path {
			if st.kind == syncEdge {
				if w := &waits[waitOf[st.from]]; pick == nil || w.since.Before(pick.since) {
					pick = w
				}
			}
		}
		if pick == nil || !m.p.sync.release(pick.s) {
			continue
		}
		released[pick.s] = true
		now := time.Now()
		m.mu.Lock()
		m.release = append(m.release, Release{At: now.Sub(m.p.start), Session: pick.s, Statement: pick.i,
			Waited: now.Sub(pick.since), Cycle: describe(path, pick.s)})
		m.mu.Unlock()
	}
}

const (
	syncEdge = "synchronisation"
	lockEdge = "a lock"
)

// step is one wait on a cycle: from waits for to, by kind.
type step struct {
	from, to int
	kind     string
}

// findCycle searches from h, breadth first, for a session a that waits
// for a lock h holds, and returns the cycle h ... a -> h; nil when there
// is none. Sessions already released in this pass are not waiting.
func findCycle(h int, locks map[int][]int, waits []waiting, waitOf []int, list []int, released []bool) []step {
	parent := map[int]step{h: {from: -1}}
	queue := []int{h}
	taken := 0 // of list, by the waiters expanded so far
	closes := func(v int) bool { return slices.Contains(locks[v], h) }
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		if closes(v) {
			path := []step{{v, h, lockEdge}}
			for x := v; x != h; x = parent[x].from {
				path = append(path, parent[x])
			}
			slices.Reverse(path)
			return path
		}
		visit := func(to int, kind string) {
			if _, seen := parent[to]; !seen {
				parent[to] = step{v, to, kind}
				queue = append(queue, to)
			}
		}
		for _, to := range locks[v] {
			visit(to, lockEdge)
		}
		if i := waitOf[v]; i >= 0 && !released[v] {
			for ; taken < len(waits[i].on); taken++ {
				visit(list[taken], syncEdge)
			}
		}
	}
	return nil
}

// describe writes a cycle from the released session round
// ("session 3 waits for synchronisation on session 5, which waits for a
// lock on session 3").
func describe(path []step, from int) string {
	k := slices.IndexFunc(path, func(st step) bool { return st.from == from })
	s := fmt.Sprintf("session %d", from)
	for i, st := range slices.Concat(path[k:], path[:k]) {
		if i > 0 {
			s += ", which"
		}
		s += fmt.Sprintf(" waits for %s on session %d", st.kind, st.to)
	}
	return s
}

func (l *liveState) pids() []uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]uint32(nil), l.pid...)
}

// stall records (or updates) a stall.
func (m *monitor) stall(now time.Time, s, i int, d time.Duration, what, waiting string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]int{s, i}
	st := m.stalled[k]
	if st == nil {
		st = &Stall{At: now.Sub(m.p.start), Session: s, Statement: i, What: what}
		m.stalled[k] = st
	}
	st.Seconds, st.Waiting = d.Seconds(), waiting
}

func (m *monitor) names(sessions []int) string {
	out := ""
	for i, s := range sessions {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprint(s)
	}
	return out
}

// report adds the monitor's findings to the result.
func (m *monitor) report(r *Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r.Releases = append(r.Releases, m.release...)
	for _, s := range m.stalled {
		r.Stalls = append(r.Stalls, *s)
	}
	sort.Slice(r.Stalls, func(a, b int) bool { return r.Stalls[a].At < r.Stalls[b].At })
}
