package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

// inDB is a managed server's URL with another database.
func inDB(t *testing.T, raw, db string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	return u.String()
}

// sqlOn runs statements on a new connection to raw, each must succeed.
func sqlOn(t *testing.T, raw string, stmts ...string) {
	t.Helper()
	tg, err := engine.Open(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	c, err := tg.ConnectReplay(context.Background(), "", "", "dbparity-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, s := range stmts {
		if _, err := c.Simple(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// The report agrees with the end state (PostgreSQL, a capture whose
// sessions work in a database of their own, not the target URL's):
// statements that fail otherwise than captured inside a transaction
// that rolled back in the capture and in the replay change no outcome
// (the headline says 0, the end state matches); a writing statement
// whose outcome changed, without --verify, makes the headline say the
// end state likely differs, naming the table on a capture from the wire
// (which compares rows affected), not on one from a log.
func TestReplayReportAgreesWithEndState(t *testing.T) {
	t.Parallel()
	pgData := managedDataDir(t)
	inst, err := managed.Start(context.Background(), managed.Options{DataDir: pgData})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	dir := filepath.Dir(pgData)
	sqlOn(t, inst.URL(), "CREATE DATABASE appdb")
	app := inDB(t, inst.URL(), "appdb")
	sqlOn(t, app, "CREATE TABLE t (id int PRIMARY KEY)", "CREATE TABLE u (id int PRIMARY KEY)", "CREATE TABLE w (id int PRIMARY KEY)",
		"INSERT INTO t VALUES (1)")

	one := int64(1)
	write := func(name string, wire bool, stmts ...[]string) string {
		t.Helper()
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		c := &capture.Capture{Format: capture.Format, Engine: capture.EnginePostgres, Sources: []string{"postgresql.csv"},
			Start: t0, End: t0.Add(100 * time.Millisecond)}
		if wire {
			c.Sources = []string{capture.WirePrefix + "test"}
		}
		texts := map[string]int{}
		seq := int64(0)
		for i, ss := range stmts {
			s := capture.Session{ID: fmt.Sprintf("s%d", i), Database: "appdb", End: 100 * time.Millisecond}
			for k, text := range ss {
				if _, ok := texts[text]; !ok {
					texts[text] = len(c.Texts)
					c.Texts = append(c.Texts, text)
				}
				seq++
				st := capture.Statement{Offset: time.Duration(10*i+k) * time.Millisecond, Duration: time.Millisecond, Text: texts[text], Seq: seq}
				if wire && strings.HasPrefix(text, "INSERT") {
					st.Rows = &one
				}
				s.Statements = append(s.Statements, st)
			}
			c.Sessions = append(c.Sessions, s)
		}
		path := filepath.Join(dir, name)
		if err := capture.Write(path, c); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The application's transaction rolled back; the target's t already
	// holds 1, so the replay's INSERT fails, and the next one (25P02).
	rolledBack := []string{"BEGIN", "INSERT INTO t VALUES (1)", "INSERT INTO u VALUES (1)", "ROLLBACK"}
	alike := write("alike.capture", true, rolledBack, []string{"INSERT INTO w VALUES (2)"})
	// The end state the application left: w holds 2.
	sqlOn(t, app, "INSERT INTO w VALUES (2)")
	if code, _, stderr := dbparity(t, dir, "snapshot", "--target", app, "--out", "end.snap"); code != 0 {
		t.Fatalf("snapshot: %s", stderr)
	}
	sqlOn(t, app, "DELETE FROM w")

	code, stdout, stderr := dbparity(t, dir, "replay", "--target", inst.URL(), "--capture", alike, "--speed", "max",
		"--verify", "end.snap", "--out", "alike.json", "--no-collect")
	if code != 0 || !strings.Contains(stdout, "end state 3 of 3 tables match; 0 outcomes changed (2 more statements ended otherwise inside transactions that rolled back as captured") ||
		!strings.Contains(stdout, "rolled back alike: 2 statements") {
		t.Errorf("a replay whose only divergence is inside a transaction rolled back as captured: exit %d\n%s\n%s", code, stdout, stderr)
	}
	r, err := result.Read(filepath.Join(dir, "alike.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rp := r.Replay; rp.Divergent() != 0 || rp.RolledBackAlike() != 2 || rp.WritesChanged != 0 || rp.Errors != 2 {
		t.Errorf("divergent %d, rolled back alike %d, writes changed %d, errors %d: %+v", rp.Divergent(), rp.RolledBackAlike(),
			rp.WritesChanged, rp.Errors, rp.Outcomes)
	}

	// w already holds 1: the application's INSERT of 1, which succeeded,
	// fails in the replay.
	sqlOn(t, app, "INSERT INTO w VALUES (1)")
	for _, wire := range []bool{true, false} {
		name := "log"
		if wire {
			name = "wire"
		}
		path := write(name+".capture", wire, rolledBack, []string{"INSERT INTO w VALUES (1)"})
		code, stdout, stderr := dbparity(t, dir, "replay", "--target", inst.URL(), "--capture", path, "--speed", "max",
			"--out", name+".json", "--no-collect")
		want := "end state not checked, LIKELY DIFFERENT: 1 writing statement ended otherwise than captured"
		if wire {
			want += " (writing w); 1 outcome changed (2 more statements"
		} else {
			want += "; 1 outcome changed (2 more statements"
		}
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("%s capture, a write whose outcome changed, no --verify: exit %d, want %q in\n%s\n%s", name, code, want, stdout, stderr)
		}
	}
}

// A MariaDB client that creates its own schema, captured from the slow
// log (no connections: every session opens at its first statement) and
// from the general log, replays as fast as possible against the server's
// own database: its sessions connect once the schema is made and insert
// once their tables are (DDL synchronises, --sync none too); CREATE
// SCHEMA is sent (the workload's own database, as CREATE DATABASE); the
// statement that failed in the application fails again and is "log
// cannot tell", not a new error; --verify compares the schema the
// capture made, whose snapshot was taken, with no --map-db.
func TestReplayOwnSchemaMariaDB(t *testing.T) {
	t.Parallel()
	inst := mariadbServer(t)
	if inst == nil {
		t.Skip("no MariaDB server (mariadbd)")
	}
	dir, err := os.MkdirTemp("", "dbparity-ownschema-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777) // the server writes its logs here
	t.Cleanup(func() { os.RemoveAll(dir) })
	slow, general := filepath.Join(dir, "slow.log"), filepath.Join(dir, "general.log")
	root := inst.URL()
	sqlOn(t, root, "SET GLOBAL slow_query_log_file = '"+slow+"', GLOBAL general_log_file = '"+general+"',"+
		" GLOBAL log_output = 'FILE', GLOBAL long_query_time = 0, GLOBAL slow_query_log = ON, GLOBAL general_log = ON")

	ctx := context.Background()
	tg, err := engine.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	session := func(db string) engine.ReplayConn {
		c, err := tg.ConnectReplay(ctx, "", db, "app")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	run := func(c engine.ReplayConn, stmts ...string) {
		t.Helper()
		for _, s := range stmts {
			if _, err := c.Simple(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	a := session("")
	run(a, "CREATE SCHEMA appdb", "CREATE TABLE appdb.t1 (id int PRIMARY KEY, v int)")
	b, c := session("appdb"), session("appdb")
	for k := 1; k <= 5; k++ {
		run(b, fmt.Sprintf("INSERT INTO t1 VALUES (%d, %d)", k, k))
		run(c, fmt.Sprintf("INSERT INTO t1 VALUES (%d, %d)", 10+k, k))
	}
	// Fails in the application (a duplicate key): the logs do not say so.
	if _, err := b.Simple(ctx, "INSERT INTO t1 VALUES (1, 0)"); err == nil {
		t.Fatal("the duplicate INSERT succeeded")
	}
	run(a, "CREATE TABLE appdb.t2 (id int PRIMARY KEY, v int)")
	for k := 1; k <= 5; k++ {
		run(b, fmt.Sprintf("INSERT INTO t2 VALUES (%d, %d)", k, k))
		run(c, fmt.Sprintf("INSERT INTO t2 VALUES (%d, %d)", 10+k, k))
	}
	a.Close()
	b.Close()
	c.Close()
	sqlOn(t, root, "SET GLOBAL slow_query_log = OFF, GLOBAL general_log = OFF")
	if code, _, stderr := dbparity(t, dir, "snapshot", "--target", inDB(t, root, "appdb"), "--out", "end.snap"); code != 0 {
		t.Fatalf("snapshot: %s", stderr)
	}
	for _, log := range []string{"slow", "general"} {
		if code, stdout, stderr := dbparity(t, dir, "capture", "--from", log+".log", "--out", log+".capture"); code != 0 ||
			!strings.Contains(stdout, "errors: not in the log") {
			t.Fatalf("capture of the %s log: exit %d\n%s\n%s", log, code, stdout, stderr)
		}
	}
	for _, x := range []struct{ log, sync string }{{"slow", "commit"}, {"general", "none"}} {
		sqlOn(t, root, "DROP SCHEMA appdb")
		code, stdout, stderr := dbparity(t, dir, "replay", "--target", root, "--capture", x.log+".capture", "--speed", "max",
			"--sync", x.sync, "--verify", "end.snap", "--out", x.log+".json", "--no-collect")
		if code != 0 || !strings.Contains(stdout, "(0 could not connect") || !strings.Contains(stdout, "end state 2 of 2 tables match; 0 outcomes changed; 1 error the log cannot tell") ||
			strings.Contains(stdout, "new error") {
			t.Errorf("%s log, --sync %s: exit %d\n%s\n%s", x.log, x.sync, code, stdout, stderr)
			continue
		}
		r, err := result.Read(filepath.Join(dir, x.log+".json"))
		if err != nil {
			t.Fatal(err)
		}
		rp := r.Replay
		for k := range rp.Admin {
			if strings.Contains(strings.ToUpper(k), "SCHEMA") {
				t.Errorf("%s log: %s not sent", x.log, k)
			}
		}
		if rp.SessionsFailed != 0 || rp.Errors != 1 || rp.Untold() != 1 || rp.WritesUntold != 1 {
			t.Errorf("%s log: %d sessions failed, %d errors (%d the log cannot tell, %d writing), admin %v: %+v", x.log,
				rp.SessionsFailed, rp.Errors, rp.Untold(), rp.WritesUntold, rp.Admin, rp.Outcomes)
		}
		t.Logf("%s log, --sync %s: %d sessions, %d statements, %s; replayed in %.2f s", x.log, x.sync, rp.Sessions, rp.Replayed,
			rp.EndState.Summary, rp.ReplaySeconds)
	}
}
