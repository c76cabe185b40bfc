package result

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/dbparity/dbparity/internal/metrics"
)

// decode is v's JSON as maps.
func decode(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A recovered run's file leaves out what its journal did not hold, which
// a reader took for measured zeros: its statement counts (the run's and
// each phase's: the checkpoint's stop where it was taken, the intervals
// after it carry none), its reconnects, a sliced run's active time, the
// count and percentiles of a latency histogram its checkpoint held
// nothing of. A measured run keeps its zeros, but an empty histogram has
// no percentiles in any run (it had "p50_ms": 0). What it does know
// stays, and the file reads back.
func TestRecoveredJSONLeavesOutWhatItDoesNotKnow(t *testing.T) {
	empty, err := NewHistogram(metrics.NewHistogram())
	if err != nil {
		t.Fatal(err)
	}
	r := sample()
	r.Recovered, r.Partial = true, true
	r.Statements, r.Commit = 0, empty
	r.Transactions[1].Latency = empty
	r.Phases = map[string]Phase{"measure": {Committed: map[string]int64{"new_order": 900}}}
	r.Driver = Driver{Users: 4, Slicing: &Slicing{SliceS: 1, With: "b"}}
	m := decode(t, r)
	drv := m["driver"].(map[string]any)
	sl := drv["slicing"].(map[string]any)
	commit := m["commit"].(map[string]any)
	txs := m["transactions"].([]any)
	known := txs[0].(map[string]any)["latency"].(map[string]any)
	none := txs[1].(map[string]any)["latency"].(map[string]any)
	measure := m["phases"].(map[string]any)["measure"].(map[string]any)
	for what, absent := range map[string]bool{
		"statements":                  m["statements"] == nil,
		"phases.measure.statements":   measure["statements"] == nil,
		"driver.reconnects":           drv["reconnects"] == nil,
		"driver.slicing.active_s":     sl["active_s"] == nil,
		"commit.count":                commit["count"] == nil,
		"commit.p50_ms":               commit["p50_ms"] == nil,
		"commit.mean_ms":              commit["mean_ms"] == nil,
		"payment latency.count":       none["count"] == nil,
		"payment latency.p99_ms":      none["p99_ms"] == nil,
		"driver.cpu_user_s":           drv["cpu_user_s"] == nil,
		"driver.sched_latency_p99_ms": drv["sched_latency_p99_ms"] == nil,
	} {
		if !absent {
			t.Errorf("the recovered run's file holds %s", what)
		}
	}
	if known["count"] != 1.0 || known["p50_ms"] == nil || txs[1].(map[string]any)["committed"] != 300.0 ||
		drv["users"] != 4.0 || sl["slice_s"] != 1.0 || measure["committed"] == nil || commit["hdr"] == nil {
		t.Errorf("the recovered run's file lacks what it knows: %v", m)
	}
	p := filepath.Join(t.TempDir(), "r.json")
	if err := Write(p, r); err != nil {
		t.Fatal(err)
	}
	back, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if back.Commit.Count != 0 || back.Commit.HDR != empty.HDR || back.Transactions[0].Latency.P50Ms != r.Transactions[0].Latency.P50Ms || !back.Recovered {
		t.Errorf("read back: %+v", back)
	}

	// A measured run: its zeros stay, an empty histogram has its count
	// but no percentiles.
	r = sample()
	r.Commit = empty
	m = decode(t, r)
	commit = m["commit"].(map[string]any)
	if m["statements"] != 20000.0 || m["driver"].(map[string]any)["reconnects"] != 0.0 || commit["count"] != 0.0 || commit["p50_ms"] != nil {
		t.Errorf("a measured run: statements %v, reconnects %v, commit %v", m["statements"], m["driver"].(map[string]any)["reconnects"], commit)
	}
	// Older files, with zeros where the percentiles are absent, read as
	// before.
	var h Histogram
	if err := json.Unmarshal([]byte(`{"count":0,"mean_ms":0,"p50_ms":0,"p99_ms":0,"max_ms":0,"hdr":"`+empty.HDR+`"}`), &h); err != nil || h.Count != 0 || h.HDR != empty.HDR {
		t.Errorf("an older empty histogram: %+v %v", h, err)
	}
}
