package replay

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/engine"
)

// ddlServer is a fake server on which DDL takes ddlTook: it records when
// each session connected (and to which database) and when each statement
// began and ended.
type ddlServer struct {
	mu      sync.Mutex
	connect map[string]time.Time // session (by application) -> connected
	dbOf    map[string]string
	begin   map[string]time.Time // session + " " + sql
	end     map[string]time.Time
	sent    []string
}

const ddlTook = 60 * time.Millisecond

type ddlConn struct {
	s    *ddlServer
	name string
}

func (c *ddlConn) Simple(_ context.Context, sql string) (string, error) {
	k := c.name + " " + sql
	c.s.mu.Lock()
	c.s.begin[k] = time.Now()
	c.s.sent = append(c.s.sent, sql)
	c.s.mu.Unlock()
	if capture.DDL(sql) {
		time.Sleep(ddlTook)
	}
	c.s.mu.Lock()
	c.s.end[k] = time.Now()
	c.s.mu.Unlock()
	return "OK", nil
}
func (c *ddlConn) Batchable(string, string, bool) (bool, bool) { return false, false }
func (c *ddlConn) Batch(context.Context, []engine.BatchStatement, func(int, string, error, time.Duration)) (int, error) {
	panic("no batches")
}
func (c *ddlConn) Extended(ctx context.Context, sql string, _ []*string, _ []uint32) (string, error) {
	return c.Simple(ctx, sql)
}
func (c *ddlConn) Prepared(ctx context.Context, _, sql string, _ []*string, _ []uint32) (string, error) {
	return c.Simple(ctx, sql)
}
func (c *ddlConn) CopyIn(ctx context.Context, sql string, _ []byte) (string, error) {
	return c.Simple(ctx, sql)
}
func (c *ddlConn) Describe(context.Context, string, []uint32) ([]uint32, error) { return nil, nil }
func (c *ddlConn) PID() uint32                                                  { return 0 }
func (c *ddlConn) Blockers(context.Context, []uint32) (map[uint32][]uint32, time.Time, error) {
	return nil, time.Now(), nil
}
func (c *ddlConn) Close() error { return nil }

// slowLogCapture is what MariaDB's slow log makes of a client that
// creates its own schema: no connections, every session opening at its
// first statement, each statement's line written as it ended (Seq), the
// times of one second spread over it (with skewed, as they are: b's
// first statement stamped before the table it uses was made; its line
// after). Session a creates the schema and a table, b and c insert into
// it, a creates a second table, b and c insert into that one too; d
// selects, then changes to the schema.
func slowLogCapture(skewed bool) *capture.Capture {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := func(at, text int, seq int64) capture.Statement {
		return capture.Statement{Offset: ms(at), Duration: ms(1), Text: text, Seq: seq}
	}
	b0 := 3
	if skewed {
		b0 = 0
	}
	return &capture.Capture{Format: capture.Format, Engine: capture.EngineMySQL, Start: t0, End: t0.Add(ms(20)),
		ErrorsUnknown: true,
		Texts: []string{"CREATE SCHEMA `appdb`", "CREATE TABLE appdb.t1 (id int)", "INSERT INTO t1 VALUES (1)",
			"CREATE TABLE appdb.t2 (id int)", "INSERT INTO t2 VALUES (1)", "USE `appdb`", "SELECT 1"},
		Sessions: []capture.Session{
			{ID: "a", Application: "a", Start: 0, End: ms(20), StartedBeforeLog: true,
				Statements: []capture.Statement{st(0, 0, 2), st(1, 1, 3), st(6, 3, 7)}},
			{ID: "b", Application: "b", Database: "appdb", Start: ms(b0), End: ms(20), StartedBeforeLog: true,
				Statements: []capture.Statement{st(b0, 2, 4), st(8, 4, 8)}},
			{ID: "c", Application: "c", Database: "appdb", Start: ms(3), End: ms(20), StartedBeforeLog: true,
				Statements: []capture.Statement{st(3, 2, 5), st(9, 4, 9)}},
			{ID: "d", Application: "d", Start: 0, End: ms(20), StartedBeforeLog: true,
				Statements: []capture.Statement{{Offset: 0, Text: 6, Seq: 1}, st(4, 5, 6)}},
		}}
}

// DDL is a synchronisation point in every mode: b and c connect to the
// schema once a's CREATE SCHEMA is done, though the log opens them at
// once; their INSERTs run once the CREATE TABLE logged before them is
// done; d's USE waits for the schema. With --map-db the schema made and
// the one connected to are the renamed one.
func TestDDLSynchronises(t *testing.T) {
	for _, mode := range []string{SyncCommit, SyncStatement, SyncNone} {
		for _, mapDB := range []map[string]string{nil, {"appdb": "appcopy"}} {
			srv := &ddlServer{connect: map[string]time.Time{}, dbOf: map[string]string{}, begin: map[string]time.Time{}, end: map[string]time.Time{}}
			connect := func(_ context.Context, _, db, app string) (engine.ReplayConn, error) {
				srv.mu.Lock()
				defer srv.mu.Unlock()
				if !strings.HasPrefix(app, "dbparity-") {
					srv.connect[app], srv.dbOf[app] = time.Now(), db
				}
				return &ddlConn{s: srv, name: app}, nil
			}
			// Statement order keeps the log's times: they must be in order.
			c := slowLogCapture(mode != SyncStatement)
			r, err := Run(context.Background(), Options{Capture: c, Speed: 0, Sync: mode, Connect: connect, MapDB: mapDB,
				Tick: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			db := "appdb"
			if mapDB != nil {
				db = "appcopy"
			}
			created := srv.end["a CREATE SCHEMA `"+db+"`"]
			t1 := srv.end["a CREATE TABLE appdb.t1 (id int)"]
			t2 := srv.end["a CREATE TABLE appdb.t2 (id int)"]
			if created.IsZero() || t1.IsZero() || t2.IsZero() {
				t.Fatalf("%s %v: a's DDL not sent as expected: %q", mode, mapDB, srv.sent)
			}
			for _, s := range []string{"b", "c"} {
				if at := srv.connect[s]; at.Before(created) || srv.dbOf[s] != db {
					t.Errorf("%s %v: session %s connected to %q %v before its schema was made", mode, mapDB, s, srv.dbOf[s], created.Sub(at))
				}
				if at := srv.begin[s+" INSERT INTO t1 VALUES (1)"]; at.Before(t1) {
					t.Errorf("%s %v: %s's INSERT into t1 sent %v before t1 was made", mode, mapDB, s, t1.Sub(at))
				}
				if at := srv.begin[s+" INSERT INTO t2 VALUES (1)"]; at.Before(t2) {
					t.Errorf("%s %v: %s's INSERT into t2 sent %v before t2 was made", mode, mapDB, s, t2.Sub(at))
				}
			}
			if at := srv.begin["d USE `"+db+"`"]; at.Before(created) {
				t.Errorf("%s %v: d's USE sent %v before its schema was made", mode, mapDB, created.Sub(at))
			}
			// SELECT 1 came first in the log: it waits for no DDL.
			if at := srv.begin["d SELECT 1"]; at.IsZero() || !at.Before(created) {
				t.Errorf("%s %v: d's SELECT, before any DDL, sent at %v (the schema made at %v)", mode, mapDB, at, created)
			}
			if r.SessionsFailed != 0 || r.Errors != 0 || r.Admin["CREATE SCHEMA `appdb`"] != 0 || r.Replayed != int64(c.Statements()) {
				t.Errorf("%s %v: %d sessions failed, %d errors, %d of %d replayed, admin %v", mode, mapDB, r.SessionsFailed, r.Errors,
					r.Replayed, c.Statements(), r.Admin)
			}
		}
	}
}

func TestRenameDatabase(t *testing.T) {
	m := map[string]string{"appdb": "app`copy", "Mixed": "other"}
	for _, c := range []struct {
		text  string
		mysql bool
		want  string
	}{
		{"CREATE SCHEMA IF NOT EXISTS `appdb` CHARACTER SET utf8mb4", true, "CREATE SCHEMA IF NOT EXISTS `app``copy` CHARACTER SET utf8mb4"},
		{"drop database appdb", true, "drop database `app``copy`"},
		{"USE appdb", true, "USE `app``copy`"},
		{"USE appdb2", true, "USE appdb2"},
		{"CREATE DATABASE appdb TEMPLATE template0", false, `CREATE DATABASE "app` + "`" + `copy" TEMPLATE template0`},
		{"CREATE DATABASE Mixed", false, "CREATE DATABASE Mixed"}, // PostgreSQL folds it: mixed, not renamed
		{`CREATE DATABASE "Mixed"`, false, `CREATE DATABASE "other"`},
		{"CREATE SCHEMA appdb", false, "CREATE SCHEMA appdb"}, // a schema, not a database
		{"CREATE TABLE appdb.t (id int)", true, "CREATE TABLE appdb.t (id int)"},
	} {
		if got := renameDatabase(c.text, c.mysql, m); got != c.want {
			t.Errorf("renameDatabase(%q, mysql %v) = %q, want %q", c.text, c.mysql, got, c.want)
		}
	}
}

// Statement order keeps the log's times, which a slow log skews (b's
// first statement before the schema, by the clock, after it by the
// line): the replay still ends. A session waiting to connect for a
// statement that may wait for its own would never end.
func TestDDLSkewedStatementOrderEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv := &ddlServer{connect: map[string]time.Time{}, dbOf: map[string]string{}, begin: map[string]time.Time{}, end: map[string]time.Time{}}
	connect := func(context.Context, string, string, string) (engine.ReplayConn, error) { return &ddlConn{s: srv}, nil }
	c := slowLogCapture(true)
	// b's first statement ended, by the clock, before a's CREATE SCHEMA
	// started: in statement order the CREATE waits for it.
	c.Sessions[0].Statements[0].Offset = ms(2)
	r, err := Run(ctx, Options{Capture: c, Speed: 0, Sync: SyncStatement, Connect: connect})
	if err != nil || r.Replayed != int64(c.Statements()) {
		t.Fatalf("err %v, %d of %d replayed", err, r.Replayed, c.Statements())
	}
}

// In a general log (lines as statements arrive), a statement outside a
// transaction block waits for the DDL that arrived before it, though the
// DDL's session sent its next statement only later: a creates a table,
// b and c fill it, and only then a creates another. One inside a block
// waits only for DDL the log proves ended (its session may hold a lock
// the DDL waited for).
func TestGeneralLogInsertsWaitForTheTable(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := func(at, text int, seq int64) capture.Statement {
		return capture.Statement{Offset: ms(at), Text: text, Seq: seq}
	}
	c := &capture.Capture{Format: capture.Format, Engine: capture.EngineMySQL, Start: t0, End: t0.Add(ms(20)), ErrorsUnknown: true,
		Texts: []string{"CREATE TABLE appdb.t1 (id int)", "INSERT INTO t1 VALUES (1)", "CREATE TABLE appdb.t2 (id int)", "BEGIN", "COMMIT"},
		Sessions: []capture.Session{
			{ID: "a", Start: 0, End: ms(20), Statements: []capture.Statement{st(1, 0, 1), st(9, 2, 9)}},
			{ID: "b", Start: 0, End: ms(20), Statements: []capture.Statement{st(2, 1, 2), st(3, 1, 3)}},
			{ID: "c", Start: 0, End: ms(20), Statements: []capture.Statement{st(4, 3, 4), st(5, 1, 5), st(6, 4, 6)}},
		}}
	for _, mode := range []string{SyncCommit, SyncNone} {
		y := newSyncer(c, mode)
		create := y.pos[0][0]
		if create < 0 {
			t.Fatalf("%s: the CREATE TABLE is no event", mode)
		}
		for i := range 2 {
			if y.need[1][i] <= create {
				t.Errorf("%s: b's INSERT %d needs %d events complete, the CREATE TABLE is event %d", mode, i, y.need[1][i], create)
			}
		}
		// c's INSERT in its block: the log does not prove the CREATE TABLE
		// ended before it (a's next line comes after).
		if y.need[2][1] > create && mode == SyncNone {
			t.Errorf("%s: c's INSERT inside its block waits for the CREATE TABLE (needs %d, it is %d)", mode, y.need[2][1], create)
		}
	}
}
