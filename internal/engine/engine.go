// Package engine is dbparity's database layer: how it reaches a database
// (the target URLs a user gives with --target), the SQL dialects
// (PostgreSQL, MySQL/MariaDB, SQLite), the narrow connection interface
// workloads use, batches, the replay's connections and redaction. It never
// knows about workloads, runs or results; managed (throw-away) servers
// live in the subpackage managed.
//
// Passwords stop here: Target.URL and every error show the target with its
// passwords masked by structure (see Redact), and only the driver's parsed
// configuration holds them. A PostgreSQL password may also come from
// PGPASSWORD or the password file (~/.pgpass, PGPASSFILE); the driver reads
// those when it connects, and nothing of dbparity stores or prints them.
package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// DefaultURL is the embedded default: an SQLite file that needs no server.
const DefaultURL = "sqlite://dbparity-data/dbparity.db"

// Dialect is the SQL dialect of a target.
type Dialect int

const (
	Postgres Dialect = iota + 1
	SQLite
	MySQL // MySQL and MariaDB
)

func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case SQLite:
		return "sqlite"
	case MySQL:
		return "mysql"
	}
	return "unknown"
}

// ForUpdate is the row-locking clause of a SELECT that reads rows it will
// change. SQLite has none: a write transaction already holds the database's
// single write lock.
func (d Dialect) ForUpdate() string {
	if d == SQLite {
		return ""
	}
	return " FOR UPDATE"
}

// TxMode says what a transaction will do, so the dialect can start it the
// right way (SQLite must take its write lock up front, or two writers that
// both began reading deadlock on the upgrade).
type TxMode int

const (
	ReadWrite TxMode = iota
	ReadOnly
)

// ErrNoRows is returned by Row.Scan when the query returned no row.
var ErrNoRows = errors.New("no rows in result set")

// Conn is one database connection, used by one goroutine. SQL is written
// with PostgreSQL's $1, $2 placeholders; each dialect rewrites them once per
// statement text, never per call.
type Conn interface {
	Exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
	Begin(ctx context.Context, mode TxMode) error
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
	// CopyFrom bulk-loads rows into table inside the current transaction
	// where there is one (COPY on PostgreSQL, multi-row INSERT on SQLite).
	CopyFrom(ctx context.Context, table string, columns []string, rows [][]any) (int64, error)
	// SendBatch sends statements that need no result of each other
	// together: one round trip where the dialect pipelines (Batch).
	SendBatch(ctx context.Context, b *Batch) error
	// Statements is the number of statements this connection has sent;
	// RoundTrips how many times it waited for the server to answer.
	Statements() int64
	RoundTrips() int64
	// Lost reports whether the connection is unusable and must be replaced.
	Lost() bool
	Close() error
}

// Rows is the result of Query.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the result of QueryRow.
type Row interface {
	Scan(dest ...any) error
}

// Target is a parsed database endpoint. Open parses and validates; nothing
// connects until Connect.
type Target struct {
	Dialect Dialect
	// URL is the endpoint with any password removed: safe to print and store.
	URL string
	// Path is the database file of an SQLite target.
	Path string
	// Settings are the connection settings that change behaviour (SQLite
	// pragmas), for the run's disclosure.
	Settings map[string]string
	// ConnectTimeout bounds each connection attempt, the server's answers
	// to the handshake included (a frozen server accepts the socket and
	// never answers); 0 leaves it to the caller's context.
	ConnectTimeout time.Duration

	connect  func(ctx context.Context, app string) (Conn, error) // app "" for a session
	pgConfig *pgx.ConnConfig                                     // PostgreSQL: the parsed URL, for replay connections
	myConfig *mysql.Config                                       // MySQL: the parsed URL
	host     string                                              // a server's (first) host or unix socket
	close    func() error
	counters func() map[string]float64
}

// Host is the server's (first) host name or address, or its unix socket
// directory; "" for SQLite.
func (t *Target) Host() string { return t.host }

// EngineCounters returns cumulative counters that the client side keeps
// for an embedded engine (SQLite's page cache hits, misses and writes over
// all connections), keyed "sqlite.NAME"; nil for a server.
func (t *Target) EngineCounters() map[string]float64 {
	if t.counters == nil {
		return nil
	}
	return t.counters()
}

// Open parses a target: a URL, or a PostgreSQL keyword/value string
// (host=/var/run/postgresql user=bench dbname=bench). An empty string
// means DefaultURL. Its errors show the target redacted.
func Open(raw string) (*Target, error) {
	if raw == "" {
		raw = DefaultURL
	}
	if isKeywordValue(raw) {
		return openPostgres(raw)
	}
	scheme, _, ok := strings.Cut(raw, ":")
	if !ok {
		return nil, fmt.Errorf("target %q has no scheme: use postgres://USER@HOST:PORT/DB, sqlite://PATH or --managed postgres", Redact(raw))
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return openPostgres(raw)
	case "sqlite", "file":
		return openSQLite(raw)
	case "mysql", "mariadb":
		return openMySQL(raw)
	}
	return nil, fmt.Errorf("target %q: unknown scheme %q: use postgres://USER@HOST:PORT/DB, mysql://USER:PASS@HOST:PORT/DB, sqlite://PATH or --managed postgres", Redact(raw), scheme)
}

// Connect opens one new connection for a session.
func (t *Target) Connect(ctx context.Context) (Conn, error) { return t.dial(ctx, "") }

// ConnectCollector opens a connection for occasional monitoring queries:
// it tells the server it is app (its application_name, where the dialect
// has one), so it can be told from the sessions, and it does not prepare
// statements, so each statement is one round trip and one transaction in
// the server's counters.
func (t *Target) ConnectCollector(ctx context.Context, app string) (Conn, error) {
	if app == "" {
		app = "dbparity-collector"
	}
	return t.dial(ctx, app)
}

func (t *Target) dial(ctx context.Context, app string) (Conn, error) {
	cctx, cancel := t.connectContext(ctx)
	defer cancel()
	c, err := t.connect(cctx, app)
	if err != nil {
		if e := t.noAnswer(ctx, cctx); e != nil {
			return nil, e
		}
		return nil, fmt.Errorf("connect to %s: %w", t.URL, err)
	}
	return c, nil
}

// connectContext is ctx bounded by ConnectTimeout, for one connection
// attempt.
func (t *Target) connectContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if t.ConnectTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, t.ConnectTimeout)
}

// noAnswer is the error of an attempt that ConnectTimeout ended (cctx
// expired, the caller's ctx did not), or nil.
func (t *Target) noAnswer(ctx, cctx context.Context) error {
	if ctx.Err() != nil || !errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return nil
	}
	return &NoAnswerError{URL: t.URL, After: t.ConnectTimeout}
}

// NoAnswerError is a connection attempt the server did not answer within
// the target's ConnectTimeout (the command line's --statement-timeout).
type NoAnswerError struct {
	URL   string
	After time.Duration
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("connect to %s: the server did not answer within %s (--statement-timeout)", e.URL, e.After)
}

// Close releases what the target holds (SQLite's handle); connections
// should be closed first.
func (t *Target) Close() error {
	if t.close == nil {
		return nil
	}
	return t.close()
}

// TableExists reports whether a table of that name is in the connection's
// default schema.
func (d Dialect) TableExists(ctx context.Context, c Conn, table string) (bool, error) {
	q := "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1"
	switch d {
	case Postgres:
		q = "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1"
	case MySQL:
		q = "SELECT count(*) FROM information_schema.tables WHERE table_schema = database() AND table_name = $1"
	}
	var n int64
	if err := c.QueryRow(ctx, q, table).Scan(&n); err != nil {
		return false, fmt.Errorf("look for table %s: %w", table, err)
	}
	return n > 0, nil
}

// ConcurrentWriters reports whether several connections can write at the
// same time; SQLite has one writer per database, so a parallel load would
// only queue on its lock.
func (d Dialect) ConcurrentWriters() bool { return d != SQLite }

// NowMicros is an expression for the server's clock, in microseconds
// since the Unix epoch (a bigint): what parts of one run agree on.
func (d Dialect) NowMicros() string {
	switch d {
	case MySQL:
		return "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)"
	case SQLite:
		return "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"
	}
	return "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
}

// ServerVersion returns the server's version string.
func (d Dialect) ServerVersion(ctx context.Context, c Conn) (string, error) {
	q := "SELECT sqlite_version()"
	switch d {
	case Postgres:
		q = "SHOW server_version"
	case MySQL:
		q = "SELECT version()"
	}
	var v string
	if err := c.QueryRow(ctx, q).Scan(&v); err != nil {
		return "", fmt.Errorf("read server version: %w", err)
	}
	return v, nil
}

// TableBytes returns the space a table and its indexes take, or -1 where
// the dialect cannot tell (SQLite built without the dbstat table).
func (d Dialect) TableBytes(ctx context.Context, c Conn, table string) int64 {
	q := "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = $1 OR name IN (SELECT name FROM sqlite_master WHERE tbl_name = $1)"
	switch d {
	case Postgres:
		q = "SELECT pg_total_relation_size($1::regclass)"
	case MySQL:
		// InnoDB's estimate, refreshed by ANALYZE TABLE.
		q = "SELECT data_length + index_length FROM information_schema.tables WHERE table_schema = database() AND table_name = $1"
	}
	var n int64
	if err := c.QueryRow(ctx, q, table).Scan(&n); err != nil {
		return -1
	}
	return n
}

// CreateTable is the CREATE TABLE statement of a table with these column
// definitions (standard types: int, numeric, varchar, char, timestamp) and
// primary key ("" for none). Where rows are clustered by the key (SQLite's
// WITHOUT ROWID tables, InnoDB) the key is declared here; PostgreSQL adds
// it after loading (KeysAfterLoad), which is faster than maintaining it
// while loading.
func (d Dialect) CreateTable(name, columns, pk string) string {
	s := "CREATE TABLE " + name + " (" + columns
	switch {
	case d == MySQL:
		// MySQL's timestamp ends in 2038 and converts to the session's
		// time zone; datetime is the standard's timestamp.
		s = strings.ReplaceAll(s, " timestamp", " datetime")
		if pk != "" {
			s += ", PRIMARY KEY (" + pk + ")"
		}
		return s + ") ENGINE=InnoDB"
	case d == SQLite && pk != "":
		return s + ", PRIMARY KEY (" + pk + ")) WITHOUT ROWID"
	}
	return s + ")"
}

// KeysAfterLoad tells whether primary keys are added once the data is in
// (ALTER TABLE ... ADD PRIMARY KEY) rather than declared by CreateTable.
func (d Dialect) KeysAfterLoad() bool { return d == Postgres }

// Analyze is the statement that refreshes a table's planner statistics.
func (d Dialect) Analyze(table string) string {
	if d == MySQL {
		return "ANALYZE TABLE " + table
	}
	return "ANALYZE " + table
}

// BeginSnapshot opens a read-only transaction whose statements all see
// one snapshot of the database (a consistency check).
func (d Dialect) BeginSnapshot(ctx context.Context, c Conn) error {
	switch d {
	case Postgres:
		_, err := c.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
		return err
	case MySQL:
		_, err := c.Exec(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
		return err
	}
	return c.Begin(ctx, ReadOnly)
}
