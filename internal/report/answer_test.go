package report

import (
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/result"
)

// One answer per report: a sweep's is throughput at equal CPU (the
// throughput verdict at its top step stays in its table), and a wait
// difference that lies within the runs' own spread is no headline.
func TestOneAnswer(t *testing.T) {
	var ra, rb []*result.Run
	var fa, fb []string
	for _, u := range []float64{1, 2, 4} {
		for k, scale := range []float64{0.99, 1.01} {
			a, b := sample(t), sample(t)
			for _, r := range []*result.Run{a, b} {
				r.Partial, r.PartialReason = false, ""
				r.Step = &result.Step{Param: "users", Value: u}
				r.Driver.Users = int(u)
				cores := 0.5 * u * scale
				r.OS.Window.ServerCPUCores = &cores
			}
			a.Label, b.Label = "a", "b"
			for i := range a.Transactions {
				a.Transactions[i].Committed = int64(float64(a.Transactions[i].Committed) * u * scale)
				b.Transactions[i].Committed = int64(float64(b.Transactions[i].Committed) * u * scale * 0.9)
			}
			// b's host waited more for a CPU in one run only: noise.
			if k == 0 {
				b.OS.Window.RunDelayPerS = f(3)
			}
			ra, rb = append(ra, a), append(rb, b)
			fa, fb = append(fa, "a.json"), append(fb, "b.json")
		}
	}
	c, err := NewComparisonWith([]compare.Group{{Label: "a", Runs: ra, Files: fa}, {Label: "b", Runs: rb, Files: fb}}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hs := strings.Join(c.headlines(), "\n")
	if !strings.Contains(hs, "b throughput at equal CPU") {
		t.Errorf("the sweep's answer is not throughput at equal CPU:\n%s", hs)
	}
	if strings.Contains(hs, "b throughput = ") {
		t.Errorf("a second B/A figure among the headlines:\n%s", hs)
	}
	if strings.Contains(hs, "waited for a CPU") {
		t.Errorf("a difference within the runs' spread as a headline:\n%s", hs)
	}
	var text strings.Builder
	if err := CompareText(&text, c); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.SplitN(text.String(), "the answer\n", 2)[1], "    b throughput at equal CPU") {
		t.Errorf("the text report does not open with the answer:\n%s", text.String())
	}
}

// AWR's layout side by side: one load profile table with per second and
// per transaction; the waits of every run with samples, time and share;
// rows no group has are left out.
func TestAWRSideBySide(t *testing.T) {
	a, fa := runs(t, "native", 2, 1)
	b, fb := runs(t, "vm", 2, 0.9)
	for _, r := range append(a, b...) {
		r.Transactions = append(r.Transactions, result.Transaction{Name: "never_ran"})
	}
	c := NewComparison([]compare.Group{{Label: "native", Runs: a, Files: fa}, {Label: "vm", Runs: b, Files: fb}})
	var text strings.Builder
	if err := CompareText(&text, c); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, want := range []string{"load profile (per second and per transaction", "native /s", "vm /tx", "time s", "% DB time"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q:\n%s", want, out)
		}
	}
	for _, gone := range []string{"load profile per transaction", "Block changes", "never_ran p95"} {
		if strings.Contains(out, gone) {
			t.Errorf("%q is still there:\n%s", gone, out)
		}
	}
}

// Runs that each drove several targets at once get the scale-out table:
// targets, throughput in total and per target, and the efficiency of the
// targets added.
func TestOverHosts(t *testing.T) {
	agg := func(label string, n int) *result.Run {
		var parts []*result.Run
		for range n {
			p := sample(t)
			p.Partial, p.PartialReason = false, ""
			parts = append(parts, p)
		}
		r, err := result.Aggregate(label, parts)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	c := NewComparison([]compare.Group{{Label: "four", Runs: []*result.Run{agg("four", 4)}, Files: []string{"four.json"}},
		{Label: "eight", Runs: []*result.Run{agg("eight", 8)}, Files: []string{"eight.json"}}})
	var text strings.Builder
	if err := CompareText(&text, c); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, want := range []string{"over the targets", "targets"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q:\n%s", want, out)
		}
	}
	if f := strings.Fields(strings.SplitN(out, "efficiency of the targets added", 2)[1]); len(f) < 7 || f[5] != "100%" || f[6] != "100%" {
		t.Errorf("efficiency %q, want 100%% for twice the targets at twice the throughput:\n%s", f, out)
	}
	if f := strings.Fields(strings.SplitN(out, "\n    targets", 2)[1]); len(f) < 3 || f[0] != "4" || f[1] != "8" || f[2] != "2.00x" {
		t.Errorf("targets row %q", f)
	}
}

// The server's own timed waits (MySQL's and MariaDB's
// performance_schema) are compared as AWR's top timed events: over every
// run of each group, waits, total time, the average wait and the share of
// wait time, the class last; a group without them says n/a.
func TestTimedWaitsSideBySide(t *testing.T) {
	run := func(label string, count, secs float64) *result.Run {
		r := sample(t)
		r.Label, r.Partial, r.PartialReason = label, false, ""
		r.TimedWaits = &result.TimedWaits{Source: "performance_schema", Events: []result.TimedWait{
			{Class: "io", Event: "wait/io/file/innodb/innodb_log_file", Count: count, Seconds: secs},
			{Class: "synch", Event: "wait/synch/mutex/innodb/log_sys_mutex", Count: 1000, Seconds: 0.5},
		}}
		return r
	}
	bare := sample(t)
	bare.Label, bare.Partial, bare.PartialReason = "bare", false, ""
	c := NewComparison([]compare.Group{
		{Label: "a", Runs: []*result.Run{run("a", 2000, 1), run("a", 2000, 1)}, Files: []string{"a1.json", "a2.json"}},
		{Label: "b", Runs: []*result.Run{run("b", 1000, 3.5)}, Files: []string{"b.json"}},
		{Label: "bare", Runs: []*result.Run{bare}, Files: []string{"bare.json"}}})
	var text strings.Builder
	if err := CompareText(&text, c); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	if !strings.Contains(out, "timed wait events") {
		t.Fatalf("no timed waits table:\n%s", out)
	}
	// a: 4000 waits, 2 s, 0.5 ms each, 2/(2+1) of the wait time; b: 1000
	// waits, 3.5 s, 3.5 ms, 3.5/4 of it; bare: n/a.
	want := "wait/io/file/innodb/innodb_log_file 4000 2.00 0.500 66.7 1000 3.50 3.500 87.5 n/a n/a n/a n/a io"
	if f := row(out, "wait/io/file/innodb/innodb_log_file"); strings.Join(f, " ") != want {
		t.Errorf("row %q\nwant %q\n%s", strings.Join(f, " "), want, out)
	}
	// Most time first over the groups.
	if strings.Index(out, "innodb_log_file") > strings.Index(out, "log_sys_mutex") {
		t.Errorf("events not ordered by time:\n%s", out)
	}
}
