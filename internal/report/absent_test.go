package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// recovered is sample as dbparity recover leaves a run that died with its
// only checkpoint in the warm-up: the counts, but no latency of the
// measured window (empty histograms), no driver CPU, no database
// profiles or waits, and an OS series without a window.
func recovered(t *testing.T) *result.Run {
	r := sample(t)
	empty, err := result.NewHistogram(metrics.NewHistogram())
	if err != nil {
		t.Fatal(err)
	}
	r.Label, r.Recovered, r.PartialReason = "died", true, "recovered from r.json.journal: the run died after 60s of its measured window"
	r.Driver.CPUUserS, r.Driver.CPUSysS = 0, 0
	for i := range r.Transactions {
		r.Transactions[i].Latency = empty
	}
	r.Commit, r.LoadProfile, r.Waits = empty, nil, nil
	r.OS = &result.OS{Series: []ostat.Rates{{IntervalS: 1, NumCPU: 8, CPUBusyPct: 50}}}
	return r
}

// row is the fields of the line of text whose fields begin with name's.
func row(text, name string) []string {
	want := strings.Fields(name)
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) >= len(want) && strings.Join(f[:len(want)], " ") == name {
			return f
		}
	}
	return nil
}

func TestShowAbsentIsNA(t *testing.T) {
	t.Parallel()
	r := recovered(t)
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"driver CPU   n/a", "database host os (measured window): n/a"} {
		if !strings.Contains(text, want) {
			t.Errorf("show lacks %q:\n%s", want, text)
		}
	}
	// The completed counts stay; the latencies are n/a.
	if f := row(text, "new_order"); strings.Join(f, " ") != "new_order 2727 0 n/a n/a n/a n/a" {
		t.Errorf("new_order row %q:\n%s", f, text)
	}
	// The COMMITs of the window went on after the checkpoint: their count
	// is not known either (it printed "(commit) 0" beside 5280 commits).
	if f := row(text, "(commit)"); strings.Join(f, " ") != "(commit) n/a n/a n/a n/a n/a" {
		t.Errorf("commit row %q:\n%s", f, text)
	}
	if strings.Contains(text, "cpu         user") || strings.Contains(text, "driver CPU   0") {
		t.Errorf("show prints zeros for what the run does not have:\n%s", text)
	}
	var l bytes.Buffer
	if err := Line(&l, r, "r.json"); err != nil || !strings.Contains(l.String(), "new_order p95 n/a ms") {
		t.Errorf("line %q: %v", l.String(), err)
	}
	b.Reset()
	if err := JSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	tx := m["transactions"].(map[string]any)["new_order"].(map[string]any)
	if _, ok := m["os"]; ok || m["driver_cpu_s"] != nil || tx["p95_ms"] != nil {
		t.Errorf("show --json gives absent figures a value: os %v, driver_cpu_s %v, p95_ms %v", m["os"], m["driver_cpu_s"], tx["p95_ms"])
	}
}

// A merged run lists each part's driver: a part recovered from its
// journal has no CPU, share or scheduler figure, and its line says n/a
// where it printed "driver 0.00 s CPU, 0% of 0 CPU(s), scheduler p99 0.00
// ms"; the busiest driver is the busiest of the measured parts, and says
// so. A merged file written before parts were flagged recovered tells
// them by their CPUs (every measured part has some).
func TestShowMergedRecoveredPartIsNA(t *testing.T) {
	t.Parallel()
	for _, flagged := range []bool{true, false} {
		r := recovered(t)
		r.PartialReason = "part 1: recovered from part-1.json.journal: the run died after 3s of its measured window"
		r.Merged = &result.Merged{RunID: "split", SkewMs: 2.5, Busiest: 0, CollectorsFrom: 0, Parts: []result.PartDriver{
			{Index: 0, Host: "drv-a", Users: 4, Committed: 2900,
				Driver: result.Driver{Users: 4, CPUUserS: 1.5, CPUSysS: 0.5, CPUs: 8, CPUShare: 0.12, SchedP99Ms: 0.4}},
			{Index: 1, Host: "drv-b", Users: 4, Committed: 2380, Recovered: flagged, Driver: result.Driver{Users: 4}},
		}}
		var b bytes.Buffer
		if err := Text(&b, r); err != nil {
			t.Fatal(err)
		}
		text := b.String()
		for _, bad := range []string{"0.00 s CPU", "0% of 0 CPU(s)", "scheduler p99 0.00 ms"} {
			if strings.Contains(text, bad) {
				t.Errorf("flagged %v: show prints %q for the recovered part:\n%s", flagged, bad, text)
			}
		}
		if f := strings.Join(row(text, "part 1"), " "); !strings.Contains(f, "2380 commits driver n/a") {
			t.Errorf("flagged %v: the recovered part's line %q:\n%s", flagged, f, text)
		}
		if f := strings.Join(row(text, "part 0"), " "); !strings.Contains(f, "driver 2.00 s CPU, 12% of 8 CPU(s), scheduler p99 0.40 ms") {
			t.Errorf("flagged %v: the measured part's line %q:\n%s", flagged, f, text)
		}
		if !strings.Contains(text, "busiest measured driver part 0 (drv-a) at 12% of its 8 CPU(s)") {
			t.Errorf("flagged %v: no busiest measured driver:\n%s", flagged, text)
		}
	}
}

// compare prints n/a for what a group lacks and leaves it out of every
// ratio and verdict, whichever group is the baseline; the sections the
// baseline lacks still show the other group's figures. A measured zero
// stays a zero, with its ratio.
func TestCompareAbsentIsNA(t *testing.T) {
	t.Parallel()
	whole, died := sample(t), recovered(t)
	whole.OS.Window.CPUIowaitPct = 0 // a measured zero
	for _, order := range [][]*result.Run{{whole, died}, {died, whole}} {
		gs, err := compare.Groups(order, []string{order[0].Label + ".json", order[1].Label + ".json"}, "")
		if err != nil {
			t.Fatal(err)
		}
		c := NewComparison(gs)
		var b bytes.Buffer
		if err := CompareText(&b, c); err != nil {
			t.Fatal(err)
		}
		text := b.String()
		if strings.Contains(text, "0.00x") {
			t.Errorf("an absent figure has a ratio of 0:\n%s", text)
		}
		for _, v := range c.Verdicts[0] {
			if v.Metric != "throughput (tps)" {
				t.Errorf("a verdict on %s, which the recovered run does not have: %s", v.Metric, v)
			}
		}
		if s := compare.PlatformSentence(gs[0], gs[1]); s != "" {
			t.Errorf("a platform finding without the recovered run's OS window: %s", s)
		}
		at := 1 // the recovered group's column
		if order[0] == died {
			at = 0
		}
		// The load profile: per second, then per transaction.
		if f := row(text, "DB time (s)"); len(f) != 7 || f[3+at] != "n/a" || f[3+1-at] == "n/a" || f[5+at] != "n/a" || f[5+1-at] == "n/a" {
			t.Errorf("row %q: want the recovered group n/a beside a figure, per second and per transaction, no ratio\n%s", f, text)
		}
		for _, name := range []string{"new_order p95 ms", "payment p99 ms", "host (all CPUs busy)", "database server", "driver",
			"tps per busy host core", "cpu busy %", "data disk IOPS"} {
			f := row(text, name)
			n := len(strings.Fields(name))
			if len(f) != n+2 || f[n+at] != "n/a" || f[n+1-at] == "n/a" {
				t.Errorf("row %q: want the recovered group n/a beside a figure, no ratio\n%s", f, text)
			}
		}
		if f := row(text, "cpu iowait %"); len(f) != 5 || f[3+1-at] != "0" || f[3+at] != "n/a" {
			t.Errorf("row %q: want the measured zero beside n/a\n%s", f, text)
		}
		if f := row(text, "WALSync"); row(text, "top wait events") == nil || strings.Count(strings.Join(f, " "), "n/a") != 3 {
			t.Errorf("the waits section, or the recovered group's n/a in it, is missing:\n%s", text)
		}
		if f := row(text, "< 512 µs"); len(f) != 7 || f[3+2*at] != "n/a" || f[4+2*at] != "n/a" {
			t.Errorf("latency bucket %q: want n/a for the recovered group\n%s", f, text)
		}
	}

	// Two measured runs: a zero is a zero.
	other := sample(t)
	other.Label = "other"
	other.OS.Window.CPUStealPct = 0
	gs, err := compare.Groups([]*result.Run{sample(t), other}, []string{"a.json", "b.json"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := CompareText(&b, NewComparison(gs)); err != nil {
		t.Fatal(err)
	}
	if f := row(b.String(), "cpu steal %"); strings.Join(f, " ") != "cpu steal % 1.000 0 0.00x" {
		t.Errorf("a measured zero: %q", f)
	}
}

// show --json of a recovered run writes null for what it does not know:
// its statements, and its COMMITs' count when the checkpoint held none.
func TestShowJSONRecoveredIsNull(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := JSON(&b, recovered(t)); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if v, ok := doc["statements"]; !ok || v != nil {
		t.Errorf("statements %v (present %v), want null", v, ok)
	}
	if c, _ := doc["commit"].(map[string]any); c == nil || c["count"] != nil {
		t.Errorf("commit %v, want its count null", doc["commit"])
	}
	b.Reset()
	if err := JSON(&b, sample(t)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"statements": 100000`) {
		t.Errorf("a measured run's statements are gone:\n%s", b.String())
	}
}
