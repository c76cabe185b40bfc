package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/target"
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
	// barrierStale is when a run's rows are old enough to be another
	// run's: removed, so that a run id can be used again.
	barrierStale = time.Hour
)

// barrierTable is where the parts of a run register.
const barrierTable = "CREATE TABLE IF NOT EXISTS dbparity_barrier (run varchar(200) NOT NULL, part int NOT NULL," +
	" parts int NOT NULL, host varchar(255), registered_us bigint NOT NULL, PRIMARY KEY (run, part))"

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
	q := func(f func(context.Context) error) error {
		qctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		err := f(qctx)
		if err != nil && qctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return fmt.Errorf("the database did not answer within %s (--statement-timeout)", timeout)
		}
		return err
	}
	var c target.Conn
	err := q(func(ctx context.Context) error {
		var err error
		c, err = t.Connect(ctx)
		return err
	})
	if err != nil {
		return synced{}, fmt.Errorf("barrier: %w", err)
	}
	defer c.Close()
	now := t.Dialect.NowMicros()
	if err := q(func(ctx context.Context) error { _, err := c.Exec(ctx, barrierTable); return err }); err != nil {
		// Two parts creating the table at once: one of them wins.
		exists := false
		q(func(ctx context.Context) error {
			exists, _ = t.Dialect.TableExists(ctx, c, "dbparity_barrier")
			return nil
		})
		if !exists {
			return synced{}, fmt.Errorf("barrier: create dbparity_barrier: %w", err)
		}
	}
	offset, rtt, err := clockOffset(q, c, now)
	if err != nil {
		return synced{}, fmt.Errorf("barrier: read the database's clock: %w", err)
	}
	host, _ := os.Hostname()
	err = q(func(ctx context.Context) error {
		_, err := c.Exec(ctx, "DELETE FROM dbparity_barrier WHERE run = $1 AND registered_us < "+now+" - $2", p.RunID, barrierStale.Microseconds())
		if err == nil {
			_, err = c.Exec(ctx, "INSERT INTO dbparity_barrier (run, part, parts, host, registered_us) VALUES ($1, $2, $3, $4, "+now+")",
				p.RunID, p.Index, p.Of, host)
		}
		return err
	})
	if err != nil {
		var other string
		if q(func(ctx context.Context) error {
			return c.QueryRow(ctx, "SELECT host FROM dbparity_barrier WHERE run = $1 AND part = $2", p.RunID, p.Index).Scan(&other)
		}) == nil {
			return synced{}, usage("barrier: part %d of run %q is already registered (by host %s): a run id serves one run, give each run its own --run-id", p.Index, p.RunID, other)
		}
		return synced{}, fmt.Errorf("barrier: register part %d of run %q: %w", p.Index, p.RunID, err)
	}
	deadline := time.Now().Add(p.BarrierTimeout)
	shown := -1
	for {
		var n, lo, hi, last int64
		err := q(func(ctx context.Context) error {
			return c.QueryRow(ctx, "SELECT count(*), min(parts), max(parts), max(registered_us) FROM dbparity_barrier WHERE run = $1",
				p.RunID).Scan(&n, &lo, &hi, &last)
		})
		if err != nil {
			return synced{}, fmt.Errorf("barrier: %w", err)
		}
		if lo != int64(p.Of) || hi != int64(p.Of) {
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
			return s, sleepUntil(ctx, start)
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

// clockOffset estimates this host's clock minus the database server's
// from the quickest of a few reads of the server's clock (the reading is
// taken as made halfway through the round trip); rtt is that read's round
// trip, twice the estimate's bound.
func clockOffset(q func(func(context.Context) error) error, c target.Conn, now string) (offset, rtt time.Duration, err error) {
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
