package replay

import (
	"context"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
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
	}
}
