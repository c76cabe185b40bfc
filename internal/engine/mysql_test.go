package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/go-sql-driver/mysql"
)

// mariaDB starts a managed MariaDB for the test, or skips (fails under
// CI=true) when none is installed.
func mariaDB(t *testing.T) *managed.Instance {
	t.Helper()
	return mariaDBWith(t, managed.Options{})
}

// mariaDBWith is mariaDB with o (its DataDir the test's own).
func mariaDBWith(t *testing.T, o managed.Options) *managed.Instance {
	t.Helper()
	dir, err := os.MkdirTemp("", "dbparity-my-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	o.DataDir = filepath.Join(dir, "data")
	inst, err := managed.StartMariaDB(context.Background(), o)
	if err != nil {
		os.RemoveAll(dir)
		if strings.Contains(err.Error(), "no MariaDB server binaries") && os.Getenv("CI") != "true" {
			t.Skipf("MariaDB cannot be tested: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		inst.Stop()
		os.RemoveAll(dir)
	})
	return inst
}

func TestMySQLURLs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, err string }{
		{"mysql://u:secret@db1/bench", ""},
		{"mariadb://u@db1:3307/bench?tls=skip-verify&readTimeout=5s", ""},
		{"mysql://u@/bench?socket=/run/mysqld/mysqld.sock", ""},
		{"mysql://u:secret@db1", "names no database"},
		{"mysql://u:secret@/bench", "names no host"},
		{"mysql://u:secret@db1/bench?readTimeout=soon", "invalid duration"},
	} {
		tg, err := Open(tc.url)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.url, err, tc.err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error shows the password: %v", tc.url, err)
		}
		if err == nil {
			if tg.Dialect != MySQL || strings.Contains(tg.URL, "secret") {
				t.Errorf("%s: dialect %v, URL %s", tc.url, tg.Dialect, tg.URL)
			}
			tg.Close()
		}
	}
}

// The URL's parameters reach the driver as its DSN parser reads them, a
// TLS server name from the URL's host, and the password never in an error.
func TestMySQLParametersPassThrough(t *testing.T) {
	t.Parallel()
	tg, err := Open("mysql://u:secret@db1.example:3307/bench?tls=true&maxAllowedPacket=1000000&checkConnLiveness=false")
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	c := tg.myConfig
	if c.Addr != "db1.example:3307" || c.TLS == nil || c.TLS.ServerName != "db1.example" || c.MaxAllowedPacket != 1000000 ||
		c.CheckConnLiveness || c.Passwd != "secret" || c.Timeout != 10*time.Second {
		t.Errorf("config: addr %s, TLS %v, packet %d, liveness %v, timeout %v", c.Addr, c.TLS, c.MaxAllowedPacket, c.CheckConnLiveness, c.Timeout)
	}
}

func TestSplitUpdateReturning(t *testing.T) {
	t.Parallel()
	u, s, ok := SplitUpdateReturning("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_tax, d_next_o_id - 1")
	if !ok || u != "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2" ||
		s != "SELECT d_tax, d_next_o_id - 1 FROM district WHERE d_w_id = $1 AND d_id = $2" {
		t.Errorf("%q / %q / %v", u, s, ok)
	}
	// A RETURNING inside a string or parentheses is not the clause.
	if _, _, ok := SplitUpdateReturning("UPDATE t SET a = ' RETURNING x' WHERE k = $1"); ok {
		t.Error("split a statement with no RETURNING clause")
	}
	if _, _, ok := SplitUpdateReturning("INSERT INTO t VALUES (1) RETURNING a"); ok {
		t.Error("split an INSERT")
	}
	st := rebindQuestion("SELECT $2, '$1', $1 + $2")
	if st.text != "SELECT ?, '$1', ? + ?" || len(st.order) != 3 || st.order[0] != 2 || st.order[1] != 1 || st.order[2] != 2 {
		t.Errorf("rebind: %q %v", st.text, st.order)
	}
	if st := rebindQuestion("SELECT $1, $2"); st.order != nil {
		t.Errorf("in-order placeholders get a reorder %v", st.order)
	}
}

// A session on a managed MariaDB: $N placeholders (reordered and
// repeated), UPDATE ... RETURNING through its split, batches, ||, the
// round trips counted at the socket, and a deadlock classified as
// retryable.
func TestMySQLSession(t *testing.T) {
	t.Parallel()
	inst := mariaDB(t)
	tg, err := Open(inst.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if !tg.OnThisHost() {
		t.Error("a socket target is not on this host")
	}
	ctx := context.Background()
	c, err := tg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, err := tg.Dialect.ServerVersion(ctx, c); err != nil || !strings.Contains(v, "MariaDB") {
		t.Errorf("version %q, %v", v, err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE acct (id int PRIMARY KEY, bal decimal(12,2), note varchar(40)) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if ok, err := tg.Dialect.TableExists(ctx, c, "acct"); !ok || err != nil {
		t.Errorf("TableExists: %v %v", ok, err)
	}
	if n, err := c.CopyFrom(ctx, "acct", []string{"id", "bal", "note"}, [][]any{{1, "10.50", "a"}, {2, "0", "b"}}); n != 2 || err != nil {
		t.Fatalf("CopyFrom: %d %v", n, err)
	}
	if err := c.Begin(ctx, ReadWrite); err != nil {
		t.Fatal(err)
	}
	var bal float64
	var note string
	if err := c.QueryRow(ctx, "UPDATE acct SET bal = bal + $2, note = $3 || note WHERE id = $1 RETURNING bal, note", 1, "1.25", "x").Scan(&bal, &note); err != nil || bal != 11.75 || note != "xa" {
		t.Errorf("UPDATE ... RETURNING: %v %q %v", bal, note, err)
	}
	if err := c.QueryRow(ctx, "UPDATE acct SET bal = 0 WHERE id = $1 RETURNING bal", 99).Scan(&bal); !errors.Is(err, ErrNoRows) {
		t.Errorf("UPDATE ... RETURNING of no row: %v", err)
	}
	// A batch is one round trip: one text of several statements, its
	// arguments interpolated (a quote, a backslash, a NULL, a time).
	var b Batch
	trips0, stmts0 := c.RoundTrips(), c.Statements()
	one := b.QueryRow("SELECT $2 - $1", []any{&bal}, 1, 5)
	b.Exec("UPDATE acct SET bal = bal - 1 WHERE id = $1", 2)
	var upNote string
	ret := b.QueryRow("UPDATE acct SET note = $2 WHERE id = $1 RETURNING note", []any{&upNote}, 2, `it's a \ ; b`)
	none := b.QueryRow("SELECT note FROM acct WHERE id = $1", []any{&note}, 99)
	var ids []int64
	b.Query("SELECT id FROM acct WHERE id > $1 ORDER BY id", func(r Rows) error {
		var id int64
		err := r.Scan(&id)
		ids = append(ids, id)
		return err
	}, 0)
	var null *string
	var when time.Time
	at := time.Date(2026, 11, 26, 10, 11, 12, 345678000, time.UTC)
	b.QueryRow("SELECT $1, CAST($2 AS DATETIME(6))", []any{&null, &when}, nil, at)
	// Each statement's count of rows is known, queries among them or not
	// (the UPDATE's of a split UPDATE ... RETURNING).
	if err := c.SendBatch(ctx, &b); err != nil || bal != 4 || b.Item(one+1).Affected != 1 || b.Item(ret).Affected != 1 {
		t.Errorf("batch: %v %v %+v %+v", bal, err, b.Item(one+1), b.Item(ret))
	}
	if upNote != `it's a \ ; b` || !b.Item(none).NoRows || b.Item(ret).NoRows || len(ids) != 2 || null != nil || !when.Equal(at) {
		t.Errorf("batch read %q, no rows %v, ids %v, null %v, time %v", upNote, b.Item(none).NoRows, ids, null, when)
	}
	if d, n := c.RoundTrips()-trips0, c.Statements()-stmts0; d != 1 || n != 7 {
		t.Errorf("batch of 6 statements (one split in two) took %d round trips, counted %d statements", d, n)
	}
	// A batch of Execs alone counts each one's rows; an argument may be a
	// pointer (a scan destination of an earlier batch), as database/sql
	// takes it.
	b.Reset()
	id1 := int64(1)
	trips0 = c.RoundTrips()
	b.Exec("UPDATE acct SET bal = bal + 1 WHERE id > $1", 0)
	b.Exec("UPDATE acct SET bal = bal + 1 WHERE id = $1", 99)
	b.Exec("UPDATE acct SET bal = bal + 1 WHERE id = $1", &id1)
	if err := c.SendBatch(ctx, &b); err != nil || b.Item(0).Affected != 2 || b.Item(1).Affected != 0 || b.Item(2).Affected != 1 {
		t.Errorf("batch of Execs: %v, affected %d %d %d", err, b.Item(0).Affected, b.Item(1).Affected, b.Item(2).Affected)
	}
	if d := c.RoundTrips() - trips0; d != 1 {
		t.Errorf("batch of 3 Execs took %d round trips", d)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// The server stops at a batch's first error, which keeps its number.
	b.Reset()
	b.Begin(ReadWrite)
	b.Exec("INSERT INTO acct (id, bal, note) VALUES ($1, 0, 'dup')", 1)
	b.QueryRow("SELECT count(*) FROM acct WHERE note = $1", []any{&bal}, "dup")
	err = c.SendBatch(ctx, &b)
	if SQLState(err) != "23000" || Classify(err).Lost || c.Lost() {
		t.Errorf("duplicate key in a batch: %v (state %q, %+v)", err, SQLState(err), Classify(err))
	}
	if err := c.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "SELECT count(*) FROM acct WHERE note = $1", "dup").Scan(&bal); err != nil || bal != 0 {
		t.Errorf("after the failed batch: %v rows, %v", bal, err)
	}
	var trips, stmts int64
	for range 2 { // the first prepares
		trips, stmts = c.RoundTrips(), c.Statements()
		if _, err := c.Exec(ctx, "UPDATE acct SET note = $1 WHERE id = $2", "y", 2); err != nil {
			t.Fatal(err)
		}
	}
	if d := c.RoundTrips() - trips; d != 1 || c.Statements()-stmts != 1 {
		t.Errorf("a prepared statement run again took %d round trips", d)
	}

	// Two sessions that lock the rows in opposite order: one of them is
	// chosen as the deadlock victim (1213), retryable.
	c2, err := tg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	for _, s := range []Conn{c, c2} {
		if err := s.Begin(ctx, ReadWrite); err != nil {
			t.Fatal(err)
		}
	}
	c.Exec(ctx, "UPDATE acct SET bal = 1 WHERE id = 1")
	c2.Exec(ctx, "UPDATE acct SET bal = 2 WHERE id = 2")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k, s := range []Conn{c, c2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[k] = s.Exec(ctx, "UPDATE acct SET bal = 3 WHERE id = $1", 2-k)
			if errs[k] != nil {
				s.Rollback(ctx)
			} else {
				time.Sleep(100 * time.Millisecond)
				s.Commit(ctx)
			}
		}()
	}
	wg.Wait()
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			if cl := Classify(err); cl.Name != "deadlock" || !cl.Retry {
				t.Errorf("deadlock classified %+v: %v", cl, err)
			}
		}
	}
	if failed != 1 {
		t.Errorf("errors %v, want one deadlock victim", errs)
	}
}

// A session whose server freezes (SIGSTOP) returns from its statement
// when the statement's context ends, with the connection marked lost; a
// session whose server is killed gets an error classified as a lost
// connection, never a hang.
func TestMySQLServerFrozenThenKilled(t *testing.T) {
	t.Parallel()
	inst := mariaDB(t)
	tg, err := Open(inst.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx := context.Background()
	frozen, err := tg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer frozen.Close()
	killed, err := tg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer killed.Close()
	// The same through dbparity's own reader: a batch and a COMMIT.
	frozenBatch, err := tg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer frozenBatch.Close()
	killedCommit, err := tg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer killedCommit.Close()
	if frozenBatch.(*mysqlConn).wire == nil {
		t.Fatal("a session on a unix socket does not read its answers itself")
	}
	if err := killedCommit.Begin(ctx, ReadWrite); err != nil {
		t.Fatal(err)
	}
	if _, err := inst.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var one, two int64
	var b Batch
	b.QueryRow("SELECT 1", []any{&one})
	b.QueryRow("SELECT 2", []any{&two})
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	t0 := time.Now()
	err = frozenBatch.SendBatch(sctx, &b)
	cancel()
	if took := time.Since(t0); !errors.Is(err, context.DeadlineExceeded) || took > 3*time.Second || !frozenBatch.Lost() {
		t.Errorf("a batch on a frozen server: %v after %v, lost %v", err, took, frozenBatch.Lost())
	}
	t0 = time.Now()
	if err := frozenBatch.Rollback(context.WithoutCancel(ctx)); !Classify(err).Lost || time.Since(t0) > time.Second {
		t.Errorf("rollback after the batch cut on a frozen server: %v after %v", err, time.Since(t0))
	}
	sctx, cancel = context.WithTimeout(ctx, time.Second)
	t0 = time.Now()
	_, err = frozen.Exec(sctx, "SELECT $1", 1)
	cancel()
	if took := time.Since(t0); err == nil || took > 3*time.Second {
		t.Errorf("statement on a frozen server: %v after %v", err, took)
	}
	if !frozen.Lost() {
		t.Errorf("a connection cut mid-statement is not marked lost (%v)", err)
	}
	if _, err := inst.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	_, err = killed.Exec(ctx, "SELECT 1")
	if cl := Classify(err); err == nil || !cl.Lost || !killed.Lost() || time.Since(t0) > 3*time.Second {
		t.Errorf("statement on a killed server: %v (%+v, lost %v) after %v", err, cl, killed.Lost(), time.Since(t0))
	}
	t0 = time.Now()
	err = killedCommit.Commit(ctx)
	if cl := Classify(err); err == nil || !cl.Lost || !killedCommit.Lost() || time.Since(t0) > 3*time.Second || !strings.Contains(err.Error(), "lost") {
		t.Errorf("COMMIT on a killed server: %v (%+v, lost %v) after %v", err, cl, killedCommit.Lost(), time.Since(t0))
	}
}

// A session's commands are stopped by the end of their own context only
// (the driver is handed contexts that never end; the socket's deadline
// stops a command instead): a context that ends between commands, even
// as the next one starts under another, leaves that command alone; a
// context already ended sends nothing; one that ends mid-command stops
// it at once with its own error.
func TestMySQLContextEndsOnlyItsCommand(t *testing.T) {
	t.Parallel()
	c := openSession(t, mariaDB(t).URL())
	ctx := context.Background()
	var one int64
	for i := range 200 {
		// Each context ends right after its command, its watcher's
		// callback running in a goroutine of its own while the next
		// command (under the next context, or one that never ends) runs.
		cctx, cancel := context.WithCancel(ctx)
		if err := c.QueryRow(cctx, "SELECT $1", 1).Scan(&one); err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		cancel()
		next := ctx
		if i%2 == 0 {
			var stop context.CancelFunc
			next, stop = context.WithTimeout(ctx, 10*time.Second)
			defer stop()
		}
		var b Batch
		b.Exec("DO SLEEP(0.001)")
		b.QueryRow("SELECT $1", []any{&one}, 2)
		if err := c.SendBatch(next, &b); err != nil || one != 2 {
			t.Fatalf("command after a context ended, %d: %v (%d)", i, err, one)
		}
	}
	// A session's long-lived context ends while it is idle in a
	// transaction: its rollback, under a context that does not end, runs.
	sctx, cancel := context.WithCancel(ctx)
	if err := c.Begin(sctx, ReadWrite); err != nil {
		t.Fatal(err)
	}
	cancel()
	time.Sleep(10 * time.Millisecond) // the watcher's callback has run
	trips := c.RoundTrips()
	if _, err := c.Exec(sctx, "SELECT 1"); !errors.Is(err, context.Canceled) {
		t.Errorf("a command under an ended context: %v, want context.Canceled", err)
	}
	if got := c.RoundTrips() - trips; got != 0 {
		t.Errorf("a command under an ended context made %d round trips", got)
	}
	if err := c.Rollback(context.WithoutCancel(sctx)); err != nil || c.Lost() {
		t.Errorf("rollback after the session's context ended: %v (lost %v)", err, c.Lost())
	}
	// A context that ends mid-command stops it with its own error.
	dctx, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	t0 := time.Now()
	rows, err := c.Query(dctx, "SELECT SLEEP(30)")
	if err == nil {
		for rows.Next() {
		}
		err = rows.Err()
		rows.Close()
	}
	if took := time.Since(t0); !errors.Is(err, context.DeadlineExceeded) || took > 5*time.Second || !c.Lost() {
		t.Errorf("a query whose context ended: %v after %v (lost %v)", err, took, c.Lost())
	}
}

// A batch's arguments, written into its text as literals, reach the
// server as the values they are, whatever the session's sql_mode: quotes,
// backslashes, NUL and Ctrl-Z in strings, bytes, times, numbers, NULL; a
// ? inside a quoted literal stays text.
func TestMySQLBatchLiterals(t *testing.T) {
	t.Parallel()
	c := openSession(t, mariaDB(t).URL())
	ctx := context.Background()
	strs := []string{"", "plain", "it's", "''", `back\slash`, `\'`, "nul\x00byte", "ctrl\x1az", "naïve 東京 🚀", "a;b -- c /* d */", "?", "$1"}
	when := time.Date(2026, 11, 27, 1, 2, 3, 456789000, time.UTC)
	for _, mode := range []string{"default", "NO_BACKSLASH_ESCAPES"} {
		if mode != "default" {
			if _, err := c.Exec(ctx, "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"); err != nil {
				t.Fatal(err)
			}
		}
		for _, in := range strs {
			var out, q string
			var n int64
			var bin []byte
			var b Batch
			b.QueryRow("SELECT $1, '?', $2", []any{&out, &q, &n}, in, 7)
			b.QueryRow("SELECT $1", []any{&bin}, []byte(in))
			if err := c.SendBatch(ctx, &b); err != nil {
				t.Fatalf("%s: %q: %v", mode, in, err)
			}
			if out != in || string(bin) != in || q != "?" || n != 7 {
				t.Errorf("%s: sent %q, got %q and bytes %q (%q, %d)", mode, in, out, bin, q, n)
			}
		}
		var tm time.Time
		var f, g float64
		var i int64
		var null *string
		var yes bool
		var b Batch
		b.QueryRow("SELECT CAST($1 AS DATETIME(6)), $2 + 0, $3 + 0, $4, $5, $6", []any{&tm, &f, &g, &i, &null, &yes}, when, 0.1, -1.5e300, int64(-9223372036854775808), nil, true)
		b.QueryRow("SELECT 1", []any{&i})
		if err := c.SendBatch(ctx, &b); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if !tm.Equal(when) || f != 0.1 || g != -1.5e300 || null != nil || !yes {
			t.Errorf("%s: got %v %v %v %v %v", mode, tm, f, g, null, yes)
		}
	}
	// A value no literal holds (an infinity) sends the batch's statements
	// one after another, prepared, as lone statements go.
	var f float64
	var one int64
	var b Batch
	b.QueryRow("SELECT $1", []any{&f}, math.Inf(1))
	b.QueryRow("SELECT 1", []any{&one})
	trips := c.RoundTrips()
	if err := c.SendBatch(ctx, &b); err != nil || !math.IsInf(f, 1) || one != 1 {
		t.Errorf("an infinity sent in a batch: %v (%v, %d)", err, f, one)
	}
	if got := c.RoundTrips() - trips; got < 2 {
		t.Errorf("a batch with an infinity took %d round trips, want one a statement", got)
	}
}

// A batch whose answer stops halfway (the first result came, the next is
// not made: a server stalled mid-answer, as the reader waits for it in its
// own thread) returns when its context ends, the connection marked lost,
// never a hang; the session's next connection works.
func TestMySQLBatchStallsMidAnswer(t *testing.T) {
	t.Parallel()
	inst := mariaDB(t)
	tg, err := Open(inst.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	c, err := tg.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var one, slept int64
	var b Batch
	b.QueryRow("SELECT $1", []any{&one}, 1)
	b.QueryRow("SELECT SLEEP($1)", []any{&slept}, 30)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = c.SendBatch(ctx, &b)
	took := time.Since(start)
	if err == nil || took > 5*time.Second {
		t.Fatalf("stalled batch: %v after %v", err, took)
	}
	if one != 1 {
		t.Errorf("the answer's first result was not read (got %d): the stall was not mid-answer", one)
	}
	if !c.Lost() {
		t.Errorf("after the context ended mid-answer the connection is not marked lost: %v", err)
	}
	c2, err := tg.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c2.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Errorf("a new connection after the stall: %v", err)
	}
}

// Batches over loopback TCP, where a session's reader waits for the
// bytes its batch's answers had at least (SO_RCVLOWAT): answers of one
// text longer, shorter and far shorter than any before are each read
// whole and right, in one round trip, none waiting near its deadline.
func TestMySQLBatchesOverTCP(t *testing.T) {
	t.Parallel()
	inst := mariaDBWith(t, managed.Options{Loopback: true})
	root, err := Open(inst.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ctx := context.Background()
	rc, err := root.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE USER 'tcp'@'127.0.0.1' IDENTIFIED BY 'tcp'", "GRANT ALL ON *.* TO 'tcp'@'127.0.0.1'"} {
		if _, err := rc.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rc.Close()
	tg, err := Open(fmt.Sprintf("mysql://tcp:tcp@127.0.0.1:%d/%s", inst.Port, inst.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	c, err := tg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := c.(*mysqlConn)
	if !m.net.tcp {
		t.Fatal("a session over TCP does not wait for its answers' bytes")
	}
	r := rand.New(rand.NewPCG(3, 4))
	trips := m.RoundTrips()
	var slowest time.Duration
	const batches = 300
	for i := range batches {
		// Lengths drawn mostly long, so that the least learnt is high
		// and the short ones fall below it.
		n1, n2 := 2000+r.IntN(3000), 1+r.IntN(3000)
		if i%10 == 9 {
			n1, n2 = 1+r.IntN(50), 1+r.IntN(50)
		}
		var s1, s2 string
		var one int64
		var b Batch
		b.QueryRow("SELECT REPEAT('a', $1)", []any{&s1}, n1)
		b.QueryRow("SELECT 1", []any{&one})
		b.QueryRow("SELECT REPEAT('b', $1)", []any{&s2}, n2)
		bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		start := time.Now()
		err := c.SendBatch(bctx, &b)
		took := time.Since(start)
		cancel()
		if err != nil {
			t.Fatalf("batch %d (%d and %d bytes): %v after %v", i, n1, n2, err, took)
		}
		if len(s1) != n1 || len(s2) != n2 || one != 1 || strings.Trim(s1, "a") != "" || strings.Trim(s2, "b") != "" {
			t.Fatalf("batch %d: answers of %d and %d bytes, want %d and %d", i, len(s1), len(s2), n1, n2)
		}
		slowest = max(slowest, took)
	}
	if got := m.RoundTrips() - trips; got != batches {
		t.Errorf("%d batches took %d round trips", batches, got)
	}
	if len(m.answers) != 1 {
		t.Errorf("the batch's text has %d answers' sizes kept, want 1", len(m.answers))
	}
	if slowest > 2*time.Second {
		t.Errorf("the slowest batch took %v", slowest)
	}

	// A request larger than the socket's buffers (tcp_wmem's largest is
	// 4 MB) is sent whole: the sends that do not block wait in the poller
	// when the buffer is full.
	big := strings.Repeat("x", 12<<20)
	var size, two int64
	var b Batch
	b.QueryRow("SELECT LENGTH($1)", []any{&size}, big)
	b.QueryRow("SELECT 2", []any{&two})
	if err := c.SendBatch(ctx, &b); err != nil || size != int64(len(big)) || two != 2 {
		t.Errorf("a batch of 12 MB: %v (length %d, %d)", err, size, two)
	}
	if err := c.QueryRow(ctx, "SELECT LENGTH($1)", big).Scan(&size); err != nil || size != int64(len(big)) {
		t.Errorf("a prepared statement's 12 MB argument: %v (length %d)", err, size)
	}

	// A batch whose answer's size is known stalls halfway (the server
	// sleeps): it returns when its context ends, the connection lost.
	var one, slept int64
	sleep := func(secs int) error {
		var b Batch
		b.QueryRow("SELECT $1", []any{&one}, 1)
		b.QueryRow("SELECT SLEEP($1)", []any{&slept}, secs)
		bctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		return c.SendBatch(bctx, &b)
	}
	if err := sleep(0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = sleep(30)
	if took := time.Since(start); err == nil || took > 5*time.Second || !c.Lost() {
		t.Errorf("a stalled batch with a known answer size: %v after %v, lost %v", err, took, c.Lost())
	}
	// The session's rollback, under a context that does not end, fails at
	// once: it does not wait for the stalled answer (the server sleeps on).
	start = time.Now()
	if err := c.Rollback(context.WithoutCancel(ctx)); err == nil || time.Since(start) > time.Second {
		t.Errorf("rollback on the lost connection: %v after %v", err, time.Since(start))
	}
}

// dbparity's own reader of a batch's answer (myWire): values into each
// kind of destination, an error where it happened with the connection
// kept, packets of 16 MB and more both ways, and the driver's path where
// the socket's bytes are not the protocol's own.
func TestMySQLWire(t *testing.T) {
	t.Parallel()
	inst := mariaDB(t)
	ctx := context.Background()
	root, err := Open(inst.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	rc, err := root.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SET GLOBAL max_allowed_packet = 64 * 1024 * 1024",
		"CREATE TABLE w (id INT PRIMARY KEY, n BIGINT UNSIGNED, d DATE, note VARCHAR(20))",
		"INSERT INTO w VALUES (1, 18446744073709551615, '2026-11-27', NULL), (2, 7, NULL, 'two')",
	} {
		if _, err := rc.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rc.Close()
	c := openSession(t, inst.URL()) // after the global: its connections take it
	if c.(*mysqlConn).wire == nil {
		t.Fatal("a session on a unix socket does not read its answers itself")
	}

	var (
		nilInt, someInt *int64
		raw, nullRaw    []byte
		anyInt, anyText any
		anyTime, anyBig any
		yes             bool
		small           int32
		big             int
		day             time.Time
		nullStr         sql.NullString
		someStr         sql.NullInt64
	)
	var b Batch
	b.QueryRow("SELECT NULL, 5, 'bytes', NULL", []any{&nilInt, &someInt, &raw, &nullRaw})
	b.QueryRow("SELECT id, note, d, n FROM w WHERE id = 1", []any{&anyInt, &anyText, &anyTime, &anyBig})
	b.QueryRow("SELECT 1, -2147483648, 9007199254740993, d FROM w WHERE id = 1", []any{&yes, &small, &big, &day})
	b.QueryRow("SELECT note, 42 FROM w WHERE id = 1", []any{&nullStr, &someStr})
	if err := c.SendBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if nilInt != nil || someInt == nil || *someInt != 5 || string(raw) != "bytes" || nullRaw != nil {
		t.Errorf("pointers and bytes: %v %v %q %v", nilInt, someInt, raw, nullRaw)
	}
	if anyInt != int64(1) || anyText != nil || !anyTime.(time.Time).Equal(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)) || anyBig != uint64(math.MaxUint64) {
		t.Errorf("values as the driver gives them: %#v %#v %#v %#v", anyInt, anyText, anyTime, anyBig)
	}
	if !yes || small != math.MinInt32 || big != 9007199254740993 || day.Day() != 27 {
		t.Errorf("bool, int32, int, date: %v %v %v %v", yes, small, big, day)
	}
	if nullStr.Valid || !someStr.Valid || someStr.Int64 != 42 {
		t.Errorf("Scanners: %+v %+v", nullStr, someStr)
	}

	// A value that does not convert fails its statement; the rest of the
	// answer is read and the connection goes on.
	var n int64
	var two string
	b.Reset()
	b.QueryRow("SELECT 'abc'", []any{&n})
	b.QueryRow("SELECT note FROM w WHERE id = 2", []any{&two})
	if err := c.SendBatch(ctx, &b); err == nil || !strings.Contains(err.Error(), "statement 1 of the batch") || c.Lost() {
		t.Errorf("text into an integer: %v, lost %v", err, c.Lost())
	}
	// The server's error ends the batch at its statement: those after it
	// do not run.
	b.Reset()
	b.Exec("INSERT INTO w (id) VALUES (3)")
	b.Exec("INSERT INTO w (id) VALUES (1)")
	b.Exec("INSERT INTO w (id) VALUES (4)")
	err = c.SendBatch(ctx, &b)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1062 || !strings.Contains(err.Error(), "statement 2 of the batch") || c.Lost() {
		t.Errorf("a duplicate key in the second statement: %v, lost %v", err, c.Lost())
	}
	// A query's Each that fails midway, more results behind it.
	b.Reset()
	rows := 0
	b.Query("SELECT id FROM w ORDER BY id", func(r Rows) error {
		rows++
		return errors.New("enough")
	})
	b.QueryRow("SELECT 1", []any{&n})
	if err := c.SendBatch(ctx, &b); err == nil || !strings.Contains(err.Error(), "enough") || rows != 1 || c.Lost() {
		t.Errorf("Each failing at its first row: %v after %d rows, lost %v", err, rows, c.Lost())
	}
	// A lone query's rows still open: the driver is reading the socket.
	open, err := c.Query(ctx, "SELECT id FROM w")
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.QueryRow("SELECT 1", []any{&n})
	b.QueryRow("SELECT 2", []any{&n})
	if err := c.SendBatch(ctx, &b); err == nil || !strings.Contains(err.Error(), "still open") || c.Lost() {
		t.Errorf("a batch while a query's rows are open: %v, lost %v", err, c.Lost())
	}
	open.Close()
	var count int64
	b.Reset()
	b.QueryRow("SELECT count(*) FROM w", []any{&count})
	b.QueryRow("SELECT note FROM w WHERE id = 2", []any{&two})
	if err := c.SendBatch(ctx, &b); err != nil || count != 3 || two != "two" {
		t.Errorf("the batch after the errors: %v, %d rows (want 3: the insert after the duplicate did not run), %q", err, count, two)
	}

	// Packets of 16 MB: a text whose packet is 16 MB less one byte (sent
	// as one full packet and an empty one), and longer (split); a row of
	// either size.
	const full = 1<<24 - 1
	bctx, cancel := context.WithTimeout(ctx, time.Minute) // a packet left out stalls both sides
	defer cancel()
	for _, k := range []int{full - 27, full - 26} { // "SELECT LENGTH('...');SELECT 2" and COM_QUERY's byte
		var size, two int64
		b.Reset()
		b.QueryRow("SELECT LENGTH($1)", []any{&size}, strings.Repeat("x", k))
		b.QueryRow("SELECT 2", []any{&two})
		if err := c.SendBatch(bctx, &b); err != nil || size != int64(k) || two != 2 {
			t.Errorf("a text of %d bytes: %v (length %d, %d)", k+27, err, size, two)
		}
	}
	for _, k := range []int{full - 4, full - 3} { // a row's value after its 4-byte length
		var s string
		var two int64
		b.Reset()
		b.QueryRow("SELECT REPEAT('y', $1)", []any{&s}, k)
		b.QueryRow("SELECT 2", []any{&two})
		if err := c.SendBatch(bctx, &b); err != nil || len(s) != k || strings.Trim(s, "y") != "" || two != 2 {
			t.Errorf("a row of %d bytes: %v (%d read, %d)", k+4, err, len(s), two)
		}
	}

	// A text over the URL's maxAllowedPacket is not sent; the connection
	// goes on.
	mc := openSession(t, inst.URL()+"&maxAllowedPacket=1000000")
	var top uint64
	b.Reset()
	b.QueryRow("SELECT LENGTH($1)", []any{&n}, strings.Repeat("z", 2<<20))
	b.QueryRow("SELECT 2", []any{&n})
	if err := mc.SendBatch(ctx, &b); err == nil || !strings.Contains(err.Error(), "maxAllowedPacket") || mc.Lost() {
		t.Errorf("a text of 2 MB over maxAllowedPacket=1000000: %v, lost %v", err, mc.Lost())
	}
	b.Reset()
	b.QueryRow("SELECT n FROM w WHERE id = 1", []any{&top})
	b.QueryRow("SELECT 2", []any{&n})
	if err := mc.SendBatch(ctx, &b); err != nil || top != math.MaxUint64 || n != 2 {
		t.Errorf("the batch after: %v, %d %d", err, top, n)
	}

	// With the driver's timeouts on the socket, the driver reads.
	dc := openSession(t, inst.URL()+"&readTimeout=5s")
	b.Reset()
	b.QueryRow("SELECT note FROM w WHERE id = 2", []any{&two})
	b.QueryRow("SELECT 2", []any{&n})
	if err := dc.SendBatch(ctx, &b); dc.(*mysqlConn).wire != nil || err != nil || two != "two" || n != 2 {
		t.Errorf("with readTimeout: own reader %v, %v", dc.(*mysqlConn).wire != nil, err)
	}
}
