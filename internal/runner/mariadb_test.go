package runner

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/capture/wire"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/workload/orderentry"
)

// managedMariaDB is --managed mariadb in a fresh data directory, or a
// skip (a failure under CI=true) when MariaDB is not installed.
func managedMariaDB(t *testing.T) Target {
	t.Helper()
	for _, p := range []string{"/usr/sbin/mariadbd", "/usr/bin/mariadbd"} {
		if _, err := os.Stat(p); err == nil {
			dir, err := os.MkdirTemp("", "dbparity-my-")
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(dir, 0o755)
			t.Cleanup(func() { os.RemoveAll(dir) })
			return Target{Managed: "mariadb", MyData: filepath.Join(dir, "data")}
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but no MariaDB server (mariadbd) is installed")
	}
	t.Skip("no MariaDB server (mariadbd): apt-get install mariadb-server to run this test")
	return Target{}
}

// order-entry on a managed MariaDB (InnoDB): load, the consistency
// conditions after load and after a run, and the run's New-Orders equal
// to the rows the orders table gained.
func TestOrderEntryManagedMariaDB(t *testing.T) {
	t.Parallel()
	tg := managedMariaDB(t)
	ctx := context.Background()
	c, out := common(t, tg)
	o, err := openTarget(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	// One server for the whole test: the URL of the started instance.
	defer o.close()
	c.Target = Target{URL: o.managed.URL()}
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	if err := Check(ctx, c); err != nil {
		t.Fatalf("check after load: %v\n%s", err, out)
	}
	ordersBefore := countRows(t, c.Target, "SELECT count(*) FROM orders")
	var before, after [2]int64
	status := func(into *[2]int64) {
		queryRow(t, c.Target, "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'COM_COMMIT'),"+
			" (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'COM_ROLLBACK')", &into[0], &into[1])
	}
	status(&before)
	path := filepath.Join(t.TempDir(), "run.json")
	if err := Run(ctx, RunOptions{Common: c, Users: 3, Duration: 3 * time.Second, Warmup: time.Second,
		Label: "maria", Out: path, Force: true, Collect: CollectOptions{Interval: 500 * time.Millisecond, WaitInterval: 50 * time.Millisecond}}); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	status(&after)
	if err := Check(ctx, c); err != nil {
		t.Fatalf("check after run: %v\n%s", err, out)
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if grew := countRows(t, c.Target, "SELECT count(*) FROM orders") - ordersBefore; allPhases(r, "new_order") != grew || grew == 0 {
		t.Errorf("result counts %d committed New-Orders; the orders table grew by %d", allPhases(r, "new_order"), grew)
	}
	s := r.Summarize()
	mixSeen(t, s)
	if r.Target.Dialect != "mysql" || len(r.Errors) != 0 {
		t.Errorf("dialect %q, errors %v %v", r.Target.Dialect, r.Errors, r.ErrorSamples)
	}
	checkMySQLCollectors(t, r, after[0]-before[0], after[1]-before[1])
	if r.RoundTrips < s.Commits {
		t.Errorf("%d round trips for %d transactions", r.RoundTrips, s.Commits)
	}
	t.Logf("%.0f tps, %.1f statements and %.1f round trips per transaction", s.TPS,
		float64(r.Statements)/float64(s.Commits), float64(r.RoundTrips)/float64(s.Commits))

	// --mode procedures: the stored procedures load created, one round
	// trip a transaction, the same conditions holding after the run.
	oe := c.Workload.(*orderentry.OrderEntry)
	oe.Mode = orderentry.ModeProcedures
	defer func() { oe.Mode = orderentry.ModeClient }()
	ordersBefore = countRows(t, c.Target, "SELECT count(*) FROM orders")
	path = filepath.Join(t.TempDir(), "procedures.json")
	if err := Run(ctx, RunOptions{Common: c, Users: 3, Duration: 3 * time.Second, Warmup: 500 * time.Millisecond,
		Label: "maria-procedures", Out: path, Force: true, Collect: CollectOptions{Off: true}}); err != nil {
		t.Fatalf("run in procedure mode: %v\n%s", err, out)
	}
	if err := Check(ctx, c); err != nil {
		t.Fatalf("check after a run in procedure mode: %v\n%s", err, out)
	}
	if r, err = result.Read(path); err != nil {
		t.Fatal(err)
	}
	ps := r.Summarize()
	if grew := countRows(t, c.Target, "SELECT count(*) FROM orders") - ordersBefore; allPhases(r, "new_order") != grew || grew == 0 {
		t.Errorf("procedure mode counts %d committed New-Orders; the orders table grew by %d", allPhases(r, "new_order"), grew)
	}
	mixSeen(t, ps)
	if len(r.Errors) != 0 || ps.RoundTripsPerTx < 0.99 || ps.RoundTripsPerTx > 1.1 {
		t.Errorf("procedure mode: %.2f round trips per transaction (want 1), errors %v %v", ps.RoundTripsPerTx, r.Errors, r.ErrorSamples)
	}
	t.Logf("procedure mode: %.0f tps, %.2f round trips per transaction", ps.TPS, ps.RoundTripsPerTx)

	// The 1% rolled back by design: an unused item undoes the whole call
	// (the district's next order number and the first line's stock stay).
	var next, stock int64
	state := func() (int64, int64) {
		queryRow(t, c.Target, "SELECT (SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 1),"+
			" (SELECT s_order_cnt FROM stock WHERE s_w_id = 1 AND s_i_id = 1)", &next, &stock)
		return next, stock
	}
	n0, s0 := state()
	withConn(t, c.Target, func(cn engine.Conn) error {
		_, err := cn.Exec(ctx, "CALL dbparity_new_order(1, 1, 1, NOW(), 1, '1,1,1,5,2,100001,1,1')")
		if got := engine.SQLState(err); got != "DBPRB" {
			t.Errorf("New-Order with an unused item: SQLSTATE %q (%v), want DBPRB", got, err)
		}
		return nil
	}, "CALL dbparity_new_order")
	if n1, s1 := state(); n1 != n0 || s1 != s0 {
		t.Errorf("a rolled-back New-Order left next order %d -> %d, stock order count %d -> %d", n0, n1, s0, s1)
	}
}

// slob on a managed MariaDB with the small-cache preset: one row per
// 16 KB InnoDB page with its filler (the check counts the primary key's
// leaf pages), the global fill factor put back, a
// table loaded the same way without the fill factor shows the check can
// fail, and a run's updates reach the server's own row counter.
func TestSlobManagedMariaDB(t *testing.T) {
	t.Parallel()
	tg := managedMariaDB(t)
	tg.MyPreset = "small-cache"
	ctx := context.Background()
	var out bytesBuffer
	c := Common{Target: tg, Workload: slob(t, "--schemas", "2", "--scale", "2000", "--work-unit", "8"), Seed: 1, Stdout: &out, Stderr: &out}
	o, err := openTarget(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	c.Target = Target{URL: o.managed.URL()}
	var pool int64
	queryRow(t, c.Target, "SELECT @@innodb_buffer_pool_size", &pool)
	if pool != 16<<20 {
		t.Errorf("small-cache preset: buffer pool %d bytes", pool)
	}
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out.String())
	}
	if err := Check(ctx, c); err != nil {
		t.Fatalf("check (one row per page): %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "ok") || !strings.Contains(out.String(), "slob_1: one row per block") {
		t.Errorf("check did not count pages:\n%s", out.String())
	}
	var leaves, fill int64
	queryRow(t, c.Target, "SELECT stat_value FROM mysql.innodb_index_stats WHERE database_name = database()"+
		" AND table_name = 'slob_1' AND index_name = 'PRIMARY' AND stat_name = 'n_leaf_pages'", &leaves)
	queryRow(t, c.Target, "SELECT @@GLOBAL.innodb_fill_factor", &fill)
	if leaves < 2000 || fill != 100 {
		t.Errorf("slob_1: %d leaf pages for 2000 rows; innodb_fill_factor left at %d", leaves, fill)
	}

	// The same rows with the key built at the default fill factor share
	// pages: the check's count tells.
	execSQL(t, c.Target, "CREATE TABLE packed ENGINE=InnoDB AS SELECT * FROM slob_1")
	execSQL(t, c.Target, "ALTER TABLE packed ADD PRIMARY KEY (pos)")
	withConn(t, c.Target, func(cn engine.Conn) error {
		per, err := engine.MySQL.BlockTable("packed").RowsPerBlock(ctx, cn, engine.MySQL)
		if err == nil && per < 5 {
			t.Errorf("packed table: %.2f workload rows per page, want about 7 (and as many fillers)", per)
		}
		return err
	}, "rows per page of packed")

	sum := "SELECT (SELECT coalesce(sum(n), 0) FROM slob_1) + (SELECT coalesce(sum(n), 0) FROM slob_2)"
	var before, after int64
	queryRow(t, c.Target, sum, &before)
	c.Workload = slob(t, "--work-unit", "8", "--update-pct", "100")
	path := filepath.Join(t.TempDir(), "s.json")
	if err := Run(ctx, RunOptions{Common: c, Duration: 1500 * time.Millisecond, Label: "slob", Out: path, Force: true,
		Collect: CollectOptions{Off: true}}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	queryRow(t, c.Target, sum, &after)
	if updates := allPhases(r, "update"); updates == 0 || len(r.Errors) != 0 || after-before != 8*updates {
		t.Errorf("slob run: %d committed updates of 8 rows, the rows' counters grew by %d; errors %v %v",
			updates, after-before, r.Errors, r.ErrorSamples)
	}
	if err := Check(ctx, c); err != nil {
		t.Fatalf("check after the run: %v\n%s", err, out.String())
	}
}

// checkMySQLCollectors holds a MariaDB run's collected figures against
// the server's own counters: Com_commit and Com_rollback over the whole
// run (commits and rollbacks are statements MySQL counts, and the
// collectors send none) and the window's load profile against the
// driver's counts.
func checkMySQLCollectors(t *testing.T, r *result.Run, commits, rollbacks int64) {
	t.Helper()
	committed, rolledBack := driverCounts(r)
	t.Logf("driver committed %d, server counted %d COMMITs; driver rolled back %d, server counted %d ROLLBACKs; collectors sent %d statements",
		committed, commits, rolledBack, rollbacks, r.CollectorStatements)
	if commits != committed {
		t.Errorf("Com_commit grew by %d, the driver committed %d", commits, committed)
	}
	if rollbacks < rolledBack || rollbacks > rolledBack+3 {
		t.Errorf("Com_rollback grew by %d, the driver rolled back %d", rollbacks, rolledBack)
	}
	lp := r.LoadProfile
	if lp == nil || !strings.HasPrefix(lp.Source, "mariadb ") {
		t.Fatalf("load profile %+v", lp)
	}
	s := r.Summarize()
	// The window's edges are read a moment after the driver's: a few
	// transactions either side. On a saturated host the counters may be
	// read late enough that the profile covers less of the window: it
	// says so, and its total is not the window's.
	window := r.MeasureEnd.Sub(r.MeasureStart).Seconds()
	short := lp.Seconds < 0.95*window
	if short && !strings.Contains(lp.Note, "covers") {
		t.Errorf("the load profile covers %.2f s of the %.2f s window and does not say so (note %q)", lp.Seconds, window, lp.Note)
	}
	if tx := lp.Line("Transactions"); short {
		t.Logf("the load profile covers %.2f s of the %.2f s window (%s): its transactions not compared", lp.Seconds, window, lp.Note)
	} else if tx == nil || tx.Total == nil || abs(*tx.Total-float64(s.Commits+s.Rollbacks)) > 3*3+0.05*float64(s.Commits) {
		if tx != nil && tx.Total != nil && tx.PerSecond != nil {
			t.Errorf("load profile transactions %.0f (%.1f/s over %.2f s, note %q), the window's commits and rollbacks %d over %.2f s",
				*tx.Total, *tx.PerSecond, lp.Seconds, lp.Note+tx.Note, s.Commits+s.Rollbacks, window)
		} else {
			t.Errorf("load profile transactions %+v, the window's commits and rollbacks %d", tx, s.Commits+s.Rollbacks)
		}
	}
	for _, name := range []string{"DB time", "DB time (sampled)", "DB CPU", "Redo size", "Logical reads", "Rows changed", "Executes"} {
		if l := lp.Line(name); l == nil || l.Total == nil || *l.Total <= 0 {
			t.Errorf("load profile %s: %+v", name, l)
		}
	}
	if l := lp.Line("DB time"); l.Source != "ps.statements.sum_timer_wait_ps" {
		t.Errorf("DB time from %s, want performance_schema's statement time", l.Source)
	}
	if r.IOProfile.Line("Redo write").Total == nil {
		t.Errorf("IO profile %+v", r.IOProfile)
	}
	if r.Waits == nil || r.Waits.Samples < 20 || len(r.Waits.Events) == 0 || r.Waits.Source != "information_schema.PROCESSLIST" {
		t.Errorf("sampled states %+v", r.Waits)
	}
	if r.TimedWaits == nil || len(r.TimedWaits.Events) == 0 || r.TimedWaits.Events[0].Seconds <= 0 {
		t.Errorf("timed waits %+v", r.TimedWaits)
	}
	db := r.Disclosure.Database
	if db == nil || db.Product != "mariadb" || db.BlockSize != 16384 || !strings.HasPrefix(db.Settings["performance_schema"], "ON [") ||
		!strings.HasPrefix(db.Settings["max_connections"], "300 [") {
		t.Errorf("database disclosure %+v", db)
	}
	if _, ok := db.Settings["version_comment"]; ok {
		t.Error("a compiled-in default is disclosed as a setting")
	}
	if len(r.DBSeries) == 0 || r.DBSeries[len(r.DBSeries)-1].Commits == nil {
		t.Errorf("database series %+v", r.DBSeries)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// sysbench's oltp_read_write (prepared statements, two threads) against
// a managed MariaDB with the general query log on: the log is captured,
// replayed at the captured pace into a copy of the starting tables in
// another database (--map-db), and the copy ends as the original did,
// every transaction committing again. The slow log of the same run
// captures the same statements with their durations.
func TestCaptureReplaySysbenchMariaDB(t *testing.T) {
	tg := managedMariaDB(t)
	sysbench, err := exec.LookPath("sysbench")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but sysbench is not installed")
		}
		t.Skip("no sysbench: apt-get install sysbench to run this test")
	}
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
	in := func(db string) Target {
		v := *u
		v.Path = "/" + db
		return Target{URL: v.String()}
	}
	root := Target{URL: base}
	execSQL(t, root, "CREATE DATABASE sbtest")
	execSQL(t, root, "CREATE DATABASE sbreplay")
	execSQL(t, root, "CREATE DATABASE sbwire")
	// The run goes through the wire capture's proxy too, relayed to the
	// server's socket: the same statements, captured from the wire.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wrec := wire.NewRecorder("test proxy")
	wrec.MySQL = true
	pctx, stopProxy := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- wire.Serve(pctx, ln, socket, wrec, wire.ProxyOptions{}) }()
	through := []string{"--mysql-host=127.0.0.1", "--mysql-port=" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}
	sb := func(args ...string) {
		t.Helper()
		conn := []string{"--mysql-socket=" + socket}
		if args[len(args)-1] == "run" {
			conn = through
		}
		cmd := exec.Command(sysbench, append(append([]string{"oltp_read_write", "--db-driver=mysql"}, conn...),
			append([]string{"--mysql-user=root", "--mysql-db=sbtest", "--tables=2", "--table-size=2000", "--rand-seed=7"}, args...)...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sysbench %v: %v\n%s", args, err, b)
		}
	}
	sb("prepare")
	copySbtest(t, root, "sbreplay", "sbwire")
	var dataDir string
	queryRow(t, root, "SELECT @@datadir", &dataDir)
	general, slow := filepath.Join(dataDir, "general.log"), filepath.Join(dataDir, "slow.log")
	execSQL(t, root, "SET GLOBAL general_log_file = '"+general+"', GLOBAL slow_query_log_file = '"+slow+"',"+
		" GLOBAL log_output = 'FILE', GLOBAL long_query_time = 0, GLOBAL general_log = ON, GLOBAL slow_query_log = ON")
	sb("--threads=2", "--events=200", "--time=0", "--rate=100", "run") // 200 transactions however busy the host (--time=2 made 38-48 with hogs beside)
	execSQL(t, root, "SET GLOBAL general_log = OFF, GLOBAL slow_query_log = OFF")
	stopProxy()
	if err := <-served; err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	end := filepath.Join(dir, "end.snap")
	var out bytesBuffer
	if err := Snapshot(ctx, SnapshotOptions{Common: Common{Target: in("sbtest"), Stdout: &out, Stderr: &out}, Out: end}); err != nil {
		t.Fatalf("snapshot: %v\n%s", err, out.String())
	}
	c, err := capture.Parse([]string{general}, capture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine != capture.EngineMySQL || len(c.Sessions) < 3 || c.Statements() < 300 {
		t.Fatalf("general log: engine %q, %d sessions, %d statements\n%s", c.Engine, len(c.Sessions), c.Statements(), c.Summary())
	}
	if !strings.Contains(c.Summary(), "prepared statement executions replayed as text") {
		t.Errorf("sysbench's prepared statements not seen:\n%s", c.Summary())
	}
	capPath := filepath.Join(dir, "sb.capture")
	if err := capture.Write(capPath, c); err != nil {
		t.Fatal(err)
	}
	sc, err := capture.Parse([]string{slow}, capture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var busy time.Duration
	for _, s := range sc.Sessions {
		for _, st := range s.Statements {
			busy += st.Duration
		}
	}
	// The slow log has every statement the general log has but the
	// Prepare commands' (not statements) and the sessions' logins.
	if sc.Statements() < c.Statements()*9/10 || busy <= 0 {
		t.Errorf("slow log: %d statements (general log %d), %s of server time\n%s", sc.Statements(), c.Statements(), busy, sc.Summary())
	}

	path := filepath.Join(dir, "replay.json")
	err = Replay(ctx, ReplayOptions{Common: Common{Target: in("sbreplay"), Stdout: &out, Stderr: &out},
		Capture: capPath, Speed: 1, MapDB: map[string]string{"sbtest": "sbreplay"}, Label: "replay", Out: path, Verify: end,
		Collect: CollectOptions{Off: true}})
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	rp, es := r.Replay, r.Replay.EndState
	if es == nil || es.Match != es.Of || es.Of != 2 || len(es.Sequences) != 0 {
		t.Errorf("end state: %+v\n%s", es, out.String())
	}
	// The one statement not replayed is the test's SET GLOBAL that
	// turned the logs off: it changes the server.
	var skipped int64
	for _, n := range rp.NotReplayed {
		skipped += n
	}
	// A deadlock sysbench met in the capture (40001, retried by it) is
	// not in the general log: the replay's failure of that statement is
	// one the log cannot tell, not an error of the replay.
	if rp.Errors != rp.Untold() || rp.Divergent() != 0 || skipped != 1 || rp.ReplayedTransactions != rp.CapturedTransactions || rp.CapturedTransactions < 100 {
		t.Errorf("errors %d (%d the log cannot tell), divergent %d, transactions %d of %d: %+v %v", rp.Errors, rp.Untold(), rp.Divergent(), rp.ReplayedTransactions,
			rp.CapturedTransactions, rp.Outcomes, rp.NotReplayed)
	}
	t.Logf("%s; %d statements, %d transactions replayed in %.2f s (captured %.2f s)", es.Summary, rp.Replayed,
		rp.ReplayedTransactions, rp.ReplaySeconds, rp.CaptureSeconds)

	// The wire's capture: every statement the general log has (but its
	// Prepare lines), the executions' values written in, the rows each
	// affected; replayed into its own copy, it ends as the original did
	// and no statement's rows differ.
	wc := wrec.Capture()
	wirePath := filepath.Join(dir, "wire.capture")
	if err := capture.Write(wirePath, wc); err != nil {
		t.Fatal(err)
	}
	out = bytesBuffer{}
	path = filepath.Join(dir, "wire.json")
	err = Replay(ctx, ReplayOptions{Common: Common{Target: in("sbwire"), Stdout: &out, Stderr: &out},
		Capture: wirePath, Speed: 1, MapDB: map[string]string{"sbtest": "sbwire"}, Label: "wire", Out: path, Verify: end,
		Collect: CollectOptions{Off: true}})
	if err != nil && !errors.Is(err, ErrEndStateDiffers) {
		t.Fatalf("replay of the wire capture: %v\n%s", err, out.String())
	}
	if r, err = result.Read(path); err != nil {
		t.Fatal(err)
	}
	wrp, wes := r.Replay, r.Replay.EndState
	if !equalOrReleased(t, r, 2) {
		t.Errorf("wire capture's end state: %+v\n%s", wes, out.String())
	}
	// The log holds the test's own statements too (the SET GLOBAL that
	// turned it off), which did not pass the proxy.
	released := leeway(t, wrp) // as in TestWireSniffSysbenchMariaDB
	if newErrors(wrp) > released || wrp.Divergent() > 2*released || wrp.ReplayedTransactions < wrp.CapturedTransactions-released || wrp.CapturedTransactions < 100 ||
		wrp.RowsCompared < int64(wc.Statements())/2 {
		t.Errorf("wire capture: errors %d (%d not captured), divergent %d, transactions %d of %d, rows of %d of %d statements compared: %+v",
			wrp.Errors, newErrors(wrp), wrp.Divergent(), wrp.ReplayedTransactions, wrp.CapturedTransactions, wrp.RowsCompared, wc.Statements(), wrp.Outcomes)
	}
	// Changes are compared too: the rows each UPDATE, DELETE and INSERT
	// affected.
	changes := int64(0)
	for _, s := range wc.Sessions {
		for _, st := range s.Statements {
			if w := strings.ToUpper(strings.Fields(wc.Texts[st.Text])[0]); (w == "UPDATE" || w == "DELETE" || w == "INSERT") && st.Rows != nil {
				changes++
			}
		}
	}
	if changes < 400 || wrp.RowsCompared < changes {
		t.Errorf("%d changes with their rows in the capture, %d statements' rows compared", changes, wrp.RowsCompared)
	}
	t.Logf("from the wire: %d statements (the general log %d); %s; rows of %d compared (%d changes)", wc.Statements(), c.Statements(),
		wes.Summary, wrp.RowsCompared, changes)

	// A replay user that may not see InnoDB's lock waits is refused
	// before anything is sent, with the GRANT that fixes it.
	execSQL(t, root, "CREATE USER 'noproc'@'localhost' IDENTIFIED BY 'pw'")
	execSQL(t, root, "GRANT ALL ON sbreplay.* TO 'noproc'@'localhost'")
	v := *u
	v.User, v.Path = url.UserPassword("noproc", "pw"), "/sbreplay"
	out = bytesBuffer{}
	err = Replay(ctx, ReplayOptions{Common: Common{Target: Target{URL: v.String()}, Stdout: &out, Stderr: &out},
		Capture: capPath, Speed: 1, MapDB: map[string]string{"sbtest": "sbreplay"}, Label: "replay",
		Out: filepath.Join(dir, "noproc.json"), Collect: CollectOptions{Off: true}})
	if err == nil || !strings.Contains(err.Error(), "GRANT PROCESS ON *.* TO the --target user") || strings.Contains(out.String(), "replaying") {
		t.Errorf("a replay without the PROCESS privilege: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "noproc.json")); err == nil {
		t.Error("the refused replay wrote a result")
	}
	// The password from MYSQL_PWD, as the mysql client takes it, when the
	// URL has none: nothing on the command line.
	v.User = url.User("noproc")
	t.Setenv("MYSQL_PWD", "pw")
	var n int
	queryRow(t, Target{URL: v.String()}, "SELECT count(*) FROM sbreplay.sbtest1", &n)
	if n == 0 {
		t.Error("connected with MYSQL_PWD, read no rows")
	}
}

// sysbench's prepared statements on MariaDB read passively off the
// loopback interface (--listen-on lo --protocol mysql), the client
// connected over TCP to the server itself: at full speed and at 100
// transactions/s no segment is dropped (issue 48: on a busy host the
// kernel dropped 7,421 of them, and two connections were lost) and every
// query sysbench counted is captured; the second, replayed into a copy
// of its starting tables, ends as the original did, no statement's rows
// differing.
func TestWireSniffSysbenchMariaDB(t *testing.T) {
	t.Parallel()
	tg := managedMariaDB(t)
	sysbench, err := exec.LookPath("sysbench")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but sysbench is not installed")
		}
		t.Skip("no sysbench: apt-get install sysbench to run this test")
	}
	if fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, 0); err != nil {
		t.Skipf("reading packets needs CAP_NET_RAW (run the tests as root): %v", err)
	} else {
		syscall.Close(fd)
	}
	ctx := context.Background()
	inst, err := managed.StartMariaDB(ctx, managed.Options{DataDir: tg.MyData, Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	u, err := url.Parse(inst.URL())
	if err != nil {
		t.Fatal(err)
	}
	in := func(db string) Target {
		v := *u
		v.Path = "/" + db
		return Target{URL: v.String()}
	}
	root := Target{URL: inst.URL()}
	for _, q := range []string{"CREATE DATABASE sbtest", "CREATE DATABASE sbwire",
		"CREATE USER 'sb'@'127.0.0.1' IDENTIFIED BY 'pw'", "GRANT ALL ON *.* TO 'sb'@'127.0.0.1'"} {
		execSQL(t, root, q)
	}
	sb := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(sysbench, append([]string{"oltp_read_write", "--db-driver=mysql", "--mysql-host=127.0.0.1",
			"--mysql-port=" + strconv.Itoa(inst.Port), "--mysql-user=sb", "--mysql-password=pw", "--mysql-db=sbtest",
			"--tables=2", "--table-size=2000"}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sysbench %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	sb("--rand-seed=7", "prepare")
	// sniff captures the packets while sysbench runs with args: none is
	// lost, and every query sysbench counted is in the capture (sysbench
	// counts the queries it sent; the capture holds them and the
	// connections' own set-up).
	sniff := func(args ...string) *capture.Capture {
		t.Helper()
		rec := wire.NewRecorder("test sniff")
		rec.MySQL = true
		sctx, stop := context.WithCancel(ctx)
		type sniffResult struct {
			st  wire.SniffStats
			err error
		}
		sniffed := make(chan sniffResult, 1)
		pk, err := wire.ListenPackets("lo", inst.Port)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			st, err := pk.Run(sctx, rec)
			sniffed <- sniffResult{st, err}
		}()
		sbOut := sb(args...)
		time.Sleep(200 * time.Millisecond)
		stop()
		sr := <-sniffed
		if sr.err != nil {
			t.Fatal(sr.err)
		}
		t.Logf("sysbench %v: %s", args, strings.TrimSpace(sr.st.Summary()))
		if sr.st.Lost() {
			t.Errorf("sysbench %v: the capture lost segments: %s", args, sr.st.Summary())
		}
		c := rec.Capture()
		if c.Engine != capture.EngineMySQL || c.Statements() < 300 || c.Sessions[0].User != "sb" {
			t.Fatalf("capture: engine %q, %d statements, first session's user %q\n%s", c.Engine, c.Statements(), c.Sessions[0].User, c.Summary())
		}
		if m := regexp.MustCompile(`total:\s+(\d+)`).FindStringSubmatch(sbOut); m == nil {
			t.Errorf("sysbench's query count not found:\n%s", sbOut)
		} else if n, _ := strconv.Atoi(m[1]); c.Statements() < n {
			t.Errorf("sysbench %v sent %d queries, the capture holds %d statements", args, n, c.Statements())
		} else {
			t.Logf("sysbench %v sent %d queries, the capture holds %d statements", args, n, c.Statements())
		}
		return c
	}
	// At full speed, the capture alone: on a busy host (issue 48) the
	// packet reader fell behind and the kernel dropped segments. (Not
	// replayed: at full speed sysbench's two threads deadlock now and
	// then, and a replay that escapes a captured deadlock commits what
	// the server rolled back.) Its seed differs from the next run's, whose
	// updates would otherwise write the values the rows already hold.
	sniff("--rand-seed=3", "--threads=2", "--time=2", "run")
	copySbtest(t, root, "sbwire")
	c := sniff("--rand-seed=7", "--threads=2", "--time=2", "--rate=100", "run")
	dir := t.TempDir()
	end := filepath.Join(dir, "end.snap")
	var out bytesBuffer
	if err := Snapshot(ctx, SnapshotOptions{Common: Common{Target: in("sbtest"), Stdout: &out, Stderr: &out}, Out: end}); err != nil {
		t.Fatalf("snapshot: %v\n%s", err, out.String())
	}
	capPath := filepath.Join(dir, "wire.capture")
	if err := capture.Write(capPath, c); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "replay.json")
	err = Replay(ctx, ReplayOptions{Common: Common{Target: in("sbwire"), Stdout: &out, Stderr: &out}, Capture: capPath, Speed: 1,
		MapDB: map[string]string{"sbtest": "sbwire"}, MapUser: map[string]string{"sb": "root"}, Label: "wire", Out: path, Verify: end,
		Collect: CollectOptions{Off: true}})
	if err != nil && !errors.Is(err, ErrEndStateDiffers) {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	rp, es := r.Replay, r.Replay.EndState
	// A release may also let InnoDB find a deadlock the capture did not
	// have: its statement's new 40001 and the COMMIT it rolled back.
	if released := leeway(t, rp); !equalOrReleased(t, r, 2) || newErrors(rp) > released || rp.Divergent() > 2*released ||
		rp.RowsCompared < int64(c.Statements())/2 {
		t.Errorf("end state %+v; errors %d, divergent %d, rows of %d of %d statements compared: %+v\n%s", es, rp.Errors, rp.Divergent(),
			rp.RowsCompared, c.Statements(), rp.Outcomes, out.String())
	}
	t.Logf("sniffed: %d statements; %s; rows of %d compared", c.Statements(), es.Summary, rp.RowsCompared)
}

// equalOrReleased tells whether the replay r ended with its of tables
// equal to the capture's, or, where the replay let sessions go in another
// order to break a cycle with the server's lock waits (sysbench's two
// threads with two suites beside the test: 1 or 2 releases, a table's k
// or c differing), whether its report says so beside the difference.
func equalOrReleased(t *testing.T, r *result.Run, of int) bool {
	t.Helper()
	es := r.Replay.EndState
	if es == nil || es.Of != of {
		return false
	}
	if es.Match == es.Of || len(r.Replay.Releases) == 0 {
		return es.Match == es.Of
	}
	var text bytes.Buffer
	if err := report.Text(&text, r); err != nil {
		t.Fatal(err)
	}
	t.Logf("end state differs after %d synchronisation releases: %s", len(r.Replay.Releases), es.Summary)
	return strings.Contains(text.String(), fmt.Sprintf("released %d synchronisation", len(r.Replay.Releases)))
}

// leeway is how many of a replay's transactions may end otherwise than
// captured: one for each synchronisation wait it released, and one for
// each deadlock the server met in the replay and not in the capture. The
// commit order keeps what each statement saw, not the order in which two
// sessions take their locks: on a saturated host (two suites beside) a
// replay fell behind and its sessions deadlocked once, reported as a new
// error 40001, with the end state equal.
func leeway(t *testing.T, rp *result.Replay) int64 {
	t.Helper()
	n := int64(len(rp.Releases))
	for _, o := range rp.Outcomes {
		if o.Kind == "new error" && o.Replayed == "40001" {
			t.Logf("the replay met %d deadlock(s) the capture had not: %s", o.Count, o.Fingerprint)
			n += o.Count
		}
	}
	return n
}

// newErrors is the replay's errors less those the capture had too (a
// deadlock captured and replayed alike).
func newErrors(rp *result.Replay) int64 {
	n := rp.Errors
	for _, o := range rp.Outcomes {
		if o.Kind == "expected error" {
			n -= o.Count
		}
	}
	return n
}

// copySbtest copies sysbench's tables of database sbtest into each of dbs
// (made already): their rows and next AUTO_INCREMENT value, the starting
// state a replay goes into.
func copySbtest(t *testing.T, root Target, dbs ...string) {
	t.Helper()
	for _, db := range dbs {
		for _, tb := range []string{"sbtest1", "sbtest2"} {
			execSQL(t, root, "CREATE TABLE "+db+"."+tb+" LIKE sbtest."+tb)
			execSQL(t, root, "INSERT INTO "+db+"."+tb+" SELECT * FROM sbtest."+tb)
			var next int64
			queryRow(t, root, "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sbtest' AND TABLE_NAME = '"+tb+"'", &next)
			execSQL(t, root, fmt.Sprintf("ALTER TABLE %s.%s AUTO_INCREMENT = %d", db, tb, next))
		}
	}
}

// A MySQL client that asks for TLS through the proxy: without a
// certificate the greeting offers none, so one that requires TLS gives up
// (counted, a line naming the flags); with one the proxy ends TLS,
// authenticates the client to the server in the clear (a password user
// and one without) and captures the statements inside.
func TestWireProxyTLSMariaDB(t *testing.T) {
	t.Parallel()
	tg := managedMariaDB(t)
	client, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("no mariadb client: apt-get install mariadb-client to run this test")
	}
	ctx := context.Background()
	o, err := openTarget(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	u, err := url.Parse(o.managed.URL())
	if err != nil {
		t.Fatal(err)
	}
	socket := u.Query().Get("socket")
	root := Target{URL: o.managed.URL()}
	execSQL(t, root, "CREATE USER tlsu@localhost IDENTIFIED BY 'pw one'")
	execSQL(t, root, "GRANT ALL ON *.* TO tlsu@localhost")
	proxy := func(po wire.ProxyOptions) (port string, finish func() *capture.Capture) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		rec := wire.NewRecorder("tls test")
		rec.MySQL = true
		ctx, stop := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- wire.Serve(ctx, ln, socket, rec, po) }()
		return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), func() *capture.Capture {
			stop()
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			return rec.Capture()
		}
	}
	query := func(port, user, password, sql string, tlsArgs ...string) (string, error) {
		args := append([]string{"--no-defaults", "-h", "127.0.0.1", "-P", port, "-u", user, "-N", "-e", sql}, tlsArgs...)
		if password != "" {
			args = append(args, "--password="+password)
		}
		out, err := exec.Command(client, args...).CombinedOutput()
		return string(out), err
	}
	texts := func(c *capture.Capture) string { return strings.Join(c.Texts, "|") }

	var lines []string
	var mu sync.Mutex
	port, finish := proxy(wire.ProxyOptions{Notify: func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() }})
	if out, err := query(port, "tlsu", "pw one", "SELECT 'in the clear'"); err != nil {
		t.Fatalf("without TLS through the proxy: %v\n%s", err, out)
	}
	// Requiring a verified server certificate is how this client
	// requires TLS (--ssl alone goes on in the clear when offered none).
	if out, err := query(port, "tlsu", "pw one", "SELECT 'never sent'", "--ssl-verify-server-cert"); err == nil {
		t.Errorf("a client requiring TLS went on without it: %s", out)
	}
	c := finish()
	if !strings.Contains(texts(c), "SELECT 'in the clear'") || strings.Contains(texts(c), "never sent") {
		t.Errorf("captured %q", texts(c))
	}
	gaveUp := 0
	for _, sk := range c.Skipped {
		if strings.Contains(sk.Reason, "offered no TLS") {
			gaveUp = sk.Count
		}
	}
	if gaveUp != 1 {
		t.Errorf("%d clients counted as giving up for TLS, want 1: %+v", gaveUp, c.Skipped)
	}
	mu.Lock()
	if len(lines) != 1 || !strings.Contains(lines[0], "--tls-cert and --tls-key") {
		t.Errorf("notices %q: want one, naming the flags", lines)
	}
	mu.Unlock()

	cert := selfSigned(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	port, finish = proxy(wire.ProxyOptions{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	// The password user's client starts with another authentication
	// method than the server's, so that the server asks it to switch:
	// one more exchange inside TLS.
	for _, who := range [][3]string{{"tlsu", "pw one", "--default-auth=client_ed25519"}, {"root", "", "--ssl"}} {
		sql := "SELECT CONCAT('inside TLS for ', CURRENT_USER())"
		out, err := query(port, who[0], who[1], sql+", 'as "+who[0]+"'", "--ssl-ca="+ca, "--ssl-verify-server-cert", who[2])
		if err != nil {
			t.Fatalf("%s requiring TLS with a certificate: %v\n%s", who[0], err, out)
		}
		if !strings.Contains(out, "inside TLS for "+who[0]) {
			t.Errorf("%s: answered %q", who[0], out)
		}
	}
	c = finish()
	if !strings.Contains(texts(c), "'as tlsu'") || !strings.Contains(texts(c), "'as root'") {
		t.Errorf("captured %q", texts(c))
	}
	for _, sk := range c.Skipped {
		if sk.Effect == capture.Dropped {
			t.Errorf("dropped from a TLS session: %+v", sk)
		}
	}
}

// mixSeen checks that every kind of the order-entry mix committed, where
// the run made enough transactions for none of a kind to be a failure: a
// kind of 4% is missing from 200 transactions once in 3,000 runs (on a
// saturated host a 3 s run made 58).
func mixSeen(t *testing.T, s result.Summary) {
	t.Helper()
	for _, name := range []string{"new_order", "payment", "order_status", "delivery", "stock_level"} {
		if tx := s.Transactions[name]; tx.Count == 0 && s.Commits >= 200 {
			t.Errorf("%s: none committed of %d transactions", name, s.Commits)
		}
	}
}
