package replay

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/engine"
)

// lockServer is a server with one row lock. Released, it goes to the
// waiter named prefer if there is one (as a server may grant a lock to
// another waiter than in the capture), else to the first. With waiters
// set, the first holder's COMMIT waits (up to 2 s) until that many
// sessions wait for the lock, as they did in the capture: the replay's
// synchronisation orders a statement after those that ended before it
// started, not after those merely under way, so without this the waiters
// may reach the server after the COMMIT.
type lockServer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	holder  uint32
	waiting []*lockConn
	prefer  string
	waiters int
	calls   []string
	granted []string // sessions (by application) in the order their UPDATE took the row
	// gate holds a session's COMMIT (by application) until its channel
	// is closed; answered, when set, runs once after Blockers worked out
	// its answer and before it returns it.
	gate     map[string]chan struct{}
	answered func()
	// first, when set, is the session whose UPDATE takes the row first,
	// as in the capture: another's UPDATE that reaches the server sooner
	// (the replay orders it only after the commits logged before it, so
	// at full speed it may) waits here until that one took it.
	first string
}

func newLockServer() *lockServer {
	s := &lockServer{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

type lockConn struct {
	s    *lockServer
	pid  uint32
	name string
}

func (c *lockConn) Simple(ctx context.Context, sql string) (string, error) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, sql)
	switch {
	case strings.HasPrefix(sql, "UPDATE"):
		for s.first != "" && c.name != s.first && !slices.Contains(s.granted, s.first) {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			s.cond.Wait()
		}
		if s.holder == 0 || s.holder == c.pid {
			s.holder = c.pid
			s.granted = append(s.granted, c.name)
			s.cond.Broadcast()
			return "UPDATE 1", nil
		}
		s.waiting = append(s.waiting, c)
		for s.holder != c.pid {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			s.cond.Wait()
		}
		s.granted = append(s.granted, c.name)
		return "UPDATE 1", nil
	case sql == "COMMIT":
		if g := s.gate[c.name]; g != nil {
			s.mu.Unlock()
			select {
			case <-g:
			case <-ctx.Done():
			}
			s.mu.Lock()
		}
		for end := time.Now().Add(2 * time.Second); s.holder == c.pid && len(s.waiting) < s.waiters && time.Now().Before(end); {
			s.mu.Unlock()
			time.Sleep(time.Millisecond)
			s.mu.Lock()
		}
		if s.holder == c.pid {
			s.waiters = 0 // the first release only
			s.holder = 0
			if len(s.waiting) > 0 {
				k := 0
				for i, w := range s.waiting {
					if w.name == s.prefer {
						k = i
					}
				}
				s.holder = s.waiting[k].pid
				s.waiting = append(s.waiting[:k], s.waiting[k+1:]...)
			}
			s.cond.Broadcast()
		}
		return "COMMIT", nil
	}
	return "OK", nil
}

func (c *lockConn) Batchable(string, string, bool) (bool, bool) { return false, false }
func (c *lockConn) Batch(context.Context, []engine.BatchStatement, func(int, string, error, time.Duration)) (int, error) {
	return 0, errors.New("no batches")
}
func (c *lockConn) Extended(ctx context.Context, sql string, _ []*string, _ []uint32) (string, error) {
	return c.Simple(ctx, sql)
}
func (c *lockConn) Prepared(ctx context.Context, _, sql string, _ []*string, _ []uint32) (string, error) {
	return c.Simple(ctx, sql)
}
func (c *lockConn) CopyIn(ctx context.Context, sql string, _ []byte) (string, error) {
	return c.Simple(ctx, sql)
}
func (c *lockConn) Describe(context.Context, string, []uint32) ([]uint32, error) {
	return nil, nil
}
func (c *lockConn) PID() uint32 { return c.pid }
func (c *lockConn) Blockers(_ context.Context, pids []uint32) (map[uint32][]uint32, time.Time, error) {
	c.s.mu.Lock()
	asked := time.Now()
	out := map[uint32][]uint32{}
	for _, p := range pids {
		for _, w := range c.s.waiting {
			if w.pid == p && c.s.holder != 0 {
				out[p] = []uint32{c.s.holder}
			}
		}
	}
	answered := c.s.answered
	c.s.answered = nil
	c.s.mu.Unlock()
	if answered != nil {
		answered()
	}
	return out, asked, nil
}
func (c *lockConn) Close() error { return nil }

// lockConnector opens connections to srv named by the session's
// application, numbered from 101.
func lockConnector(srv *lockServer) func(context.Context, string, string, string) (engine.ReplayConn, error) {
	var next uint32
	var mu sync.Mutex
	return func(_ context.Context, _, _, app string) (engine.ReplayConn, error) {
		mu.Lock()
		defer mu.Unlock()
		next++
		return &lockConn{s: srv, pid: 100 + next, name: app}, nil
	}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// queueCapture: a holds the row; b and c wait for it; a commits, the
// server gives the row to b, b commits, then c gets it and commits.
func queueCapture() *capture.Capture {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// seq is each statement's line in the log: a's COMMIT and b's UPDATE
	// end at the same millisecond, and the log wrote a's first.
	st := func(at, dur, text int, seq int64) capture.Statement {
		return capture.Statement{Offset: ms(at), Duration: ms(dur), Text: text, Seq: seq}
	}
	return &capture.Capture{Format: capture.Format, Start: t0, End: t0.Add(ms(200)),
		Texts: []string{"BEGIN", "UPDATE r SET n = n + 1", "COMMIT"},
		Sessions: []capture.Session{
			{ID: "a", Application: "a", Start: 0, End: ms(200), Statements: []capture.Statement{st(0, 1, 0, 1), st(10, 1, 1, 4), st(100, 1, 2, 5)}},
			{ID: "b", Application: "b", Start: 0, End: ms(200), Statements: []capture.Statement{st(15, 1, 0, 2), st(20, 81, 1, 6), st(110, 1, 2, 7)}},
			{ID: "c", Application: "c", Start: 0, End: ms(200), Statements: []capture.Statement{st(16, 1, 0, 3), st(25, 87, 1, 8), st(120, 1, 2, 9)}},
		}}
}

// Statement order: in the replay the server gives the row to c first:
// c's COMMIT waits (by the capture) for b's COMMIT, and b waits (at the
// server) for c's lock. The monitor sees the cycle within a second and
// lets c's COMMIT go; the replay ends.
func TestSyncLockCycleBroken(t *testing.T) {
	c := queueCapture()
	srv := newLockServer()
	srv.prefer, srv.waiters = "c", 2
	connect := lockConnector(srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	r, err := Run(ctx, Options{Capture: c, Sync: SyncStatement, Connect: connect})
	if err != nil {
		t.Fatalf("the replay did not end: %v (calls %v)", err, srv.calls)
	}
	took := time.Since(start)
	if len(r.Releases) != 1 || took > 3*time.Second {
		t.Fatalf("releases %+v after %v, calls %v", r.Releases, took, srv.calls)
	}
	rel := r.Releases[0]
	if rel.Session != 2 || rel.Statement != 2 || rel.Waited > 1500*time.Millisecond || !strings.Contains(rel.Cycle, "lock") {
		t.Errorf("release %+v, want session 2's COMMIT let go within a second", rel)
	}
	if r.Replayed != 9 || r.Errors != 0 {
		t.Errorf("replayed %d, errors %d", r.Replayed, r.Errors)
	}
	t.Logf("cycle broken in %v: %s", rel.Waited, rel.Cycle)
}

// Commit order, the same capture: c's UPDATE ended after b's COMMIT, so
// it may have waited for b's lock and is sent only after b's COMMIT; the
// server never has c waiting, whichever waiter it prefers, and nothing
// is released. The rows are updated in the captured order, as fast as
// possible too.
func TestSyncCommitOrderNoCycle(t *testing.T) {
	for _, speed := range []float64{1, 0} {
		srv := newLockServer()
		srv.prefer = "c"
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := Run(ctx, Options{Capture: queueCapture(), Speed: speed, Connect: lockConnector(srv)})
		cancel()
		if err != nil {
			t.Fatalf("speed %v: %v (calls %v)", speed, err, srv.calls)
		}
		if len(r.Releases) != 0 || r.Replayed != 9 || r.Errors != 0 || r.Sync != SyncCommit {
			t.Errorf("speed %v: sync %s, releases %+v, replayed %d, errors %d", speed, r.Sync, r.Releases, r.Replayed, r.Errors)
		}
		if got := strings.Join(updatesInOrder(srv), " "); got != "a b c" {
			t.Errorf("speed %v: the row was updated by sessions %s, want a b c", speed, got)
		}
	}
}

// Commit order where the log cannot tell which of two lines came first
// (same time, no line order): a's UPDATE may race ahead of b's, and a
// cycle forms (a's SELECT waits for b's COMMIT, b waits for a's lock).
// The monitor breaks it as soon as the server shows it, not after a
// timeout per cycle.
func TestSyncCommitCycleBrokenAtOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := func(at, dur, text int) capture.Statement {
		return capture.Statement{Offset: ms(at), Duration: ms(dur), Text: text}
	}
	// a's UPDATE (10, waited until 100) and b's COMMIT (99-100) end at
	// the same millisecond; b's UPDATE was due 30 ms after a's.
	c := &capture.Capture{Format: capture.Format, Start: t0, End: t0.Add(ms(300)),
		Texts: []string{"BEGIN", "UPDATE r SET n = n + 1", "SELECT n FROM r", "COMMIT"},
		Sessions: []capture.Session{
			{ID: "a", Application: "a", Start: 0, End: ms(300), Statements: []capture.Statement{st(0, 1, 0), st(10, 90, 1), st(150, 1, 2), st(200, 1, 3)}},
			{ID: "b", Application: "b", Start: 0, End: ms(300), Statements: []capture.Statement{st(2, 1, 0), st(40, 1, 1), st(99, 1, 3)}},
		}}
	srv := newLockServer()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := Run(ctx, Options{Capture: c, Speed: 1, Connect: lockConnector(srv)})
	if err != nil {
		t.Fatalf("the replay did not end: %v (calls %v)", err, srv.calls)
	}
	// a's SELECT and then its COMMIT wait for b's COMMIT, which waits
	// for a's lock: the SELECT is let go, and a's statements with it to
	// the end of its transaction (its COMMIT would close the same cycle
	// again). b's COMMIT was due at 99 ms, before either: the cycle had
	// formed. The old monitor took 50-100 ms per cycle.
	if len(r.Releases) != 1 || r.Releases[0].Statement != 2 {
		t.Fatalf("releases %+v, want a's SELECT let go, its COMMIT with it (calls %v)", r.Releases, srv.calls)
	}
	for _, rel := range r.Releases {
		if rel.Session != 0 || rel.Waited > 40*time.Millisecond {
			t.Errorf("release %+v, want session 0 let go within 40 ms", rel)
		}
		t.Logf("cycle broken after %v: %s", rel.Waited, rel.Cycle)
	}
	if r.Replayed != 7 || r.Errors != 0 {
		t.Errorf("replayed %d, errors %d", r.Replayed, r.Errors)
	}
}

// A lock wait the server reported may be over by the time the monitor
// reads the synchronisation waits: here, while the server's answer (b
// waits for a's lock) is on its way, a commits, b takes the row, and a's
// next transaction waits for b's COMMIT. That wait and the stale lock
// wait look like a cycle; none is there, and nothing is let go.
//
//	a: BEGIN, UPDATE (holds the row), COMMIT (held at the server until
//	   the monitor asks), BEGIN, SELECT (after b's COMMIT), COMMIT
//	b: BEGIN, UPDATE (waits for a's row), COMMIT (held until after)
//	c: BEGIN, SELECT (after a's COMMIT: the synchronisation wait that
//	   makes the monitor ask the server), COMMIT
func TestStaleLockWaitNoRelease(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := func(at, dur, text int) capture.Statement {
		return capture.Statement{Offset: ms(at), Duration: ms(dur), Text: text}
	}
	c := &capture.Capture{Format: capture.Format, Start: t0, End: t0.Add(ms(200)),
		Texts: []string{"BEGIN", "UPDATE r SET n = n + 1", "SELECT n FROM r", "COMMIT"},
		Sessions: []capture.Session{
			{ID: "a", Application: "a", Start: 0, End: ms(200), Statements: []capture.Statement{st(0, 1, 0), st(10, 1, 1), st(50, 1, 3), st(60, 1, 0), st(80, 1, 2), st(90, 1, 3)}},
			{ID: "b", Application: "b", Start: 0, End: ms(200), Statements: []capture.Statement{st(2, 1, 0), st(20, 31, 1), st(70, 1, 3)}},
			{ID: "c", Application: "c", Start: 0, End: ms(200), Statements: []capture.Statement{st(3, 1, 0), st(55, 1, 2), st(57, 1, 3)}},
		}}
	srv := newLockServer()
	srv.first = "a"
	gateA, gateB := make(chan struct{}), make(chan struct{})
	srv.gate = map[string]chan struct{}{"a": gateA, "b": gateB}
	asked := make(chan struct{})
	srv.answered = func() {
		// Let a commit; the answer goes back once a's next transaction
		// waits for b's COMMIT (b holds the row by then).
		close(gateA)
		time.Sleep(200 * time.Millisecond)
		close(asked)
	}
	go func() {
		select {
		case <-asked:
			time.Sleep(100 * time.Millisecond) // the monitor looks again
		case <-time.After(5 * time.Second):
		}
		close(gateB)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := Run(ctx, Options{Capture: c, Speed: 0, Connect: lockConnector(srv)})
	if err != nil {
		t.Fatalf("the replay did not end: %v (calls %v)", err, srv.calls)
	}
	select {
	case <-asked:
	default:
		t.Fatalf("the monitor never asked the server (calls %v)", srv.calls)
	}
	if len(r.Releases) != 0 {
		t.Errorf("released %+v: a cycle made of a lock wait that was over", r.Releases)
	}
	if r.Replayed != 12 || r.Errors != 0 {
		t.Errorf("replayed %d, errors %d", r.Replayed, r.Errors)
	}
	if got := strings.Join(updatesInOrder(srv), " "); got != "a b" {
		t.Errorf("the row was updated by sessions %s, want a b", got)
	}
}

// updatesInOrder lists the sessions whose UPDATE took the row, in order.
func updatesInOrder(srv *lockServer) []string {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return append([]string(nil), srv.granted...)
}

// A statement that runs past the stall timeout is reported, with what it
// waits for; Ctrl-C ends the replay within the statement's cancellation.
func TestStallReportedAndStop(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &capture.Capture{Format: capture.Format, Start: t0, End: t0.Add(ms(50)),
		Texts: []string{"BEGIN", "UPDATE r"},
		Sessions: []capture.Session{
			{ID: "a", Start: 0, End: ms(50), Statements: []capture.Statement{{Text: 0}, {Offset: ms(1), Text: 1}}},
			{ID: "b", Start: 0, End: ms(50), Statements: []capture.Statement{{Offset: ms(2), Text: 0}, {Offset: ms(3), Text: 1}}},
		}}
	srv := newLockServer()
	connect := lockConnector(srv)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	go func() {
		// The server side of a cancel: wake the waiter so it sees its context.
		<-ctx.Done()
		srv.mu.Lock()
		srv.cond.Broadcast()
		srv.mu.Unlock()
	}()
	start := time.Now()
	r, err := Run(ctx, Options{Capture: c, Connect: connect, StallTimeout: 500 * time.Millisecond})
	if err == nil || r == nil || !r.Partial {
		t.Fatalf("err %v, result %+v", err, r)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stopped %v after the start, 1.5 s after which it was interrupted", d)
	}
	if len(r.Stalls) != 1 || r.Stalls[0].What != "statement" || !strings.Contains(r.Stalls[0].Waiting, "a lock held by backend") {
		t.Errorf("stalls %+v", r.Stalls)
	}
}

// A cycle is found from the holder of a lock that one of its sessions
// waits for, however the synchronisation waits run: here session 5
// waits for a lock held by 3; 3 waits for synchronisation on a prefix of
// the list that holds 4, and 4 on one that holds 5. Session 6 waits into
// the cycle without being in it; 1 and 2 form another, broken apart.
func TestFindCycle(t *testing.T) {
	list := []int{2, 4, 5, 7}
	waits := []waiting{{s: 3, on: list[:2]}, {s: 4, on: list[:3]}, {s: 6, on: list[:1]}}
	locks := map[int][]int{5: {3}, 2: {1}, 7: {6}}
	waitOf := make([]int, 10)
	for i := range waitOf {
		waitOf[i] = -1
	}
	for i, w := range waits {
		waitOf[w.s] = i
	}
	path := findCycle(3, locks, waits, waitOf, list, make([]bool, 10))
	if got, want := describe(path, 4), "session 4 waits for synchronisation on session 5, which waits for a lock on session 3, which waits for synchronisation on session 4"; got != want {
		t.Errorf("cycle %q, want %q", got, want)
	}
	// 1 holds 2's lock, but 1 waits for nothing: no cycle. 6 holds 7's
	// lock and waits for 2, who waits for 1: none either.
	for _, h := range []int{1, 6} {
		if path := findCycle(h, locks, waits, waitOf, list, make([]bool, 10)); path != nil {
			t.Errorf("from %d: %+v", h, path)
		}
	}
	// Released in this pass, 3 and 4 wait no more.
	released := make([]bool, 10)
	released[3], released[4] = true, true
	if path := findCycle(3, locks, waits, waitOf, list, released); path != nil {
		t.Errorf("a released wait still closed the cycle: %+v", path)
	}
}

// A writer is given twice the reads' mean answer time to reach its locks
// before the others' writers follow it, or their mean and four times
// their mean deviation when the reads' times spread (a saturated host's
// tail), 0.2 ms at least, 20 ms at most (a lock wait's answer says
// nothing of the host); with no read answered yet, every statement's
// mean answer time, 1 ms at least. The writers' own answers (their lock
// waits and log flushes) do not move it once reads are answered.
func TestSettleFollowsAnswers(t *testing.T) {
	const read, write = 0, 1
	y := syncer{reads: []bool{true, false}}
	for _, c := range []struct {
		text      int
		took, alt time.Duration // alt: every other answer's time, when set
		want      time.Duration
	}{
		{write, 50 * time.Microsecond, 0, settleAfter},
		{write, 8 * time.Millisecond, 0, 8 * time.Millisecond},
		{read, 50 * time.Microsecond, 0, minSettle},
		{write, 15 * time.Millisecond, 0, minSettle},
		{read, 3 * time.Millisecond, 0, 6 * time.Millisecond},
		// A mean of 3 ms, 2 ms off it on average: 3 + 4 × 2.
		{read, time.Millisecond, 5 * time.Millisecond, 11 * time.Millisecond},
		{read, time.Second, 0, maxSettle},
	} {
		for k := range 400 {
			took := c.took
			if c.alt > 0 && k%2 == 1 {
				took = c.alt
			}
			y.observe(c.text, took)
		}
		// The mean of alternating answers swings by a gain-th of their
		// difference, so within 15%.
		if got := y.settle(); got < c.want*85/100 || got > c.want*115/100 {
			t.Errorf("answers of %v (and %v; text %d): settle %v, want %v", c.took, c.alt, c.text, got, c.want)
		}
	}
}

// An INSERT that only adds the rows it gives is sent at once after the
// writers that arrived before it, without settling, and later writers do
// not wait for it to settle: no writer queues behind it. Writers that
// change or lock rows still settle, and an INSERT that may change a row
// (REPLACE, ON DUPLICATE KEY UPDATE, ON CONFLICT) or reads rows (INSERT
// ... SELECT) is one of them.
func TestPlainInsertsDoNotSettle(t *testing.T) {
	for text, want := range map[string]bool{
		"INSERT INTO t1 VALUES (1, 'a'), (2, 'b')":                       true,
		"insert into t1 (a) values (1)":                                  true,
		"  (INSERT IGNORE INTO t1 SET a = 1)":                            true,
		"INSERT INTO t1 VALUES (1) ON DUPLICATE KEY UPDATE a = a + 1":    false,
		"insert into t1 values (1) on conflict (id) do update set a = 2": false,
		"REPLACE INTO t1 VALUES (1)":                                     false,
		"INSERT INTO t1 SELECT * FROM t2":                                false,
		"UPDATE t1 SET a = 1 WHERE id = 2":                               false,
		"DELETE FROM t1 WHERE id = 2":                                    false,
		"SELECT 'INSERT INTO t1 VALUES (1)'":                             false,
	} {
		if got := capture.NewRowsOnly(text); got != want {
			t.Errorf("NewRowsOnly(%q) = %v, want %v", text, got, want)
		}
	}
	// A general log's capture: statements with no duration, in line order.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &capture.Capture{Format: capture.Format, Engine: capture.EngineMySQL, Start: t0, End: t0.Add(ms(10)), ErrorsUnknown: true,
		Texts: []string{"INSERT INTO t1 VALUES (1)", "UPDATE t1 SET a = 1 WHERE id = 1", "REPLACE INTO t1 VALUES (2)", "SELECT a FROM t1", "COMMIT"},
		Sessions: []capture.Session{
			{ID: "a", Start: 0, End: ms(10), Statements: []capture.Statement{{Offset: ms(1), Text: 0, Seq: 1}, {Offset: ms(3), Text: 2, Seq: 3}}},
			{ID: "b", Start: 0, End: ms(10), Statements: []capture.Statement{{Offset: ms(2), Text: 1, Seq: 2}, {Offset: ms(4), Text: 3, Seq: 4}}},
		}}
	y := newSyncer(c, SyncCommit)
	if y.writer == nil {
		t.Fatal("a general log's writers are not ordered")
	}
	if want := [][]bool{{false, true}, {true, false}}; !reflect.DeepEqual(y.writer, want) {
		t.Errorf("writers that settle %v, want %v", y.writer, want)
	}
	// The settle is read from the SELECT's answers: not the writers', nor
	// a COMMIT's (its log flush).
	if want := []bool{false, false, false, true, false}; !reflect.DeepEqual(y.reads, want) {
		t.Errorf("texts whose answers settle reads %v, want %v", y.reads, want)
	}
	// The INSERT is still an event of the order: the UPDATE that arrived
	// after it is sent once it has been.
	if y.pos[0][0] < 0 || y.needSent[1][0] <= y.pos[0][0] {
		t.Errorf("the UPDATE needs %d events sent, the INSERT is event %d", y.needSent[1][0], y.pos[0][0])
	}
}
