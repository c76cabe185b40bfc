package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The driver's own log lines (a write to a closed socket) would reach the
// user's terminal; its errors reach the caller all the same.
func init() { mysql.SetLogger(log.New(io.Discard, "", 0)) }

// openMySQL parses mysql://USER:PASS@HOST:PORT/DB?PARAMS (or mariadb://).
// socket=PATH connects through a unix socket instead of HOST:PORT; every
// other parameter is go-sql-driver/mysql's (tls=true|skip-verify|preferred,
// timeouts, charset) or a server variable, passed through.
func openMySQL(raw string) (*Target, error) {
	shown := Redact(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("target %q: not a valid URL: use mysql://USER:PASS@HOST:PORT/DB", shown)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return nil, fmt.Errorf("target %q names no database: use mysql://USER:PASS@HOST:PORT/DB", shown)
	}
	base := mysql.NewConfig()
	base.Net, base.Addr, base.DBName = "tcp", u.Host, db
	if u.Port() == "" && u.Host != "" {
		base.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	q := u.Query()
	if s := q.Get("socket"); s != "" {
		base.Net, base.Addr = "unix", s
		q.Del("socket")
	} else if u.Host == "" {
		return nil, fmt.Errorf("target %q names no host: use mysql://USER:PASS@HOST:PORT/DB or ?socket=PATH", shown)
	}
	// The parameters go through the driver's own DSN parser, with the
	// address (a TLS server name is taken from it), so each means what
	// go-sql-driver/mysql documents. The password never enters the DSN.
	dsn := base.FormatDSN()
	if len(q) > 0 {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + q.Encode()
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("target %q: %s", shown, strings.TrimPrefix(err.Error(), "invalid DSN: "))
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	if _, given := u.User.Password(); !given {
		// As the mysql client does: the password from the environment,
		// where ps does not show it.
		cfg.Passwd = os.Getenv("MYSQL_PWD")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	cfg.ParseTime, cfg.Loc = true, time.UTC
	// Statements a session sends alone are prepared once per connection
	// (server-side); a batch goes as one multi-statement text, its
	// arguments written in by dbparity (mysqlConn.SendBatch). The driver
	// interpolates the arguments of a statement sent alone that is not
	// prepared (DDL, a collector's), which would otherwise take three
	// round trips.
	cfg.InterpolateParams = true
	cfg.ClientFoundRows = true // rows matched, as PostgreSQL counts an UPDATE
	cfg.DialFunc = dialCounted
	// Where the socket's bytes are the protocol's own (no TLS, no
	// compression) and the driver keeps no timeouts on it, dbparity reads
	// a batch's answer itself (myWire).
	wire := cfg.TLS == nil && !strings.Contains(cfg.FormatDSN(), "compress=true") && cfg.ReadTimeout == 0 && cfg.WriteTimeout == 0
	flavor := strings.ToLower(u.Scheme)
	t := &Target{Dialect: MySQL, URL: shown, Settings: map[string]string{"flavor": flavor}, myConfig: cfg}
	t.host = u.Hostname()
	if cfg.Net == "unix" {
		t.host = cfg.Addr
	}
	sessions := cfg.Clone()
	// The workloads' SQL concatenates with ||, as the standard does.
	if sessions.Params == nil {
		sessions.Params = map[string]string{}
	}
	sessions.Params["sql_mode"] = "CONCAT(@@sql_mode, ',PIPES_AS_CONCAT')"
	sessions.MultiStatements = true
	open := func(c *mysql.Config) (*sql.DB, error) {
		conn, err := mysql.NewConnector(c)
		if err != nil {
			return nil, err
		}
		db := sql.OpenDB(conn)
		// A session's connection is its own from connect to close: no pool
		// keeps it, so each dial is counted for the session that made it.
		db.SetMaxIdleConns(0)
		return db, nil
	}
	sdb, err := open(sessions)
	if err != nil {
		return nil, fmt.Errorf("target %q: %v", shown, err)
	}
	cdb, err := open(cfg)
	if err != nil {
		sdb.Close()
		return nil, fmt.Errorf("target %q: %v", shown, err)
	}
	t.close = func() error { return errors.Join(sdb.Close(), cdb.Close()) }
	t.connect = func(ctx context.Context, app string) (Conn, error) {
		db := sdb
		if app != "" {
			db = cdb
		}
		n := &netCounts{}
		c, err := db.Conn(context.WithValue(ctx, netCountsKey{}, n))
		if err != nil {
			return nil, connectFailure(mysqlConnectMessage(err), err)
		}
		if err := c.PingContext(ctx); err != nil {
			c.Close()
			return nil, connectFailure(mysqlConnectMessage(err), err)
		}
		if app != "" {
			if _, err := c.ExecContext(ctx, OwnMarkerSQL(app)); err != nil {
				c.Close()
				return nil, errors.New(mysqlConnectMessage(err))
			}
		}
		m := &mysqlConn{c: c, stmts: map[string]*mysqlStmt{}, net: n, w: watch{n: n}, prepare: app == "", multi: app == ""}
		if wire && n.cc.n != nil {
			m.wire = &myWire{conn: n.cc, maxPacket: cfg.MaxAllowedPacket}
		}
		return m, nil
	}
	return t, nil
}

// ownPrefix starts the application name of dbparity's connections that
// are not a workload's (collectors, the replay's monitor).
const ownPrefix = "dbparity-"

// OwnMarkerSQL is the statement a MySQL connection of dbparity's own
// sends first: MySQL's logs name no application, and a capture of them
// leaves out the sessions that begin so (capture.OwnMarker).
func OwnMarkerSQL(app string) string { return "SET @dbparity_application = '" + app + "'" }

func mysqlConnectMessage(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return fmt.Sprintf("server refused: %s (MySQL error %d)", me.Message, me.Number)
	}
	return oneLine(err)
}

// mysqlConn is one session. Statements are written with $1 placeholders
// and rewritten once per text (mysqlStmt).
type mysqlConn struct {
	c       *sql.Conn
	stmts   map[string]*mysqlStmt
	net     *netCounts
	n       atomic.Int64
	prepare bool                  // sessions prepare; a collector's statements go as text
	multi   bool                  // batches go as one multi-statement text (sessions)
	texts   map[string]*mysqlStmt // batches' statements, never prepared
	text    []byte                // a batch's text and arguments, reused
	parts   []*mysqlStmt          // a batch's statements, by item (batchText)
	answers map[uint64]int64      // the least answer to a batch text (its hash), in bytes
	w       watch                 // ends a command when its context ends
	key     maphash.Hash          // a batch's statement texts, for answers
	wire    *myWire               // the socket's own reader, nil where the driver reads every answer
	// rowsOpen: a lone query's rows are being read by the driver, so the
	// socket is not the reader's.
	rowsOpen bool
	lost     bool
	inTx     bool
}

// mysqlStmt is a statement text as MySQL takes it: ? placeholders with
// the $N each stands for, prepared on first use. An UPDATE ... RETURNING
// (MySQL has none) is split in two: the UPDATE, then a SELECT of the
// returned expressions with the same WHERE, which reads the rows the
// UPDATE just changed and still locks.
type mysqlStmt struct {
	text   string
	n      int   // $N placeholders: the arguments it takes (0: pass all, for ? texts)
	order  []int // order[i] is the $N (from 1) of the i-th ?; nil: $1..$n in order
	marks  []int // where each ? is in text, for a batch's values
	st     *sql.Stmt
	then   *mysqlStmt // the SELECT of a split UPDATE ... RETURNING
	update bool       // this is the UPDATE of a split
	call   bool       // a CALL, whose result sets are its procedure's
}

func (m *mysqlConn) stmt(ctx context.Context, query string) (*mysqlStmt, error) {
	if s, ok := m.stmts[query]; ok {
		return s, nil
	}
	s := rewrite(query)
	if m.prepare && preparable(query) {
		for p := s; p != nil; p = p.then {
			st, err := m.c.PrepareContext(ctx, p.text)
			if err != nil {
				return nil, m.fail(err)
			}
			p.st = st
		}
	}
	m.stmts[query] = s
	return s, nil
}

// rewrite is query as MySQL takes it: ? placeholders, and an UPDATE ...
// RETURNING split in two.
func rewrite(query string) *mysqlStmt {
	if upd, sel, ok := SplitUpdateReturning(query); ok {
		s := rebindQuestion(upd)
		s.update, s.then = true, rebindQuestion(sel)
		return s
	}
	return rebindQuestion(query)
}

// preparable tells whether a statement is DML, which sessions prepare;
// DDL and utility statements (ANALYZE TABLE returns a result set the
// binary protocol does not end as the driver expects) go as text.
func preparable(q string) bool {
	verb, _, _ := strings.Cut(strings.TrimSpace(q), " ")
	switch strings.ToUpper(verb) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH", "CALL":
		return true
	}
	return false
}

// rebindQuestion turns $N placeholders (outside quotes) into ?, and
// notes where each ? outside quotes is.
func rebindQuestion(q string) *mysqlStmt {
	var b strings.Builder
	var order, marks []int
	inOrder := true
	inStr := false
	for i := 0; i < len(q); i++ {
		ch := q[i]
		if ch == '\'' {
			inStr = !inStr
		}
		if !inStr && ch == '?' {
			marks = append(marks, b.Len())
		}
		if inStr || ch != '$' || i+1 >= len(q) || q[i+1] < '0' || q[i+1] > '9' {
			b.WriteByte(ch)
			continue
		}
		marks = append(marks, b.Len())
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		n, _ := strconv.Atoi(q[i+1 : j])
		order = append(order, n)
		inOrder = inOrder && n == len(order)
		b.WriteByte('?')
		i = j - 1
	}
	verb, _, _ := strings.Cut(strings.TrimSpace(q), " ")
	s := &mysqlStmt{text: b.String(), n: len(order), marks: marks, call: strings.EqualFold(verb, "CALL")}
	if !inOrder {
		s.order = order
	}
	return s
}

// args arranges the call's arguments for the ?s.
func (s *mysqlStmt) args(in []any) ([]any, error) {
	if s.order == nil {
		// The SELECT of a split UPDATE takes fewer arguments than the call.
		if s.n > 0 && len(in) > s.n {
			return in[:s.n], nil
		}
		return in, nil
	}
	out := make([]any, len(s.order))
	for i, n := range s.order {
		if n < 1 || n > len(in) {
			return nil, fmt.Errorf("statement uses $%d but %d arguments were given", n, len(in))
		}
		out[i] = in[n-1]
	}
	return out, nil
}

// SplitUpdateReturning splits "UPDATE t SET ... WHERE w RETURNING r" into
// the UPDATE and "SELECT r FROM t WHERE w"; ok is false for any other
// statement. Keywords are found outside quotes and parentheses.
func SplitUpdateReturning(q string) (update, sel string, ok bool) {
	fields := strings.Fields(q)
	if len(fields) < 4 || !strings.EqualFold(fields[0], "UPDATE") || !strings.EqualFold(fields[2], "SET") {
		return "", "", false
	}
	ret := topLevel(q, " RETURNING ")
	where := topLevel(q, " WHERE ")
	if ret < 0 || where < 0 || where > ret {
		return "", "", false
	}
	return strings.TrimSpace(q[:ret]), "SELECT " + strings.TrimSpace(q[ret+len(" RETURNING "):]) + " FROM " + fields[1] +
		" WHERE " + strings.TrimSpace(q[where+len(" WHERE "):ret]), true
}

// topLevel returns the index of the last occurrence of kw (any case)
// outside quotes and parentheses, or -1.
func topLevel(q, kw string) int {
	depth, inStr, at := 0, false, -1
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\'':
			inStr = !inStr
		case inStr:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && i+len(kw) <= len(q) && strings.EqualFold(q[i:i+len(kw)], kw):
			at = i
		}
	}
	return at
}

// fail notes a lost connection and returns err. The driver closes a
// connection whose statement's context ended mid-statement (the error is
// then the context's), so the connection itself is asked too.
func (m *mysqlConn) fail(err error) error {
	if err != nil && (Classify(err).Lost || !m.valid()) {
		m.lost = true
	}
	return err
}

// valid asks the driver whether the connection is still usable.
func (m *mysqlConn) valid() bool {
	ok := true
	m.c.Raw(func(dc any) error {
		if v, is := dc.(driver.Validator); is {
			ok = v.IsValid()
		}
		return nil
	})
	return ok
}

func (m *mysqlConn) exec(ctx context.Context, s *mysqlStmt, args []any) (sql.Result, error) {
	a, err := s.args(args)
	if err != nil {
		return nil, err
	}
	if s.st != nil {
		return s.st.ExecContext(ctx, a...)
	}
	return m.c.ExecContext(ctx, s.text, a...)
}

func (m *mysqlConn) query(ctx context.Context, s *mysqlStmt, args []any) (*sql.Rows, error) {
	a, err := s.args(args)
	if err != nil {
		return nil, err
	}
	if s.st != nil {
		return s.st.QueryContext(ctx, a...)
	}
	return m.c.QueryContext(ctx, s.text, a...)
}

// finish ends a command begun with m.w.begin(ctx) and returns its
// error: ctx's when ctx ended, as the driver's own watch returned it.
func (m *mysqlConn) finish(ctx context.Context, err error) error {
	m.w.end()
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return m.fail(err)
}

func (m *mysqlConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	m.n.Add(1)
	qctx, err := m.w.begin(ctx)
	if err != nil {
		return 0, err
	}
	s, err := m.stmt(qctx, query)
	if err != nil {
		return 0, m.finish(ctx, err)
	}
	res, err := m.exec(qctx, s, args)
	if err != nil {
		return 0, m.finish(ctx, err)
	}
	m.w.end()
	return res.RowsAffected()
}

func (m *mysqlConn) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	m.n.Add(1)
	qctx, err := m.w.begin(ctx)
	if err != nil {
		return nil, err
	}
	s, err := m.stmt(qctx, query)
	if err != nil {
		return nil, m.finish(ctx, err)
	}
	if s.update {
		if _, err := m.exec(qctx, s, args); err != nil {
			return nil, m.finish(ctx, err)
		}
		m.n.Add(1)
		s = s.then
	}
	r, err := m.query(qctx, s, args)
	if err != nil {
		return nil, m.finish(ctx, err)
	}
	m.rowsOpen = true
	return mysqlRows{sqlRows{r}, m, ctx}, nil
}

// mysqlRows are a query's rows, read as part of its command: the
// command ends when they are closed.
type mysqlRows struct {
	sqlRows
	m   *mysqlConn
	ctx context.Context
}

func (r mysqlRows) Err() error {
	err := r.r.Err()
	if err != nil && r.ctx.Err() != nil {
		return r.ctx.Err()
	}
	return err
}

func (r mysqlRows) Close() {
	r.r.Close()
	r.m.rowsOpen = false
	r.m.w.end()
}

func (m *mysqlConn) QueryRow(ctx context.Context, query string, args ...any) Row {
	r, err := m.Query(ctx, query, args...)
	if err != nil {
		return errRow{err}
	}
	return &firstRow{r: r}
}

// firstRow scans the first row of rows and closes them.
type firstRow struct{ r Rows }

func (f *firstRow) Scan(dest ...any) error {
	defer f.r.Close()
	if !f.r.Next() {
		if err := f.r.Err(); err != nil {
			return err
		}
		return ErrNoRows
	}
	return f.r.Scan(dest...)
}

func (m *mysqlConn) Begin(ctx context.Context, mode TxMode) error {
	q := "START TRANSACTION"
	if mode == ReadOnly {
		q = "START TRANSACTION READ ONLY"
	}
	err := m.plain(ctx, q)
	m.inTx = err == nil
	return err
}

func (m *mysqlConn) Commit(ctx context.Context) error {
	err := m.plain(ctx, "COMMIT")
	m.inTx = false
	return err
}

func (m *mysqlConn) Rollback(ctx context.Context) error {
	err := m.plain(ctx, "ROLLBACK")
	m.inTx = false
	return err
}

// plain sends a statement of no arguments as text.
func (m *mysqlConn) plain(ctx context.Context, q string) error {
	if m.rowsOpen && m.wire != nil {
		return errRowsOpen
	}
	m.n.Add(1)
	qctx, err := m.w.begin(ctx)
	if err != nil {
		return err
	}
	if m.wire != nil {
		m.text = append(append(m.text[:0], make([]byte, myHeader)...), q...)
		err = m.wireRun(func(c *myWire) error {
			_, _, err := c.result()
			if err == nil {
				err = c.drain()
			}
			return err
		})
	} else {
		_, err = m.c.ExecContext(qctx, q)
	}
	return m.finish(ctx, err)
}

// mysqlMaxParams stays under the 65,535 placeholders a prepared statement
// may have.
const mysqlMaxParams = 60000

// CopyFrom inserts the rows in multi-row INSERTs of up to 500 rows.
func (m *mysqlConn) CopyFrom(ctx context.Context, table string, cols []string, rows [][]any) (int64, error) {
	return insertRows(ctx, m, table, cols, rows, mysqlMaxParams)
}

func (m *mysqlConn) Statements() int64 { return m.n.Load() }
func (m *mysqlConn) RoundTrips() int64 { return m.net.trips.Load() }
func (m *mysqlConn) Lost() bool        { return m.lost }

func (m *mysqlConn) Close() error {
	if m.inTx && !m.lost {
		m.c.ExecContext(context.Background(), "ROLLBACK")
	}
	for _, s := range m.stmts {
		for p := s; p != nil; p = p.then {
			if p.st != nil {
				p.st.Close()
			}
		}
	}
	m.w.close()
	return m.c.Close() // the pool keeps no idle connection: this closes it
}
