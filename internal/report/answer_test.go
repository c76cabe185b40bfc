package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// One answer per report: a sweep's is throughput at equal CPU (the
// throughput verdict at its top step stays in its table), and a wait
// difference that lies within the runs' own spread is no headline.
func TestOneAnswer(t *testing.T) {
	t.Parallel()
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
	hs := strings.Join(headlines(c.Answer()), "\n")
	if !strings.Contains(hs, "b is 10.0% slower than a at equal CPU") {
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
	if !strings.HasPrefix(strings.SplitN(text.String(), "the answer\n", 2)[1], "    b is 10.0% slower than a at equal CPU") {
		t.Errorf("the text report does not open with the answer:\n%s", text.String())
	}
}

// AWR's layout side by side: one load profile table with per second and
// per transaction; the waits of every run with samples, time and share;
// rows no group has are left out.
func TestAWRSideBySide(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	if !strings.Contains(out, "    efficiency of the targets added: 100% (1+1 runs give no interval") {
		t.Errorf("the answer is not the efficiency of the targets added:\n%s", out)
	}
	if f := strings.Fields(strings.SplitN(out, "efficiency of the targets added (", 2)[1]); len(f) < 7 || f[5] != "100%" || f[6] != "100%" {
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
	t.Parallel()
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

// Study 005: the answer names the versions and their compilers, a
// compiler that differs is a caveat, and settings whose defaults differ
// by packaging are apart from those the version changed.
func TestVersionsAnswer(t *testing.T) {
	t.Parallel()
	a, fa := runs(t, "pg15", 3, 1)
	b, fb := runs(t, "pg17", 3, 0.85)
	for _, r := range a {
		r.Disclosure.Database = &result.Database{Version: "15.18 (Debian 15.18-0+deb12u1)",
			Build:    "PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit",
			Defaults: map[string]string{"unix_socket_directories": "/var/run/postgresql", "krb_server_keyfile": "FILE:/etc/postgresql-common/krb5.keytab", "vacuum_buffer_usage_limit": ""}}
	}
	for _, r := range b {
		r.Disclosure.Database = &result.Database{Version: "17.2",
			Build:    "PostgreSQL 17.2 on x86_64-pc-linux-gnu, compiled by gcc (Ubuntu 7.5.0-3ubuntu1~18.04) 7.5.0, 64-bit",
			Defaults: map[string]string{"unix_socket_directories": "/tmp", "krb_server_keyfile": "FILE:/usr/local/etc/krb5.keytab", "vacuum_buffer_usage_limit": ""}}
	}
	// A default the version changed.
	a[0].Disclosure.Database.Defaults["jit"] = "off"
	b[0].Disclosure.Database.Defaults["jit"] = "on"
	c := NewComparison([]compare.Group{{Label: "pg15", Runs: a, Files: fa}, {Label: "pg17", Runs: b, Files: fb}})
	an := c.Answer()
	if len(an.Sentences) != 2 || !strings.HasPrefix(an.Sentences[0], "pg17 is 15.") ||
		an.Sentences[1] != "servers pg15: 15.18 (Debian 15.18-0+deb12u1) built by gcc 12.2.0 against pg17: 17.2 built by gcc 7.5.0" {
		t.Errorf("sentences %q", an.Sentences)
	}
	if j := strings.Join(an.Assessment.Lines, "\n"); !strings.Contains(j, "BUILD DIFFERS: the servers were built by different compilers (gcc 12.2.0 against gcc 7.5.0)") {
		t.Errorf("caveats %q", an.Assessment.Lines)
	}
	var text strings.Builder
	if err := CompareText(&text, c); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	_, pack, _ := strings.Cut(out, "settings whose defaults differ by packaging")
	_, ver, _ := strings.Cut(out, "settings whose defaults differ between the versions")
	ver, _, _ = strings.Cut(ver, "settings whose defaults differ by packaging")
	if !strings.Contains(pack, "unix_socket_directories") || !strings.Contains(pack, "krb_server_keyfile") || strings.Contains(pack, "jit") {
		t.Errorf("packaging section:\n%s", out)
	}
	if !strings.Contains(ver, "jit") || strings.Contains(ver, "krb_server_keyfile") {
		t.Errorf("the version's defaults section:\n%s", out)
	}
}

// Study 004: a comparison of replays answers with pace, end state and
// outcomes changed; show of a replay leads with them, and a replay that
// fell behind says so there.
func TestReplayAnswer(t *testing.T) {
	t.Parallel()
	replay := func(label string, secs float64, match int, changed int64, lagMs float64) *result.Run {
		r := sample(t)
		r.Label, r.Partial, r.PartialReason = label, false, ""
		r.Replay = &result.Replay{Capture: "app.capture", CaptureSeconds: 20, ReplaySeconds: secs, Speed: 1,
			EndState: &result.EndState{Match: match, Of: 4, Summary: fmt.Sprintf("end state: %d of 4 tables match", match)},
			Lag:      &result.Histogram{Count: 10, P50Ms: lagMs / 2, MaxMs: lagMs}}
		if changed > 0 {
			r.Replay.Outcomes = []result.ReplayOutcome{{Kind: "new error", Count: changed, Fingerprint: "insert into t values (?)"}}
		}
		return r
	}
	a, b := replay("pg15", 20, 4, 0, 5), replay("pg17", 36.2, 4, 0, 12100)
	c := NewComparison([]compare.Group{{Label: "pg15", Runs: []*result.Run{a}, Files: []string{"a.json"}},
		{Label: "pg17", Runs: []*result.Run{b}, Files: []string{"b.json"}}})
	an := c.Answer()
	want := []string{"pg15 replayed in 1.00x its capture's time; end state 4 of 4 tables match; 0 outcomes changed",
		"pg17 replayed in 1.81x its capture's time; end state 4 of 4 tables match; 0 outcomes changed; fell behind its pace by up to 12.1 s"}
	if strings.Join(an.Sentences, "\n") != strings.Join(want, "\n") {
		t.Errorf("sentences %q", an.Sentences)
	}
	if an.Assessment.Grade != compare.ReadWithCare || !strings.HasPrefix(an.Assessment.Lines[0], "BEHIND PACE: 1 of 2 runs fell behind the capture's pace (b.json, lag p50 6.0 s, max 12.1 s)") {
		t.Errorf("%s %q", an.Assessment.Label, an.Assessment.Lines)
	}
	// An end state unlike the application's is no finding.
	d := replay("pg17", 20.5, 3, 7, 5)
	an = NewComparison([]compare.Group{{Label: "pg15", Runs: []*result.Run{a}, Files: []string{"a.json"}},
		{Label: "pg17", Runs: []*result.Run{d}, Files: []string{"d.json"}}}).Answer()
	if an.Assessment.Label != "NOT A FINDING (END STATE DIFFERS)" || !strings.Contains(an.Sentences[1], "END STATE DIFFERS: 3 of 4 tables match; 7 outcomes changed") {
		t.Errorf("%s %q", an.Assessment.Label, an.Sentences)
	}
	var out strings.Builder
	if err := Text(&out, b); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(strings.SplitN(out.String(), "\n\n", 2)[1], "\n  throughput")
	if !strings.HasPrefix(first, "  answer       replayed in 1.81x its capture's time (20.0 s captured, 36.2 s replayed); end state 4 of 4 tables match; 0 outcomes changed; BEHIND its pace: lag p50 6.0 s, max 12.1 s\n  grade        READ WITH CARE (1 reason)") {
		t.Errorf("show of a replay does not lead with pace and end state:\n%s", out.String())
	}
}

// A single run whose throughput drifted says so in show, as compare does.
func TestShowSaysDrift(t *testing.T) {
	t.Parallel()
	r := sample(t)
	r.Partial, r.PartialReason = false, ""
	for k := range 30 {
		c := int64(1343)
		if k >= 20 {
			c = 620
		}
		r.Series = append(r.Series, metrics.Interval{At: float64(k + 1), Seconds: 1, Phase: "measure", Commits: c})
	}
	var out strings.Builder
	if err := Text(&out, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "  grade        READ WITH CARE (1 reason)\n               NOT STATIONARY: the run drifted more than 10% in throughput within its window (-54%)\n\n  throughput") {
		t.Errorf("show does not say the run drifted:\n%s", out.String())
	}
}

// Two rounds give a ratio and no interval, and the report is no finding;
// the sweep's USL fit that failed is not kept, and says why.
func TestTwoRoundsNoFinding(t *testing.T) {
	t.Parallel()
	a, fa := runs(t, "a", 2, 1)
	b, fb := runs(t, "b", 2, 0.9)
	for i := range a {
		a[i].Round, b[i].Round = i+1, i+1
	}
	// Rounds 30% apart: the interval at one degree of freedom would be absurd.
	b[1].Transactions[0].Committed = b[1].Transactions[0].Committed * 13 / 10
	c := NewComparison([]compare.Group{{Label: "a", Runs: a, Files: fa}, {Label: "b", Runs: b, Files: fb}})
	an := c.Answer()
	if len(an.Sentences) != 1 || strings.Contains(an.Sentences[0], "CI") || !strings.Contains(an.Sentences[0], "give no interval") {
		t.Errorf("sentences %q", an.Sentences)
	}
	if !strings.HasPrefix(an.Assessment.Label, "NOT A FINDING (NO INTERVAL)") {
		t.Errorf("grade %s", an.Assessment.Label)
	}
	var text strings.Builder
	if err := CompareText(&text, c); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "throughput (tps)     b throughput = ") && strings.Contains(text.String(), "95% CI") &&
		strings.Contains(strings.SplitN(text.String(), "throughput (tps)", 2)[1][:120], "CI") {
		t.Errorf("the verdict table prints an interval from 2 rounds:\n%s", text.String())
	}
}

// A table that differs for a cause the report names is not counted as
// matching in the answer: the detail says "0 of 1 tables match; 1 differ
// for a named cause", and the answer must not say "1 of 1 match".
func TestEndStateWordsCountNamedCausesApart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		es   result.EndState
		want string
	}{
		{result.EndState{Match: 0, Explained: 1, Of: 1}, "end state 0 of 1 tables match, 1 differs for a named cause"},
		{result.EndState{Match: 2, ClockOnly: 1, Explained: 2, Of: 5}, "end state 3 of 5 tables match, 2 differ for a named cause"},
		{result.EndState{Match: 1, Explained: 1, Of: 3}, "END STATE DIFFERS: 1 of 3 tables match, 1 differs for a named cause"},
		{result.EndState{Match: 4, Of: 4}, "end state 4 of 4 tables match"},
	} {
		es := c.es
		if got := endStateWords(&result.Replay{EndState: &es}); got != c.want {
			t.Errorf("%+v: %q, want %q", c.es, got, c.want)
		}
	}
}
