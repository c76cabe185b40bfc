package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/collect/counters"
	"github.com/dbparity/dbparity/internal/collect/mystat"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/collect/pgstat"
	"github.com/dbparity/dbparity/internal/engine"
)

// benchApp is the application_name of the bench's own connections.
const benchApp = "dbparity-bench"

// sample is one reading of the sources that are right at the instant they
// are read: this host's /proc, and the server's real-time counters
// (PostgreSQL's WAL insert position and pg_stat_statements, which a
// statement updates as it ends; MariaDB's global status, summed over the
// live sessions at each SHOW, and performance_schema).
type sample struct {
	at time.Time // the middle of the database reading
	os *ostat.Snapshot
	db map[string]float64
}

// sampler reads every period until stopped, beside the run.
type sampler struct {
	period time.Duration
	os     *ostat.Reader
	read   func(ctx context.Context) (map[string]float64, error)
	mu     sync.Mutex
	got    []sample
	errs   int
	first  error
	stop   context.CancelFunc
	done   chan struct{}
}

func startSampler(period time.Duration, os *ostat.Reader, read func(context.Context) (map[string]float64, error)) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{period: period, os: os, read: read, stop: cancel, done: make(chan struct{})}
	go s.run(ctx)
	return s
}

func (s *sampler) run(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.period)
	defer t.Stop()
	for {
		s.once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *sampler) once(ctx context.Context) {
	o, err := s.os.Read()
	if err != nil {
		s.fail(err)
		return
	}
	t0 := time.Now()
	db, err := s.read(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.fail(err)
		}
		return
	}
	t1 := time.Now()
	s.mu.Lock()
	s.got = append(s.got, sample{at: t0.Add(t1.Sub(t0) / 2), os: o, db: db})
	s.mu.Unlock()
}

func (s *sampler) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs++
	if s.first == nil {
		s.first = err
	}
}

// finish stops the sampler and returns its samples, and a note when some
// failed.
func (s *sampler) finish() ([]sample, string, error) {
	s.stop()
	<-s.done
	// One more, after the run: the window's end may have come after the
	// last tick of the loop.
	s.once(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) < 2 {
		return nil, "", fmt.Errorf("truth sampler: %d samples (%d failed, first: %v)", len(s.got), s.errs, s.first)
	}
	note := ""
	if s.errs > 0 {
		note = fmt.Sprintf("%d of %d truth samples failed, first: %v", s.errs, s.errs+len(s.got), s.first)
	}
	return s.got, note, nil
}

// at interpolates counter k of the samples linearly at t; ok is false
// when t is outside them or k is missing.
func at(ss []sample, k string, t time.Time) (float64, bool) {
	for i := 1; i < len(ss); i++ {
		a, b := ss[i-1], ss[i]
		if t.Before(a.at) || t.After(b.at) {
			continue
		}
		x, okA := a.db[k]
		y, okB := b.db[k]
		if !okA || !okB {
			return 0, false
		}
		span := b.at.Sub(a.at).Seconds()
		if span <= 0 {
			return y, true
		}
		f := t.Sub(a.at).Seconds() / span
		return x + f*(y-x), true
	}
	return 0, false
}

// inside are the first and the last /proc readings taken inside the
// window [t0, t1] (the outermost ones when none is): the last one before
// the window's end, not after, as the sessions' backends exit as the run
// ends and take their run-queue waits with them.
func inside(ss []sample, t0, t1 time.Time) (first, last *ostat.Snapshot) {
	for _, s := range ss {
		if first == nil && !s.os.At.Before(t0) {
			first = s.os
		}
		if !s.os.At.After(t1) {
			last = s.os
		}
	}
	if first == nil {
		first = ss[len(ss)-1].os
	}
	if last == nil {
		last = ss[0].os
	}
	return first, last
}

// pgSampler reads PostgreSQL's real-time counters: the WAL insert
// position (in bytes from 0/0) and the sums of pg_stat_statements, inside
// one transaction that stays open, so that the samples add no
// transaction to the counters the run measures (a read-committed
// transaction idle between statements holds no snapshot, so it does not
// hold back vacuum). end commits it.
type pgSampler struct {
	c    engine.Conn
	q    string
	keys []string
}

// pgssColumns are the pg_stat_statements sums sampled, under the keys
// pgstat reads them by.
var pgssColumns = []string{"calls", "total_exec_time", "total_plan_time", "rows", "shared_blks_hit", "shared_blks_read",
	"shared_blks_dirtied", "shared_blks_written", "blk_read_time", "blk_write_time", "wal_records", "wal_fpi", "wal_bytes"}

// bgwriterColumns are pg_stat_bgwriter's (15, 16): the checkpointer and
// the background writer publish them as they work (the backends' writes
// and fsyncs reach them through the checkpointer), not a session's
// second later.
var bgwriterColumns = []string{"checkpoints_timed", "checkpoints_req", "checkpoint_write_time", "checkpoint_sync_time",
	"buffers_checkpoint", "buffers_clean", "maxwritten_clean", "buffers_backend", "buffers_backend_fsync", "buffers_alloc"}

func newPGSampler(ctx context.Context, c engine.Conn) (*pgSampler, error) {
	s := &pgSampler{c: c, keys: []string{"lsn"}}
	cols := []string{"(pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::float8"}
	var bg []string
	for _, col := range bgwriterColumns {
		bg = append(bg, col+"::float8")
	}
	bgq := "SELECT " + strings.Join(bg, ", ") + " FROM pg_stat_bgwriter"
	if _, err := c.Exec(ctx, bgq); err == nil {
		for _, col := range bgwriterColumns {
			s.keys = append(s.keys, "pg_stat_bgwriter."+col)
		}
		cols = append(cols, "b.*")
	} else {
		bgq = "SELECT"
	}
	var sums []string
	for _, col := range pgssColumns {
		sums = append(sums, "coalesce(sum("+col+"), 0)::float8")
	}
	pgss := "SELECT " + strings.Join(sums, ", ") + " FROM pg_stat_statements"
	if _, err := c.Exec(ctx, pgss); err == nil {
		for _, col := range pgssColumns {
			s.keys = append(s.keys, "pg_stat_statements."+col)
		}
		cols = append(cols, "s.*")
	} else {
		pgss = "SELECT"
	}
	s.q = "SELECT " + strings.Join(cols, ", ") + " FROM (" + bgq + ") b, (" + pgss + ") s"
	// Each reading fresh, not the transaction's first (15's default,
	// cache, keeps pg_stat_bgwriter's values for the whole transaction).
	if _, err := c.Exec(ctx, "SET stats_fetch_consistency = none"); err != nil {
		return nil, fmt.Errorf("truth sampler: %w", err)
	}
	if _, err := c.Exec(ctx, "BEGIN ISOLATION LEVEL READ COMMITTED"); err != nil {
		return nil, fmt.Errorf("truth sampler: %w", err)
	}
	return s, nil
}

func (s *pgSampler) read(ctx context.Context) (map[string]float64, error) {
	v := make([]float64, len(s.keys))
	dest := make([]any, len(v))
	for i := range v {
		dest[i] = &v[i]
	}
	if err := s.c.QueryRow(ctx, s.q).Scan(dest...); err != nil {
		return nil, err
	}
	m := make(map[string]float64, len(v))
	for i, k := range s.keys {
		m[k] = v[i]
	}
	return m, nil
}

func (s *pgSampler) end(ctx context.Context) { s.c.Exec(ctx, "COMMIT") }

// mySampler reads MariaDB's global status and performance_schema as the
// collectors do (package mystat): both are current at every reading.
func mySampler(ctx context.Context, c engine.Conn) (func(context.Context) (map[string]float64, error), error) {
	r, err := mystat.NewReader(ctx, c)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (map[string]float64, error) {
		s, err := r.Read(ctx)
		if err != nil {
			return nil, err
		}
		return s.Counters, nil
	}, nil
}

// quiet waits until no client session of the database but the bench's
// is left (the run's sessions and collectors have disconnected, and so
// published every count they held), at most limit, and reads the
// counters then.
func pgQuiet(ctx context.Context, c engine.Conn, r *pgstat.Reader, limit time.Duration) (*counters.Snapshot, error) {
	end := time.Now().Add(limit)
	for {
		var n int
		err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND backend_type = 'client backend' AND application_name <> $1`, benchApp).Scan(&n)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		if time.Now().After(end) {
			return nil, fmt.Errorf("%d sessions still connected %s after the run", n, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The bench's own backend publishes its counts now, not a second later.
	c.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	return r.Read(ctx)
}
