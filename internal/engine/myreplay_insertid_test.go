package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A replayed INSERT takes the AUTO_INCREMENT value it took in the
// capture (WithInsertID, MariaDB's SET STATEMENT insert_id=N FOR): alone
// and in a batch, a multi-row one its first and the next ones after it
// by auto_increment_increment; one given its ids leaves nothing behind
// for the session's next INSERT (a plain SET insert_id would: checked on
// MariaDB 10.11); its outcome reads as the INSERT's, rows and all. A
// server without SET STATEMENT (MySQL) is not asked.
func TestMyReplayInsertID(t *testing.T) {
	if _, ok := (&myReplayConn{}).WithInsertID("INSERT INTO t VALUES (1)", 5); ok {
		t.Error("a connection to MySQL made a text with SET STATEMENT")
	}
	inst := mariaDB(t)
	ctx := context.Background()
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
			ids, ok := c.(InsertIDs)
			if !ok {
				t.Fatal("a MySQL replay connection cannot take insert ids")
			}
			with := func(sql string, id int64) string {
				t.Helper()
				text, ok := ids.WithInsertID(sql, id)
				if !ok {
					t.Fatalf("MariaDB: %s not given insert id %d", sql, id)
				}
				return text
			}
			run := func(sql, want string) {
				t.Helper()
				if tag, err := c.Simple(ctx, sql); err != nil || tag != want {
					t.Errorf("%s: %q, %v; want %q", sql, tag, err, want)
				}
			}
			run("DROP TABLE IF EXISTS ai", "DROP")
			run("CREATE TABLE ai (id int AUTO_INCREMENT PRIMARY KEY, v int)", "CREATE")
			run(with("INSERT INTO ai (v) VALUES (1)", 100), "INSERT 1")
			run(with("INSERT INTO ai (id, v) VALUES (50, 2)", 50), "INSERT 1")
			run("INSERT INTO ai (v) VALUES (3)", "INSERT 1") // 101, not 50 again
			run("SET SESSION auto_increment_increment = 5", "SET")
			run(with("INSERT INTO ai (v) VALUES (4), (5)", 201), "INSERT 2")
			run("SET SESSION auto_increment_increment = 1", "SET")
			last := "REPLACE 1"
			if !wire {
				last = "REPLACE" // the driver passes over a batch's results without rows
			}
			n, err := c.Batch(ctx, []BatchStatement{{SQL: "BEGIN"}, {SQL: "SELECT 1"}, {SQL: with("REPLACE INTO ai (v) VALUES (6)", 300)}},
				func(k int, tag string, err error, _ time.Duration) {
					if want := []string{"BEGIN", "SELECT 1", last}[k]; err != nil || tag != want {
						t.Errorf("batch statement %d: %q, %v; want %q", k, tag, err, want)
					}
				})
			if err != nil || n != 3 {
				t.Errorf("batch: %d ran, %v", n, err)
			}
			run("COMMIT", "COMMIT")
			run("SELECT 1 FROM ai WHERE (id, v) IN ((100, 1), (50, 2), (101, 3), (201, 4), (206, 5), (300, 6))", "SELECT 6")
			run("SELECT @@insert_id", "SELECT 1")
			run("INSERT INTO ai (v) VALUES (7)", "INSERT 1")
			run("SELECT 1 FROM ai WHERE id = 301", "SELECT 1")
		})
	}
}
