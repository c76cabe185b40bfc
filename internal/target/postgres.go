package target

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func openPostgres(raw string) (*Target, error) {
	cfg, err := pgx.ParseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("target %q: %s", Redact(raw), oneLine(err))
	}
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		cfg.RuntimeParams["application_name"] = "dbparity"
	}
	// Prepared once per connection, then executed with the binary protocol:
	// the cheapest way for the driver to send the same statements again.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	t := &Target{Dialect: Postgres, URL: Redact(raw), pgConfig: cfg}
	t.connect = func(ctx context.Context, app string) (Conn, error) {
		cc := cfg.Copy()
		if app != "" {
			cc.RuntimeParams["application_name"] = app
			// A prepare is a round trip and, outside a transaction, a
			// transaction of its own: not worth it for a query a second.
			cc.DefaultQueryExecMode = pgx.QueryExecModeExec
		}
		c, err := pgx.ConnectConfig(ctx, cc)
		if err != nil {
			return nil, errors.New(connectMessage(err))
		}
		return &pgConn{c: c}, nil
	}
	return t, nil
}

// oneLine keeps user-facing errors on one line; pgx sometimes nests
// multi-line server detail.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// connectMessage reduces pgx's report of every address and TLS attempt to
// the one reason that matters, with what to check.
func connectMessage(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s (SQLSTATE %s)", pe.Message, pe.Code)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Error() + ": is the server running, and are the host, port or socket directory right?"
	}
	return oneLine(err)
}

type pgConn struct {
	c     *pgx.Conn
	stmts int64
}

func (p *pgConn) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	p.stmts++
	tag, err := p.c.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (p *pgConn) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	p.stmts++
	r, err := p.c.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgRows{r}, nil
}

func (p *pgConn) QueryRow(ctx context.Context, sql string, args ...any) Row {
	p.stmts++
	return pgRow{p.c.QueryRow(ctx, sql, args...)}
}

func (p *pgConn) Begin(ctx context.Context, _ TxMode) error {
	p.stmts++
	_, err := p.c.Exec(ctx, "BEGIN")
	return err
}

func (p *pgConn) Commit(ctx context.Context) error {
	p.stmts++
	_, err := p.c.Exec(ctx, "COMMIT")
	return err
}

func (p *pgConn) Rollback(ctx context.Context) error {
	p.stmts++
	_, err := p.c.Exec(ctx, "ROLLBACK")
	return err
}

func (p *pgConn) CopyFrom(ctx context.Context, table string, cols []string, rows [][]any) (int64, error) {
	p.stmts++
	return p.c.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
}

func (p *pgConn) Statements() int64 { return p.stmts }
func (p *pgConn) Lost() bool        { return p.c.IsClosed() }
func (p *pgConn) Close() error      { return p.c.Close(context.Background()) }

type pgRows struct{ r pgx.Rows }

func (r pgRows) Next() bool             { return r.r.Next() }
func (r pgRows) Scan(dest ...any) error { return r.r.Scan(dest...) }
func (r pgRows) Err() error             { return r.r.Err() }
func (r pgRows) Close()                 { r.r.Close() }

type pgRow struct{ r pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNoRows
	}
	return err
}

// SQLState returns the SQLSTATE of a PostgreSQL error, or "".
func SQLState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
