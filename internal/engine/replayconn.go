package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
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
	// server answered ("ROLLBACK" for a COMMIT of a failed transaction).
	// types are the parameters' type OIDs (nil, or 0 for one: the server
	// infers it, as it does for libpq's untyped parameters).

	// Simple sends sql with the simple query protocol.
	Simple(ctx context.Context, sql string) (tag string, err error)
	// Extended runs sql as the unnamed statement with text parameters
	// (nil is NULL).
	Extended(ctx context.Context, sql string, params []*string, types []uint32) (tag string, err error)
	// Prepared executes the named prepared statement, preparing it from
	// sql the first time this connection sees the name with that text: a
	// name that comes back with another text (the client closed it and
	// prepared it anew) is prepared again.
	Prepared(ctx context.Context, name, sql string, params []*string, types []uint32) (tag string, err error)
	// CopyIn runs a COPY ... FROM STDIN with data, the COPY stream as the
	// client sent it (a wire capture keeps it), or with none (nil: a log
	// never holds the rows a client sent, so the table gets none, and the
	// COPY ends instead of waiting for data that never comes).
	CopyIn(ctx context.Context, sql string, data []byte) (tag string, err error)
	// Describe prepares sql as the unnamed statement with the parameter
	// types given (0: inferred) and returns the types the server chose.
	Describe(ctx context.Context, sql string, types []uint32) ([]uint32, error)
	// Batchable tells whether a statement can go in a Batch as it is (an
	// extended-protocol statement, or one named that this connection has
	// prepared from that text, on PostgreSQL; a single text statement on
	// MySQL), and whether it must be the batch's last (MySQL: a statement
	// that returns no rows, whose failure could not be told from the
	// next one's otherwise).
	Batchable(name, sql string, extended bool) (ok, last bool)
	// Batch sends the statements at once, in one round trip, and reports
	// each one's outcome to done as its answer arrives, with the time
	// since the previous answer (the first: since the send). The server
	// runs them in order and stops at the first that fails, as a client's
	// pipeline up to a sync point: Batch returns how many ran (the failed
	// one included); the rest were not run and may be sent again. Only
	// statements of an explicit transaction block belong in one batch: a
	// failure ends the block's work in either case.
	Batch(ctx context.Context, stmts []BatchStatement, done func(k int, tag string, err error, took time.Duration)) (ran int, err error)
	// PID is the connection's backend process id on the server.
	PID() uint32
	// Blockers asks the server which backends hold the locks that each
	// of pids waits for (pg_blocking_pids); pids that wait for none are
	// left out. asked is when the question was sent: the answer shows
	// the server at that moment or later.
	Blockers(ctx context.Context, pids []uint32) (waits map[uint32][]uint32, asked time.Time, err error)
	Close() error
}

// BatchStatement is one statement of a Batch: named (prepared) when Name
// is set, else the unnamed extended statement, or text (MySQL).
type BatchStatement struct {
	Name   string
	SQL    string
	Params []*string
	Types  []uint32
}

// ErrReplayDialect is returned when replay is asked of a target that
// cannot replay (SQLite).
var ErrReplayDialect = errors.New("replay needs a PostgreSQL, MySQL or MariaDB target: captures come from their logs")

// ConnectReplay opens a replay connection as user to database, with the
// application name app; an empty user or database keeps the URL's. The
// URL's password (or the password file) is used for every user.
func (t *Target) ConnectReplay(ctx context.Context, user, database, app string) (ReplayConn, error) {
	cctx, cancel := t.connectContext(ctx)
	defer cancel()
	c, err := t.connectReplay(cctx, user, database, app)
	if err != nil {
		if e := t.noAnswer(ctx, cctx); e != nil {
			return nil, e
		}
		return nil, err
	}
	return c, nil
}

func (t *Target) connectReplay(ctx context.Context, user, database, app string) (ReplayConn, error) {
	if t.Dialect == MySQL {
		return t.connectMyReplay(ctx, user, database, app)
	}
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
	return &replayConn{c: c, prepared: map[string]string{}}, nil
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

// Is matches ErrServerFull when the server refused for want of a slot.
func (e *ConnectError) Is(target error) bool { return target == ErrServerFull && serverFull(e.Err) }

// Refused reports whether the server refused the user or the database
// (authentication, a missing role or database), rather than being down.
func (e *ConnectError) Refused() bool {
	var me *mysql.MySQLError
	if errors.As(e.Err, &me) {
		// access denied (user, password), unknown or forbidden database
		return me.Number == 1044 || me.Number == 1045 || me.Number == 1049 || me.Number == 1698
	}
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
	prepared map[string]string // name -> the text it was prepared from
}

func (r *replayConn) Simple(ctx context.Context, sql string) (string, error) {
	results, err := r.c.Exec(ctx, sql).ReadAll()
	tag := ""
	for _, res := range results {
		if res.Err != nil {
			return tag, res.Err
		}
		tag = res.CommandTag.String()
	}
	if err == nil {
		r.forget(sql)
	}
	return tag, err
}

// forget drops the prepared statements a DEALLOCATE or DISCARD ALL
// dropped, so that the name is prepared again when it comes back.
func (r *replayConn) forget(sql string) {
	if w := firstWord(sql); !strings.EqualFold(w, "DISCARD") && !strings.EqualFold(w, "DEALLOCATE") {
		return // most statements: no need to split the whole text
	}
	f := strings.Fields(strings.TrimRight(strings.TrimSpace(sql), ";"))
	if len(f) < 2 {
		return
	}
	switch strings.ToUpper(f[0]) {
	case "DISCARD":
		if u := strings.ToUpper(f[1]); u == "ALL" {
			clear(r.prepared)
		}
	case "DEALLOCATE":
		name := f[1]
		if strings.EqualFold(name, "PREPARE") && len(f) > 2 {
			name = f[2]
		}
		if strings.EqualFold(name, "ALL") {
			clear(r.prepared)
			return
		}
		if uq, err := strconv.Unquote(name); err == nil {
			name = uq // a quoted identifier
		} else {
			name = strings.ToLower(name) // an unquoted one folds to lower case
		}
		delete(r.prepared, name)
	}
}

func (r *replayConn) Extended(ctx context.Context, sql string, params []*string, types []uint32) (string, error) {
	res := r.c.ExecParams(ctx, sql, values(params), types, nil, nil).Read()
	return res.CommandTag.String(), res.Err
}

func (r *replayConn) Prepared(ctx context.Context, name, sql string, params []*string, types []uint32) (string, error) {
	if text, ok := r.prepared[name]; !ok || text != sql {
		if ok {
			// The client closed the name and prepared it for another text.
			if err := r.c.Deallocate(ctx, name); err != nil {
				return "", err
			}
			delete(r.prepared, name)
		}
		if _, err := r.c.Prepare(ctx, name, sql, types); err != nil {
			return "", err
		}
		r.prepared[name] = sql
	}
	res := r.c.ExecPrepared(ctx, name, values(params), nil, nil).Read()
	return res.CommandTag.String(), res.Err
}

func (r *replayConn) Batchable(name, sql string, extended bool) (bool, bool) {
	if name != "" {
		return r.prepared[name] == sql, false
	}
	return extended, false
}

func (r *replayConn) Batch(ctx context.Context, stmts []BatchStatement, done func(int, string, error, time.Duration)) (int, error) {
	b := &pgconn.Batch{}
	for _, st := range stmts {
		if st.Name != "" {
			b.ExecPrepared(st.Name, values(st.Params), nil, nil)
		} else {
			b.ExecParams(st.SQL, values(st.Params), st.Types, nil, nil)
		}
	}
	last := time.Now()
	mrr := r.c.ExecBatch(ctx, b)
	ran, failed := 0, false
	for ran < len(stmts) && mrr.NextResult() {
		res := mrr.ResultReader().Read()
		now := time.Now()
		done(ran, res.CommandTag.String(), res.Err, now.Sub(last))
		last = now
		ran++
		if res.Err != nil {
			failed = true
			break
		}
	}
	err := mrr.Close()
	var pe *pgconn.PgError
	if err != nil && errors.As(err, &pe) {
		if !failed && ran < len(stmts) {
			// The server refused the statement before it ran (a parse or
			// bind error): that is its outcome.
			done(ran, "", err, time.Since(last))
			ran++
		}
		err = nil // a statement's outcome, reported
	}
	return ran, err
}

func (r *replayConn) CopyIn(ctx context.Context, sql string, data []byte) (string, error) {
	tag, err := r.c.CopyFrom(ctx, bytes.NewReader(data), sql)
	return tag.String(), err
}

func (r *replayConn) Describe(ctx context.Context, sql string, types []uint32) ([]uint32, error) {
	d, err := r.c.Prepare(ctx, "", sql, types)
	if err != nil {
		return nil, err
	}
	return d.ParamOIDs, nil
}

func (r *replayConn) PID() uint32 { return r.c.PID() }

func (r *replayConn) Blockers(ctx context.Context, pids []uint32) (map[uint32][]uint32, time.Time, error) {
	asked := time.Now()
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.FormatUint(uint64(p), 10)
	}
	rr := r.c.ExecParams(ctx, "SELECT pid, array_to_string(pg_blocking_pids(pid), ',') FROM unnest($1::int[]) AS pid",
		[][]byte{[]byte("{" + strings.Join(list, ",") + "}")}, nil, nil, nil)
	res := rr.Read()
	if res.Err != nil {
		return nil, asked, res.Err
	}
	out := map[uint32][]uint32{}
	for _, row := range res.Rows {
		pid, err := strconv.ParseUint(string(row[0]), 10, 32)
		if err != nil || len(row[1]) == 0 {
			continue
		}
		for _, b := range strings.Split(string(row[1]), ",") {
			if v, err := strconv.ParseUint(b, 10, 32); err == nil {
				out[uint32(pid)] = append(out[uint32(pid)], uint32(v))
			}
		}
	}
	return out, asked, nil
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
