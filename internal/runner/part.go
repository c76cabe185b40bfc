package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/workload"
)

// Part is one of several driver processes of one run (run --part I/N):
// it runs the I-th of N disjoint shares of the run's sessions, each with
// the seed the session has in a single process, so that the N parts
// together are the run one process with all the sessions would make. The
// parts' windows are made to coincide by a time given to all
// (StartAt) or by a barrier in the target database itself.
type Part struct {
	// Index is from 0, as a Kubernetes Indexed Job's completion index.
	Index, Of int
	// StartAt, when set, is when every part starts its warm-up (this
	// host's clock, which must be synchronised: NTP).
	StartAt time.Time
	// RunID names the run in the barrier table (default: the label).
	RunID string
	// BarrierTimeout bounds the wait for the other parts.
	BarrierTimeout time.Duration
}

// MaxParts bounds --part's N.
const MaxParts = 1000

// ParsePart reads --part I/N.
func ParsePart(s string) (*Part, error) {
	i, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(i)
	of, err2 := strconv.Atoi(n)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return nil, fmt.Errorf("--part %q: give I/N, the part's index from 0 and the number of parts (for example 0/3)", s)
	case of < 1 || of > MaxParts:
		return nil, fmt.Errorf("--part %s: the number of parts must be between 1 and %d", s, MaxParts)
	case index < 0 || index >= of:
		return nil, fmt.Errorf("--part %s: the index counts from 0 to %d", s, of-1)
	}
	return &Part{Index: index, Of: of}, nil
}

// partSessions are the global ids of part p's sessions among users. A
// workload whose sessions work on shares of the data (Shared) gives each
// part whole shares: session g belongs to part (g mod shares) mod N.
func partSessions(w workload.Workload, users int, p *Part) ([]int, error) {
	shares, what := 0, ""
	if sh, ok := w.(workload.Shared); ok {
		shares, what = sh.Shares()
	}
	if shares > 0 && shares < p.Of {
		return nil, usage("--part %d/%d: the run has %d %s, fewer than its parts: the parts would share them (use at most %d parts, or load more)",
			p.Index, p.Of, shares, what, shares)
	}
	var ids []int
	for g := range users {
		k := g
		if shares > 0 {
			k = g % shares
		}
		if k%p.Of == p.Index {
			ids = append(ids, g)
		}
	}
	if len(ids) == 0 {
		return nil, usage("--part %d/%d: %d sessions leave this part none: give --users at least %d", p.Index, p.Of, users, p.Of)
	}
	return ids, nil
}

// barrierLead is how long after the last part registers the window
// starts: time for every part to see it, polling every barrierPoll.
const (
	barrierLead = 2 * time.Second
	barrierPoll = 100 * time.Millisecond
	// barrierBeat is how often a waiting part renews its heartbeat: a
	// sixth of barrierAlive, so that a slow statement or two do not make
	// a live part look gone.
	barrierBeat = 500 * time.Millisecond
	// barrierQuit is how long before the start a part removes its row:
	// every part has seen them all long before (they poll every
	// barrierPoll), and nothing of the barrier runs in the warm-up.
	barrierQuit = 200 * time.Millisecond
	// barrierLeave bounds the removal of a part's row when it gives up or
	// is interrupted: a server that does not answer leaves the row, which
	// stops counting once its heartbeat is older than barrierAlive.
	barrierLeave = time.Second
	// barrierStale is when any run's rows are old enough to be cleared.
	barrierStale = time.Hour
)

// barrierAlive is how recent a registration's heartbeat (alive_us, the
// database's clock, renewed every barrierBeat while its part waits) must
// be for the registration to count: a part killed outright (SIGKILL, a
// host gone) leaves its row, which stops counting after this long. A
// variable for the tests.
var barrierAlive = 3 * time.Second

// barrierTable is where the parts of a run register.
const barrierTable = "CREATE TABLE IF NOT EXISTS dbparity_barrier (run varchar(200) NOT NULL, part int NOT NULL," +
	" parts int NOT NULL, host varchar(255), registered_us bigint NOT NULL, alive_us bigint, PRIMARY KEY (run, part))"

// synced is how a part's start was agreed.
type synced struct {
	method  string    // start-at or barrier
	startAt time.Time // this host's clock
	// offset is this host's clock minus the database's, err its bound
	// (half the round trip that read it): barrier only.
	offset, err time.Duration
}

// wait holds the part's start until every part is ready: until StartAt,
// or until all N parts registered in the barrier table, then until the
// time they all read there.
//
// A registration counts while its part is alive: the part renews its row's
// heartbeat every barrierBeat until shortly before the start, and removes
// the row then, or as soon as it gives up or is interrupted; a row whose
// heartbeat is older than barrierAlive (its part was killed outright) is
// not counted, and the next registration of its run clears it.
func (p *Part) wait(ctx context.Context, t *opened, timeout time.Duration, say func(string)) (synced, error) {
	if !p.StartAt.IsZero() {
		d := time.Until(p.StartAt)
		if d < -time.Second {
			return synced{}, usage("--start-at %s is %s past: give a time ahead of every part's start", p.StartAt.Format(time.RFC3339), (-d).Round(time.Second))
		}
		say(fmt.Sprintf("part %d/%d: starting at %s (in %s)", p.Index, p.Of, p.StartAt.Format(time.RFC3339Nano), d.Round(time.Millisecond)))
		return synced{method: "start-at", startAt: p.StartAt}, sleepUntil(ctx, p.StartAt)
	}
	// Every statement, and the connection, within timeout: a server that
	// freezes ends the wait instead of hanging it.
	silent := false
	q := func(f func(context.Context) error) error {
		qctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		err := f(qctx)
		if err != nil && qctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			silent = true
			return fmt.Errorf("the database did not answer within %s (--statement-timeout)", timeout)
		}
		return err
	}
	var c engine.Conn
	err := q(func(ctx context.Context) error {
		var err error
		c, err = t.Connect(ctx)
		return err
	})
	if err != nil {
		return synced{}, fmt.Errorf("barrier: %w", err)
	}
	b := &registration{p: p, t: t, c: c, q: q, now: t.Dialect.NowMicros()}
	// A server that stopped answering is not asked again: the row stops
	// counting once its heartbeat is barrierAlive old.
	defer func() { b.leave(!silent) }()
	if err := b.table(); err != nil {
		return synced{}, err
	}
	offset, rtt, err := clockOffset(q, c, b.now)
	if err != nil {
		return synced{}, fmt.Errorf("barrier: read the database's clock: %w", err)
	}
	if err := b.register(); err != nil {
		return synced{}, err
	}
	deadline := time.Now().Add(p.BarrierTimeout)
	shown := -1
	for {
		if err := b.heartbeat(say); err != nil {
			return synced{}, err
		}
		var n, lo, hi, last int64
		err := q(func(ctx context.Context) error {
			return c.QueryRow(ctx, "SELECT count(*), coalesce(min(parts), 0), coalesce(max(parts), 0), coalesce(max(registered_us), 0)"+
				" FROM dbparity_barrier WHERE run = $1 AND alive_us >= "+b.now+" - $2",
				p.RunID, barrierAlive.Microseconds()).Scan(&n, &lo, &hi, &last)
		})
		if err != nil {
			return synced{}, fmt.Errorf("barrier: %w", err)
		}
		if n > 0 && (lo != int64(p.Of) || hi != int64(p.Of)) {
			other := lo
			if lo == int64(p.Of) {
				other = hi
			}
			return synced{}, usage("barrier: run %q has a part registered as one of %d parts, this one says %d: give every part the same --part I/N (or its own --run-id)", p.RunID, other, p.Of)
		}
		if n >= int64(p.Of) {
			start := time.UnixMicro(last).Add(barrierLead).Add(offset)
			say(fmt.Sprintf("part %d/%d: all %d parts registered; starting at %s (in %s; clock %+.1f ms from the database's, ±%.1f ms)",
				p.Index, p.Of, p.Of, start.Format(time.RFC3339Nano), time.Until(start).Round(time.Millisecond),
				float64(offset)/1e6, float64(rtt/2)/1e6))
			s := synced{method: "barrier", startAt: start, offset: offset, err: rtt / 2}
			return s, b.lead(ctx, start)
		}
		if int(n) != shown {
			say(fmt.Sprintf("part %d/%d: waiting for the other parts of run %q: %d of %d registered", p.Index, p.Of, p.RunID, n, p.Of))
			shown = int(n)
		}
		if time.Now().After(deadline) {
			return synced{}, fmt.Errorf("barrier: only %d of %d parts of run %q registered in %s: start every part with the same --run-id and --part I/%d (or raise --barrier-timeout)",
				n, p.Of, p.RunID, p.BarrierTimeout, p.Of)
		}
		select {
		case <-ctx.Done():
			return synced{}, ctx.Err()
		case <-time.After(barrierPoll):
		}
	}
}

// registration is one part's row in the barrier table.
type registration struct {
	p   *Part
	t   *opened
	c   engine.Conn
	q   func(func(context.Context) error) error
	now string // the database's clock, in microseconds
	// registered is the row's registered_us, which tells it from a row
	// another process made for the same part after this one's lapsed; 0
	// when the part has no row.
	registered int64
	beatAt     time.Time // the last heartbeat
}

// table creates the barrier table, or adds the heartbeat column to one an
// older dbparity made (its rows, without a heartbeat, never count).
func (b *registration) table() error {
	exec := func(sql string) error {
		return b.q(func(ctx context.Context) error { _, err := b.c.Exec(ctx, sql); return err })
	}
	hasColumn := func() bool {
		var n int64
		return b.q(func(ctx context.Context) error {
			return b.c.QueryRow(ctx, "SELECT count(alive_us) FROM dbparity_barrier").Scan(&n)
		}) == nil
	}
	if err := exec(barrierTable); err != nil {
		// Two parts creating the table at once: one of them wins.
		exists := false
		b.q(func(ctx context.Context) error {
			exists, _ = b.t.Dialect.TableExists(ctx, b.c, "dbparity_barrier")
			return nil
		})
		if !exists {
			return fmt.Errorf("barrier: create dbparity_barrier: %w", err)
		}
	}
	if hasColumn() {
		return nil
	}
	if err := exec("ALTER TABLE dbparity_barrier ADD COLUMN alive_us bigint"); err != nil && !hasColumn() {
		return fmt.Errorf("barrier: add the column alive_us to dbparity_barrier (made by an older dbparity): %w", err)
	}
	return nil
}

// register clears the run's rows whose parts are gone (and any row dead
// for barrierStale), then inserts this part's.
func (b *registration) register() error {
	p := b.p
	host, _ := os.Hostname()
	err := b.q(func(ctx context.Context) error {
		_, err := b.c.Exec(ctx, "DELETE FROM dbparity_barrier WHERE (run = $1 AND coalesce(alive_us, 0) < "+b.now+" - $2)"+
			" OR coalesce(alive_us, registered_us) < "+b.now+" - $3",
			p.RunID, barrierAlive.Microseconds(), barrierStale.Microseconds())
		if err == nil {
			_, err = b.c.Exec(ctx, "INSERT INTO dbparity_barrier (run, part, parts, host, registered_us, alive_us) VALUES ($1, $2, $3, $4, "+b.now+", "+b.now+")",
				p.RunID, p.Index, p.Of, host)
		}
		if err == nil {
			err = b.c.QueryRow(ctx, "SELECT registered_us FROM dbparity_barrier WHERE run = $1 AND part = $2", p.RunID, p.Index).Scan(&b.registered)
		}
		return err
	})
	if err == nil {
		b.beatAt = time.Now()
		return nil
	}
	var other string
	if b.q(func(ctx context.Context) error {
		return b.c.QueryRow(ctx, "SELECT host FROM dbparity_barrier WHERE run = $1 AND part = $2", p.RunID, p.Index).Scan(&other)
	}) == nil {
		return usage("barrier: part %d of run %q is already registered by a part still waiting (on host %s): a run id serves one run, give each run its own --run-id", p.Index, p.RunID, other)
	}
	return fmt.Errorf("barrier: register part %d of run %q: %w", p.Index, p.RunID, err)
}

// heartbeat renews the row's alive_us. A row that is gone (this process
// did not answer for barrierAlive, and a part registering since cleared
// it) is registered again.
func (b *registration) heartbeat(say func(string)) error {
	p := b.p
	if time.Since(b.beatAt) < barrierBeat {
		return nil
	}
	n, err := b.beat(time.Time{})
	if err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	if n > 0 {
		return nil
	}
	// MySQL counts the rows changed, not found: look.
	var k int64
	if err := b.q(func(ctx context.Context) error {
		return b.c.QueryRow(ctx, "SELECT count(*) FROM dbparity_barrier WHERE run = $1 AND part = $2 AND registered_us = $3",
			p.RunID, p.Index, b.registered).Scan(&k)
	}); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	if k > 0 {
		return nil
	}
	say(fmt.Sprintf("part %d/%d: its registration lapsed (no heartbeat for %s) and was cleared: registering again", p.Index, p.Of, barrierAlive))
	b.registered = 0
	return b.register()
}

// beat renews the row's heartbeat, by until if set; n is the rows changed.
func (b *registration) beat(until time.Time) (n int64, err error) {
	err = b.q(func(ctx context.Context) error {
		if !until.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, until)
			defer cancel()
		}
		n, err = b.c.Exec(ctx, "UPDATE dbparity_barrier SET alive_us = "+b.now+" WHERE run = $1 AND part = $2 AND registered_us = $3",
			b.p.RunID, b.p.Index, b.registered)
		return err
	})
	if err == nil {
		b.beatAt = time.Now()
	}
	return n, err
}

// lead keeps the registration alive until barrierQuit before start (for
// the parts that have not yet seen them all), removes it, then waits for
// start. A heartbeat that fails is not retried: the others have counted
// this part already, and the start does not move.
func (b *registration) lead(ctx context.Context, start time.Time) error {
	quit := start.Add(-barrierQuit)
	for time.Now().Before(quit) {
		if _, err := b.beat(quit); err != nil {
			break
		}
		next := time.Now().Add(barrierBeat)
		if next.After(quit) {
			next = quit
		}
		if err := sleepUntil(ctx, next); err != nil {
			return err
		}
	}
	b.remove(start)
	return sleepUntil(ctx, start)
}

// remove deletes the part's row, trying until deadline (on a new
// connection if a cancelled statement broke this one).
func (b *registration) remove(deadline time.Time) {
	if b.registered == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	del := func(c engine.Conn) error {
		_, err := c.Exec(ctx, "DELETE FROM dbparity_barrier WHERE run = $1 AND part = $2 AND registered_us = $3", b.p.RunID, b.p.Index, b.registered)
		return err
	}
	if del(b.c) != nil && ctx.Err() == nil {
		if c, err := b.t.Connect(ctx); err == nil {
			del(c)
			c.Close()
		}
	}
	b.registered = 0
}

// leave removes the row of a part that gives up or is interrupted, if
// remove, and closes the connection.
func (b *registration) leave(remove bool) {
	if remove {
		b.remove(time.Now().Add(barrierLeave))
	}
	b.c.Close()
}

// clockOffset estimates this host's clock minus the database server's
// from the quickest of a few reads of the server's clock (the reading is
// taken as made halfway through the round trip); rtt is that read's round
// trip, twice the estimate's bound.
func clockOffset(q func(func(context.Context) error) error, c engine.Conn, now string) (offset, rtt time.Duration, err error) {
	rtt = -1
	for range 7 {
		var t0, t1 time.Time
		var us int64
		if err := q(func(ctx context.Context) error {
			t0 = time.Now()
			err := c.QueryRow(ctx, "SELECT "+now).Scan(&us)
			t1 = time.Now()
			return err
		}); err != nil {
			return 0, 0, err
		}
		if d := t1.Sub(t0); rtt < 0 || d < rtt {
			rtt = d
			offset = t0.Add(d / 2).Sub(time.UnixMicro(us))
		}
	}
	return offset, rtt, nil
}

// sleepUntil waits until t or the end of ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// partRecord is what the result says of the part.
func partRecord(p *Part, users int, ids []int, s synced) *result.Part {
	host, _ := os.Hostname()
	return &result.Part{Index: p.Index, Of: p.Of, RunID: p.RunID, Users: users, Sessions: ids, Host: host,
		Sync: s.method, StartAt: s.startAt, ClockOffsetMs: float64(s.offset) / 1e6, ClockErrMs: float64(s.err) / 1e6}
}

var errPartsAlone = errors.New("--part splits one run over several processes: it cannot be combined with several targets or --repeat")
