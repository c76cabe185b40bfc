package replay

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/target"
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
	conn       target.ReplayConn
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
		next := checkEvery
		if m.check(ctx, time.Now()) {
			next = hotEvery
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
	var waits []waiting
	if m.p.sync != nil {
		waits = m.p.sync.blocked()
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
	if len(slow) > 0 && (len(waits) > 0 || stalled > 0) {
		blockers = m.blockers(ctx, slow)
	}
	for _, f := range flying {
		if d := now.Sub(f.since); d >= limit {
			m.stall(now, f.s, f.i, d, "statement", m.holders(blockers[f.pid]))
		}
	}
	for _, w := range waits {
		if d := now.Sub(w.since); d >= limit {
			stalled++
			m.stall(now, w.s, w.i, d, "synchronisation", "the statements of sessions "+m.names(w.on))
		}
	}
	m.mu.Lock()
	m.waiting, m.stalledNow = len(waits), stalled
	m.mu.Unlock()
	if len(waits) > 0 && blockers != nil {
		m.breakCycles(now, waits, slow, blockers)
	}
	return len(waits) > 0 && len(flying) > 0
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

// blockers asks the server which backends block the slow statements'.
func (m *monitor) blockers(ctx context.Context, slow []inFlight) map[uint32][]uint32 {
	if m.conn == nil && !m.noConn {
		c, err := m.p.o.Connect(ctx, "", "", "dbparity-replay-monitor")
		if err != nil {
			m.noConn = true
			m.p.rec.note(fmt.Sprintf("the replay's monitor could not connect (%v): cycles of synchronisation and lock waits cannot be broken, only reported as stalls", err))
			return nil
		}
		m.conn = c
	}
	if m.conn == nil {
		return nil
	}
	pids := make([]uint32, len(slow))
	for i, f := range slow {
		pids[i] = f.pid
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	b, err := m.conn.Blockers(qctx, pids)
	if err != nil {
		return nil
	}
	return b
}

// breakCycles lets go the oldest synchronisation wait that is part of a
// cycle: it waits for a session that waits, at the server, for a lock
// held by it (directly or through other sessions' waits of either kind).
func (m *monitor) breakCycles(now time.Time, old []waiting, slow []inFlight, blockers map[uint32][]uint32) {
	session := map[uint32]int{}
	for s, pid := range m.p.live.pids() {
		if pid != 0 {
			session[pid] = s
		}
	}
	// Edges: who waits for whom, with what.
	edges := map[int][]edge{}
	for _, w := range old {
		for _, on := range w.on {
			edges[w.s] = append(edges[w.s], edge{on, "synchronisation"})
		}
	}
	for _, f := range slow {
		for _, b := range blockers[f.pid] {
			if s, ok := session[b]; ok {
				edges[f.s] = append(edges[f.s], edge{s, "a lock"})
			}
		}
	}
	for _, w := range old { // oldest first
		if path := cycleFrom(w.s, edges); path != "" {
			if m.p.sync.release(w.s) {
				m.mu.Lock()
				m.release = append(m.release, Release{At: now.Sub(m.p.start), Session: w.s, Statement: w.i,
					Waited: now.Sub(w.since), Cycle: path})
				m.mu.Unlock()
			}
			return // one at a time: the others may resolve with it
		}
	}
}

type edge struct {
	to   int
	kind string
}

// cycleFrom finds a path of edges from start back to start and writes it
// ("session 3 waits for synchronisation on session 5, which waits for a
// lock held by session 3"); "" when there is none.
func cycleFrom(start int, edges map[int][]edge) string {
	type step struct {
		at   int
		path []edge
	}
	seen := map[int]bool{start: true}
	queue := []step{{start, nil}}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, e := range edges[cur.at] {
			path := append(append([]edge(nil), cur.path...), e)
			if e.to == start {
				s := fmt.Sprintf("session %d", start)
				for i, pe := range path {
					if i == 0 {
						s += fmt.Sprintf(" waits for %s on session %d", pe.kind, pe.to)
					} else {
						s += fmt.Sprintf(", which waits for %s on session %d", pe.kind, pe.to)
					}
				}
				return s
			}
			if !seen[e.to] {
				seen[e.to] = true
				queue = append(queue, step{e.to, path})
			}
		}
	}
	return ""
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
