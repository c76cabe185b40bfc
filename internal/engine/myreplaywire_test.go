package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The replay's MySQL sessions read their answers themselves (myWire)
// and give what the driver gave: each text's tag (its count of rows),
// its error with the SQLSTATE and number the replay compares, session
// variables kept, an ended context's own error, and a killed connection
// told as lost. Where the two differ, the reader's count is the text's
// last result, as a wire capture keeps it.
func TestMyReplayWire(t *testing.T) {
	inst := mariaDB(t)
	ctx := context.Background()
	type step struct {
		sql string
		tag string // the reader's; "": an error
		// driver: the driver's tag, when it differs (a multi-statement
		// text: no count)
		driver string
		state  string
		number uint16
	}
	script := []step{
		{sql: "DROP TABLE IF EXISTS rw", tag: "DROP"},
		{sql: "CREATE TABLE rw (id int AUTO_INCREMENT PRIMARY KEY, v int)", tag: "CREATE"},
		{sql: "INSERT INTO rw (v) VALUES (1), (2), (3)", tag: "INSERT 3"},
		{sql: "UPDATE rw SET v = v + 1 WHERE id <= 2", tag: "UPDATE 2"},
		{sql: "UPDATE rw SET v = v WHERE id = 1", tag: "UPDATE 1"}, // rows matched (the URL's clientFoundRows)
		{sql: "SELECT * FROM rw", tag: "SELECT 3"},
		{sql: "SELECT nothing FROM rw", state: "42S22", number: 1054},
		{sql: "INSERT INTO rw VALUES (1, 1)", state: "23000", number: 1062},
		{sql: "SET @x = 5; SELECT @x; SELECT 1 UNION SELECT 2", tag: "SET"},
		{sql: "SET SESSION sql_mode = 'ANSI_QUOTES'", tag: "SET"},
		{sql: `SELECT "v" FROM rw WHERE id = 1`, tag: "SELECT 1"}, // the session's sql_mode
		{sql: "SELECT @x, @@sql_mode", tag: "SELECT 1"},
		{sql: "DELETE FROM rw WHERE id = 3; SELECT 1 FROM no_such_table", state: "42S02", number: 1146},
		{sql: "SELECT * FROM rw", tag: "SELECT 2"}, // the DELETE before the failure ran
		{sql: "INSERT INTO rw (v) VALUES (9); INSERT INTO rw (v) VALUES (8), (7)", tag: "INSERT 2", driver: "INSERT"},
		{sql: "SHOW TABLES", tag: "SELECT 1"},
		{sql: "START TRANSACTION", tag: "START"},
		{sql: "DELETE FROM rw", tag: "DELETE 5"},
		{sql: "ROLLBACK", tag: "ROLLBACK"},
		{sql: "SELECT 1 FROM rw WHERE id = 0", tag: "SELECT 0"},
	}
	for _, wire := range []bool{true, false} {
		t.Run(fmt.Sprintf("wire=%v", wire), func(t *testing.T) {
			was := myReplayWire
			myReplayWire = wire
			defer func() { myReplayWire = was }()
			tg, err := Open(inst.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			c, err := tg.ConnectReplay(ctx, "", "", "")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.(*myReplayConn).wire != nil; got != wire {
				t.Fatalf("the reader in use: %v, want %v", got, wire)
			}
			for _, s := range script {
				tag, err := c.Simple(ctx, s.sql)
				want := s.tag
				if !wire && s.driver != "" {
					want = s.driver
				}
				var me *mysql.MySQLError
				switch {
				case s.state == "" && (err != nil || tag != want):
					t.Errorf("%s: %q, %v; want %q", s.sql, tag, err, want)
				case s.state != "" && (!errors.As(err, &me) || SQLState(err) != s.state || me.Number != s.number || tag != ""):
					t.Errorf("%s: %q, %v; want error %s (%d)", s.sql, tag, err, s.state, s.number)
				}
			}

			// A context that ends mid-statement ends it with its own error;
			// the connection is then lost.
			dctx, stop := context.WithTimeout(ctx, 200*time.Millisecond)
			defer stop()
			t0 := time.Now()
			_, err = c.Simple(dctx, "SELECT SLEEP(30)")
			if took := time.Since(t0); !errors.Is(err, context.DeadlineExceeded) || took > 5*time.Second {
				t.Errorf("a statement whose context ended: %v after %v", err, took)
			}
			if _, err := c.Simple(ctx, "SELECT 1"); !Classify(err).Lost {
				t.Errorf("a statement after its connection was dropped: %v (%+v), want a lost connection", err, Classify(err))
			}

			// A connection the server killed is lost.
			k, err := tg.ConnectReplay(ctx, "", "", "")
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			m, err := tg.ConnectReplay(ctx, "", "", "")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if _, err := m.Simple(ctx, fmt.Sprintf("KILL %d", k.PID())); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			if _, err := k.Simple(ctx, "SELECT 1"); !Classify(err).Lost {
				t.Errorf("a statement on a killed connection: %v (%+v), want a lost connection", err, Classify(err))
			}
		})
	}
}

// A text that may ask the client for a file goes through the driver,
// which refuses the request and keeps the connection.
func TestMyReplayLocalInfile(t *testing.T) {
	for text, want := range map[string]bool{
		"LOAD DATA LOCAL INFILE '/tmp/x' INTO TABLE t":        true,
		"  load xml local infile 'x' into table t":            true,
		"SET @a = 1; LOAD DATA LOCAL infile 'x' INTO TABLE t": true,
		"SELECT * FROM t":                     false,
		"SELECT 'infil' FROM t WHERE x = 'e'": false,
		"INSERT INTO t VALUES ('data')":       false,
	} {
		if got := localInfile(text); got != want {
			t.Errorf("%q: %v, want %v", text, got, want)
		}
	}
}
