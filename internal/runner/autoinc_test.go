package runner

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/capture/wire"
	"github.com/dbparity/dbparity/internal/result"
)

// Issue 49: eight sessions inserting at once into AUTO_INCREMENT tables
// of a schema the client creates itself, on a managed MariaDB, captured
// from the wire (through the proxy), from the slow log and from the
// general log of one run. Concurrent replay sessions draw AUTO_INCREMENT
// values in another order than the capture did: where the capture knows
// the value each statement took (the wire: the OK packet's insert id) the
// replay makes the statement take it again, and every table ends equal;
// where it cannot know (MariaDB's logs: neither holds insert ids, the
// slow log's SET insert_id included), the tables whose rows paired
// otherwise are named with their AUTO_INCREMENT cause, not reported as an
// unexplained difference.
func TestAutoIncrementReplayMariaDB(t *testing.T) {
	t.Parallel()
	tg := managedMariaDB(t)
	ctx := context.Background()
	o, err := openTarget(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	base := o.managed.URL()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	socket := u.Query().Get("socket")
	root := Target{URL: base}
	var dataDir string
	queryRow(t, root, "SELECT @@datadir", &dataDir)
	general, slow := filepath.Join(dataDir, "autoinc-general.log"), filepath.Join(dataDir, "autoinc-slow.log")
	execSQL(t, root, "SET GLOBAL general_log_file = '"+general+"', GLOBAL slow_query_log_file = '"+slow+"',"+
		" GLOBAL log_output = 'FILE', GLOBAL long_query_time = 0, GLOBAL general_log = ON, GLOBAL slow_query_log = ON")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wrec := wire.NewRecorder("autoinc test proxy")
	wrec.MySQL = true
	pctx, stopProxy := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- wire.Serve(pctx, ln, socket, wrec, wire.ProxyOptions{}) }()
	open := func(db string) *sql.DB {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", ln.Addr().String(), db
		d, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		d.SetMaxOpenConns(1)
		return d
	}
	// The client makes its schema, then eight sessions insert at once:
	// orders with their lines in transactions (the lines take the
	// order's id from LAST_INSERT_ID()), single orders through prepared
	// statements (the binary protocol), and two orders in one statement.
	setup := open("")
	for _, q := range []string{"CREATE DATABASE autoinc",
		"CREATE TABLE autoinc.orders (id bigint AUTO_INCREMENT PRIMARY KEY, session int NOT NULL, n int NOT NULL, note varchar(20) NOT NULL)",
		"CREATE TABLE autoinc.order_lines (id int AUTO_INCREMENT PRIMARY KEY, order_id bigint NOT NULL, k int NOT NULL)"} {
		if _, err := setup.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	setup.Close()
	const sessions, rounds = 8, 24
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := open("autoinc")
			defer d.Close()
			c, err := d.Conn(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for n := range rounds {
				var stmts []string
				var args []any
				switch n % 3 {
				case 0:
					stmts = []string{"BEGIN", fmt.Sprintf("INSERT INTO orders (session, n, note) VALUES (%d, %d, 'tx')", s, n),
						"INSERT INTO order_lines (order_id, k) VALUES (LAST_INSERT_ID(), 1), (LAST_INSERT_ID(), 2)", "COMMIT"}
				case 1:
					stmts, args = []string{"INSERT INTO orders (session, n, note) VALUES (?, ?, ?)"}, []any{s, n, "prepared"}
				case 2:
					stmts = []string{fmt.Sprintf("INSERT INTO orders (session, n, note) VALUES (%d, %d, 'a'), (%d, %d, 'b')", s, n, s, n)}
				}
				for _, q := range stmts {
					if _, err := c.ExecContext(ctx, q, args...); err != nil {
						errs <- fmt.Errorf("session %d: %s: %w", s, q, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	execSQL(t, root, "SET GLOBAL general_log = OFF, GLOBAL slow_query_log = OFF")
	stopProxy()
	if err := <-served; err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	end := filepath.Join(dir, "end.snap")
	in := *u
	in.Path = "/autoinc"
	var out bytesBuffer
	if err := Snapshot(ctx, SnapshotOptions{Common: Common{Target: Target{URL: in.String()}, Stdout: &out, Stderr: &out}, Out: end}); err != nil {
		t.Fatalf("snapshot: %v\n%s", err, out.String())
	}
	wc := wrec.Capture()
	known := 0
	for _, s := range wc.Sessions {
		for _, st := range s.Statements {
			if st.InsertID > 0 {
				known++
			}
		}
	}
	// Every INSERT through the proxy: 8 sessions × (8 + 8 + 8 orders'
	// statements + 8 lines' statements).
	if want := sessions * (rounds + rounds/3); known != want {
		t.Errorf("the wire capture knows the insert ids of %d statements, want %d", known, want)
	}
	captures := map[string]*capture.Capture{"wire": wc}
	for name, path := range map[string]string{"general log": general, "slow log": slow} {
		c, err := capture.Parse([]string{path}, capture.Options{})
		if err != nil {
			t.Fatal(err)
		}
		captures[name] = c
	}
	for _, name := range []string{"wire", "slow log", "general log"} {
		c := captures[name]
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".capture")
		if err := capture.Write(path, c); err != nil {
			t.Fatal(err)
		}
		// Each replay starts where the capture did: without the schema.
		execSQL(t, root, "DROP DATABASE IF EXISTS autoinc")
		out = bytesBuffer{}
		res := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		err := Replay(ctx, ReplayOptions{Common: Common{Target: root, Stdout: &out, Stderr: &out}, Capture: path,
			Label: name, Out: res, Verify: end, Collect: CollectOptions{Off: true}})
		if err != nil && !errors.Is(err, ErrEndStateDiffers) {
			t.Fatalf("replay of the %s capture: %v\n%s", name, err, out.String())
		}
		r, rerr := result.Read(res)
		if rerr != nil {
			t.Fatal(rerr)
		}
		rp, es := r.Replay, r.Replay.EndState
		if es == nil {
			t.Fatalf("%s: no end state verified\n%s", name, out.String())
		}
		t.Logf("%s: %d statements replayed in %.2f s; %s", name, rp.Replayed, rp.ReplaySeconds, es.Summary)
		if name == "wire" {
			if es.Match != es.Of || es.Of != 2 || err != nil {
				t.Errorf("%s: every table should match: %s", name, es.Summary)
			}
			continue
		}
		// The logs cannot know the values: a table that differs differs
		// for the order its AUTO_INCREMENT values were taken in, named
		// (the orders' own, the lines' own, and the lines' LAST_INSERT_ID()
		// of the orders'), and no other way.
		if err != nil || es.Of != 2 || es.Match+es.Explained != es.Of || len(es.Sequences) > 0 {
			t.Errorf("%s: tables should match or differ for a named cause: %s", name, es.Summary)
		}
		for _, tb := range es.Tables {
			if tb.Verdict == "differs for a named cause" && !strings.Contains(tb.Cause, "orders.auto_increment in another order") &&
				!strings.Contains(tb.Cause, "order_lines.auto_increment in another order") &&
				!strings.Contains(tb.Cause, "LAST_INSERT_ID(), the AUTO_INCREMENT value") {
				t.Errorf("%s: %s differs for another cause: %s", name, tb.Name, tb.Cause)
			}
		}
	}
}

// From MySQL's and MariaDB's logs, which hold no insert ids, a table
// written with LAST_INSERT_ID() may differ for the order its session's
// AUTO_INCREMENT values were taken in: named. From the wire, or from a
// slow log that holds them, the replay gives each INSERT its value
// again: not named, so that a difference there stays one.
func TestAutoIncrementCauses(t *testing.T) {
	t.Parallel()
	texts := []string{"INSERT INTO orders (v) VALUES (1)", "INSERT INTO order_lines (order_id) VALUES (LAST_INSERT_ID())",
		"SELECT LAST_INSERT_ID()"}
	for _, tc := range []struct {
		name     string
		sources  []string
		insertID int64
		named    bool
	}{
		{"general log", []string{"general.log"}, 0, true},
		{"slow log with insert ids", []string{"slow.log"}, 7, false},
		{"wire", []string{capture.WirePrefix + "proxy"}, 7, false},
	} {
		c := &capture.Capture{Engine: capture.EngineMySQL, Sources: tc.sources, Texts: texts,
			Sessions: []capture.Session{{Statements: []capture.Statement{{Text: 0, InsertID: tc.insertID}, {Text: 1}, {Text: 2}}}}}
		got := causes(c, nil)
		if why, ok := got["order_lines"]; ok != tc.named || len(got) > 1 || ok && !strings.Contains(why.Why, "LAST_INSERT_ID()") {
			t.Errorf("%s: causes %+v", tc.name, got)
		}
	}
}
