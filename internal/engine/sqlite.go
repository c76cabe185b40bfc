package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver (pure Go, no cgo)
)

// sqliteDefaults are applied unless the URL sets them: WAL lets readers run
// beside the single writer, and the busy timeout makes writers queue for the
// write lock instead of failing at once.
var sqliteDefaults = [][2]string{
	{"_busy_timeout", "10000"},
	{"_journal_mode", "WAL"},
}

func openSQLite(raw string) (*Target, error) {
	rest := raw[strings.Index(raw, ":")+1:]
	rest = strings.TrimPrefix(rest, "//")
	path, rawQuery, _ := strings.Cut(rest, "?")
	if path == "" {
		return nil, fmt.Errorf("target %q has no file path: use sqlite://PATH (sqlite:///abs/path or sqlite://rel/path)", Redact(raw))
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, fmt.Errorf("target %q: bad query string: fix its %%-escapes", Redact(raw))
	}
	for _, d := range sqliteDefaults {
		if q.Get(d[0]) == "" {
			q.Set(d[0], d[1])
		}
	}
	settings := map[string]string{}
	for k, v := range q {
		// SQLite has no password; a parameter that says it is one is
		// not disclosed all the same.
		if !strings.Contains(strings.ToLower(k), "password") {
			settings[k] = strings.Join(v, ",")
		}
	}
	dsn := "file:" + path + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("target %q: %v", Redact(raw), err)
	}
	t := &Target{Dialect: SQLite, URL: "sqlite://" + path, Path: path, Settings: settings, close: db.Close}
	writer := &sync.Mutex{}
	counters := &engineCounters{}
	t.counters = counters.snapshot
	t.connect = func(ctx context.Context, _ string) (Conn, error) {
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
		}
		c, err := db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		// Open is lazy: make the first real statement happen here so a bad
		// path or pragma fails at connect time with a clear message.
		if err := c.PingContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return &sqliteConn{c: c, stmts: map[string]*sql.Stmt{}, writer: writer, counters: counters}, nil
	}
	return t, nil
}

type sqliteConn struct {
	c     *sql.Conn
	stmts map[string]*sql.Stmt
	n     atomic.Int64 // read by the driver's watchdog while a statement runs
	// writer is shared by the target's connections. SQLite has one writer
	// at a time, and a writer that finds the lock taken sleeps and polls
	// (the busy timeout), which adds sleeps of up to 100 ms to the latency
	// tail; connections of this process queue on a mutex instead and take
	// the lock as soon as it is free. Other processes still meet the busy
	// timeout.
	writer   *sync.Mutex
	writing  bool
	counters *engineCounters
	// inTx is set between BEGIN and its end: Close must end a transaction
	// left open, because the connection goes back to database/sql's pool,
	// where an open write transaction would hold SQLite's lock forever.
	inTx bool
}

// stmt returns the prepared statement for a PostgreSQL-style SQL text,
// preparing and caching it on first use.
func (s *sqliteConn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st, err := s.c.PrepareContext(ctx, rebindNumbered(query))
	if err != nil {
		return nil, err
	}
	s.stmts[query] = st
	return st, nil
}

// rebindNumbered turns $1 into ?1: SQLite reads "$1" as a named parameter
// whose index depends on where it first appears, while ?NNN is positional.
func rebindNumbered(q string) string {
	if !strings.Contains(q, "$") {
		return q
	}
	b := []byte(q)
	inStr := false
	for i := 0; i < len(b)-1; i++ {
		switch {
		case b[i] == '\'':
			inStr = !inStr
		case !inStr && b[i] == '$' && b[i+1] >= '0' && b[i+1] <= '9':
			b[i] = '?'
		}
	}
	return string(b)
}

func (s *sqliteConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	s.n.Add(1)
	st, err := s.stmt(ctx, query)
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *sqliteConn) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	s.n.Add(1)
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	r, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

func (s *sqliteConn) QueryRow(ctx context.Context, query string, args ...any) Row {
	s.n.Add(1)
	st, err := s.stmt(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return sqlRow{st.QueryRowContext(ctx, args...)}
}

func (s *sqliteConn) Begin(ctx context.Context, mode TxMode) error {
	if mode == ReadOnly {
		_, err := s.Exec(ctx, "BEGIN")
		s.inTx = err == nil
		return err
	}
	s.release() // a write transaction left open is over now: never lock twice
	s.writer.Lock()
	s.writing = true
	_, err := s.Exec(ctx, "BEGIN IMMEDIATE")
	if err != nil {
		s.release()
	}
	s.inTx = err == nil
	return err
}

// release lets the next writer of this process in.
func (s *sqliteConn) release() {
	if s.writing {
		s.writing = false
		s.writer.Unlock()
	}
}

func (s *sqliteConn) Commit(ctx context.Context) error {
	_, err := s.Exec(ctx, "COMMIT")
	if err != nil {
		// Unlike PostgreSQL, SQLite keeps a transaction whose COMMIT failed
		// open; end it so the connection and the write lock are free.
		s.c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	}
	s.inTx = false
	s.release()
	s.collect()
	return err
}

func (s *sqliteConn) Rollback(ctx context.Context) error {
	_, err := s.Exec(ctx, "ROLLBACK")
	s.inTx = false
	s.release()
	s.collect()
	return err
}

// engineCounters add up SQLite's page cache counters over every
// connection of a target. SQLite keeps them per connection in 32-bit
// integers; each connection hands its counts over (and resets them) at the
// end of every transaction, so none wraps and the sum is the target's.
type engineCounters struct {
	hit, miss, write atomic.Int64
}

// cacheOps are read in the order of engineCounters' fields.
var cacheOps = [...]sqlite.DBStatusOp{sqlite.DBStatusCacheHit, sqlite.DBStatusCacheMiss, sqlite.DBStatusCacheWrite}

func (e *engineCounters) snapshot() map[string]float64 {
	return map[string]float64{"sqlite.cache_hit": float64(e.hit.Load()), "sqlite.cache_miss": float64(e.miss.Load()),
		"sqlite.cache_write": float64(e.write.Load())}
}

// collect hands this connection's cache counts to the target's sum.
func (s *sqliteConn) collect() {
	s.c.Raw(func(dc any) error {
		st, ok := dc.(sqlite.DBStatus)
		if !ok {
			return nil
		}
		for i, dst := range []*atomic.Int64{&s.counters.hit, &s.counters.miss, &s.counters.write} {
			if cur, _, err := st.Status(cacheOps[i], true); err == nil {
				dst.Add(int64(cur))
			}
		}
		return nil
	})
}

// sqliteMaxVars stays under SQLite's default limit of bound parameters.
const sqliteMaxVars = 30000

func (s *sqliteConn) CopyFrom(ctx context.Context, table string, cols []string, rows [][]any) (int64, error) {
	return insertRows(ctx, s, table, cols, rows, sqliteMaxVars)
}

// insertRows inserts rows in multi-row INSERTs of up to 500 rows and at
// most maxParams placeholders each.
func insertRows(ctx context.Context, c Conn, table string, cols []string, rows [][]any, maxParams int) (int64, error) {
	per := min(500, maxParams/len(cols))
	var n int64
	args := make([]any, 0, per*len(cols))
	for len(rows) > 0 {
		batch := rows[:min(per, len(rows))]
		rows = rows[len(batch):]
		args = args[:0]
		for _, r := range batch {
			args = append(args, r...)
		}
		k, err := c.Exec(ctx, insertValues(table, cols, len(batch)), args...)
		if err != nil {
			return n, err
		}
		n += k
	}
	return n, nil
}

// insertValues uses anonymous ? placeholders: the driver looks up every
// numbered parameter's name in a list, which costs quadratic time over a
// statement with thousands of them.
func insertValues(table string, cols []string, nrows int) string {
	row := "(" + strings.Repeat("?, ", len(cols)-1) + "?)"
	var b strings.Builder
	b.WriteString("INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ")
	for r := 0; r < nrows; r++ {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

func (s *sqliteConn) Statements() int64 { return s.n.Load() }

// RoundTrips is the statements: SQLite runs in the process, each one a
// call.
func (s *sqliteConn) RoundTrips() int64 { return s.n.Load() }
func (s *sqliteConn) Lost() bool        { return false }

func (s *sqliteConn) Close() error {
	if s.inTx {
		s.c.ExecContext(context.Background(), "ROLLBACK")
		s.inTx = false
	}
	s.release()
	for _, st := range s.stmts {
		st.Close()
	}
	return s.c.Close()
}

type sqlRows struct{ r *sql.Rows }

func (r sqlRows) Next() bool             { return r.r.Next() }
func (r sqlRows) Scan(dest ...any) error { return r.r.Scan(dest...) }
func (r sqlRows) Err() error             { return r.r.Err() }
func (r sqlRows) Close()                 { r.r.Close() }

type sqlRow struct{ r *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNoRows
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
