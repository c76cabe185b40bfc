package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func openPostgres(raw string) (*Target, error) {
	shown := Redact(raw)
	connString := raw
	var p parsed
	if formOf(raw) == formPostgresURL {
		p = parsePostgresURL(raw)
		// pgx knows the scheme in lower case only.
		at := strings.Index(raw, "://")
		connString = strings.ToLower(raw[:at]) + raw[at:]
	} else if m := schemePrefix.FindString(raw); m != "" {
		// Without // nothing tells a password from a host: only the
		// scheme is shown.
		return nil, fmt.Errorf("target %s...: write %s//USER@HOST:PORT/DB", m, m)
	} else {
		p = scanKeywordValue(raw)
	}
	// Our own parse names a syntax problem: the driver's message would
	// quote the part it could not read, which may be a mislaid password.
	if p.problem != "" {
		return nil, fmt.Errorf("target %q: %s", shown, p.problem)
	}
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("target %q: %s", shown, parseConfigProblem(err))
	}
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return withRawSend(c), nil
	}
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		cfg.RuntimeParams["application_name"] = "dbparity"
	}
	// Prepared once per connection, then executed with the binary protocol:
	// the cheapest way for the driver to send the same statements again.
	// Unless the URL says otherwise (default_query_exec_mode=exec or
	// simple_protocol): a transaction-mode pooler (PgBouncer before 1.21)
	// keeps no statement prepared on one server connection for the next
	// transaction, so then no statement is named at all.
	unnamed := false
	if strings.Contains(connString, "default_query_exec_mode") {
		unnamed = cfg.DefaultQueryExecMode == pgx.QueryExecModeExec || cfg.DefaultQueryExecMode == pgx.QueryExecModeSimpleProtocol
	} else {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	}
	t := &Target{Dialect: Postgres, URL: shown, pgConfig: cfg, host: cfg.Host}
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
			return nil, connectFailure(connectMessage(err), err)
		}
		return pgSession{&pgConn{c: c, unnamed: unnamed}}, nil
	}
	return t, nil
}

// oneLine keeps user-facing errors on one line; pgx sometimes nests
// multi-line server detail.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// parseConfigProblem is what pgx found wrong with a connection string that
// our own parse accepted (an sslmode, a port range, a service file), without
// the connection string that pgx's message quotes: its masking is a
// pattern search that misses, for one, "password = x" with spaces.
func parseConfigProblem(err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return "not a valid connection string"
	}
	// The message is "cannot parse `CONNSTRING`: PROBLEM": what follows
	// the last "`: " comes after the connection string whatever it holds.
	msg := pe.Error()
	i := strings.LastIndex(msg, "`: ")
	if i < 0 {
		return "not a valid connection string"
	}
	problem := msg[i+len("`: "):]
	if strings.HasPrefix(problem, "failed to parse as") {
		// A syntax error that our parse missed: the detail could quote
		// any part of the string.
		return "not a valid connection string"
	}
	return strings.Join(strings.Fields(problem), " ")
}

// connectMessage reduces pgx's report of every address and TLS attempt to
// the one reason that matters, with what to check. It is built from the
// error's parts (the server's message, the address), never from the
// connection string.
func connectMessage(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s (SQLSTATE %s)", pe.Message, pe.Code)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Error() + ": is the server running, and are the host, port or socket directory right?"
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		// Drop pgx's "failed to connect to `user=U database=D`:": the
		// caller names the target.
		if inner := errors.Unwrap(ce); inner != nil {
			return oneLine(inner)
		}
	}
	return oneLine(err)
}

// rawSendConn sends with send(2) and MSG_DONTWAIT through the runtime's
// raw system call, as MySQL's sessions do (countedConn.Write, which says
// why): a loopback send runs the server's side of the delivery and wakes
// it, often long enough for the runtime to hand the session's processor
// to another thread, a thread's wake-up per round trip. Reads, and a
// send the socket's buffer cannot take, go through the poller, which
// keeps the deadlines pgx sets.
type rawSendConn struct {
	net.Conn
	raw syscall.RawConn
}

// withRawSend is c sending raw, or c when it has no descriptor.
func withRawSend(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &rawSendConn{Conn: c, raw: raw}
}

func (c *rawSendConn) Write(b []byte) (int, error) { return rawSend(c.Conn, c.raw, b) }

type pgConn struct {
	c *pgx.Conn
	// unnamed: every statement is sent whole (Parse, Bind, Execute in one
	// round trip), none prepared by name (default_query_exec_mode=exec).
	unnamed bool
	stmts   atomic.Int64 // read by the driver's watchdog while a statement runs
	trips   atomic.Int64 // round trips: one a statement, one a batch
	w       wire         // SendBatch's prepared statements and storage
	watch   pgWatch
	// cut: a command's context ended while it ran; the connection's
	// state is unknown and it is lost.
	cut atomic.Bool
}

// pgSession is a connection whose batches run under its watch too
// (pgConn.SendBatch hands pgx the context it is given).
type pgSession struct{ *pgConn }

func (s pgSession) SendBatch(ctx context.Context, b *Batch) error {
	q, err := s.begin(ctx)
	if err != nil {
		return err
	}
	return s.finish(ctx, s.pgConn.SendBatch(q, b))
}

// pgWatch ends a command of the connection when its context ends, by
// setting the socket's deadline, as MySQL's sessions do (watch). pgx
// watches each command's context itself, registering a
// context.AfterFunc and removing it every round trip (with its lock and
// allocations, about 5% of the driver's CPU in a profile of order-entry
// in client mode); handed a context that never ends, it does not. A
// session's context lives as long as the session (the driver replaces
// it only after its watchdog cut a statement): one registration.
type pgWatch struct {
	ctx   context.Context // the context watched
	quiet context.Context // ctx without its end, for pgx
	stop  func() bool
	mu    sync.Mutex
	cur   context.Context // the context of the command running (nil: none, or one that never ends)
	cut   bool            // the socket's deadline was set
}

// begin starts a command under ctx: it returns the context to hand pgx,
// or ctx's error when ctx has already ended (nothing is sent).
func (p *pgConn) begin(ctx context.Context) (context.Context, error) {
	w := &p.watch
	if ctx.Done() == nil {
		p.enter(nil)
		return ctx, nil
	}
	if ctx != w.ctx {
		if w.stop != nil {
			w.stop()
		}
		w.ctx, w.quiet = ctx, context.WithoutCancel(ctx)
		w.stop = context.AfterFunc(ctx, func() { p.expire(ctx) })
	}
	p.enter(ctx)
	if err := ctx.Err(); err != nil {
		p.finish(ctx, nil)
		return nil, err
	}
	return w.quiet, nil
}

// enter marks a command under ctx running.
func (p *pgConn) enter(ctx context.Context) {
	w := &p.watch
	w.mu.Lock()
	if w.cut {
		// The context of an earlier command ended as it finished: this
		// command has its own.
		p.c.PgConn().Conn().SetDeadline(time.Time{})
		w.cut = false
	}
	w.cur = ctx
	w.mu.Unlock()
}

// finish ends the command begun under ctx and returns its error: ctx's
// when ctx ended, as pgx's own watch returned it, and then the
// connection is lost.
func (p *pgConn) finish(ctx context.Context, err error) error {
	w := &p.watch
	w.mu.Lock()
	w.cur = nil
	w.mu.Unlock()
	if err != nil && ctx.Err() != nil {
		p.cut.Store(true)
		return ctx.Err()
	}
	return err
}

// expire runs when ctx ends (in a goroutine of its own): a command
// running under it stops at its socket's next wait.
func (p *pgConn) expire(ctx context.Context) {
	w := &p.watch
	w.mu.Lock()
	if w.cur == ctx {
		p.c.PgConn().Conn().SetDeadline(time.Unix(1, 0))
		w.cut = true
	}
	w.mu.Unlock()
}

func (p *pgConn) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	p.stmts.Add(1)
	p.trips.Add(1)
	q, err := p.begin(ctx)
	if err != nil {
		return 0, err
	}
	tag, err := p.c.Exec(q, sql, args...)
	return tag.RowsAffected(), p.finish(ctx, err)
}

func (p *pgConn) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	p.stmts.Add(1)
	p.trips.Add(1)
	r, err := p.c.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgRows{r}, nil
}

func (p *pgConn) QueryRow(ctx context.Context, sql string, args ...any) Row {
	p.stmts.Add(1)
	p.trips.Add(1)
	return pgRow{p.c.QueryRow(ctx, sql, args...)}
}

func (p *pgConn) Begin(ctx context.Context, _ TxMode) error {
	_, err := p.Exec(ctx, "BEGIN")
	return err
}

func (p *pgConn) Commit(ctx context.Context) error {
	_, err := p.Exec(ctx, "COMMIT")
	return err
}

func (p *pgConn) Rollback(ctx context.Context) error {
	_, err := p.Exec(ctx, "ROLLBACK")
	return err
}

func (p *pgConn) CopyFrom(ctx context.Context, table string, cols []string, rows [][]any) (int64, error) {
	p.stmts.Add(1)
	p.trips.Add(1)
	return p.c.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
}

func (p *pgConn) Statements() int64 { return p.stmts.Load() }
func (p *pgConn) RoundTrips() int64 { return p.trips.Load() }
func (p *pgConn) Lost() bool        { return p.cut.Load() || p.c.IsClosed() }

func (p *pgConn) Close() error {
	if p.watch.stop != nil {
		p.watch.stop()
	}
	return p.c.Close(context.Background())
}

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

// OnThisHost tells whether the database runs on this host: an embedded
// engine, or a server reached through a unix socket or a loopback address
// (its first host, when the URL names several). A loopback port forwarded
// to a container still reaches this host's kernel, whose counters are the
// ones to read.
func (t *Target) OnThisHost() bool {
	if t.Dialect == SQLite {
		return true
	}
	h := t.host
	if strings.HasPrefix(h, "/") || h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
