package observe

import (
	"context"
	"fmt"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
)

// collectorConn is a collector's connection that never hangs and comes
// back: every statement and every connection attempt has the run's
// statement timeout, and a connection that was lost (the server was
// killed, restarted, or froze past the timeout) is opened again at the
// next statement. The collectors' code sees one engine.Conn throughout.
// It is used by one goroutine at a time.
type collectorConn struct {
	t       *engine.Target
	app     string
	timeout time.Duration
	c       engine.Conn
	// closedStmts counts the statements of connections already closed;
	// reconnects the connections opened after the first.
	closedStmts int64
	reconnects  int
}

// dialCollector opens the first connection; failing, it fails the run's
// start, as a server that cannot be reached before the run should.
func dialCollector(ctx context.Context, t *engine.Target, app string, timeout time.Duration) (*collectorConn, error) {
	cc := &collectorConn{t: t, app: app, timeout: timeout}
	if _, err := cc.conn(ctx); err != nil {
		return nil, err
	}
	cc.reconnects = 0
	return cc, nil
}

func (cc *collectorConn) conn(ctx context.Context) (engine.Conn, error) {
	if cc.c != nil && !cc.c.Lost() {
		return cc.c, nil
	}
	cc.drop()
	cctx, cancel := context.WithTimeout(ctx, cc.timeout)
	defer cancel()
	c, err := cc.t.ConnectCollector(cctx, cc.app)
	if err != nil {
		if cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return nil, fmt.Errorf("connect to %s: the server did not answer for %s", cc.t.URL, cc.timeout)
		}
		return nil, err
	}
	cc.c = c
	cc.reconnects++
	return c, nil
}

func (cc *collectorConn) drop() {
	if cc.c != nil {
		cc.closedStmts += cc.c.Statements()
		cc.c.Close()
		cc.c = nil
	}
}

// deadline gives one statement the timeout; it is named in the error.
func (cc *collectorConn) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, cc.timeout)
}

func (cc *collectorConn) explain(ctx, sctx context.Context, err error) error {
	if err != nil && sctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		return fmt.Errorf("server did not answer for %s: %w", cc.timeout, err)
	}
	return err
}

func (cc *collectorConn) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	c, err := cc.conn(ctx)
	if err != nil {
		return 0, err
	}
	sctx, cancel := cc.deadline(ctx)
	defer cancel()
	n, err := c.Exec(sctx, sql, args...)
	return n, cc.explain(ctx, sctx, err)
}

func (cc *collectorConn) Query(ctx context.Context, sql string, args ...any) (engine.Rows, error) {
	c, err := cc.conn(ctx)
	if err != nil {
		return nil, err
	}
	sctx, cancel := cc.deadline(ctx)
	rows, err := c.Query(sctx, sql, args...)
	if err != nil {
		cancel()
		return nil, cc.explain(ctx, sctx, err)
	}
	return &collectorRows{Rows: rows, cancel: cancel}, nil
}

func (cc *collectorConn) QueryRow(ctx context.Context, sql string, args ...any) engine.Row {
	c, err := cc.conn(ctx)
	if err != nil {
		return errRow{err}
	}
	sctx, cancel := cc.deadline(ctx)
	return &collectorRow{row: c.QueryRow(sctx, sql, args...), cancel: cancel, explain: func(err error) error {
		return cc.explain(ctx, sctx, err)
	}}
}

func (cc *collectorConn) Begin(ctx context.Context, mode engine.TxMode) error {
	c, err := cc.conn(ctx)
	if err != nil {
		return err
	}
	sctx, cancel := cc.deadline(ctx)
	defer cancel()
	return cc.explain(ctx, sctx, c.Begin(sctx, mode))
}

func (cc *collectorConn) Commit(ctx context.Context) error {
	if cc.c == nil {
		return fmt.Errorf("commit: connection to %s lost", cc.t.URL)
	}
	sctx, cancel := cc.deadline(ctx)
	defer cancel()
	return cc.explain(ctx, sctx, cc.c.Commit(sctx))
}

func (cc *collectorConn) Rollback(ctx context.Context) error {
	if cc.c == nil {
		return nil
	}
	sctx, cancel := cc.deadline(ctx)
	defer cancel()
	return cc.c.Rollback(sctx)
}

func (cc *collectorConn) CopyFrom(context.Context, string, []string, [][]any) (int64, error) {
	return 0, fmt.Errorf("collectors do not copy")
}

func (cc *collectorConn) SendBatch(context.Context, *engine.Batch) error {
	return fmt.Errorf("collectors send no batches")
}

// RoundTrips is not counted for collectors: their statements are.
func (cc *collectorConn) RoundTrips() int64 { return cc.Statements() }

func (cc *collectorConn) Statements() int64 {
	if cc.c == nil {
		return cc.closedStmts
	}
	return cc.closedStmts + cc.c.Statements()
}

// Lost is false: a lost connection is opened again at the next statement.
func (cc *collectorConn) Lost() bool { return false }

func (cc *collectorConn) Close() error {
	cc.drop()
	return nil
}

type collectorRows struct {
	engine.Rows
	cancel context.CancelFunc
}

func (r *collectorRows) Close() {
	r.Rows.Close()
	r.cancel()
}

type collectorRow struct {
	row     engine.Row
	cancel  context.CancelFunc
	explain func(error) error
}

func (r *collectorRow) Scan(dest ...any) error {
	defer r.cancel()
	return r.explain(r.row.Scan(dest...))
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
