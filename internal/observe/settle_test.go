package observe

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
)

// fakeConn counts what a session's connection was sent.
type fakeConn struct {
	engine.Conn // nil: only what the Settler calls is implemented
	stmts       atomic.Int64
	flushes     atomic.Int64
	closed      bool
}

func (f *fakeConn) Exec(_ context.Context, sql string, _ ...any) (int64, error) {
	f.stmts.Add(1)
	if sql == flushStatement {
		f.flushes.Add(1)
	}
	return 0, nil
}
func (f *fakeConn) Statements() int64 { return f.stmts.Load() }
func (f *fakeConn) RoundTrips() int64 { return f.stmts.Load() }
func (f *fakeConn) Lost() bool        { return false }
func (f *fakeConn) Close() error      { f.closed = true; return nil }

// transaction runs one transaction of the session on c as the runner's
// wrapper does: Before, one statement, After.
func transaction(s *Settler, c engine.Conn) {
	s.Before(context.Background(), c)
	c.Exec(context.Background(), "SELECT 1")
	s.After(c)
}

func settledNow(t *testing.T, s *Settler, epoch int) (late, of int) {
	t.Helper()
	late, of, ok := s.wait(context.Background(), epoch, time.Now())
	if !ok {
		t.Fatal("the Settler has sessions: want ok")
	}
	return late, of
}

// A busy session (a transaction less than a second after it published)
// owes each new epoch its counts: it publishes before its next
// transaction, once, and the driver's counts leave the flush out. A
// session that published by itself (its last transaction began a second
// after it last published) owes nothing and sends nothing.
func TestSettlerPublishesBeforeTheNextTransaction(t *testing.T) {
	s := newSettler()
	if _, _, ok := s.wait(context.Background(), 1, time.Now()); ok {
		t.Fatal("no session registered: want the reading not settled")
	}
	busy, slow := &fakeConn{}, &fakeConn{}
	bc, sc := s.Conn(busy), s.Conn(slow)
	transaction(s, bc) // began at once after connecting: may hold counts
	sc.(*settledConn).last = time.Now().Add(-2 * time.Second)
	transaction(s, sc) // began 2 s after it last published: published as it ended

	e := s.beginEdge()
	if late, of := settledNow(t, s, e); late != 1 || of != 2 {
		t.Fatalf("after the epoch began: %d of %d sessions late, want the busy one of 2", late, of)
	}
	if n := s.beginTick(); n != 0 {
		t.Errorf("a tick began epoch %d while the edge was not read", n)
	}
	transaction(s, bc)
	if late, _ := settledNow(t, s, e); late != 0 {
		t.Errorf("%d sessions late after the busy one ran a transaction", late)
	}
	if busy.flushes.Load() != 1 || slow.flushes.Load() != 0 {
		t.Errorf("flushes: busy %d, slow %d; want 1 and 0", busy.flushes.Load(), slow.flushes.Load())
	}
	if got := bc.Statements(); got != 2 {
		t.Errorf("the busy session's statements %d, want its 2 (the flush left out)", got)
	}
	if s.flushes() != 1 {
		t.Errorf("the Settler counts %d flushes, want 1", s.flushes())
	}
	// Published for this epoch: no second flush in it.
	transaction(s, bc)
	if busy.flushes.Load() != 1 {
		t.Errorf("%d flushes after a second transaction in the same epoch", busy.flushes.Load())
	}

	s.edgeRead(e)
	e2 := s.beginTick()
	if e2 <= e {
		t.Fatalf("a tick after the edge was read began epoch %d, want after %d", e2, e)
	}
	// A session that closes owing an epoch publishes first; closed, it
	// is waited for no more. The slow one, idle, owes nothing.
	bc.Close()
	if !busy.closed || busy.flushes.Load() != 2 {
		t.Errorf("closed %v with %d flushes, want closed after a second flush", busy.closed, busy.flushes.Load())
	}
	if late, of := settledNow(t, s, e2); late != 0 || of != 1 {
		t.Errorf("after the busy session closed: %d of %d late, want 0 of 1", late, of)
	}
}

// A session in a transaction when the epoch begins owes it the counts of
// that transaction: the wait ends when it publishes, or at the deadline.
func TestSettlerWaitsForTheTransactionInProgress(t *testing.T) {
	s := newSettler()
	c := s.Conn(&fakeConn{})
	s.Before(context.Background(), c) // in a transaction
	e := s.beginTick()
	start := time.Now()
	late, of, ok := s.wait(context.Background(), e, start.Add(50*time.Millisecond))
	if !ok || late != 1 || of != 1 || time.Since(start) < 40*time.Millisecond {
		t.Fatalf("wait: %d of %d late (ok %v) after %s; want 1 of 1 at the deadline", late, of, ok, time.Since(start))
	}
	done := make(chan int)
	go func() {
		late, _, _ := s.wait(context.Background(), e, time.Now().Add(5*time.Second))
		done <- late
	}()
	time.Sleep(10 * time.Millisecond)
	s.After(c)
	s.Before(context.Background(), c) // publishes for the epoch
	select {
	case late := <-done:
		if late != 0 {
			t.Errorf("%d late after the session published", late)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the wait did not end when the session published")
	}
}
