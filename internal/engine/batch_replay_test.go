package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A batch runs its statements in order and stops at the first that
// fails, on PostgreSQL (one pipeline up to its sync) as on MariaDB (one
// multi-statement query), and each statement's outcome is its own.
func TestReplayBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, name := range []string{"postgres", "mariadb"} {
		t.Run(name, func(t *testing.T) {
			var u string
			if name == "postgres" {
				u = postgres(t).URL()
			} else {
				u = mariaDB(t).URL()
			}
			tg, err := Open(u)
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			c, err := tg.ConnectReplay(ctx, "", "", "")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, q := range []string{"DROP TABLE IF EXISTS bt", "CREATE TABLE bt (id int PRIMARY KEY, v int)", "INSERT INTO bt VALUES (1, 1)"} {
				if _, err := c.Simple(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			// What each engine may put in one batch: PostgreSQL any
			// extended statement; MariaDB statements with rows, a BEGIN
			// first and one without rows last.
			texts := []string{"BEGIN", "SELECT v FROM bt WHERE id = 1", "SELECT v FROM bt", "INSERT INTO bt VALUES (1, 5)"}
			extended := name == "postgres"
			var stmts []BatchStatement
			for k, text := range texts {
				ok, last := c.Batchable("", text, extended)
				if !ok || last != (name == "mariadb" && k == 3) {
					t.Errorf("%s: batchable %v, last %v", text, ok, last)
				}
				stmts = append(stmts, BatchStatement{SQL: text})
			}
			batch := func(stmts []BatchStatement) (int, string) {
				var got []string
				ran, err := c.Batch(ctx, stmts, func(k int, tag string, err error, took time.Duration) {
					got = append(got, fmt.Sprintf("%d %s %s", k, tag, SQLState(err)))
				})
				if err != nil {
					t.Errorf("batch: %v", err)
				}
				return ran, strings.Join(got, "|")
			}
			dup := "23505"
			if name == "mariadb" {
				dup = "23000"
			}
			if ran, got := batch(stmts); ran != 4 || got != "0 BEGIN |1 SELECT 1 |2 SELECT 1 |3  "+dup {
				t.Errorf("batch: %d ran: %q", ran, got)
			}
			if _, err := c.Simple(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			// A failure in the middle (PostgreSQL): the rest are not run.
			if name == "postgres" {
				mid := []BatchStatement{stmts[0], {SQL: "SELECT 1/0"}, stmts[1], {SQL: "ROLLBACK"}}
				if ran, got := batch(mid); ran != 2 || got != "0 BEGIN |1  22012" {
					t.Errorf("a failure in the middle: %d ran: %q", ran, got)
				}
				c.Simple(ctx, "ROLLBACK")
			}
			// A leading BEGIN before a failing statement (MariaDB): the
			// failure is the statement's.
			if name == "mariadb" {
				if ran, got := batch([]BatchStatement{stmts[0], {SQL: "SELECT nothing FROM bt"}}); ran != 2 || got != "0 BEGIN |1  42S22" {
					t.Errorf("a failing SELECT after BEGIN: %d ran: %q", ran, got)
				}
				c.Simple(ctx, "ROLLBACK")
			}
			if ran, got := batch(append(stmts[:3:3], BatchStatement{SQL: "UPDATE bt SET v = 2 WHERE id = 1"}, BatchStatement{SQL: "COMMIT"})[:4]); ran != 4 || !strings.HasPrefix(got, "0 BEGIN |1 SELECT 1 |2 SELECT 1 |3 UPDATE") {
				t.Errorf("a batch that works: %d ran: %q", ran, got)
			}
		})
	}
}
