package compare

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// docGrades reads the grade rules' table of docs/statistics.md: caveat
// title → grade.
func docGrades(t *testing.T) map[string]string {
	g, _ := docTable(t)
	return g
}

// docTable reads the grade rules' table: title → grade, and the titles
// in the table's order.
func docTable(t *testing.T) (map[string]string, []string) {
	t.Helper()
	f, err := os.Open("../../docs/statistics.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	var order []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "grade-rules:"):
			in = true
		case in && strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| caveat"):
			cells := strings.Split(line, "|")
			out[strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[2])
			order = append(order, strings.TrimSpace(cells[1]))
		case in && len(out) > 0 && !strings.HasPrefix(line, "|"):
			return out, order
		}
	}
	return out, order
}

// The code grades every kind of caveat as docs/statistics.md says, and
// the doc lists every kind the code has.
func TestGradeRulesAsDocumented(t *testing.T) {
	doc := docGrades(t)
	if len(doc) < 10 {
		t.Fatalf("the grade rules' table in docs/statistics.md has %d rows", len(doc))
	}
	titles := map[string]bool{}
	for k, info := range kinds {
		titles[info.title] = true
		got, ok := doc[info.title]
		if !ok {
			t.Errorf("caveat %s (%s) is not in docs/statistics.md's grade rules", info.title, k)
			continue
		}
		if got != info.grade.String() {
			t.Errorf("%s: the doc says %s, the code grades %s", info.title, got, info.grade)
		}
	}
	for title := range doc {
		if !titles[title] {
			t.Errorf("docs/statistics.md lists %s, which the code does not have", title)
		}
	}
	// The table lists the kinds in the order reports do, which decides
	// the kind a NOT A FINDING names.
	_, order := docTable(t)
	var code []string
	for _, k := range rank {
		code = append(code, kinds[k].title)
	}
	if strings.Join(order, ", ") != strings.Join(code, ", ") {
		t.Errorf("the doc's order:\n%s\nthe code's:\n%s", strings.Join(order, ", "), strings.Join(code, ", "))
	}
}

// quiet is a run with nothing to say against it: a steady 100 tps over a
// 30 s window, on a host nobody else used.
func quiet() *result.Run {
	start := time.Unix(1000, 0)
	r := &result.Run{Label: "a", Start: start, MeasureStart: start, MeasureEnd: start.Add(30 * time.Second), End: start.Add(31 * time.Second),
		Transactions: []result.Transaction{{Name: "t", Committed: 3000}}}
	for k := range 30 {
		r.Series = append(r.Series, metrics.Interval{At: float64(k + 1), Seconds: 1, Phase: "measure", Commits: 100})
	}
	r.OS = &result.OS{}
	r.OS.Window.IntervalS, r.OS.Window.NumCPU = 30, 2
	return r
}

// A run with each kind of run caveat gets the grade the doc gives that
// kind, alone and among quiet runs; a quiet run set is TRUSTWORTHY.
func TestRunCaveatGrades(t *testing.T) {
	doc := docGrades(t)
	cases := map[Kind]func(r *result.Run){
		KindFailed:      func(r *result.Run) { r.Failed, r.FailedReason = true, "40% of transactions failed" },
		KindPartial:     func(r *result.Run) { r.Partial, r.PartialReason = true, "interrupted" },
		KindDriverBound: func(r *result.Run) { r.Driver.Bound, r.Driver.BoundReason = true, "the driver used 98% of its CPU" },
		KindHostBusy:    func(r *result.Run) { r.OS.Window.OtherCPUCores = 0.6 },
		KindHostShared:  func(r *result.Run) { r.OS.Window.OtherCPUCores = 0.22 },
		KindDrift: func(r *result.Run) {
			for k := range r.Series[20:] {
				r.Series[20+k].Commits = 50
			}
		},
		KindOutage: func(r *result.Run) {
			r.Events = []result.Event{{Kind: "outage", Start: r.MeasureStart.Add(5 * time.Second), End: r.MeasureStart.Add(8 * time.Second), Failed: 12}}
		},
		KindReconnect: func(r *result.Run) {
			r.Events = []result.Event{{Kind: "disconnect", Start: r.MeasureStart.Add(5 * time.Second), Reconnects: 3}}
		},
		KindBehind: func(r *result.Run) {
			r.Driver.Rate = &result.Rate{TargetTPS: 200, AchievedTPS: 100, MaxLagS: 15, Behind: true, BehindReason: "served 50% of the rate"}
		},
		KindSteal: func(r *result.Run) { r.OS.Window.CPUStealPct = 7 },
		KindOneHost: func(r *result.Run) {
			r.Parts = []*result.Run{quiet(), quiet(), quiet(), quiet()}
		},
		KindEndState: func(r *result.Run) {
			r.Replay = &result.Replay{CaptureSeconds: 10, ReplaySeconds: 10,
				EndState: &result.EndState{Match: 3, Of: 4, Summary: "end state: 3 of 4 tables match"}}
		},
		KindUnverified: func(r *result.Run) { r.Replay = &result.Replay{CaptureSeconds: 10, ReplaySeconds: 10} },
		KindOutcomes: func(r *result.Run) {
			r.Replay = &result.Replay{CaptureSeconds: 10, ReplaySeconds: 10, EndState: &result.EndState{Match: 4, Of: 4},
				Outcomes: []result.ReplayOutcome{{Kind: "new error", Count: 5}}}
		},
		KindLag: func(r *result.Run) {
			r.Replay = &result.Replay{CaptureSeconds: 10, ReplaySeconds: 18, EndState: &result.EndState{Match: 4, Of: 4},
				Lag: &result.Histogram{Count: 100, P50Ms: 6900, MaxMs: 12100}}
		},
	}
	if a := Assess(GroupCaveats(Group{Label: "a", Runs: []*result.Run{quiet(), quiet(), quiet()}}), 3); a.Grade != Trustworthy || len(a.Lines) != 0 {
		t.Errorf("three quiet runs: %s %q", a.Label, a.Lines)
	}
	for k, inject := range cases {
		r := quiet()
		inject(r)
		cs := RunCaveats(r, "x.json")
		found := false
		for _, c := range cs {
			found = found || c.Kind == k
		}
		if !found {
			t.Errorf("%s: the run's caveats are %+v", k, cs)
			continue
		}
		want := doc[kinds[k].title]
		g := Group{Label: "a", Runs: []*result.Run{quiet(), r, quiet()}, Files: []string{"q1.json", "x.json", "q2.json"}}
		a := Assess(GroupCaveats(g), 3)
		if a.Grade.String() != want {
			t.Errorf("%s: graded %s, the doc says %s (%q)", k, a.Label, want, a.Lines)
		}
		if len(a.Lines) != 1 || !strings.HasPrefix(a.Lines[0], kinds[k].title+": 1 of 3 runs ") || !strings.Contains(a.Lines[0], "x.json") {
			t.Errorf("%s: lines %q", k, a.Lines)
		}
		if len(a.Runs) != 1 || a.Runs[0].Files[0] != "x.json" {
			t.Errorf("%s: runs behind the caveat %+v", k, a.Runs)
		}
	}
}

// Caveats of one kind are one line with the count and the worst case,
// however many runs have them; the grade's label counts the kinds.
func TestCaveatsGrouped(t *testing.T) {
	var runs []*result.Run
	var files []string
	for i, d := range []float64{0.5, 0.8, 0.6} { // the last third's share of the first
		r := quiet()
		for k := range r.Series[20:] {
			r.Series[20+k].Commits = int64(100 * d)
		}
		runs, files = append(runs, r), append(files, []string{"r1.json", "r2.json", "r3.json"}[i])
	}
	runs = append(runs, quiet())
	files = append(files, "r4.json")
	runs[1].OS.Window.OtherCPUCores = 0.2
	a := Assess(GroupCaveats(Group{Label: "a", Runs: runs, Files: files}), 4)
	if a.Grade != ReadWithCare || a.Label != "READ WITH CARE (2 reasons)" {
		t.Errorf("label %q", a.Label)
	}
	want := "NOT STATIONARY: 3 of 4 runs drifted more than 10% in throughput within their window (worst: r1.json, -50%)"
	if len(a.Lines) != 2 || a.Lines[1] != want || !strings.HasPrefix(a.Lines[0], "HOST SHARED: 1 of 4 runs") {
		t.Errorf("lines %q, want the host shared (a cause) first, then %q", a.Lines, want)
	}
	// A blocking kind leads, and names the grade.
	runs[3].Driver.Bound, runs[3].Driver.BoundReason = true, "the driver used all its CPU"
	a = Assess(GroupCaveats(Group{Label: "a", Runs: runs, Files: files}), 4)
	if a.Grade != NotAFinding || a.Label != "NOT A FINDING (DRIVER-BOUND)" || !strings.HasPrefix(a.Lines[0], "DRIVER-BOUND: 1 of 4 runs") {
		t.Errorf("%s %q", a.Label, a.Lines)
	}
	// The verdict's own statistics: no interval is no finding.
	v := Paired("throughput (tps)", []float64{100, 100}, []float64{90, 99}, nil)
	if a := Assess(VerdictCaveats(v), 4); a.Grade != NotAFinding || !strings.Contains(a.Lines[0], "3 rounds or more give one") {
		t.Errorf("2 rounds: %s %q", a.Label, a.Lines)
	}
	if d := Drift(runs[0]); math.Abs(d+0.5) > 1e-9 {
		t.Errorf("drift %v", d)
	}
}

// The driver or a busy host setting fewer than a quarter of the runs'
// figures bends the answer (READ WITH CARE, the run named); a quarter or
// more makes it no finding.
func TestShareOfRunsDecides(t *testing.T) {
	var runs []*result.Run
	var files []string
	for i := range 8 {
		runs, files = append(runs, quiet()), append(files, fmt.Sprintf("r%d.json", i))
	}
	runs[3].OS.Window.OtherCPUCores = 0.8
	a := Assess(GroupCaveats(Group{Label: "a", Runs: runs, Files: files}), 8)
	if a.Grade != ReadWithCare || !strings.HasPrefix(a.Lines[0], "HOST BUSY: 1 of 8 runs") {
		t.Errorf("1 of 8 runs on a busy host: %s %q", a.Label, a.Lines)
	}
	runs[5].Driver.Bound, runs[5].Driver.BoundReason = true, "its sessions waited for a CPU"
	runs[6].OS.Window.OtherCPUCores = 0.9
	a = Assess(GroupCaveats(Group{Label: "a", Runs: runs, Files: files}), 8)
	if a.Grade != NotAFinding || a.Label != "NOT A FINDING (HOST BUSY)" {
		t.Errorf("2 of 8 runs on a busy host, 1 driver-bound: %s %q", a.Label, a.Lines)
	}
}

// An end state that differs after the replay let sessions go in another
// order to break cycles says so in its caveat: the cause a reader acts on.
func TestEndStateCaveatNamesReleases(t *testing.T) {
	r := quiet()
	r.Replay = &result.Replay{CaptureSeconds: 10, ReplaySeconds: 10,
		EndState: &result.EndState{Match: 1, Of: 2, Summary: "end state: 1 of 2 tables match"},
		Releases: []result.ReplayRelease{{AtS: 1.9}, {AtS: 5.5}}}
	for _, c := range RunCaveats(r, "x.json") {
		if c.Kind == KindEndState {
			if !strings.Contains(c.Detail, "1 of 2 tables match; the replay released 2 synchronisation waits") {
				t.Errorf("caveat %q", c.Detail)
			}
			return
		}
	}
	t.Error("no end-state caveat")
}
