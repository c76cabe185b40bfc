package observe

import (
	"context"

	"github.com/dbparity/dbparity/internal/collect/counters"
	"github.com/dbparity/dbparity/internal/collect/mystat"
	"github.com/dbparity/dbparity/internal/result"
)

// mysql observes a MySQL or MariaDB server: SHOW GLOBAL STATUS and
// performance_schema on one connection, the process list sampled on
// another. The server counts no transaction of the collectors' (they
// send no COMMIT, and touch no transactional table): no correction for
// their own transactions.
type mysql struct{ serverCounters }

func newMySQL(ob *Observer) source {
	return &mysql{serverCounters{ob: ob, fig: figures{
		commits:     []string{"status.Com_commit"},
		rollbacks:   []string{"status.Com_rollback"},
		logicalRead: []string{"status.Innodb_buffer_pool_read_requests"},
		reads:       []string{"status.Innodb_buffer_pool_reads"},
		writes:      []string{"status.Innodb_buffer_pool_pages_flushed"},
		rowsChanged: []string{"status.Innodb_rows_inserted", "status.Innodb_rows_updated", "status.Innodb_rows_deleted"},
		walBytes:    []string{"status.Innodb_os_log_written"},
		activeTime:  []string{mystat.KeyStatementTime},
		activeScale: 1e-12,
		monotonic:   []string{"status.Questions", "status.Innodb_buffer_pool_read_requests"},
	}}}
}

func (m *mysql) start(_, ctx context.Context) error {
	ob := m.ob
	c, err := ob.dial(ctx)
	if err != nil {
		return err
	}
	my, err := mystat.NewReader(ctx, c)
	if err != nil {
		return err
	}
	m.stats = my
	if my.Transactions {
		// The series' commits: performance_schema's transactions, which
		// count autocommit statements too, less the rollbacks.
		m.fig.commits = []string{mystat.KeyCommits}
	}
	w, err := mystat.Preflight(ctx, c, my)
	ob.warnings = append(ob.warnings, w...)
	if err != nil {
		return err
	}
	if ob.database, err = mystat.Describe(ctx, c); err != nil {
		return err
	}
	sc, err := ob.dial(ctx)
	if err != nil {
		return err
	}
	m.sampler = mystat.NewSampler(sc, ob.opts.WaitInterval)
	return m.begin(ctx)
}

func (m *mysql) finish(r *result.Run) { m.finishWindow(r, m.profiles) }

// profiles are MySQL's load and IO profiles and its timed waits.
func (m *mysql) profiles(r *result.Run, d map[string]float64, covered float64) (lp, io result.Profile, lag string) {
	src := m.ob.database.Product + " " + m.ob.database.Version
	if _, ok := d[counters.ExtraClientStmt]; ok {
		// The driver's counts cover the window: its transactions are the
		// divisor when the server counts no autocommit transactions.
		s := r.Summarize()
		d[mystat.ExtraClientTx] = float64(s.Commits + s.Rollbacks)
	}
	lp, io = mystat.LoadProfile(src, d, covered), mystat.IOProfile(src, d, covered)
	r.TimedWaits = mystat.TopWaits(d, 10)
	return lp, io, ""
}
