package capture

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sessionTexts is the texts of session i's statements, in order.
func sessionTexts(c *Capture, i int) []string {
	var texts []string
	for _, st := range c.Sessions[i].Statements {
		texts = append(texts, c.Texts[st.Text])
	}
	return texts
}

func writeLog(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// MySQL 8's general log: microsecond UTC times, a statement over several
// lines, a thread id reused after Quit, a refused login, commands with
// nothing to replay, and Init DB as USE.
func TestMySQLGeneralLog(t *testing.T) {
	log := "/usr/sbin/mysqld, Version: 8.0.36 (MySQL Community Server - GPL). started with:\n" +
		"Tcp port: 3306  Unix socket: /var/run/mysqld/mysqld.sock\n" +
		"Time                 Id Command    Argument\n" +
		"2026-11-24T10:00:00.100000Z\t    8 Connect\tapp@10.0.0.5 on shop using TCP/IP\n" +
		"2026-11-24T10:00:00.200000Z\t    8 Query\tSELECT 1\n" +
		"2026-11-24T10:00:00.300000Z\t    8 Prepare\tSELECT * FROM t WHERE id = ?\n" +
		"2026-11-24T10:00:00.400000Z\t    8 Execute\tSELECT * FROM t WHERE id = 5\n" +
		"2026-11-24T10:00:00.500000Z\t    8 Query\tUPDATE t\nSET v = 'a\tb'\nWHERE id = 5\n" +
		"2026-11-24T10:00:00.600000Z\t    8 Init DB\tother\n" +
		"2026-11-24T10:00:00.700000Z\t    8 Quit\t\n" +
		"2026-11-24T10:00:01.000000Z\t    9 Connect\tAccess denied for user 'x'@'localhost' (using password: YES)\n" +
		"2026-11-24T10:00:02.000000Z\t    8 Connect\tapp@localhost on shop using Socket\n" +
		"2026-11-24T10:00:02.500000Z\t    8 Query\tCOMMIT\n"
	c, err := Parse([]string{writeLog(t, "general.log", log)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine != EngineMySQL || len(c.Sessions) != 2 {
		t.Fatalf("engine %q, %d sessions\n%s", c.Engine, len(c.Sessions), c.Summary())
	}
	s := c.Sessions[0]
	texts := sessionTexts(c, 0)
	want := []string{"SELECT 1", "SELECT * FROM t WHERE id = 5", "UPDATE t\nSET v = 'a\tb'\nWHERE id = 5", "USE `other`"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("statements %q, want %q", texts, want)
	}
	if s.User != "app" || s.Host != "10.0.0.5" || s.Database != "shop" || s.StartedBeforeLog || s.EndedAfterLog ||
		s.Start != 0 || s.End != 600*time.Millisecond || s.Statements[1].Offset != 300*time.Millisecond {
		t.Errorf("session %+v", s)
	}
	if s2 := c.Sessions[1]; s2.ID != "thread-8.2" || s2.Host != "localhost" || !s2.EndedAfterLog || s2.Start != 1900*time.Millisecond {
		t.Errorf("second session of thread 8: %+v", s2)
	}
	for _, want := range []string{"1 prepared statement executions replayed as text", "1 connections refused", "1 server start banners",
		"1 protocol commands with nothing"} {
		if !strings.Contains(c.Summary(), want) {
			t.Errorf("summary lacks %q:\n%s", want, c.Summary())
		}
	}
}

// MariaDB's logs stamp whole seconds in local time, once per second: a
// second's statements are spread over it in log order. The slow log's
// entries give each statement's duration, its thread and database.
func TestMariaDBLogsWholeSeconds(t *testing.T) {
	general := "mariadbd, Version: 10.11.19-MariaDB-0+deb12u1-log (Debian 12). started with:\n" +
		"Tcp port: 0  Unix socket: /run/mysqld/mysqld.sock\n" +
		"Time\t\t    Id Command\tArgument\n" +
		"261124  9:00:00\t     3 Connect\troot@localhost on sb using Socket\n" +
		"\t\t     3 Query\tBEGIN\n" +
		"\t\t     4 Query\tSELECT 2\n" +
		"\t\t     3 Query\tCOMMIT\n" +
		"261124  9:00:01\t     3 Quit\t\n"
	c, err := Parse([]string{writeLog(t, "g.log", general)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sessions) != 2 || c.Sessions[0].Statements[1].Offset != 750*time.Millisecond || c.Sessions[1].Statements[0].Offset != 500*time.Millisecond {
		t.Fatalf("offsets not spread over the second:\n%+v\n%s", c.Sessions, c.Summary())
	}
	if want := time.Date(2026, 11, 24, 9, 0, 0, 0, time.Local).UTC(); !c.Start.Equal(want) {
		t.Errorf("start %s, want %s (local time)", c.Start, want)
	}
	slow := "mariadbd, Version: 10.11.19-MariaDB-0+deb12u1-log (Debian 12). started with:\n" +
		"Tcp port: 0  Unix socket: /run/mysqld/mysqld.sock\n" +
		"Time\t\t    Id Command\tArgument\n" +
		"# Time: 261124  9:00:00\n" +
		"# User@Host: root[root] @ localhost []\n" +
		"# Thread_id: 3  Schema: sb  QC_hit: No\n" +
		"# Query_time: 0.000250  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: 1\n" +
		"# Rows_affected: 0  Bytes_sent: 60\n" +
		"use sb;\n" +
		"SET timestamp=1795597200;\n" +
		"SELECT c FROM t\n WHERE id = 1;\n" +
		"# User@Host: root[root] @ localhost []\n" +
		"# Thread_id: 3  Schema: other  QC_hit: No\n" +
		"# Query_time: 0.001500  Lock_time: 0.000010  Rows_sent: 0  Rows_examined: 1\n" +
		"SET timestamp=1795597200;\n" +
		"UPDATE t SET k = k + 1 WHERE id = 1;\n"
	sc, err := Parse([]string{writeLog(t, "s.log", slow)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Sessions) != 1 || len(sc.Sessions[0].Statements) != 3 {
		t.Fatalf("slow log: %+v\n%s", sc.Sessions, sc.Summary())
	}
	st := sc.Sessions[0].Statements
	if sc.Texts[st[0].Text] != "SELECT c FROM t\n WHERE id = 1" || st[0].Duration != 250*time.Microsecond ||
		sc.Texts[st[1].Text] != "USE `other`" || st[2].Duration != 1500*time.Microsecond || st[2].Offset != 500*time.Millisecond {
		t.Errorf("slow log statements %+v texts %q", st, sc.Texts)
	}
	if sc.Sessions[0].Database != "sb" || !sc.Start.Equal(time.Unix(1795597200, 0).UTC()) {
		t.Errorf("database %q, start %s", sc.Sessions[0].Database, sc.Start)
	}
	// A MySQL log and a PostgreSQL log together are refused.
	pg := writeLog(t, "pg.csv", `2026-11-24 10:00:00.000 UTC,"u","d",1,"[local]",1.1,1,"idle",2026-11-24 10:00:00 UTC,1/1,0,LOG,00000,"statement: SELECT 1",,,,,,,,,"psql","client backend",,0`+"\n")
	if _, err := Parse([]string{writeLog(t, "g2.log", general), pg}, Options{}); err == nil || !strings.Contains(err.Error(), "different formats") {
		t.Errorf("mixed logs: %v", err)
	}
}

// A general log truncated while the server wrote it (or rotated by
// copy) begins with entries that have no time stamp: the server wrote
// theirs before the cut. They came within the first stamped second or
// before it, and take its time in their order, flagged; none is lost.
func TestGeneralLogBeginsUnstamped(t *testing.T) {
	general := "\t\t     3 Query\tUPDATE t SET k = k + 1\nWHERE id = 1\n" +
		"\t\t     4 Query\tSELECT 2\n" +
		"261124  9:00:00\t     3 Query\tCOMMIT\n" +
		"\t\t     4 Quit\t\n" +
		"261124  9:00:01\t     3 Query\tSELECT 3\n"
	c, err := Parse([]string{writeLog(t, "g.log", general)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sessions) != 2 || c.Statements() != 4 {
		t.Fatalf("%d sessions, %d statements; want 2, 4\n%s", len(c.Sessions), c.Statements(), c.Summary())
	}
	if got := strings.Join(sessionTexts(c, 0), "|"); got != "UPDATE t SET k = k + 1\nWHERE id = 1|COMMIT|SELECT 3" {
		t.Errorf("session of thread 3: %q", got)
	}
	if want := time.Date(2026, 11, 24, 9, 0, 0, 0, time.Local).UTC(); !c.Start.Equal(want) {
		t.Errorf("start %s, want %s: the first stamp's second", c.Start, want)
	}
	if s := c.Summary(); !strings.Contains(s, "2 entries before the log's first time stamp") || strings.Contains(s, "without a readable timestamp") {
		t.Errorf("summary:\n%s", s)
	}
	// At most maxEarly are held: the rest have no time (a log that
	// stamps nothing for that long is not one the server wrote whole).
	var long strings.Builder
	for range maxEarly + 2 {
		long.WriteString("\t\t     3 Query\tSELECT 2\n")
	}
	long.WriteString("261124  9:00:00\t     3 Query\tSELECT 1\n")
	c, err = Parse([]string{writeLog(t, "g.log", long.String())}, Options{})
	if err != nil || c.Statements() != maxEarly+1 || !strings.Contains(c.Summary(), "2 messages without a readable timestamp") {
		t.Errorf("%d entries before the first stamp: %v, %d statements\n%s", maxEarly+2, err, c.Statements(), c.Summary())
	}
	// With no stamp at all, they have no time: dropped, and counted.
	c, err = Parse([]string{writeLog(t, "g.log", "\t\t     3 Query\tSELECT 2\n\t\t     3 Query\tSELECT 1\n")}, Options{})
	if err != nil || c.Statements() != 0 || !strings.Contains(c.Summary(), "2 messages without a readable timestamp") {
		t.Errorf("a log without a stamp: %v\n%s", err, c.Summary())
	}
}

// dbparity's own sessions (a collector on PostgreSQL by its
// application_name, one on MariaDB by the marker it sends first) are
// left out of a capture and counted; the workload's are kept.
func TestOwnSessionsLeftOut(t *testing.T) {
	pg := "" +
		"2026-11-23 10:26:56.561 UTC [5694] 6b0414f0.163e 00000 user=u db=d app=[unknown] LOG:  connection authorized: user=u database=d application_name=dbparity-collector\n" +
		"2026-11-23 10:26:56.562 UTC [5694] 6b0414f0.163e 00000 user=u db=d app=dbparity-collector LOG:  duration: 0.100 ms  statement: SELECT * FROM pg_stat_database\n" +
		"2026-11-23 10:26:56.563 UTC [5695] 6b0414f0.163f 00000 user=u db=d app=[unknown] LOG:  connection authorized: user=u database=d application_name=dbparity\n" +
		"2026-11-23 10:26:56.564 UTC [5695] 6b0414f0.163f 00000 user=u db=d app=dbparity LOG:  duration: 0.100 ms  statement: UPDATE t SET v = 1\n"
	my := "/usr/sbin/mariadbd, Version: 10.11.6-MariaDB-0+deb12u1-log (Debian 12). started with:\n" +
		"Tcp port: 0  Unix socket: /tmp/x/mysqld.sock\n" +
		"Time\t\t    Id Command\tArgument\n" +
		"261124 10:00:00\t    5 Connect\troot@localhost on bench using Socket\n" +
		"\t\t    5 Query\tSET @dbparity_application = 'dbparity-collector'\n" +
		"\t\t    5 Query\tSHOW GLOBAL STATUS\n" +
		"\t\t    6 Connect\troot@localhost on bench using Socket\n" +
		"\t\t    6 Query\tUPDATE t SET v = 1\n"
	for name, text := range map[string]string{"postgresql.log": pg, "general.log": my} {
		path := writeLog(t, name, text)
		c, err := Parse([]string{path}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Sessions) != 1 || !hasSkip(c, reasonOwn, 1) || !strings.Contains(c.Summary(), "1 dbparity's own sessions") {
			t.Errorf("%s: %d sessions, summary:\n%s", name, len(c.Sessions), c.Summary())
		}
		if c, _ := Parse([]string{path}, Options{KeepOwn: true}); len(c.Sessions) != 2 {
			t.Errorf("%s: KeepOwn kept %d sessions", name, len(c.Sessions))
		}
	}
}

// A password set in a statement never reaches the capture file.
func TestCapturedPasswordsMasked(t *testing.T) {
	pg := "2026-11-23 10:26:56.561 UTC [5694] 6b0414f0.163e 00000 user=u db=d app=[unknown] LOG:  connection authorized: user=u database=d application_name=psql\n" +
		"2026-11-23 10:26:56.562 UTC [5694] 6b0414f0.163e 00000 user=u db=d app=psql LOG:  duration: 0.100 ms  statement: ALTER ROLE app PASSWORD 'hunter2'\n"
	my := "261124 10:00:00\t    6 Connect\troot@localhost on bench using Socket\n" +
		"\t\t    6 Query\tCREATE USER 'app'@'%' IDENTIFIED BY 'hunter2'\n"
	for name, text := range map[string]string{"postgresql.log": pg, "general.log": my} {
		c, err := Parse([]string{writeLog(t, name, text)}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "c.capture")
		if err := Write(out, c); err != nil {
			t.Fatal(err)
		}
		raw, _ := exec.Command("sh", "-c", "zcat "+out).Output()
		if len(raw) == 0 || strings.Contains(string(raw), "hunter2") || !strings.Contains(string(raw), "'xxxxx'") || !hasSkip(c, ReasonSecret, 1) {
			t.Errorf("%s: capture file %s", name, raw)
		}
	}
}

// A slow log's SET line before a statement holds, on servers that write
// it, the first AUTO_INCREMENT value the statement took (insert_id, after
// last_insert_id, before timestamp): kept, and written to the capture
// file and read back. MariaDB 10.11's line has the timestamp alone: no
// insert id. A statement of the application's that sets the same
// variables, after the server's line, is a statement.
func TestSlowLogInsertID(t *testing.T) {
	slow := "# Time: 261124  9:00:00\n" +
		"# User@Host: app[app] @ localhost []\n" +
		"# Thread_id: 3  Schema: shop  QC_hit: No\n" +
		"# Query_time: 0.000250  Lock_time: 0.000010  Rows_sent: 0  Rows_examined: 0\n" +
		"use shop;\n" +
		"SET insert_id=41,timestamp=1795597200;\n" +
		"INSERT INTO orders (v) VALUES (1), (2);\n" +
		"# User@Host: app[app] @ localhost []\n" +
		"# Thread_id: 3  Schema: shop  QC_hit: No\n" +
		"# Query_time: 0.000150  Lock_time: 0.000010  Rows_sent: 0  Rows_examined: 0\n" +
		"SET last_insert_id=41,insert_id=7,timestamp=1795597200;\n" +
		"INSERT INTO lines (order_id) VALUES (LAST_INSERT_ID());\n" +
		"# User@Host: app[app] @ localhost []\n" +
		"# Thread_id: 3  Schema: shop  QC_hit: No\n" +
		"# Query_time: 0.000050  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0\n" +
		"SET timestamp=1795597200;\n" +
		"SET insert_id=100,timestamp=5;\n" +
		"# User@Host: app[app] @ localhost []\n" +
		"# Thread_id: 3  Schema: shop  QC_hit: No\n" +
		"# Query_time: 0.000150  Lock_time: 0.000010  Rows_sent: 0  Rows_examined: 0\n" +
		"SET timestamp=1795597201;\n" +
		"INSERT INTO orders (v) VALUES (3);\n"
	c, err := Parse([]string{writeLog(t, "slow.log", slow)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "slow.capture")
	if err := Write(path, c); err != nil {
		t.Fatal(err)
	}
	if c, err = Read(path); err != nil {
		t.Fatal(err)
	}
	if len(c.Sessions) != 1 {
		t.Fatalf("%d sessions\n%s", len(c.Sessions), c.Summary())
	}
	var got []string
	for _, st := range c.Sessions[0].Statements {
		got = append(got, fmt.Sprintf("%s: %d", c.Texts[st.Text], st.InsertID))
	}
	want := []string{"INSERT INTO orders (v) VALUES (1), (2): 41", "INSERT INTO lines (order_id) VALUES (LAST_INSERT_ID()): 7",
		"SET insert_id=100,timestamp=5: 0", "INSERT INTO orders (v) VALUES (3): 0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("statements and insert ids\n%q\nwant\n%q", got, want)
	}
}

// The statements a replay gives their insert ids (INSERT and REPLACE,
// after comments, but those whose rows come from a query), and those
// that write what LAST_INSERT_ID() returns.
func TestInsertLike(t *testing.T) {
	for text, want := range map[string]bool{
		"INSERT INTO t SELECT * FROM u":                                   true,
		"insert ignore into t (a, b) select a, b from u":                  true,
		"REPLACE INTO t (a) (SELECT a FROM u)":                            true,
		"INSERT INTO t WITH x AS (SELECT 1) SELECT * FROM x":              true,
		"INSERT INTO t TABLE u":                                           true,
		"INSERT INTO t (a) VALUES ((SELECT max(a) FROM u))":               false,
		"INSERT INTO t SET a = (SELECT 1)":                                false,
		"INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = (SELECT 2)": false,
		"INSERT INTO `select` (`table`) VALUE ('SELECT')":                 false,
	} {
		if got := InsertSelect(text); got != want {
			t.Errorf("InsertSelect(%q) = %v, want %v", text, got, want)
		}
	}
	for text, want := range map[string][2]bool{
		"INSERT INTO t VALUES (1)":                        {true, false},
		"  /* app */ -- x\n insert\tinto t values (1)":    {true, false},
		"# note\nREPLACE INTO t SET v = LAST_INSERT_ID()": {true, true},
		"insert/**/into t values (last_insert_id ( ))":    {true, true},
		"INSERTED":                                             {false, false},
		"UPDATE t SET v = LAST_INSERT_ID(v + 1)":               {false, true},
		"SELECT 'last_insert_id()', last_insert_id FROM t":     {false, false},
		"/* unterminated INSERT":                               {false, false},
		"SET STATEMENT insert_id=5 FOR INSERT INTO t VALUES 1": {false, false},
	} {
		if got := [2]bool{InsertLike(text), CallsLastInsertID(text)}; got != want {
			t.Errorf("%q: InsertLike, CallsLastInsertID %v, want %v", text, got, want)
		}
	}
}
