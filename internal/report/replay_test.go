package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/result"
)

func TestReplayReportHidesLiterals(t *testing.T) {
	r := &result.Run{Label: "x", Workload: result.Workload{Name: "replay"}, Replay: &result.Replay{
		Capture: "app.capture", Statements: 3, Replayed: 3, OK: 2, Errors: 1, Literals: true, Order: "session",
		Fingerprints: []result.ReplayFingerprint{{Text: "SELECT * FROM users WHERE name = ?",
			Example: "SELECT * FROM users WHERE name = 'alice'", Calls: 3, Replayed: 3}},
		Outcomes: []result.ReplayOutcome{{Kind: "new error", Fingerprint: "INSERT INTO t VALUES (?)", Replayed: "23505", Count: 1}},
	}}
	var plain, literal bytes.Buffer
	if err := TextWith(&plain, r, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := TextWith(&literal, r, Options{Literals: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "alice") || !strings.Contains(plain.String(), "name = ?") {
		t.Errorf("without --show-literals:\n%s", plain.String())
	}
	if !strings.Contains(literal.String(), "name = 'alice'") {
		t.Errorf("with --show-literals:\n%s", literal.String())
	}
	for _, want := range []string{"1 divergent", "new error", "23505", "statements/s"} {
		if !strings.Contains(plain.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, plain.String())
		}
	}
	var js bytes.Buffer
	if err := JSON(&js, r); err != nil || strings.Contains(js.String(), "alice") {
		t.Errorf("JSON summary without literals: %v\n%s", err, js.String())
	}
	if r.Replay.Fingerprints[0].Example == "" {
		t.Error("the JSON summary changed the run it printed")
	}
}

// The end-state line never says more than was checked.
func TestEndStateLine(t *testing.T) {
	for _, c := range []struct {
		rp   result.Replay
		want string
	}{
		{result.Replay{}, "not checked: replay onto a copy of the starting state with --verify"},
		{result.Replay{Verify: "end.snap", EndStateSkipped: "the replay was interrupted"}, "not verified against end.snap: the replay was interrupted"},
		{result.Replay{EndState: &result.EndState{Summary: "end state: 2 of 2 tables match", Match: 2, Of: 2}}, "end state    2 of 2 tables match"},
		{result.Replay{EndState: &result.EndState{Summary: "end state: 1 of 2 tables match; differ: t: 3 rows, want 4", Match: 1, Of: 2}},
			"END STATE    DIFFERS: 1 of 2 tables match; differ: t: 3 rows, want 4"},
	} {
		if got := endStateLine(&c.rp); !strings.Contains(got, c.want) {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
