package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/result"
)

func TestReplayReportHidesLiterals(t *testing.T) {
	t.Parallel()
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

// Statements the replay could not send are in the headline, apart from
// those a flag left out.
func TestHeadlineNotReplayed(t *testing.T) {
	t.Parallel()
	r := &result.Run{Label: "x", Workload: result.Workload{Name: "replay"}, Replay: &result.Replay{
		Capture: "app.capture", Statements: 20, Replayed: 3, OK: 3, Order: "session",
		NotReplayed: map[string]int64{"statements with binary parameters of a type not decoded": 14,
			"session excluded by --include-session / --exclude-session": 3}}}
	var b bytes.Buffer
	if err := TextWith(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "0 divergent statements; 14 captured statements NOT REPLAYED") {
		t.Errorf("headline:\n%s", b.String())
	}
	r.Replay.NotReplayed = map[string]int64{"session excluded by --include-session / --exclude-session": 3}
	b.Reset()
	if err := TextWith(&b, r, Options{}); err != nil || strings.Contains(b.String(), "NOT REPLAYED") {
		t.Errorf("a flag's choice in the headline (%v):\n%s", err, b.String())
	}
}

// The end-state line never says more than was checked.
func TestEndStateLine(t *testing.T) {
	t.Parallel()
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

// Two replays compared read as replays: statements per second, not
// transactions; each side's captured and replayed time, transactions per
// second from the replayed transactions, and the divergence side by
// side, the end state n/a where it was not verified.
func TestCompareReplays(t *testing.T) {
	t.Parallel()
	a, fa := runs(t, "old", 3, 1)
	b, fb := runs(t, "new", 3, 1)
	for i, r := range append(a, b...) {
		r.Workload.Name = "replay"
		s := r.Summarize()
		r.Replay = &result.Replay{CaptureSeconds: 20, ReplaySeconds: s.DurationS, ReplayedTransactions: int64(float64(s.Commits) / 10),
			Outcomes: []result.ReplayOutcome{{Kind: "new error", Count: int64(i)}}}
		if i >= 3 {
			r.Replay.EndState = &result.EndState{Of: 4, Match: 3}
		}
	}
	gs, err := compare.Groups(append(a, b...), append(fa, fb...), "")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := CompareText(&out, NewComparison(gs)); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"throughput (statements/s)", "captured elapsed s", "replayed elapsed s", "statements/s",
		"transactions/s", "divergence against the capture", "new errors", "end-state tables differing"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
	if strings.Contains(text, "throughput (tps)") {
		t.Errorf("a replay's statements counted as transactions:\n%s", text)
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "end-state tables differing") && !strings.Contains(l, "n/a") {
			t.Errorf("the unverified side's end state is not n/a: %q", l)
		}
	}
}
