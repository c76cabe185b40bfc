package target

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ReplayConn is a PostgreSQL connection used the way a captured client
// used its own: simple-protocol queries (several statements in one text
// included), extended-protocol statements with text parameters whose
// types the server infers (as libpq sends them), and named prepared
// statements, prepared once per connection. Replay needs this rather than
// Conn, which encodes typed Go values.
type ReplayConn interface {
	// Each call returns the command tag of the (last) statement when the
	// server answered ("ROLLBACK" for a COMMIT of a failed transaction);
	// sent is called as soon as the statement is on its way, before the
	// answer.

	// Simple sends sql with the simple query protocol.
	Simple(ctx context.Context, sql string, sent func()) (tag string, err error)
	// Extended runs sql as the unnamed statement with text parameters
	// (nil is NULL).
	Extended(ctx context.Context, sql string, params []*string, sent func()) (tag string, err error)
	// Prepared executes the named prepared statement, preparing it from
	// sql the first time this connection sees the name.
	Prepared(ctx context.Context, name, sql string, params []*string, sent func()) (tag string, err error)
	Close() error
}

// ErrReplayDialect is returned when replay is asked of a target that is
// not PostgreSQL.
var ErrReplayDialect = errors.New("replay needs a PostgreSQL target: captures come from PostgreSQL logs")

// ConnectReplay opens a replay connection as user to database, with the
// application name app; an empty user or database keeps the URL's. The
// URL's password (or the password file) is used for every user.
func (t *Target) ConnectReplay(ctx context.Context, user, database, app string) (ReplayConn, error) {
	if t.Dialect != Postgres || t.pgConfig == nil {
		return nil, ErrReplayDialect
	}
	cc := t.pgConfig.Config.Copy()
	cc.RuntimeParams = maps.Clone(cc.RuntimeParams)
	if user != "" {
		cc.User = user
	}
	if database != "" {
		cc.Database = database
	}
	if app != "" {
		cc.RuntimeParams["application_name"] = app
	}
	c, err := pgconn.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, &ConnectError{User: cc.User, Database: cc.Database, Err: err}
	}
	return &replayConn{c: c, prepared: map[string]bool{}}, nil
}

// ConnectError is a failed connection, keeping the server's error (with
// its SQLSTATE) for callers that decide by it.
type ConnectError struct {
	User, Database string
	Err            error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("connect as %s to %s: %s", e.User, e.Database, connectMessage(e.Err))
}

func (e *ConnectError) Unwrap() error { return e.Err }

// Refused reports whether the server refused the user or the database
// (authentication, a missing role or database), rather than being down.
func (e *ConnectError) Refused() bool {
	var pe *pgconn.PgError
	if !errors.As(e.Err, &pe) {
		return false
	}
	switch pe.Code[:2] {
	case "28", "3D": // invalid authorization, invalid catalog name
		return true
	}
	return pe.Code == "42501" // insufficient privilege (CONNECT revoked)
}

type replayConn struct {
	c        *pgconn.PgConn
	prepared map[string]bool
}

func (r *replayConn) Simple(ctx context.Context, sql string, sent func()) (string, error) {
	mr := r.c.Exec(ctx, sql)
	sent()
	results, err := mr.ReadAll()
	tag := ""
	for _, res := range results {
		if res.Err != nil {
			return tag, res.Err
		}
		tag = res.CommandTag.String()
	}
	return tag, err
}

func (r *replayConn) Extended(ctx context.Context, sql string, params []*string, sent func()) (string, error) {
	rr := r.c.ExecParams(ctx, sql, values(params), nil, nil, nil)
	sent()
	res := rr.Read()
	return res.CommandTag.String(), res.Err
}

func (r *replayConn) Prepared(ctx context.Context, name, sql string, params []*string, sent func()) (string, error) {
	if !r.prepared[name] {
		if _, err := r.c.Prepare(ctx, name, sql, nil); err != nil {
			sent()
			return "", err
		}
		r.prepared[name] = true
	}
	rr := r.c.ExecPrepared(ctx, name, values(params), nil, nil)
	sent()
	res := rr.Read()
	return res.CommandTag.String(), res.Err
}

func (r *replayConn) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.c.Close(ctx)
}

// values are text-format parameter values; nil is NULL.
func values(params []*string) [][]byte {
	if len(params) == 0 {
		return nil
	}
	v := make([][]byte, len(params))
	for i, p := range params {
		if p != nil {
			v[i] = []byte(*p)
		}
	}
	return v
}
