package replay

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
)

// outcomeCapture: session a's block rolled back in the capture (its
// INSERTs succeeded); b's block committed; c and d write alone; e's
// block never ended (the session closed inside it).
func outcomeCapture(errorsKnown bool) *capture.Capture {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := func(at, text int) capture.Statement {
		return capture.Statement{Offset: ms(at), Duration: ms(1), Text: text, Seq: int64(at + 1)}
	}
	return &capture.Capture{Format: capture.Format, Start: t0, End: t0.Add(ms(100)), ErrorsUnknown: !errorsKnown,
		Texts: []string{"BEGIN", "INSERT INTO t VALUES (1)", "INSERT INTO u VALUES (1)", "ROLLBACK", "INSERT INTO x VALUES (1)",
			"COMMIT", "INSERT INTO w VALUES (1)", "SELECT * FROM v", "INSERT INTO y VALUES (1)"},
		Sessions: []capture.Session{
			{ID: "a", Start: 0, End: ms(100), Statements: []capture.Statement{st(0, 0), st(1, 1), st(2, 2), st(3, 3)}},
			{ID: "b", Start: 0, End: ms(100), Statements: []capture.Statement{st(10, 0), st(11, 4), st(12, 5)}},
			{ID: "c", Start: 0, End: ms(100), Statements: []capture.Statement{st(20, 6)}},
			{ID: "d", Start: 0, End: ms(100), Statements: []capture.Statement{st(30, 7)}},
			{ID: "e", Start: 0, End: ms(100), Statements: []capture.Statement{st(40, 0), st(41, 8)}},
		}}
}

// A statement that fails otherwise than captured inside a transaction
// that rolled back in the capture and rolls back in the replay changed
// no outcome: counted apart (rolled back alike). The rest are outcome
// changes, and those that write (a COMMIT that rolled back, for its
// block's writes) say the end state likely differs, and where. From a
// log that records no errors, a failure is one the log cannot tell.
func TestOutcomesAgreeWithEndState(t *testing.T) {
	fail := map[string]string{"INSERT INTO t VALUES (1)": "23505", "INSERT INTO x VALUES (1)": "23505",
		"INSERT INTO w VALUES (1)": "23505", "SELECT * FROM v": "42P01", "INSERT INTO y VALUES (1)": "23505"}
	r, err := Run(context.Background(), Options{Capture: outcomeCapture(true), Speed: 0, Connect: connector(&log{}, fail)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, o := range r.Outcomes {
		got[o.Kind+" "+o.Fingerprint] += o.Count
	}
	want := map[string]int64{
		RolledBackAlike + " INSERT INTO t VALUES (...)": 1, // a: rolled back in both
		New + " INSERT INTO x VALUES (...)":             1, // b: its block committed in the capture
		RolledBack + " COMMIT":                          1,
		New + " INSERT INTO w VALUES (...)":             1,
		New + " SELECT * FROM v":                        1,
		RolledBackAlike + " INSERT INTO y VALUES (...)": 1, // e: closed inside its block, as captured
	}
	if len(got) != len(want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	// x's INSERT, b's COMMIT (its block wrote x), w's INSERT: the SELECT
	// writes nothing.
	if r.WritesChanged != 3 || !slices.Equal(r.TablesChanged, []string{"w", "x"}) || r.WritesUntold != 0 {
		t.Errorf("writes changed %d in %v, untold %d", r.WritesChanged, r.TablesChanged, r.WritesUntold)
	}

	// MySQL's logs: the failures the capture does not show are not new.
	fail = map[string]string{"INSERT INTO w VALUES (1)": "23000", "SELECT * FROM v": "42S02"}
	r, err = Run(context.Background(), Options{Capture: outcomeCapture(false), Speed: 0, Connect: connector(&log{}, fail)})
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]int64{}
	for _, o := range r.Outcomes {
		got[o.Kind+" "+o.Fingerprint+" "+o.Captured+">"+o.Replayed] += o.Count
	}
	if len(got) != 2 || got[Untold+" INSERT INTO w VALUES (...) >23000"] != 1 || got[Untold+" SELECT * FROM v >42S02"] != 1 ||
		r.WritesChanged != 0 || r.WritesUntold != 1 {
		t.Errorf("from a log without errors: outcomes %v, writes changed %d, untold %d", got, r.WritesChanged, r.WritesUntold)
	}
}
