package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sys/unix"
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
	// (server-side); a batch goes as one multi-statement text with its
	// arguments interpolated by the driver (mysqlConn.SendBatch).
	cfg.InterpolateParams = true
	cfg.ClientFoundRows = true // rows matched, as PostgreSQL counts an UPDATE
	cfg.DialFunc = dialCounted
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
		return &mysqlConn{c: c, stmts: map[string]*mysqlStmt{}, net: n, prepare: app == "", multi: app == ""}, nil
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

// netCounts counts a connection's round trips at the socket: a write that
// follows a read (or comes first) starts one. It also keeps its reader's
// state: answering is set once the answer to the last request began to
// arrive, got counts that answer's bytes so far, and expect, when above
// 0, is the least the answer will have (its sender's estimate).
type netCounts struct {
	trips     atomic.Int64
	writing   atomic.Bool
	answering atomic.Bool
	got       atomic.Int64
	expect    atomic.Int64
	// tcp: SO_RCVLOWAT holds the poller's wake-up back (not on a unix
	// socket, whose poll ignores it); lowat is the socket's, dog lowers it
	// to one byte expectWait into a wait for expected bytes.
	tcp   bool
	lowat atomic.Int32
	dog   *time.Timer
}

type netCountsKey struct{}

type countedConn struct {
	net.Conn
	n   *netCounts
	raw syscall.RawConn // nil: reads go through net.Conn
}

func (c countedConn) Write(b []byte) (int, error) {
	c.n.answering.Store(false)
	if !c.n.writing.Swap(true) {
		c.n.trips.Add(1)
		c.n.got.Store(0)
	}
	return c.Conn.Write(b)
}

// answerWait is how long a session's reader waits in its thread for the
// rest of an answer that began to arrive, before it leaves the wait to
// Go's network poller.
const answerWait = time.Millisecond

// expectWait is how long the poller waits for an answer's expected
// bytes before it wakes the reader at the first one: an answer shorter
// than its estimate, or one still being made, is then read as it comes.
// A variable for the tests.
var expectWait = 2 * time.Millisecond

// Read reads what the server sent. MySQL and MariaDB send each result
// set and each statement's OK of a batch as soon as it is made, so one
// answer arrives in many pieces, tens of microseconds apart; through Go's
// network poller each piece costs the session a park and a wake-up, and
// the runtime another processor spinning for work (two thirds of the
// client's CPU in a profile of order-entry).
//
// When the sender knows how many bytes the answer will at least have (a
// batch: the least its text's answers had), a TCP socket's SO_RCVLOWAT
// holds the poller's wake-up until they are there, so the session wakes
// once for most of the answer; expectWait into the wait the mark drops to
// one byte. Otherwise, once an answer began to arrive, the reader waits
// for its next piece in its own thread, as a C client does: the socket is
// a blocking one whose reads and writes give up after answerWait
// (SO_RCVTIMEO, SO_SNDTIMEO), so one read(2) both waits and reads. The
// wait for an answer's first byte (the server's work, a lock) is a read
// that does not block (MSG_DONTWAIT) and then the poller, as is any wait
// past answerWait: the poller keeps deadlines and Close.
//
// Measured on order-entry over loopback TCP (8 sessions, MariaDB 10.11,
// four interleaved rounds of 20 s): the expected bytes 377-452 µs of
// client CPU per transaction at 1,282-1,489 transactions/s (New-Order p99
// 20-24 ms), against 461-600 µs at 1,005-1,104 (28-41 ms) with the
// blocking read alone; that against waiting with ppoll(2) and then
// reading, on a unix socket, 433-464 against 577-584 µs.
func (c countedConn) Read(b []byte) (int, error) {
	c.n.writing.Store(false)
	if c.raw == nil {
		return c.Conn.Read(b)
	}
	var n int
	var err error
	answering := c.n.answering.Load()
	want := int32(1)
	if e := c.n.expect.Load(); e > 0 && c.n.tcp {
		// At most 64 KB: a larger mark would also grow the socket's
		// receive buffer.
		want = int32(min(max(e-c.n.got.Load(), 1), int64(len(b)), 1<<16))
	}
	expecting, armed, first := want > 1, false, true
	rerr := c.raw.Read(func(fd uintptr) bool {
		for {
			if first {
				// Once a Read: when the poller wakes the reader again
				// after the dog lowered the mark, it stays lowered.
				first = false
				if c.n.lowat.Load() != want && unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, int(want)) == nil {
					c.n.lowat.Store(want)
				}
			}
			if answering && !expecting {
				// The socket blocks, at most answerWait (SO_RCVTIMEO).
				n, err = unix.Read(int(fd), b)
			} else {
				// recvfrom(2) itself: unix.Recvfrom would also decode the
				// peer's address (a unix socket's path) on every read. It
				// takes what is there, SO_RCVLOWAT or not.
				r, _, e := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), unix.MSG_DONTWAIT, 0, 0)
				n, err = int(r), nil
				if e != 0 {
					n, err = 0, e
				}
			}
			switch err {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				if expecting && !armed {
					armed = true
					c.n.dog.Reset(expectWait)
				}
				return false // the poller waits
			}
			return true
		}
	})
	if armed {
		c.n.dog.Stop()
	}
	switch {
	case rerr != nil:
		return 0, rerr
	case err != nil:
		return 0, &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", err)}
	case n == 0 && len(b) > 0:
		return 0, io.EOF
	}
	c.n.answering.Store(true)
	c.n.got.Add(int64(n))
	return n, nil
}

func dialCounted(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if n, ok := ctx.Value(netCountsKey{}).(*netCounts); ok {
		cc := countedConn{Conn: c, n: n}
		if sc, ok := c.(syscall.Conn); ok {
			cc.raw, _ = sc.SyscallConn()
		}
		if cc.raw != nil {
			var serr error
			cerr := cc.raw.Control(func(fd uintptr) {
				tv := unix.NsecToTimeval(int64(answerWait))
				if serr = unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); serr == nil {
					serr = unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
				}
				if serr == nil {
					serr = unix.SetNonblock(int(fd), false)
				}
			})
			if cerr != nil || serr != nil {
				cc.raw = nil
			}
		}
		if cc.raw != nil && strings.HasPrefix(network, "tcp") {
			// The dog holds the connection's descriptor through Control:
			// once it is closed, the call does nothing.
			n.tcp = true
			n.lowat.Store(1) // the socket's default
			raw := cc.raw
			n.dog = time.AfterFunc(time.Hour, func() {
				// The mark's record first, then the mark: the reader, which
				// may run now (this call wakes it), sets the mark and then
				// its record, so the record is never below the socket's mark
				// (a mark left above it would hold the next answer back).
				n.lowat.Store(1)
				raw.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, 1) })
			})
			n.dog.Stop()
		}
		return cc, nil
	}
	return c, nil
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
	answers map[uint64]int64      // the least answer to a batch text (its hash), in bytes
	args    []any
	named   []driver.NamedValue
	lost    bool
	inTx    bool
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
	st     *sql.Stmt
	then   *mysqlStmt // the SELECT of a split UPDATE ... RETURNING
	update bool       // this is the UPDATE of a split
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

// rebindQuestion turns $N placeholders (outside quotes) into ?.
func rebindQuestion(q string) *mysqlStmt {
	var b strings.Builder
	var order []int
	inOrder := true
	inStr := false
	for i := 0; i < len(q); i++ {
		ch := q[i]
		if ch == '\'' {
			inStr = !inStr
		}
		if inStr || ch != '$' || i+1 >= len(q) || q[i+1] < '0' || q[i+1] > '9' {
			b.WriteByte(ch)
			continue
		}
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
	s := &mysqlStmt{text: b.String(), n: len(order)}
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

func (m *mysqlConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	m.n.Add(1)
	s, err := m.stmt(ctx, query)
	if err != nil {
		return 0, err
	}
	res, err := m.exec(ctx, s, args)
	if err != nil {
		return 0, m.fail(err)
	}
	return res.RowsAffected()
}

func (m *mysqlConn) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	m.n.Add(1)
	s, err := m.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.update {
		if _, err := m.exec(ctx, s, args); err != nil {
			return nil, m.fail(err)
		}
		m.n.Add(1)
		s = s.then
	}
	r, err := m.query(ctx, s, args)
	if err != nil {
		return nil, m.fail(err)
	}
	return sqlRows{r}, nil
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
	m.n.Add(1)
	_, err := m.c.ExecContext(ctx, q)
	m.inTx = err == nil
	return m.fail(err)
}

func (m *mysqlConn) Commit(ctx context.Context) error {
	m.n.Add(1)
	_, err := m.c.ExecContext(ctx, "COMMIT")
	m.inTx = false
	return m.fail(err)
}

func (m *mysqlConn) Rollback(ctx context.Context) error {
	m.n.Add(1)
	_, err := m.c.ExecContext(ctx, "ROLLBACK")
	m.inTx = false
	return m.fail(err)
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
	return m.c.Close() // the pool keeps no idle connection: this closes it
}
