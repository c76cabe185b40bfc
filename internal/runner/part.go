package runner

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	// barrierBeat is how often a waiting part renews its heartbeat and
	// makes sure the connection that holds its lock is still there: a
	// sixth of barrierAlive, so that a slow statement or two do not make
	// a live part look gone.
	barrierBeat = 500 * time.Millisecond
	// barrierQuit is how long before the start a part last makes sure
	// that every part it counted is still there; barrierRelease how long
	// before the start it removes its row and lets go of its lock. The
	// difference is the disagreement of the parts' clocks that an orderly
	// leave can bear without being taken by a slower part for a death.
	barrierQuit    = 200 * time.Millisecond
	barrierRelease = 50 * time.Millisecond
	// barrierLeave bounds the removal of a part's row when it gives up or
	// is interrupted: a server that does not answer leaves the row, which
	// stops counting once its session ends or its heartbeat is older than
	// barrierAlive.
	barrierLeave = time.Second
	// barrierStale is when any run's rows are old enough to be cleared.
	barrierStale = time.Hour
)

// barrierAlive is how recent a registration's heartbeat (alive_us, the
// database's clock, renewed every barrierBeat while its part waits) must
// be for the registration to count, beside its lock: a host lost without
// closing its connections (powered off, cut off) keeps its sessions, and
// so its lock, until the server's TCP keepalive gives up, which takes
// hours by default. A variable for the tests.
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
// A registration counts only while its part is alive. Before it inserts
// its row a part takes a lock that its own session holds for as long as
// the part is registered (barrierLock): the session ends with the
// process however it ends (SIGKILL, a crash), and the lock with it, at
// once, so a row whose lock is free was left by a part that is gone, and
// does not count; the next registration of its run clears it. The part
// also renews its row's heartbeat every barrierBeat, and a row whose
// heartbeat is older than barrierAlive does not count either (a host lost
// without closing its connections keeps its sessions). Once all N count,
// the part keeps making sure they still do until barrierQuit before the
// start, and stops, naming the part that is gone, when one is: a part
// that started never runs without a partner that died before the start.
// It removes its row and drops its lock barrierRelease before the start,
// or as soon as it gives up, fails or is interrupted.
func (p *Part) wait(ctx context.Context, t *opened, timeout time.Duration, say func(string)) (synced, error) {
	if !p.StartAt.IsZero() {
		d := time.Until(p.StartAt)
		if d < -time.Second {
			return synced{}, usage("--start-at %s is %s past: give a time ahead of every part's start", p.StartAt.Format(time.RFC3339), (-d).Round(time.Second))
		}
		say(fmt.Sprintf("part %d/%d: starting at %s (in %s)", p.Index, p.Of, p.StartAt.Format(time.RFC3339Nano), d.Round(time.Millisecond)))
		return synced{method: "start-at", startAt: p.StartAt}, sleepUntil(ctx, p.StartAt)
	}
	b := &registration{p: p, t: t, ctx: ctx, timeout: timeout, say: say, now: t.Dialect.NowMicros(), lock: newBarrierLock(t, p), cleared: map[int]string{}}
	err := b.q(func(ctx context.Context) error {
		var err error
		b.c, err = t.Connect(ctx)
		return err
	})
	if err != nil {
		return synced{}, fmt.Errorf("barrier: %w", err)
	}
	// A server that stopped answering is not asked again: the row stops
	// counting once the part's session ends or its heartbeat is
	// barrierAlive old.
	defer func() { b.leave(!b.silent) }()
	if err := b.table(); err != nil {
		return synced{}, err
	}
	offset, rtt, err := clockOffset(b.q, b.c, b.now)
	if err != nil {
		return synced{}, fmt.Errorf("barrier: read the database's clock: %w", err)
	}
	if err := b.register(); err != nil {
		return synced{}, err
	}
	deadline := time.Now().Add(p.BarrierTimeout)
	shown := -1
	for {
		if err := b.heartbeat(); err != nil {
			return synced{}, err
		}
		alive, err := b.alive()
		if err != nil {
			return synced{}, fmt.Errorf("barrier: %w", err)
		}
		n := len(alive)
		var last int64
		for _, m := range alive {
			if m.parts != p.Of {
				return synced{}, usage("barrier: run %q has a part registered as one of %d parts, this one says %d: give every part the same --part I/N (or its own --run-id)", p.RunID, m.parts, p.Of)
			}
			last = max(last, m.registered)
		}
		if n >= p.Of {
			start := time.UnixMicro(last).Add(barrierLead).Add(offset)
			say(fmt.Sprintf("part %d/%d: all %d parts registered; starting at %s (in %s; clock %+.1f ms from the database's, ±%.1f ms)",
				p.Index, p.Of, p.Of, start.Format(time.RFC3339Nano), time.Until(start).Round(time.Millisecond),
				float64(offset)/1e6, float64(rtt/2)/1e6))
			s := synced{method: "barrier", startAt: start, offset: offset, err: rtt / 2}
			return s, b.lead(start, alive)
		}
		if n != shown {
			say(fmt.Sprintf("part %d/%d: waiting for the other parts of run %q: %d of %d registered", p.Index, p.Of, p.RunID, n, p.Of))
			shown = n
		}
		if time.Now().After(deadline) {
			return synced{}, fmt.Errorf("barrier: only %d of %d parts of run %q registered in %s; missing %s: start every part with the same --run-id and --part I/%d (or raise --barrier-timeout)",
				n, p.Of, p.RunID, p.BarrierTimeout, b.missing(alive), p.Of)
		}
		select {
		case <-ctx.Done():
			return synced{}, ctx.Err()
		case <-time.After(barrierPoll):
		}
	}
}

// registration is one part's row in the barrier table, and its lock.
type registration struct {
	p       *Part
	t       *opened
	ctx     context.Context
	timeout time.Duration // each statement's, and each connection's
	say     func(string)
	c       engine.Conn
	now     string // the database's clock, in microseconds
	lock    barrierLock
	locked  bool // this part holds its lock
	// silent is set when the database did not answer within timeout.
	silent bool
	// registered is the row's registered_us, which tells it from a row
	// another process made for the same part after this one's lapsed; 0
	// when the part has no row.
	registered int64
	beatAt     time.Time      // the last heartbeat
	cleared    map[int]string // parts whose dead rows this part cleared: their host
}

// q runs f within the statement timeout: a server that freezes ends the
// wait instead of hanging it.
func (b *registration) q(f func(context.Context) error) error {
	qctx, cancel := context.WithTimeout(b.ctx, b.timeout)
	defer cancel()
	err := f(qctx)
	if err != nil && qctx.Err() == context.DeadlineExceeded && b.ctx.Err() == nil {
		b.silent = true
		return fmt.Errorf("the database did not answer within %s (--statement-timeout)", b.timeout)
	}
	return err
}

// member is a registration that counts.
type member struct {
	parts      int
	registered int64
	host       string
}

// rows reads the run's registrations, each with whether it counts: its
// lock is held (a row is inserted only once its lock is) and its
// heartbeat is recent.
func (b *registration) rows() (alive, dead map[int]member, err error) {
	alive, dead = map[int]member{}, map[int]member{}
	var parts []int
	all := map[int]member{}
	fresh := map[int]bool{}
	err = b.q(func(ctx context.Context) error {
		rows, err := b.c.Query(ctx, "SELECT part, parts, registered_us, coalesce(host, ''), CASE WHEN coalesce(alive_us, 0) >= "+b.now+" - $2 THEN 1 ELSE 0 END"+
			" FROM dbparity_barrier WHERE run = $1", b.p.RunID, barrierAlive.Microseconds())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var part, of, registered, recent int64
			var host string
			if err := rows.Scan(&part, &of, &registered, &host, &recent); err != nil {
				return err
			}
			all[int(part)] = member{parts: int(of), registered: registered, host: host}
			fresh[int(part)] = recent == 1
			parts = append(parts, int(part))
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, err
	}
	// The locks are read after the rows: a row seen was inserted after
	// its lock was taken, so a lock found free has been let go.
	var held map[int]bool
	err = b.q(func(ctx context.Context) error {
		var err error
		held, err = b.lock.held(ctx, b.c, parts)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read the parts' locks: %w", err)
	}
	for part, m := range all {
		// This part's own lock is known held (a lock of the process's
		// own may not show where locks belong to processes).
		own := part == b.p.Index && b.locked && m.registered == b.registered
		if fresh[part] && (held[part] || own) {
			alive[part] = m
		} else {
			dead[part] = m
		}
	}
	return alive, dead, nil
}

// alive is the run's registrations that count.
func (b *registration) alive() (map[int]member, error) {
	alive, _, err := b.rows()
	return alive, err
}

// missing names the parts that have not registered, and what became of
// the registrations of theirs this part cleared.
func (b *registration) missing(alive map[int]member) string {
	var s []string
	for i := range b.p.Of {
		if _, ok := alive[i]; ok {
			continue
		}
		w := fmt.Sprintf("part %d", i)
		if host, ok := b.cleared[i]; ok {
			w += fmt.Sprintf(", whose registration from host %s was left by a process that ended (killed?)", host)
		}
		s = append(s, w)
		if len(s) == 5 {
			s = append(s, "...")
			break
		}
	}
	return strings.Join(s, ", ")
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

// register takes the part's lock (refused while another live process
// holds it: the same part registered twice), clears the run's rows that
// do not count (their parts are gone) and any row dead for barrierStale,
// then inserts this part's.
func (b *registration) register() error {
	p := b.p
	if !b.locked {
		var ok bool
		if err := b.q(func(ctx context.Context) error {
			var err error
			ok, err = b.lock.take(ctx)
			return err
		}); err != nil {
			b.lock.release()
			return fmt.Errorf("barrier: take the lock of part %d of run %q: %w", p.Index, p.RunID, err)
		}
		if !ok {
			var other string
			b.q(func(ctx context.Context) error {
				return b.c.QueryRow(ctx, "SELECT coalesce(host, '') FROM dbparity_barrier WHERE run = $1 AND part = $2", p.RunID, p.Index).Scan(&other)
			})
			if other != "" {
				other = " (on host " + other + ")"
			}
			return usage("barrier: part %d of run %q is already registered by a part still waiting%s: a run id serves one run, give each run its own --run-id", p.Index, p.RunID, other)
		}
		b.locked = true
	}
	_, dead, err := b.rows()
	if err != nil {
		return fmt.Errorf("barrier: register part %d of run %q: %w", p.Index, p.RunID, err)
	}
	for part, m := range dead {
		if part == p.Index {
			continue // removed below
		}
		if _, seen := b.cleared[part]; !seen {
			b.say(fmt.Sprintf("part %d/%d: the registration of part %d (host %s) was left by a process that ended (killed?): it does not count", p.Index, p.Of, part, m.host))
		}
		b.cleared[part] = m.host
		if err := b.q(func(ctx context.Context) error {
			_, err := b.c.Exec(ctx, "DELETE FROM dbparity_barrier WHERE run = $1 AND part = $2 AND registered_us = $3", p.RunID, part, m.registered)
			return err
		}); err != nil {
			return fmt.Errorf("barrier: clear the registration of part %d of run %q: %w", part, p.RunID, err)
		}
	}
	host, _ := os.Hostname()
	err = b.q(func(ctx context.Context) error {
		// This part's lock is held here: a row of the part is a dead
		// predecessor's, or this part's own that lapsed.
		// The registration's time is read before its row goes in, so that
		// a part interrupted after the INSERT (its answer not read yet)
		// still knows which row to remove as it leaves.
		_, err := b.c.Exec(ctx, "DELETE FROM dbparity_barrier WHERE (run = $1 AND part = $2) OR coalesce(alive_us, registered_us) < "+b.now+" - $3",
			p.RunID, p.Index, barrierStale.Microseconds())
		var at int64
		if err == nil {
			err = b.c.QueryRow(ctx, "SELECT "+b.now).Scan(&at)
		}
		if err == nil {
			b.registered = at
			_, err = b.c.Exec(ctx, "INSERT INTO dbparity_barrier (run, part, parts, host, registered_us, alive_us) VALUES ($1, $2, $3, $4, $5, $6)",
				p.RunID, p.Index, p.Of, host, at, at)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("barrier: register part %d of run %q: %w", p.Index, p.RunID, err)
	}
	b.beatAt = time.Now()
	return nil
}

// heartbeat renews the row's alive_us and makes sure the connection that
// holds the part's lock is still there. A lock whose connection was lost
// is taken again, and a row that is gone (this process did not answer for
// barrierAlive, and a part registering since cleared it) is registered
// again.
func (b *registration) heartbeat() error {
	p := b.p
	if time.Since(b.beatAt) < barrierBeat {
		return nil
	}
	if err := b.q(b.lock.ping); err != nil {
		if b.silent {
			return fmt.Errorf("barrier: %w", err)
		}
		b.say(fmt.Sprintf("part %d/%d: the connection that holds its registration's lock was lost (%v): registering again", p.Index, p.Of, err))
		b.lock.release()
		b.locked = false
		return b.register()
	}
	n, err := b.beat(time.Time{})
	if err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	if n > 0 {
		return nil
	}
	// MySQL counts the rows changed, not found: look.
	if ok, err := b.exists(); err != nil || ok {
		return err
	}
	b.say(fmt.Sprintf("part %d/%d: its registration lapsed (no heartbeat for %s) and was cleared: registering again", p.Index, p.Of, barrierAlive))
	b.registered = 0
	return b.register()
}

// exists tells whether the part's row is still there.
func (b *registration) exists() (bool, error) {
	var k int64
	if err := b.q(func(ctx context.Context) error {
		return b.c.QueryRow(ctx, "SELECT count(*) FROM dbparity_barrier WHERE run = $1 AND part = $2 AND registered_us = $3",
			b.p.RunID, b.p.Index, b.registered).Scan(&k)
	}); err != nil {
		return false, fmt.Errorf("barrier: %w", err)
	}
	return k > 0, nil
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

// lead holds the part until start once all of members registered: until
// barrierQuit before it, it keeps its own registration alive and makes
// sure, every barrierPoll, that every member's still counts (the same
// registration: a part killed and started again is another process,
// which registered after the start was fixed). A member gone, or this
// part's own lock or row lost, ends the wait with an error naming it:
// the other parts see the same, or this part gone, and stop too. Then it
// removes its row and lets go of its lock, and waits for start.
func (b *registration) lead(start time.Time, members map[int]member) error {
	p := b.p
	quit := start.Add(-barrierQuit)
	for {
		if time.Since(b.beatAt) >= barrierBeat {
			if err := b.q(b.lock.ping); err != nil {
				return fmt.Errorf("barrier: part %d of run %q lost the connection that holds its registration's lock before the start (%v): the other parts stop without it, and so does this one", p.Index, p.RunID, err)
			}
			n, err := b.beat(time.Time{})
			if err == nil && n == 0 {
				var ok bool
				if ok, err = b.exists(); err == nil && !ok {
					err = errors.New("its registration was cleared")
				}
			}
			if err != nil {
				return fmt.Errorf("barrier: part %d of run %q could not keep its registration until the start (%v): the other parts stop without it, and so does this one", p.Index, p.RunID, err)
			}
		}
		alive, err := b.alive()
		if err != nil {
			return fmt.Errorf("barrier: could not make sure the other parts are still there before the start: %w", err)
		}
		var gone []string
		for _, i := range slices.Sorted(maps.Keys(members)) {
			if m, ok := alive[i]; !ok || m.registered != members[i].registered {
				gone = append(gone, fmt.Sprintf("part %d (host %s)", i, members[i].host))
			}
		}
		// A reading that came back after quit may have been made after
		// another part's orderly leave at barrierRelease (a loaded host's
		// query took longer than the 150 ms between them, and a live part
		// was taken for gone): only one that came back before quit was
		// surely made while every part still held its row.
		if len(gone) > 0 && time.Now().Before(quit) {
			return fmt.Errorf("barrier: %s of run %q left after all %d parts registered, before the start (its process ended: killed, or it lost its connection): not starting without it",
				strings.Join(gone, ", "), p.RunID, p.Of)
		}
		if b.ctx.Err() != nil {
			return b.ctx.Err()
		}
		if !time.Now().Before(quit) {
			break
		}
		next := time.Now().Add(barrierPoll)
		if next.After(quit) {
			next = quit
		}
		if err := sleepUntil(b.ctx, next); err != nil {
			return err
		}
	}
	if err := sleepUntil(b.ctx, start.Add(-barrierRelease)); err != nil {
		return err
	}
	if reg := b.registered; !b.remove(start) {
		// The server did not delete the row by the start (a loaded SQLite
		// file, a busy server): it is deleted beside the run, on a
		// connection of its own, rather than delay the start the parts
		// agreed on.
		go b.removeRow(context.Background(), nil, reg, start.Add(barrierLeave))
	}
	b.lock.release()
	b.locked = false
	return sleepUntil(b.ctx, start)
}

// remove deletes the part's row, trying until deadline (on a new
// connection if a cancelled statement broke this one), and tells whether
// it did. The part has no row after it either way.
func (b *registration) remove(deadline time.Time) bool {
	if b.registered == 0 {
		return true
	}
	reg := b.registered
	b.registered = 0
	return b.removeRow(context.Background(), b.c, reg, deadline)
}

// removeRow deletes the row registered at reg through c, or a connection
// of its own when c is nil or fails, until deadline.
func (b *registration) removeRow(ctx context.Context, c engine.Conn, reg int64, deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	del := func(c engine.Conn) error {
		_, err := c.Exec(ctx, "DELETE FROM dbparity_barrier WHERE run = $1 AND part = $2 AND registered_us = $3", b.p.RunID, b.p.Index, reg)
		return err
	}
	if c != nil && del(c) == nil {
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	own, err := b.t.Connect(ctx)
	if err != nil {
		return false
	}
	defer own.Close()
	return del(own) == nil
}

// leave removes the row of a part that gives up or is interrupted, if
// remove, lets go of its lock (after the row: a row is never seen
// without its lock but when its part is gone) and closes the connection.
func (b *registration) leave(remove bool) {
	if remove {
		b.remove(time.Now().Add(barrierLeave))
	}
	b.lock.release()
	b.c.Close()
}

// barrierLock is the lock a part holds while it is registered, through a
// session of its own that does nothing else, so that it is let go the
// moment the part's process ends, however it ends: the server ends the
// session of a connection its client closed, and the kernel closes a
// killed process's connections and files. Any session reads whether a
// part's lock is held without taking it (PostgreSQL's pg_locks, MySQL's
// IS_USED_LOCK, F_GETLK), so that no reader ever holds another's lock,
// even for a moment.
type barrierLock interface {
	// take takes this part's lock on a new session; false when another
	// session holds it.
	take(ctx context.Context) (bool, error)
	// held tells which of parts' locks are held, reading through c.
	held(ctx context.Context, c engine.Conn, parts []int) (map[int]bool, error)
	// ping makes sure the session that holds the lock is still there.
	ping(ctx context.Context) error
	// release lets go of the lock (closing its session); safe to repeat.
	release()
}

// newBarrierLock returns the lock of part p, named by a hash of its run
// id (52 bits of it: two runs' hashes meet about once in 10^15 pairs)
// and its index.
func newBarrierLock(t *opened, p *Part) barrierLock {
	h := fnv.New64a()
	h.Write([]byte("dbparity barrier\x00" + p.RunID))
	key := h.Sum64()
	switch t.Dialect {
	case engine.Postgres:
		return &pgLock{t: t, part: p.Index, class: int64(key >> 33), base: int64(key>>12&(1<<21-1)) << 10}
	case engine.MySQL:
		return &myLock{t: t, run: p.RunID, part: p.Index, prefix: fmt.Sprintf("dbparity-barrier-%016x-", key)}
	}
	return &fileLock{path: t.Path + "-barrier", part: p.Index, base: int64(key>>12) << 10}
}

// pgLock is a transaction-level advisory lock (class, base + part) held
// by an open transaction: a transaction-mode pooler (PgBouncer) keeps the
// transaction on one server connection and ends it when its client goes,
// where a session-level lock would stay on the pooled server connection.
type pgLock struct {
	t           *opened
	part        int
	class, base int64
	h           engine.Conn
}

func (l *pgLock) take(ctx context.Context) (bool, error) {
	l.release()
	h, err := l.t.Connect(ctx)
	if err != nil {
		return false, err
	}
	l.h = h
	// A server that ends transactions idle or open too long would end the
	// lock's: not this one's.
	var limits []string
	rows, err := h.Query(ctx, "SELECT name FROM pg_settings WHERE name IN ('idle_in_transaction_session_timeout', 'transaction_timeout')")
	if err == nil {
		for rows.Next() {
			var n string
			if rows.Scan(&n) == nil {
				limits = append(limits, n)
			}
		}
		err = rows.Err()
		rows.Close()
	}
	if err == nil {
		err = h.Begin(ctx, engine.ReadWrite)
	}
	for _, n := range limits {
		if err == nil {
			_, err = h.Exec(ctx, "SET LOCAL "+n+" = 0")
		}
	}
	var ok bool
	if err == nil {
		err = h.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1::int, $2::int)", l.class, l.base+int64(l.part)).Scan(&ok)
	}
	if err != nil || !ok {
		l.release()
	}
	return ok, err
}

func (l *pgLock) held(ctx context.Context, c engine.Conn, _ []int) (map[int]bool, error) {
	rows, err := c.Query(ctx, "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted"+
		" AND classid::bigint = $1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())", l.class)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	held := map[int]bool{}
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		if d := k - l.base; d >= 0 && d < MaxParts {
			held[int(d)] = true
		}
	}
	return held, rows.Err()
}

func (l *pgLock) ping(ctx context.Context) error { return pingConn(ctx, l.h) }

func (l *pgLock) release() {
	if l.h != nil {
		l.h.Close() // the transaction ends, and its lock
		l.h = nil
	}
}

// myLock is a MySQL/MariaDB named lock (GET_LOCK), held by its session.
type myLock struct {
	t      *opened
	run    string
	part   int
	prefix string // the lock's name without the part
	h      engine.Conn
}

func (l *myLock) take(ctx context.Context) (bool, error) {
	l.release()
	h, err := l.t.Connect(ctx)
	if err != nil {
		return false, err
	}
	l.h = h
	var got int64
	err = h.QueryRow(ctx, "SELECT coalesce(GET_LOCK($1, 0), -1)", l.prefix+strconv.Itoa(l.part)).Scan(&got)
	if err == nil && got < 0 {
		err = errors.New("GET_LOCK failed")
	}
	if err != nil || got != 1 {
		l.release()
	}
	return got == 1, err
}

func (l *myLock) held(ctx context.Context, c engine.Conn, _ []int) (map[int]bool, error) {
	rows, err := c.Query(ctx, "SELECT part FROM dbparity_barrier WHERE run = $1 AND IS_USED_LOCK(CONCAT($2, part)) IS NOT NULL", l.run, l.prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	held := map[int]bool{}
	for rows.Next() {
		var part int64
		if err := rows.Scan(&part); err != nil {
			return nil, err
		}
		held[int(part)] = true
	}
	return held, rows.Err()
}

// ping makes sure the lock is this session's still (a connection made
// again underneath would have lost it).
func (l *myLock) ping(ctx context.Context) error {
	if l.h == nil {
		return errors.New("no connection holds the lock")
	}
	var mine int64
	if err := l.h.QueryRow(ctx, "SELECT coalesce(IS_USED_LOCK($1) = CONNECTION_ID(), 0)", l.prefix+strconv.Itoa(l.part)).Scan(&mine); err != nil {
		return err
	}
	if mine != 1 {
		return errors.New("its session no longer holds the lock")
	}
	return nil
}

func (l *myLock) release() {
	if l.h != nil {
		l.h.Close() // the session ends, and its locks
		l.h = nil
	}
}

// pingConn makes sure c answers.
func pingConn(ctx context.Context, c engine.Conn) error {
	if c == nil {
		return errors.New("no connection holds the lock")
	}
	var one int64
	return c.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// fileLock is SQLite's: the parts of a run on one database file share its
// host, and each holds a write lock on one byte (base + part) of the file
// DB-barrier beside the database, which the kernel drops when the
// process ends. On Linux the locks are the open file's (F_OFD_SETLK), so
// that parts in one process (the tests) hold their own; elsewhere they
// are the process's.
type fileLock struct {
	path        string
	part        int
	base        int64
	hold, check *os.File
}

// The commands on file locks; Linux's own for the open file's locks.
var getLK, setLK = func() (int, int) {
	if runtime.GOOS == "linux" {
		return 36, 37 // F_OFD_GETLK, F_OFD_SETLK
	}
	return syscall.F_GETLK, syscall.F_SETLK
}()

func (l *fileLock) take(context.Context) (bool, error) {
	if l.hold == nil {
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return false, err
		}
		l.hold = f
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: l.base + int64(l.part), Len: 1}
	err := syscall.FcntlFlock(l.hold.Fd(), setLK, &lk)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", l.path, err)
	}
	return true, nil
}

func (l *fileLock) held(_ context.Context, _ engine.Conn, parts []int) (map[int]bool, error) {
	if l.check == nil {
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		l.check = f
	}
	held := map[int]bool{}
	for _, part := range parts {
		lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: l.base + int64(part), Len: 1}
		if err := syscall.FcntlFlock(l.check.Fd(), getLK, &lk); err != nil {
			return nil, fmt.Errorf("read the locks of %s: %w", l.path, err)
		}
		held[part] = lk.Type != syscall.F_UNLCK
	}
	return held, nil
}

func (*fileLock) ping(context.Context) error { return nil }

func (l *fileLock) release() {
	for _, f := range []**os.File{&l.hold, &l.check} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
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
