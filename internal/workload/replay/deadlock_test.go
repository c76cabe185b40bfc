package replay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/engine"
)

// A MySQL deadlock rolls the whole captured transaction back on the
// server, and the client begins again without a ROLLBACK of its own (as
// sysbench does). A replay whose statement escapes the deadlock rolls
// its transaction back itself, or it would commit what the server threw
// away; a PostgreSQL capture (whose client sends the ROLLBACK, captured)
// gets none added. The deadlocked statement goes alone, never in a batch.
func TestReplayRollsBackACapturedDeadlock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, engine := range []string{capture.EngineMySQL, capture.EnginePostgres} {
		st := func(at, text int, e *capture.Error) capture.Statement {
			return capture.Statement{Offset: ms(at), Duration: ms(1), Text: text, Seq: int64(at + 1), Error: e}
		}
		c := &capture.Capture{Format: capture.Format, Engine: engine, Start: t0, End: t0.Add(ms(50)),
			Texts: []string{"BEGIN", "UPDATE t SET k = k + 1 WHERE id = 1", "INSERT INTO t VALUES (2)", "COMMIT"},
			Sessions: []capture.Session{{ID: "a", Start: 0, End: ms(50), Statements: []capture.Statement{
				st(0, 0, nil), st(1, 1, &capture.Error{SQLState: "40001", Message: "Deadlock found when trying to get lock"}),
				st(2, 0, nil), st(3, 2, nil), st(4, 3, nil)}}}}
		l := &log{}
		r, err := Run(context.Background(), Options{Capture: c, Speed: 0, Connect: connector(l, nil)})
		if err != nil {
			t.Fatal(err)
		}
		var sent []string
		for _, b := range l.batches {
			sent = append(sent, b...)
		}
		for _, cl := range l.calls {
			sent = append(sent, cl.sql)
		}
		rollbacks := 0
		for _, s := range sent {
			if s == "ROLLBACK" {
				rollbacks++
			}
		}
		want := int64(0)
		if engine == capture.EngineMySQL {
			want = 1
		}
		if int64(rollbacks) != want || r.ServerRollbacks != want {
			t.Errorf("%s: sent %q: %d ROLLBACK, %d counted; want %d", engine, sent, rollbacks, r.ServerRollbacks, want)
		}
		// The escaped deadlock's block ended rolled back, as captured:
		// not an outcome that changed (and the next block commits).
		if engine == capture.EngineMySQL && (len(r.Outcomes) != 1 || r.Outcomes[0].Kind != RolledBackAlike ||
			r.CapturedTransactions != 1 || r.ReplayedTransactions != 1) {
			t.Errorf("%s: outcomes %+v, transactions %d captured, %d replayed", engine, r.Outcomes, r.CapturedTransactions, r.ReplayedTransactions)
		}
	}
}

// Two sessions whose lock requests cross deadlock in the capture and
// the replay alike, but the server may pick the other session as its
// victim: the replay's transaction then fails where the captured one
// committed. The replay runs that block again from its BEGIN, after a
// ROLLBACK, as the captured client does with a deadlock, so that it
// ends committed as captured; the retry is counted and the statement's
// outcome is the retry's. Both ways of sending: one statement at a time
// on schedule (30 ms apart; a busy host may make it late, and batch),
// and in a batch when behind it (1 µs apart).
func TestReplayRetriesADeadlockTheCaptureHadNot(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, gap := range []time.Duration{30 * time.Millisecond, time.Microsecond} {
		for _, code := range []string{"40001", "40P01"} {
			c := &capture.Capture{Format: capture.Format, Engine: capture.EnginePostgres, Start: t0, End: t0.Add(4 * gap),
				Texts: []string{"BEGIN", "UPDATE t SET k = k + 1 WHERE id = $1", "INSERT INTO h VALUES ($1)", "COMMIT"},
				Sessions: []capture.Session{{ID: "a", Start: 0, End: 4 * gap, Statements: []capture.Statement{
					{Offset: 0, Text: 0},
					{Offset: gap, Text: 1, Extended: true, Params: []*string{str("1")}},
					{Offset: 2 * gap, Text: 2, Extended: true, Params: []*string{str("2")}},
					{Offset: 3 * gap, Text: 3}}}}}
			l := &log{}
			conn := func(_ context.Context, user, db, app string) (engine.ReplayConn, error) {
				return &fakeConn{log: l, sess: "a", failOnce: map[string]string{"INSERT INTO h VALUES ($1)": code}}, nil
			}
			r, err := Run(context.Background(), Options{Capture: c, Speed: 1, Connect: conn})
			if err != nil {
				t.Fatal(err)
			}
			var seq []string
			for _, cl := range l.calls {
				seq = append(seq, strings.Fields(cl.sql)[0])
			}
			if gap < time.Millisecond && len(l.batches) == 0 {
				t.Errorf("%s, %v apart: no batch sent", code, gap)
			}
			want := "BEGIN UPDATE INSERT ROLLBACK BEGIN UPDATE INSERT COMMIT"
			if got := strings.Join(seq, " "); got != want || r.Retries != 1 || r.Errors != 0 || r.OK != 4 || len(r.Outcomes) != 0 ||
				r.ReplayedCommits != 1 || r.ReplayedTransactions != r.CapturedTransactions {
				t.Errorf("%v apart, %s: sent %s (want %s); retries %d, errors %d, ok %d, commits %d, transactions %d of %d, outcomes %+v",
					gap, code, got, want, r.Retries, r.Errors, r.OK, r.ReplayedCommits, r.ReplayedTransactions, r.CapturedTransactions, r.Outcomes)
			}
		}
	}
}

// A capture from MySQL's or MariaDB's logs holds no errors: a deadlock
// the replay meets may be one the client met too, whose own retry of the
// transaction is in the log. The replay does not run the block again
// (it would apply it twice): the statement's failure is one the log
// cannot tell.
func TestReplayRetriesNotWhereTheLogHoldsNoErrors(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &capture.Capture{Format: capture.Format, Engine: capture.EngineMySQL, Start: t0, End: t0.Add(ms(40)),
		Texts: []string{"BEGIN", "UPDATE t SET k = k + 1 WHERE id = 1", "COMMIT"},
		Sessions: []capture.Session{{ID: "a", Start: 0, End: ms(40), Statements: []capture.Statement{
			{Offset: ms(0), Text: 0}, {Offset: ms(10), Text: 1}, {Offset: ms(20), Text: 2}}}}}
	l := &log{}
	r, err := Run(context.Background(), Options{Capture: c, Speed: 1, Connect: connector(l, map[string]string{"UPDATE t SET k = k + 1 WHERE id = 1": "40001"})})
	if err != nil {
		t.Fatal(err)
	}
	if r.Retries != 0 || len(l.calls) != 3 || r.Errors != 1 {
		t.Errorf("retries %d, %d statements sent, errors %d, outcomes %+v", r.Retries, len(l.calls), r.Errors, r.Outcomes)
	}
}

// A deadlock the capture had too is not run again: the captured client
// met it as well (and its ROLLBACK or its next BEGIN is in the capture).
func TestReplayKeepsACapturedDeadlock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	deadlock := &capture.Error{SQLState: "40001", Message: "Deadlock found when trying to get lock"}
	c := &capture.Capture{Format: capture.Format, Engine: capture.EnginePostgres, Start: t0, End: t0.Add(ms(40)),
		Texts: []string{"BEGIN", "UPDATE t SET k = k + 1 WHERE id = 1", "ROLLBACK"},
		Sessions: []capture.Session{{ID: "a", Start: 0, End: ms(40), Statements: []capture.Statement{
			{Offset: ms(0), Text: 0, Seq: 1}, {Offset: ms(10), Text: 1, Seq: 2, Error: deadlock}, {Offset: ms(20), Text: 2, Seq: 3}}}}}
	l := &log{}
	r, err := Run(context.Background(), Options{Capture: c, Speed: 1, Connect: connector(l, map[string]string{"UPDATE t SET k = k + 1 WHERE id = 1": "40001"})})
	if err != nil {
		t.Fatal(err)
	}
	if r.Retries != 0 || len(l.calls) != 3 || len(r.Outcomes) != 1 || r.Outcomes[0].Kind != Expected {
		t.Errorf("retries %d, %d statements sent, outcomes %+v", r.Retries, len(l.calls), r.Outcomes)
	}
}

// A block that deadlocks on every try goes again maxRetries times, then
// its statement's deadlock is recorded as the new error it is.
func TestReplayGivesUpAfterRetries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, gap := range []time.Duration{30 * time.Millisecond, time.Microsecond} {
		c := &capture.Capture{Format: capture.Format, Engine: capture.EnginePostgres, Start: t0, End: t0.Add(3 * gap),
			Texts: []string{"BEGIN", "INSERT INTO h VALUES ($1)", "COMMIT"},
			Sessions: []capture.Session{{ID: "a", Start: 0, End: 3 * gap, Statements: []capture.Statement{
				{Offset: 0, Text: 0}, {Offset: gap, Text: 1, Extended: true, Params: []*string{str("1")}}, {Offset: 2 * gap, Text: 2}}}}}
		l := &log{}
		r, err := Run(context.Background(), Options{Capture: c, Speed: 1, Connect: connector(l, map[string]string{"INSERT INTO h VALUES ($1)": "40001"})})
		if err != nil {
			t.Fatal(err)
		}
		if r.Retries != maxRetries || r.Errors != 1 || len(l.calls) != 3+maxRetries*3 {
			t.Errorf("%v apart: retries %d, errors %d, %d statements sent, outcomes %+v", gap, r.Retries, r.Errors, len(l.calls), r.Outcomes)
		}
	}
}
