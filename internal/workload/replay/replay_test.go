package replay

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/engine"
)

// fakeConn records what it was sent; statements whose text is in fail
// fail with that SQLSTATE.
type fakeConn struct {
	log          *log
	sess         string
	fail         map[string]string
	failOnce     map[string]string // as fail, the first time only
	inTx, failed bool              // as the server tracks a transaction block
}

type log struct {
	mu      sync.Mutex
	calls   []call
	batches [][]string // each Batch's texts
}

type call struct {
	sess, kind, sql, name string
	params                []*string
	at                    time.Time
}

func (c *fakeConn) do(kind, name, sql string, params []*string) (string, error) {
	c.log.mu.Lock()
	c.log.calls = append(c.log.calls, call{c.sess, kind, sql, name, params, time.Now()})
	c.log.mu.Unlock()
	time.Sleep(time.Millisecond)
	switch {
	case sql == "BEGIN":
		c.inTx, c.failed = true, false
	case sql == "COMMIT":
		failed := c.failed || c.fail[sql] == "ROLLBACK"
		c.inTx, c.failed = false, false
		if failed {
			return "ROLLBACK", nil
		}
		return "COMMIT", nil
	}
	if code, ok := c.failOnce[sql]; ok {
		delete(c.failOnce, sql)
		c.failed = c.inTx
		return "", &pgconn.PgError{Code: code, Message: "failed " + code}
	}
	if code, ok := c.fail[sql]; ok {
		c.failed = c.inTx
		return "", &pgconn.PgError{Code: code, Message: "failed " + code}
	}
	return "OK", nil
}

func (c *fakeConn) Simple(_ context.Context, sql string) (string, error) {
	return c.do("simple", "", sql, nil)
}
func (c *fakeConn) Extended(_ context.Context, sql string, p []*string, _ []uint32) (string, error) {
	return c.do("extended", "", sql, p)
}
func (c *fakeConn) Prepared(_ context.Context, name, sql string, p []*string, _ []uint32) (string, error) {
	return c.do("prepared", name, sql, p)
}
func (c *fakeConn) CopyIn(_ context.Context, sql string, _ []byte) (string, error) {
	return c.do("copy", "", sql, nil)
}
func (c *fakeConn) Batchable(name, _ string, extended bool) (bool, bool) {
	return name != "" || extended, false
}

// Batch runs the statements one by one, logged as if sent alone, and
// stops at the first that fails, as a pipeline up to its sync point.
func (c *fakeConn) Batch(_ context.Context, stmts []engine.BatchStatement, done func(int, string, error, time.Duration)) (int, error) {
	c.logBatch(stmts)
	return c.run(stmts, done)
}

func (c *fakeConn) logBatch(stmts []engine.BatchStatement) {
	var texts []string
	for _, st := range stmts {
		texts = append(texts, st.SQL+" "+*st.Params[0])
	}
	c.log.mu.Lock()
	c.log.batches = append(c.log.batches, texts)
	c.log.mu.Unlock()
}

func (c *fakeConn) run(stmts []engine.BatchStatement, done func(int, string, error, time.Duration)) (int, error) {
	for k, st := range stmts {
		kind := "extended"
		if st.Name != "" {
			kind = "prepared"
		}
		tag, err := c.do(kind, st.Name, st.SQL, st.Params)
		done(k, tag, err, time.Millisecond)
		if err != nil {
			return k + 1, nil
		}
	}
	return len(stmts), nil
}
func (c *fakeConn) Describe(context.Context, string, []uint32) ([]uint32, error) { return nil, nil }
func (c *fakeConn) PID() uint32                                                  { return 0 }
func (c *fakeConn) Blockers(context.Context, []uint32) (map[uint32][]uint32, time.Time, error) {
	return nil, time.Now(), nil
}
func (c *fakeConn) Close() error { return nil }

func str(s string) *string { return &s }

// testCapture: two sessions over 400 ms. Session a: BEGIN, a prepared
// UPDATE with parameters, a failing SELECT (42P01 in the capture), COMMIT.
// Session b: BEGIN, an extended INSERT with a NULL parameter, COMMIT.
func testCapture() *capture.Capture {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	return &capture.Capture{Format: capture.Format, Start: t0, End: t0.Add(ms(400)),
		Texts: []string{"BEGIN", "UPDATE t SET v = v + $1 WHERE id = $2", "SELECT * FROM missing", "COMMIT",
			"INSERT INTO h VALUES ($1, $2)"},
		Sessions: []capture.Session{
			{ID: "a", User: "app", Database: "db", Start: 0, End: ms(400), Statements: []capture.Statement{
				{Offset: ms(0), Text: 0, Duration: ms(1)},
				{Offset: ms(100), Text: 1, Prepared: "S_1", Extended: true, Params: []*string{str("5"), str("7")}, Duration: ms(2)},
				{Offset: ms(200), Text: 2, Error: &capture.Error{SQLState: "42P01", Message: "relation does not exist"}},
				{Offset: ms(300), Text: 3, Duration: ms(1)},
			}},
			{ID: "b", User: "app", Database: "db", Start: ms(50), End: ms(350), Statements: []capture.Statement{
				{Offset: ms(120), Text: 0, Duration: ms(1)},
				{Offset: ms(150), Text: 4, Extended: true, Params: []*string{str("x"), nil}, Duration: ms(1)},
				{Offset: ms(250), Text: 3, Duration: ms(1)},
			}},
		}}
}

func connector(l *log, fail map[string]string) func(ctx context.Context, user, db, app string) (engine.ReplayConn, error) {
	return func(_ context.Context, user, db, app string) (engine.ReplayConn, error) {
		return &fakeConn{log: l, sess: user + "@" + db, fail: fail}, nil
	}
}

func TestReplayAsCaptured(t *testing.T) {
	l := &log{}
	fail := map[string]string{"SELECT * FROM missing": "42P01"}
	start := time.Now()
	r, err := Run(context.Background(), Options{Capture: testCapture(), Speed: 2, Connect: connector(l, fail),
		MapUser: map[string]string{"app": "replayer"}, Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// At speed 2, the 400 ms capture takes 200 ms (the sessions hold their
	// connections until their captured end), and later only by the lag
	// the replay measured (a loaded host wakes its sessions late): the
	// upper bounds below add it, so that they still tell speed 2 from 1.
	if r.Lag == nil {
		t.Fatal("no lag measured")
	}
	late := r.Lag.Max() + 100*time.Millisecond
	if d := time.Since(start); d < 190*time.Millisecond || d > 200*time.Millisecond+late {
		t.Errorf("replay at speed 2 took %v, want about 200 ms (lag at most %v)", d, r.Lag.Max())
	}
	if r.Replayed != 7 || r.OK != 6 || r.Errors != 1 || r.Statements != 7 {
		t.Errorf("replayed %d (ok %d, errors %d) of %d", r.Replayed, r.OK, r.Errors, r.Statements)
	}
	if len(r.Outcomes) != 1 || r.Outcomes[0].Kind != Expected || r.Outcomes[0].Replayed != "42P01" {
		t.Errorf("outcomes %+v, want one expected 42P01", r.Outcomes)
	}
	// Session a's COMMIT follows a failed statement: it rolled back, in
	// the capture and in the replay; b's committed.
	if r.CapturedCommits != 1 || r.ReplayedCommits != 1 || r.CapturedTransactions != 1 || r.ReplayedTransactions != 1 ||
		len(r.SessionDiffs) != 0 {
		t.Errorf("commits %d/%d, transactions %d/%d, session diffs %+v", r.CapturedCommits, r.ReplayedCommits,
			r.CapturedTransactions, r.ReplayedTransactions, r.SessionDiffs)
	}
	var prepared, extended *call
	for i, c := range l.calls {
		if c.sess != "replayer@db" {
			t.Errorf("session connected as %s", c.sess)
		}
		switch c.kind {
		case "prepared":
			prepared = &l.calls[i]
		case "extended":
			extended = &l.calls[i]
		}
	}
	if prepared == nil || prepared.name != "S_1" || *prepared.params[0] != "5" || *prepared.params[1] != "7" {
		t.Errorf("prepared call %+v", prepared)
	}
	if extended == nil || extended.params[1] != nil || *extended.params[0] != "x" {
		t.Errorf("extended call %+v (want NULL second parameter)", extended)
	}
	// The UPDATE was due at 50 ms (100 ms / 2).
	if off := prepared.at.Sub(start); off < 45*time.Millisecond || off > 50*time.Millisecond+late {
		t.Errorf("statement captured at 100 ms issued at %v at speed 2", off)
	}
}

func TestDivergence(t *testing.T) {
	l := &log{}
	// The failing SELECT now works; the INSERT fails anew.
	fail := map[string]string{"INSERT INTO h VALUES ($1, $2)": "23505"}
	r, err := Run(context.Background(), Options{Capture: testCapture(), Speed: 0, Connect: connector(l, fail)})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int64{}
	for _, o := range r.Outcomes {
		kinds[o.Kind] += o.Count
	}
	if kinds[New] != 1 || kinds[Vanished] != 1 || kinds[Expected] != 0 {
		t.Errorf("outcomes %+v", r.Outcomes)
	}
	if r.Lag != nil {
		t.Error("lag recorded as fast as possible")
	}
	if len(r.SessionDiffs) != 2 {
		t.Errorf("session diffs %+v, want both sessions", r.SessionDiffs)
	}
}

// Synchronisation by statements: a statement goes only after every
// statement of another session that ended before it started, even as
// fast as possible. In testCapture every statement ended before the next
// one (in any session) started, so the whole order is forced.
func TestSyncStatement(t *testing.T) {
	for range 5 {
		l := &log{}
		r, err := Run(context.Background(), Options{Capture: testCapture(), Sync: SyncStatement, Connect: connector(l, nil)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range l.calls {
			got = append(got, strings.Fields(c.sql)[0])
		}
		// Captured: a BEGIN 0-1, a UPDATE 100-102, b BEGIN 120-121, b
		// INSERT 150-151, a SELECT 200 (failed), b COMMIT 250-251, a
		// COMMIT 300-301.
		if want := "BEGIN UPDATE BEGIN INSERT SELECT COMMIT COMMIT"; strings.Join(got, " ") != want {
			t.Fatalf("issued %v, want %s", got, want)
		}
		if r.SyncWait == nil || r.SyncWait.Count() != 7 {
			t.Errorf("sync waits recorded %v", r.SyncWait)
		}
	}
}

func TestSyncNoneKeepsSessionsApart(t *testing.T) {
	l := &log{}
	r, err := Run(context.Background(), Options{Capture: testCapture(), Sync: SyncNone, Connect: connector(l, nil)})
	if err != nil {
		t.Fatal(err)
	}
	// A wait of 0 is recorded as the histogram's lowest value, 1 µs.
	if r.Replayed != 7 || r.SyncWait.Max() > time.Microsecond {
		t.Errorf("replayed %d, sync wait max %v", r.Replayed, r.SyncWait.Max())
	}
}

func TestRefusedUserFallsBack(t *testing.T) {
	l := &log{}
	conn := func(ctx context.Context, user, db, app string) (engine.ReplayConn, error) {
		if user == "app" {
			return nil, &engine.ConnectError{User: user, Database: db, Err: &pgconn.PgError{Code: "28P01", Message: "password authentication failed"}}
		}
		return &fakeConn{log: l, sess: user + "@" + db}, nil
	}
	r, err := Run(context.Background(), Options{Capture: testCapture(), Connect: conn})
	if err != nil {
		t.Fatal(err)
	}
	if r.Replayed != 7 || len(r.Notes) != 1 || l.calls[0].sess != "@" {
		t.Errorf("replayed %d, notes %q, first session %q", r.Replayed, r.Notes, l.calls[0].sess)
	}
}

func TestStopIsPartial(t *testing.T) {
	l := &log{}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	r, err := Run(ctx, Options{Capture: testCapture(), Speed: 1, Connect: connector(l, nil)})
	if !errors.Is(err, context.DeadlineExceeded) || r == nil || !r.Partial || r.NotReplayed["replay stopped"] == 0 {
		t.Fatalf("err %v, result %+v", err, r)
	}
	if r.Replayed+r.NotReplayed["replay stopped"] != 7 {
		t.Errorf("replayed %d + not replayed %v != 7", r.Replayed, r.NotReplayed)
	}
}

func TestTxKind(t *testing.T) {
	for s, want := range map[string]int{"COMMIT": txCommit, "commit;": txCommit, " END;": txCommit, "end": txCommit,
		"END TRANSACTION": txCommit, "COMMIT PREPARED 'x'": txOther, "ENDS": txOther, "SELECT 1": txOther, "": txOther,
		"BEGIN": txBegin, "start transaction isolation level serializable": txBegin, "ROLLBACK": txRollback,
		"ABORT": txRollback, "ROLLBACK TO SAVEPOINT s1": txRollbackTo, "rollback to s1": txRollbackTo,
		"ROLLBACK WORK TO SAVEPOINT s": txRollbackTo, "SAVEPOINT s1": txSavepoint, "RELEASE SAVEPOINT s1": txRelease,
		"PREPARE TRANSACTION 'x'": txPrepare, "ROLLBACK PREPARED 'x'": txOther} {
		if got := txKindOf(s); got != want {
			t.Errorf("txKindOf(%q) = %d, want %d", s, got, want)
		}
	}
}

// Transactions count as the server counts them: a block that committed,
// and each statement that succeeded outside a block. On PostgreSQL a
// failure inside a block aborts it unless ROLLBACK TO a savepoint
// recovers it; on MySQL an error undoes its statement alone, and a
// deadlock (40001) rolls the block back and ends it (sysbench's next
// statement is its BEGIN again).
func TestTxState(t *testing.T) {
	type st struct {
		text, state string
	}
	for _, c := range []struct {
		name           string
		mysql          bool
		stmts          []st
		commits, ended int
	}{
		{"autocommit", false, []st{{"SELECT 1", ""}, {"INSERT", ""}, {"UPDATE", "23505"}}, 2, 0},
		{"block", false, []st{{"BEGIN", ""}, {"UPDATE", ""}, {"COMMIT", ""}}, 1, 0},
		{"failed block", false, []st{{"BEGIN", ""}, {"UPDATE", "23505"}, {"COMMIT", ""}}, 0, 1},
		{"savepoint recovers", false, []st{{"BEGIN", ""}, {"SAVEPOINT s", ""}, {"UPDATE", "23505"},
			{"ROLLBACK TO SAVEPOINT s", ""}, {"INSERT", ""}, {"COMMIT", ""}}, 1, 0},
		{"rollback", false, []st{{"BEGIN", ""}, {"UPDATE", ""}, {"ROLLBACK", ""}, {"SELECT 1", ""}}, 1, 0},
		{"mysql error undoes its statement", true, []st{{"BEGIN", ""}, {"INSERT", "23000"}, {"UPDATE", ""}, {"COMMIT", ""}}, 1, 0},
		{"mysql deadlock ends the block", true, []st{{"BEGIN", ""}, {"UPDATE", "40001"}, {"SELECT 1", ""},
			{"BEGIN", ""}, {"UPDATE", ""}, {"COMMIT", ""}}, 2, 1},
		{"postgres deadlock aborts the block", false, []st{{"BEGIN", ""}, {"UPDATE", "40P01"}, {"ROLLBACK", ""}}, 0, 0},
	} {
		tx := txState{mysql: c.mysql}
		n, ended := 0, 0
		for _, s := range c.stmts {
			ok, rb := tx.step(txKindOf(s.text), s.state, "")
			if ok {
				n++
			}
			if rb {
				ended++
			}
		}
		if n != c.commits || ended != c.ended {
			t.Errorf("%s: %d transactions committed, %d rolled back by the server; want %d, %d", c.name, n, ended, c.commits, c.ended)
		}
	}
}

// A COMMIT answered ROLLBACK is not a commit: a divergence when the
// capture's committed. Session a's capture has a failed SELECT inside its
// transaction, so its COMMIT rolled back in the capture too.
func TestCommitRolledBack(t *testing.T) {
	l := &log{}
	r, err := Run(context.Background(), Options{Capture: testCapture(), Connect: connector(l, map[string]string{
		"SELECT * FROM missing": "42P01", "COMMIT": "ROLLBACK"})})
	if err != nil {
		t.Fatal(err)
	}
	// Captured: a's COMMIT followed a failure (rolled back), b's committed.
	if r.CapturedCommits != 1 || r.ReplayedCommits != 0 {
		t.Errorf("commits captured %d, replayed %d", r.CapturedCommits, r.ReplayedCommits)
	}
	var rolledBack int64
	for _, o := range r.Outcomes {
		if o.Kind == RolledBack {
			rolledBack += o.Count
		}
		if o.Kind == Committed {
			t.Errorf("outcome %+v", o)
		}
	}
	if rolledBack != 1 {
		t.Errorf("outcomes %+v, want b's COMMIT rolled back", r.Outcomes)
	}
}

// Filters: sessions by name, statements by text; statements that change
// the server are skipped and listed unless asked for; COPY FROM STDIN
// runs empty and is reported as data not captured. Skipped statements
// count as done: no session waits for them.
func TestFiltersAdminAndCopy(t *testing.T) {
	c := testCapture()
	c.Sessions[1].User = "report"
	c.Texts = append(c.Texts, "ALTER SYSTEM SET work_mem = '1GB'", "COPY h FROM STDIN")
	ms := time.Millisecond
	c.Sessions[0].Statements = append(c.Sessions[0].Statements,
		capture.Statement{Offset: 320 * ms, Text: 5}, capture.Statement{Offset: 330 * ms, Text: 6, Duration: ms})
	l := &log{}
	f := Filter{Exclude: []Match{{"user", "rep*"}}}
	r, err := Run(context.Background(), Options{Capture: c, Connect: connector(l, nil), Keep: f.Keep,
		ExcludeStatement: regexp.MustCompile(`^SELECT`)})
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, call := range l.calls {
		sent = append(sent, call.kind+" "+strings.Fields(call.sql)[0])
	}
	if got := strings.Join(sent, ", "); got != "simple BEGIN, prepared UPDATE, simple COMMIT, copy COPY" {
		t.Errorf("sent %s", got)
	}
	if r.SessionsFiltered != 1 || r.Sessions != 1 || r.NotReplayed[skipFiltered] != 3 || r.NotReplayed[skipExcluded] != 1 ||
		r.NotReplayed[skipAdmin] != 1 || r.Admin["ALTER SYSTEM SET work_mem = ?"] != 1 {
		t.Errorf("filtered %d, sessions %d, not replayed %v, admin %v", r.SessionsFiltered, r.Sessions, r.NotReplayed, r.Admin)
	}
	var noData int64
	for _, o := range r.Outcomes {
		if o.Kind == NoData {
			noData += o.Count
		}
	}
	if noData != 1 {
		t.Errorf("outcomes %+v, want the COPY as data not captured", r.Outcomes)
	}
	// --replay-admin sends it.
	l = &log{}
	if _, err := Run(context.Background(), Options{Capture: c, Connect: connector(l, nil), ReplayAdmin: true}); err != nil {
		t.Fatal(err)
	}
	admin := false
	for _, call := range l.calls {
		admin = admin || strings.HasPrefix(call.sql, "ALTER SYSTEM")
	}
	if !admin {
		t.Error("--replay-admin did not send ALTER SYSTEM")
	}
	if _, err := ParseMatch("host=x"); err == nil {
		t.Error("host= accepted")
	}
}

// Statements skipped by design (administrative ones) count on neither
// side: the session does not differ, the transactions match.
func TestAdminSkippedCountsOnNeitherSide(t *testing.T) {
	c := testCapture()
	c.Texts = append(c.Texts, "SELECT pg_reload_conf()")
	c.Sessions[1].Statements = append(c.Sessions[1].Statements, capture.Statement{Offset: 340 * time.Millisecond, Text: len(c.Texts) - 1})
	l := &log{}
	r, err := Run(context.Background(), Options{Capture: c, Speed: 0, Connect: connector(l, nil)})
	if err != nil {
		t.Fatal(err)
	}
	// a's block failed in the capture (its SELECT) and commits in the
	// replay; b commits on both sides, and its skipped statement counts on
	// neither.
	if r.Admin["SELECT pg_reload_conf()"] != 1 || r.CapturedTransactions != 1 || r.ReplayedTransactions != 2 {
		t.Errorf("admin %v, transactions captured %d replayed %d", r.Admin, r.CapturedTransactions, r.ReplayedTransactions)
	}
	for _, d := range r.SessionDiffs {
		if d.ID == "b" {
			t.Errorf("session b differs: %+v", d)
		}
	}
}

// A replay behind its schedule sends the due statements of a transaction
// block in one round trip; one that fails ends the batch, and the rest go
// again, each once, in order. Statements outside a block, and those of
// another block, go alone.
func TestBatchBehindSchedule(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	texts := []string{"BEGIN", "INSERT INTO t VALUES ($1)", "UPDATE t SET v = $1", "COMMIT", "SELECT $1"}
	var sts []capture.Statement
	add := func(text int, params ...string) {
		st := capture.Statement{Offset: time.Duration(len(sts)) * time.Microsecond, Text: text, Extended: text != 0 && text != 3}
		for _, p := range params {
			st.Params = append(st.Params, str(p))
		}
		sts = append(sts, st)
	}
	for tx := 0; tx < 2; tx++ {
		add(0)
		for k := 0; k < 4; k++ {
			add(1, fmt.Sprint(tx*10+k))
		}
		add(2, "9")
		add(3)
	}
	add(4, "1") // autocommit, alone
	add(4, "2")
	c := &capture.Capture{Format: capture.Format, Start: t0, End: t0.Add(time.Millisecond), Texts: texts,
		Sessions: []capture.Session{{ID: "a", User: "app", Database: "db", End: time.Millisecond, Statements: sts}}}
	l := &log{}
	// The second INSERT of the first block fails (as it did not in the
	// capture: a new error).
	fail := map[string]string{}
	conn := func(ctx context.Context, user, db, app string) (engine.ReplayConn, error) {
		fc := &fakeConn{log: l, sess: "a", fail: fail}
		return &failOnce{fakeConn: fc, text: texts[1], param: "1"}, nil
	}
	r, err := Run(context.Background(), Options{Capture: c, Speed: 1, Connect: conn})
	if err != nil {
		t.Fatal(err)
	}
	if r.Replayed != int64(len(sts)) || r.Errors != 1 {
		t.Errorf("replayed %d of %d, %d errors: want every statement once, one error", r.Replayed, len(sts), r.Errors)
	}
	var sent []string
	for _, c := range l.calls {
		p := ""
		if len(c.params) > 0 && c.params[0] != nil {
			p = *c.params[0]
		}
		sent = append(sent, c.sql+" "+p)
	}
	var want []string
	for _, st := range sts {
		p := ""
		if len(st.Params) > 0 {
			p = *st.Params[0]
		}
		want = append(want, texts[st.Text]+" "+p)
	}
	if fmt.Sprint(sent) != fmt.Sprint(want) {
		t.Errorf("sent\n%q\nwant\n%q", sent, want)
	}
	// BEGIN (simple) goes alone; then INSERT 0, INSERT 1 (fails: the
	// batch ends), then INSERT 2, 3, UPDATE (COMMIT is simple: alone);
	// the second block in one batch; the autocommit SELECTs alone.
	got := fmt.Sprint(l.batches)
	wantBatches := "[[INSERT INTO t VALUES ($1) 0 INSERT INTO t VALUES ($1) 1 INSERT INTO t VALUES ($1) 2 INSERT INTO t VALUES ($1) 3 UPDATE t SET v = $1 9] " +
		"[INSERT INTO t VALUES ($1) 2 INSERT INTO t VALUES ($1) 3 UPDATE t SET v = $1 9] " +
		"[INSERT INTO t VALUES ($1) 10 INSERT INTO t VALUES ($1) 11 INSERT INTO t VALUES ($1) 12 INSERT INTO t VALUES ($1) 13 UPDATE t SET v = $1 9]]"
	if got != wantBatches {
		t.Errorf("batches\n%s\nwant\n%s", got, wantBatches)
	}
}

// failOnce fails the statement with text and first parameter param once.
type failOnce struct {
	*fakeConn
	text, param string
	done        bool
}

func (f *failOnce) Batch(ctx context.Context, stmts []engine.BatchStatement, done func(int, string, error, time.Duration)) (int, error) {
	f.logBatch(stmts)
	for k, st := range stmts {
		if !f.done && st.SQL == f.text && len(st.Params) > 0 && *st.Params[0] == f.param {
			f.done = true
			if n, err := f.run(stmts[:k], done); err != nil || n < k {
				return n, err
			}
			f.fail[f.text] = "23505"
			f.run(stmts[k:k+1], func(_ int, tag string, err error, d time.Duration) { done(k, tag, err, d) })
			delete(f.fail, f.text)
			return k + 1, nil
		}
	}
	return f.run(stmts, done)
}

// A log written as statements arrive (MySQL's general log) orders the
// writers: B's UPDATE arrived after A's in the capture, inside A's open
// transaction, so it is sent only once A's has been sent and settled,
// though A has reads to do first and B none.
func TestWritersInArrivalOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	texts := []string{"BEGIN", "SELECT 1", "UPDATE t SET v = 1 WHERE id = 1", "UPDATE t SET v = 2 WHERE id = 1", "COMMIT"}
	st := func(text int, seq int64) capture.Statement {
		return capture.Statement{Offset: time.Duration(seq) * time.Millisecond, Text: text, Seq: seq}
	}
	c := &capture.Capture{Format: capture.Format, Engine: capture.EngineMySQL, Start: t0, End: t0.Add(10 * time.Millisecond), Texts: texts,
		Sessions: []capture.Session{
			{ID: "a", End: 10 * time.Millisecond, Statements: []capture.Statement{st(0, 1), st(1, 2), st(1, 3), st(1, 4), st(2, 5), st(4, 8)}},
			{ID: "b", End: 10 * time.Millisecond, Statements: []capture.Statement{st(0, 6), st(3, 7), st(4, 9)}},
		}}
	l := &log{}
	n := 0
	var mu sync.Mutex
	connect := func(ctx context.Context, user, db, app string) (engine.ReplayConn, error) {
		mu.Lock()
		defer mu.Unlock()
		if app == "dbparity-replay-monitor" {
			return &fakeConn{log: &log{}, sess: "monitor", fail: map[string]string{}}, nil
		}
		n++
		return &fakeConn{log: l, sess: fmt.Sprint(n), fail: map[string]string{}}, nil
	}
	r, err := Run(context.Background(), Options{Capture: c, Speed: 0, Connect: connect})
	if err != nil {
		t.Fatal(err)
	}
	if r.Replayed != 9 || r.Errors != 0 {
		t.Errorf("replayed %d, %d errors", r.Replayed, r.Errors)
	}
	var a, b time.Time
	for _, call := range l.calls {
		switch call.sql {
		case texts[2]:
			a = call.at
		case texts[3]:
			b = call.at
		}
	}
	if a.IsZero() || b.IsZero() || b.Sub(a) < 500*time.Microsecond {
		t.Errorf("B's UPDATE sent %v after A's, want after A's had settled (1 ms)", b.Sub(a))
	}
}
