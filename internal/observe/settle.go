package observe

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
)

// A PostgreSQL backend (15+) keeps its counts to itself and publishes
// them to the statistics views when a transaction ends, at most once a
// second (PGSTAT_MIN_INTERVAL); an idle backend holding counts publishes
// them after PGSTAT_IDLE_INTERVAL (10 s), or when it exits. A reading of
// pg_stat_database taken while the sessions are busy therefore misses up
// to a second of each session's work, and a window whose edges are such
// readings is off by the difference of two of those lags: under a
// saturated host, 0.6 s of a 10 s window's transactions (bench/saturated).
//
// The Settler makes the readings exact for the run's own sessions. Each
// reading (the window's edges, and every tick of the series) begins an
// epoch; every session that may hold unpublished counts publishes them
// before it starts its first transaction of the new epoch (one
// `SELECT pg_stat_force_next_flush()`, whose own commit the collectors
// count as theirs), or when it closes; the reading waits until every
// session has, at most settleWait after the epoch began (a session that
// published does not publish again for a second, so the reading must
// come before that), settleEnd at the window's end (the sessions stop
// after it: nothing comes after). Which sessions may hold counts is
// modelled from when their transactions ran: a transaction that began a
// second after the session last published ends with its backend
// publishing everything, so a session that runs a transaction less than
// once a second sends nothing; a busy one sends one statement an
// interval (one transaction a second carries one more round trip).
//
// A reading then counts each session's work up to its first transaction
// that begins after the epoch began, which is why it is stamped with that
// instant; a transaction that straddles an edge is counted before the
// window's start and within its end. The driver counts it where it ended
// (within the start, after the end), so the two differ by at most a
// transaction per session at each edge, in opposite directions.
type Settler struct {
	mu    sync.Mutex
	epoch atomic.Int32 // the readings begun
	conns map[*settledConn]struct{}
	armed bool          // sessions registered: the runner wraps them
	wake  chan struct{} // closed and replaced when a session publishes or closes
	sent  atomic.Int64  // the flush statements that succeeded: transactions the server counts
	// edge is the epoch of a window's edge whose reading is not yet
	// taken (0: none): until it is, no tick begins an epoch, since the
	// sessions would publish what they did after the edge before it is
	// read.
	edge atomic.Int32
}

// settleWait bounds how long a reading waits for the sessions, from the
// beginning of its epoch; settleEnd the reading at the window's end.
const (
	settleWait = 600 * time.Millisecond
	settleEnd  = 2 * time.Second
)

// flushStatement makes the session's backend publish its counts as this
// statement ends (PostgreSQL 15+).
const flushStatement = "SELECT pg_stat_force_next_flush()"

// flushTimeout bounds the flush a session sends as it closes.
const flushTimeout = time.Second

// publishEvery is PGSTAT_MIN_INTERVAL: a backend publishes at the end of
// a transaction when it last did at least this long before.
const publishEvery = time.Second

func newSettler() *Settler {
	return &Settler{conns: map[*settledConn]struct{}{}, wake: make(chan struct{})}
}

// settledConn is a session's connection under the Settler.
type settledConn struct {
	engine.Conn
	s *Settler
	// Guarded by s.mu.
	published int       // the last epoch whose counts this session published
	busy      bool      // in a transaction (between Before and After)
	began     time.Time // when the transaction in progress began
	last      time.Time // when its backend last published, at the latest
	pending   bool      // it may hold counts not yet published
	// flushes are the flush statements sent: not the workload's (read by
	// the driver's monitor as well as the session).
	flushes atomic.Int64
}

// Conn registers a session's connection, new or a reconnect: its backend
// has published what it did so far at the latest now, and owes nothing
// to the epochs already begun.
func (s *Settler) Conn(c engine.Conn) engine.Conn {
	sc := &settledConn{Conn: c, s: s, published: int(s.epoch.Load()), last: time.Now()}
	s.mu.Lock()
	s.conns[sc] = struct{}{}
	s.armed = true
	s.mu.Unlock()
	return sc
}

// Statements and RoundTrips leave out the flush statements: the driver
// counts the workload's.
func (c *settledConn) Statements() int64 { return c.Conn.Statements() - c.flushes.Load() }
func (c *settledConn) RoundTrips() int64 { return c.Conn.RoundTrips() - c.flushes.Load() }

// Before is called before each transaction of the session on c: when an
// epoch began since the session last published and it may hold counts,
// it publishes them first.
func (s *Settler) Before(ctx context.Context, c engine.Conn) {
	sc, ok := c.(*settledConn)
	if !ok {
		return
	}
	epoch := int(s.epoch.Load())
	s.mu.Lock()
	owes := sc.published < epoch
	flush := owes && sc.pending
	if owes && !flush {
		sc.published = epoch
		s.signal()
	}
	if !flush {
		sc.busy, sc.began = true, time.Now()
	}
	s.mu.Unlock()
	if flush {
		sc.flush(ctx, epoch)
		s.mu.Lock()
		sc.busy, sc.began = true, time.Now()
		s.mu.Unlock()
	}
}

// After is called when the transaction Before began has ended, whatever
// its outcome: the backend published its counts as it ended if it last
// did a second before the transaction began; otherwise they may wait.
func (s *Settler) After(c engine.Conn) {
	sc, ok := c.(*settledConn)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sc.busy = false
	if sc.began.Sub(sc.last) > publishEvery {
		sc.last, sc.pending = time.Now(), false
	} else {
		sc.pending = true
	}
}

// flush publishes the session's counts for epoch.
func (c *settledConn) flush(ctx context.Context, epoch int) {
	if c.Lost() {
		return
	}
	// Counted before it is sent, as the connection counts it: the
	// driver's count of the workload's statements never moves for it.
	c.flushes.Add(1)
	_, err := c.Conn.Exec(ctx, flushStatement)
	if err != nil {
		return // a lost connection is replaced; its backend publishes as it exits
	}
	c.s.sent.Add(1)
	c.s.mu.Lock()
	c.published, c.last, c.pending = max(c.published, epoch), time.Now(), false
	c.s.signal()
	c.s.mu.Unlock()
}

// Close publishes what the session holds when an epoch is owed (the
// window has ended), then closes the connection.
func (c *settledConn) Close() error {
	s := c.s
	epoch := int(s.epoch.Load())
	s.mu.Lock()
	flush := c.published < epoch && c.pending
	s.mu.Unlock()
	if flush {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		c.flush(ctx, epoch)
		cancel()
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.signal()
	s.mu.Unlock()
	return c.Conn.Close()
}

// signal wakes the readings' wait; call with mu held.
func (s *Settler) signal() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// begin begins a reading's epoch: the sessions owe it their counts.
func (s *Settler) begin() int {
	e := int(s.epoch.Add(1))
	s.mu.Lock()
	s.signal()
	s.mu.Unlock()
	return e
}

// beginEdge begins the epoch of a window's edge (0 without a Settler);
// edgeRead ends it once the edge is read.
func (s *Settler) beginEdge() int {
	if s == nil {
		return 0
	}
	e := s.begin()
	s.edge.Store(int32(e))
	return e
}

func (s *Settler) edgeRead(e int) {
	if s != nil {
		s.edge.CompareAndSwap(int32(e), 0)
	}
}

// beginTick begins a tick's epoch; 0 (the tick is read as it is) without
// a Settler, or while an edge is not yet read.
func (s *Settler) beginTick() int {
	if s == nil || s.edge.Load() != 0 {
		return 0
	}
	return s.begin()
}

// settled tells whether c owes epoch e nothing: it published since, or
// it is between transactions holding nothing; call with mu held.
func (c *settledConn) settled(e int) bool {
	return c.published >= e || (!c.busy && !c.pending)
}

// wait waits until every session has published its counts for epoch p,
// until deadline, or until ctx ends; it returns how many sessions had not
// and how many there were. ok is false when no session was registered
// (the runner did not wrap them): there is nothing to wait for, and the
// reading is not settled.
func (s *Settler) wait(ctx context.Context, p int, deadline time.Time) (late, of int, ok bool) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		s.mu.Lock()
		if !s.armed {
			s.mu.Unlock()
			return 0, 0, false
		}
		late, of = 0, len(s.conns)
		for c := range s.conns {
			if !c.settled(p) {
				late++
			}
		}
		wake := s.wake
		s.mu.Unlock()
		if late == 0 {
			return 0, of, true
		}
		select {
		case <-wake:
			// Each session's publishing wakes the wait: with thousands
			// of sessions, scan them at most every few milliseconds.
			time.Sleep(rescan)
		case <-timer.C:
			return late, of, true
		case <-ctx.Done():
			return late, of, true
		}
	}
}

// rescan is the least time between two scans of the sessions in wait.
const rescan = 2 * time.Millisecond

// flushes is how many flush statements the sessions sent: each a
// transaction the server counts, which is not the workload's.
func (s *Settler) flushes() int64 {
	if s == nil {
		return 0
	}
	return s.sent.Load()
}

// lateNote is the warning for an edge some sessions had not settled.
func lateNote(edge string, late, of int) string {
	bound := settleWait
	if edge == "end" {
		bound = settleEnd
	}
	return fmt.Sprintf("%d of %d sessions had not published their counts to the statistics views %s after the window's %s: "+
		"the database profiles may be off by up to a second of their work", late, of, bound, edge)
}
