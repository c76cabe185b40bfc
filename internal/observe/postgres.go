package observe

import (
	"context"
	"fmt"
	"strings"

	"github.com/dbparity/dbparity/internal/collect/pgstat"
	"github.com/dbparity/dbparity/internal/result"
)

// postgres observes a PostgreSQL server: pg_stat_* counters in a reader's
// transaction on one connection, session states sampled from
// pg_stat_activity on another, the preflight and the database's
// description at the start.
type postgres struct{ serverCounters }

func newPostgres(ob *Observer) source {
	return &postgres{serverCounters{ob: ob, fig: figures{
		commits:     []string{"pg_stat_database.xact_commit"},
		rollbacks:   []string{"pg_stat_database.xact_rollback"},
		logicalRead: []string{"pg_stat_database.blks_hit", "pg_stat_database.blks_read"},
		reads:       []string{"pg_stat_database.blks_read"},
		rowsChanged: []string{"pg_stat_database.tup_inserted", "pg_stat_database.tup_updated", "pg_stat_database.tup_deleted"},
		walBytes:    []string{"pg_stat_wal.wal_bytes"},
		activeTime:  []string{"pg_stat_database.active_time"},
		activeScale: 0.001,
		monotonic:   []string{"pg_stat_database.xact_commit", "pg_stat_database.blks_hit", "pg_stat_wal.wal_bytes"},
	}}}
}

func (p *postgres) start(_, ctx context.Context) error {
	ob := p.ob
	c, err := ob.dial(ctx)
	if err != nil {
		return err
	}
	pg, err := pgstat.NewReader(ctx, c)
	if err != nil {
		return err
	}
	p.stats, p.commitKey = pg, "pg_stat_database.xact_commit"
	if pg.Version >= 150000 && pgstat.CanForceFlush(ctx, c) {
		// The sessions publish their counts before every reading
		// (pg_stat_force_next_flush, 15+; settle.go).
		p.settle = newSettler()
		ob.settler = p.settle
	}
	w, err := pgstat.Preflight(ctx, c)
	ob.warnings = append(ob.warnings, w...)
	if err != nil {
		return err
	}
	// Describe inside the reader's transaction: its queries are not counted.
	if ob.database, err = pgstat.Describe(ctx, c, pg.Missing); err != nil {
		return err
	}
	sc, err := ob.dial(ctx)
	if err != nil {
		return err
	}
	p.sampler = pgstat.NewSampler(sc, ob.opts.WaitInterval, collectorApp)
	return p.begin(ctx)
}

func (p *postgres) finish(r *result.Run) { p.finishWindow(r, p.profiles) }

// profiles are PostgreSQL's load and IO profiles and IO by backend type.
func (p *postgres) profiles(r *result.Run, d map[string]float64, covered float64) (lp, io result.Profile, lag string) {
	db := p.ob.database
	if !strings.HasPrefix(db.Settings["track_io_timing"], "on") {
		// Off, the timings stay zero: not a measurement of zero.
		delete(d, "pg_stat_database.blk_read_time")
		delete(d, "pg_stat_database.blk_write_time")
	}
	src := "postgres " + db.Version
	lp, io = pgstat.LoadProfile(src, d, covered), pgstat.IOProfile(src, d, covered, float64(db.BlockSize))
	r.IOByBackend = pgstat.IOByBackend(d, covered)
	if db.VersionNum > 0 && covered < 60 {
		// A busy backend's counters reach the views late: before 15
		// through the statistics collector, up to 500 ms
		// (PGSTAT_STAT_INTERVAL); from 15 it flushes them at most
		// once a second (PGSTAT_MIN_INTERVAL). Each edge of a short
		// window can miss that much, unless the sessions published
		// their counts at both edges (settle.go): before 15 they
		// cannot, and on 15+ the server may have stopped answering
		// before they did. Another client's counts still lag.
		late, how := 1.0, "flushed at most once a second"
		if db.VersionNum < 150000 {
			late, how = 0.5, "the statistics collector"
		}
		lag = fmt.Sprintf("PostgreSQL %s publishes a busy session's counters up to %g s late (%s): over %.0f s, up to %.0f%% off",
			db.Version, late, how, covered, 100*late/covered)
		if p.settled() {
			lag = fmt.Sprintf("PostgreSQL %s publishes a busy session's counters up to %g s late (%s): "+
				"the run's sessions published theirs at the window's edges; another client's may be off by that much at each edge",
				db.Version, late, how)
		}
	}
	return lp, io, lag
}
