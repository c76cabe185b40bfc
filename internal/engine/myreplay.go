package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// myReplayConn replays a MySQL capture's statements as text queries
// (COM_QUERY), several in one text allowed, as the client sent them: the
// logs hold prepared statements' executions with their values in place.
// It sets no session variable of its own (the client's sql_mode is the
// server's default, as it was for the client).
//
// Where the socket's bytes are the protocol's own (no TLS, no
// compression, no read or write timeouts of the driver's), the driver
// only connects, and the session's texts go through dbparity's own
// reader (myWire), as a run's sessions' batches do: see myreplaywire.go.
type myReplayConn struct {
	db *sql.DB
	c  *sql.Conn
	id uint32
	// lastIS is when InnoDB's information_schema lock tables were last
	// read (Blockers).
	lastIS time.Time
	w      watch   // ends a command of the reader's when its context ends
	wire   *myWire // the socket's own reader; nil: the driver reads every answer
	text   []byte  // a command's packet: myHeader bytes, then the text
	lost   bool    // the reader dropped the connection
	// mariaDB: the server is MariaDB, which takes a statement's
	// AUTO_INCREMENT value from SET STATEMENT insert_id=N FOR (MySQL 8
	// has no SET STATEMENT).
	mariaDB bool
}

// innodbCacheIdle is how long InnoDB's information_schema lock tables
// must go unread before it refreshes them: it refreshes its cache only
// when it was not read for 100 ms, so a reader that asks more often is
// shown the same stale picture for ever.
const innodbCacheIdle = 110 * time.Millisecond

// connectMyReplay opens a replay connection as user to database (the
// URL's when empty), with the URL's password. A connection of dbparity's
// own (app dbparity-*: the replay's monitor) names itself first.
func (t *Target) connectMyReplay(ctx context.Context, user, database, app string) (ReplayConn, error) {
	cfg := t.myConfig.Clone()
	if user != "" {
		cfg.User = user
	}
	if database != "" {
		cfg.DBName = database
	}
	cfg.MultiStatements = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, &ConnectError{User: cfg.User, Database: cfg.DBName, Err: err}
	}
	db := sql.OpenDB(conn)
	db.SetMaxIdleConns(0)
	// The reader waits for every piece of an answer in the poller, never
	// blocking its thread: on a loaded two-CPU host (sysbench's general
	// log capture, speed 1, three interleaved rounds) 41-46 against 46-49
	// µs of CPU per statement, and a replay's pace hangs on its
	// goroutines waking on time.
	n := &netCounts{poll: true}
	c, err := db.Conn(context.WithValue(ctx, netCountsKey{}, n))
	if err == nil {
		err = c.PingContext(ctx)
	}
	var id uint32
	var version string
	if err == nil {
		err = c.QueryRowContext(ctx, "SELECT CONNECTION_ID(), VERSION()").Scan(&id, &version)
	}
	if err == nil && strings.HasPrefix(app, ownPrefix) {
		_, err = c.ExecContext(ctx, OwnMarkerSQL(app))
	}
	if err != nil {
		if c != nil {
			c.Close()
		}
		db.Close()
		return nil, &ConnectError{User: cfg.User, Database: cfg.DBName, Err: err}
	}
	r := &myReplayConn{db: db, c: c, id: id, w: watch{n: n}, mariaDB: strings.Contains(version, "MariaDB")}
	if myReplayWire && wireable(cfg) && n.cc.n != nil {
		r.wire = &myWire{conn: n.cc, maxPacket: cfg.MaxAllowedPacket}
	}
	return r, nil
}

// Simple runs the text and reads every result; the tag is the last
// statement's kind and rows, as PostgreSQL's command tags read ("SELECT
// 3", "UPDATE 1"), and "OK" for others. The reader (wireSimple) counts
// a multi-statement text's last result too, as a wire capture does.
func (r *myReplayConn) Simple(ctx context.Context, text string) (string, error) {
	if r.wire != nil {
		if !localInfile(text) {
			return r.wireSimple(ctx, text)
		}
		r.w.enter(nil) // the driver watches ctx: no deadline of the reader's left
		defer r.w.end()
	}
	switch verb := strings.ToUpper(firstWord(text)); verb {
	case "INSERT", "UPDATE", "DELETE", "REPLACE":
		if strings.Contains(strings.TrimRight(text, "; \t\r\n"), ";") {
			break // several statements: read as any other text
		}
		// A change alone in its text: its rows affected, as the
		// server's OK packet says them (rows matched: the target's
		// connections ask for found rows).
		res, err := r.c.ExecContext(ctx, text)
		if err != nil {
			return "", err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return verb, nil
		}
		return verb + " " + strconv.FormatInt(n, 10), nil
	}
	rows, err := r.c.QueryContext(ctx, text)
	if err != nil {
		return "", err
	}
	n := 0
	for {
		n = 0
		for rows.Next() {
			n++
		}
		if !rows.NextResultSet() {
			break
		}
	}
	err = rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return myTag(text, n), nil
}

// Batchable: a text statement alone in its text (a batch joins texts
// with semicolons). A multi-statement query shows the results that have
// rows and passes over the others, so a statement without rows ends a
// batch (a BEGIN may lead one): a failure is then the failing
// statement's for sure.
func (r *myReplayConn) Batchable(name, sql string, extended bool) (ok, last bool) {
	if name != "" || extended || strings.Contains(strings.TrimRight(sql, "; \t\r\n"), ";") {
		return false, false
	}
	return true, !returnsRows(sql) && !isBegin(sql)
}

func returnsRows(sql string) bool {
	switch strings.ToUpper(firstWord(sql)) {
	case "SELECT", "SHOW", "WITH", "VALUES", "TABLE", "DESCRIBE", "DESC", "EXPLAIN":
		return true
	}
	return false
}

func isBegin(sql string) bool {
	w := firstWord(sql)
	switch {
	case strings.EqualFold(w, "BEGIN"):
		return true
	case strings.EqualFold(w, "START"):
		rest := strings.TrimLeft(strings.TrimLeft(sql, " \t\r\n(")[len(w):], " \t\r\n")
		return len(rest) >= 11 && strings.EqualFold(rest[:11], "TRANSACTION")
	}
	return false
}

// Batch sends the texts as one multi-statement query: the server runs
// them in order and stops at the first that fails. The statements are
// those Batchable allows: a BEGIN perhaps, statements that return rows,
// and perhaps one that returns none, last.
func (r *myReplayConn) Batch(ctx context.Context, stmts []BatchStatement, done func(int, string, error, time.Duration)) (int, error) {
	if r.wire != nil {
		return r.wireBatch(ctx, stmts, done)
	}
	var q strings.Builder
	for k, st := range stmts {
		if k > 0 {
			q.WriteString(";\n")
		}
		q.WriteString(strings.TrimRight(st.SQL, "; \t\r\n"))
	}
	last := time.Now()
	report := func(k int, tag string, err error) {
		now := time.Now()
		done(k, tag, err, now.Sub(last))
		last = now
	}
	k := 0
	if isBegin(stmts[0].SQL) && len(stmts) > 1 {
		k = 1 // its outcome comes with the next statement's
	}
	rows, err := r.c.QueryContext(ctx, q.String())
	if err != nil {
		if k == 1 {
			report(0, "BEGIN", nil)
		}
		report(k, "", err)
		return k + 1, nil
	}
	defer rows.Close()
	if k == 1 {
		report(0, "BEGIN", nil)
	}
	first := true
	for ; k < len(stmts); k++ {
		if !returnsRows(stmts[k].SQL) {
			break // the last: no result of its own
		}
		if !first && !rows.NextResultSet() {
			if err := rows.Err(); err != nil {
				report(k, "", err)
				return k + 1, nil
			}
			// No more results, no error: the rest ran and returned no
			// rows after all (a SELECT ... INTO).
			for ; k < len(stmts); k++ {
				report(k, myTag(stmts[k].SQL, 0), nil)
			}
			return len(stmts), nil
		}
		first = false
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil {
			report(k, "", err)
			return k + 1, nil
		}
		report(k, myTag(stmts[k].SQL, n), nil)
	}
	if k < len(stmts) {
		// The last, without rows: its outcome is what follows the results.
		if !first && rows.NextResultSet() {
			return k, fmt.Errorf("multi-statement query: a result for %s", firstWord(stmts[k].SQL))
		}
		if err := rows.Err(); err != nil {
			report(k, "", err)
		} else {
			report(k, myTag(stmts[k].SQL, 0), nil)
		}
		k++
	}
	return k, nil
}

// myTag is a statement's outcome as PostgreSQL's command tags read it.
func myTag(text string, rows int) string {
	verb := strings.ToUpper(firstWord(text))
	switch verb {
	case "SELECT", "WITH", "SHOW":
		return "SELECT " + strconv.Itoa(rows)
	case "":
		return "OK"
	}
	return verb
}

func firstWord(s string) string {
	s = strings.TrimLeft(afterInsertID(s), " \t\r\n(")
	if i := strings.IndexAny(s, " \t\r\n(;"); i >= 0 {
		return s[:i]
	}
	return s
}

// InsertIDs is a replay connection that can make a statement take the
// AUTO_INCREMENT value it took in the capture.
type InsertIDs interface {
	// WithInsertID returns the text to send for sql, an INSERT or
	// REPLACE, so that the first AUTO_INCREMENT value it generates is id
	// (and the next ones follow it, by auto_increment_increment), and
	// false when this server cannot be told (MySQL).
	WithInsertID(sql string, id int64) (string, bool)
}

// insertIDPrefix begins a text WithInsertID made.
const insertIDPrefix = "SET STATEMENT insert_id="

// WithInsertID puts MariaDB's SET STATEMENT insert_id=N FOR before sql:
// the session's insert_id is N for that statement alone. A plain SET
// insert_id=N would cost no round trip more in a multi-statement text,
// but it stays set until a statement generates a value: after an INSERT
// given its ids (whose captured OK packet carries the explicit value) it
// would give the session's next INSERT that value (checked on MariaDB
// 10.11: it survives SELECTs, UPDATEs and explicit inserts; SET
// STATEMENT restores it after the statement). The server parses the
// prefix with the statement: no round trip more.
func (r *myReplayConn) WithInsertID(sql string, id int64) (string, bool) {
	if !r.mariaDB || id <= 0 {
		return sql, false
	}
	return insertIDPrefix + strconv.FormatInt(id, 10) + " FOR " + sql, true
}

// afterInsertID is a text without the prefix WithInsertID put before it:
// its own statement, whose kind and rows its outcome reads.
func afterInsertID(s string) string {
	if !strings.HasPrefix(s, insertIDPrefix) {
		return s
	}
	if i := strings.Index(s, " FOR "); i >= 0 {
		return s[i+len(" FOR "):]
	}
	return s
}

var errMyProtocol = errors.New("MySQL captures hold text queries only")

func (r *myReplayConn) Extended(context.Context, string, []*string, []uint32) (string, error) {
	return "", errMyProtocol
}

func (r *myReplayConn) Prepared(context.Context, string, string, []*string, []uint32) (string, error) {
	return "", errMyProtocol
}

func (r *myReplayConn) CopyIn(context.Context, string, []byte) (string, error) {
	return "", errMyProtocol
}

func (r *myReplayConn) Describe(context.Context, string, []uint32) ([]uint32, error) {
	return nil, errMyProtocol
}

func (r *myReplayConn) PID() uint32 { return r.id }

// Blockers reads InnoDB's lock waits: MariaDB's
// information_schema.INNODB_LOCK_WAITS, else MySQL 8's
// performance_schema.data_lock_waits. The former is read at most every
// innodbCacheIdle, so that InnoDB refreshes it between reads.
func (r *myReplayConn) Blockers(ctx context.Context, pids []uint32) (map[uint32][]uint32, time.Time, error) {
	if wait := innodbCacheIdle - time.Since(r.lastIS); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, time.Time{}, ctx.Err()
		}
	}
	if r.wire != nil {
		// The driver carries these, watching ctx itself: a deadline the
		// reader's watch left on the socket is cleared first.
		r.w.enter(nil)
		defer r.w.end()
	}
	asked := time.Now()
	defer func() { r.lastIS = time.Now() }()
	want := map[uint32]bool{}
	for _, p := range pids {
		want[p] = true
	}
	queries := []string{
		"SELECT r.trx_mysql_thread_id, b.trx_mysql_thread_id FROM information_schema.INNODB_LOCK_WAITS w" +
			" JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id" +
			" JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id",
		"SELECT rt.PROCESSLIST_ID, bt.PROCESSLIST_ID FROM performance_schema.data_lock_waits w" +
			" JOIN performance_schema.threads rt ON rt.THREAD_ID = w.REQUESTING_THREAD_ID" +
			" JOIN performance_schema.threads bt ON bt.THREAD_ID = w.BLOCKING_THREAD_ID",
	}
	var firstErr error
	for _, q := range queries {
		rows, err := r.c.QueryContext(ctx, q)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		out := map[uint32][]uint32{}
		for rows.Next() {
			var waiter, holder uint32
			if err := rows.Scan(&waiter, &holder); err != nil {
				rows.Close()
				return nil, asked, err
			}
			if want[waiter] {
				out[waiter] = append(out[waiter], holder)
			}
		}
		err = rows.Err()
		rows.Close()
		return out, asked, err
	}
	return nil, asked, fmt.Errorf("lock waits: %w", firstErr)
}

func (r *myReplayConn) Close() error {
	r.w.close()
	return errors.Join(r.c.Close(), r.db.Close())
}
