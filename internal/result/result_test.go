package result

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/metrics"
)

func sample() *Run {
	h := metrics.NewHistogram()
	h.Record(3 * time.Millisecond)
	hist, _ := NewHistogram(h)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &Run{
		Schema: Schema, Label: "native", MeasureStart: start, MeasureEnd: start.Add(2 * time.Minute),
		Workload:     Workload{Name: "order-entry"},
		Transactions: []Transaction{{Name: "new_order", Committed: 900, Rollbacks: 10, Latency: hist}, {Name: "payment", Committed: 300, Errors: 4}},
		Errors:       map[string]int64{"deadlock": 4},
		Driver:       Driver{CPUUserS: 1.5, CPUSysS: 0.5},
		Statements:   20000,
	}
}

func TestSummarize(t *testing.T) {
	s := sample().Summarize()
	if s.DurationS != 120 || s.Commits != 1200 || s.TPS != 10 || s.TPM != 600 || s.NOPM != 450 || s.Errors != 4 {
		t.Errorf("summary %+v", s)
	}
	if s.DriverCPUS == nil || *s.DriverCPUS != 2 || *s.DriverCPUPerTxUs != 2e6/1200 || *s.DriverCPUPerStmtUs != 100 {
		t.Errorf("driver cost %v %v %v", s.DriverCPUS, s.DriverCPUPerTxUs, s.DriverCPUPerStmtUs)
	}
	if no := s.Transactions["new_order"]; no.Count != 910 || no.P50Ms == nil || *no.P50Ms < 2.9 {
		t.Errorf("new_order %+v", no)
	}
	// payment committed, but its histogram is empty: no percentiles, not
	// percentiles of zero.
	if p := s.Transactions["payment"]; p.P50Ms != nil || p.P95Ms != nil || p.P99Ms != nil || s.Commit.P95Ms != nil {
		t.Errorf("an empty histogram has percentiles: payment %+v, commit %+v", p, s.Commit)
	}
}

// A recovered run has no driver CPU and no OS window (its journal holds
// neither): both are absent, in the summary and in the file, never zero.
func TestRecoveredFiguresAbsent(t *testing.T) {
	r := sample()
	r.Recovered, r.Driver = true, Driver{}
	r.OS = &OS{Series: []ostat.Rates{{IntervalS: 1, NumCPU: 2, CPUBusyPct: 50}}}
	s := r.Summarize()
	if s.DriverCPUS != nil || s.DriverCPUPerTxUs != nil || s.DriverCPUPerStmtUs != nil {
		t.Errorf("a recovered run's driver CPU %v %v %v, want absent", s.DriverCPUS, s.DriverCPUPerTxUs, s.DriverCPUPerStmtUs)
	}
	if _, ok := r.CPU(); ok || r.OS.HasWindow() {
		t.Error("a recovered run's zero OS window counts as measured")
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"window"`, `"cpu_user_s"`, `"cpu_sys_s"`, `"total_cpu_s"`} {
		if strings.Contains(string(b), k) {
			t.Errorf("the recovered result's file holds %s", k)
		}
	}
	// A measured window and a measured driver CPU stay, zeros included.
	r = sample()
	r.OS = &OS{Window: ostat.Rates{IntervalS: 60, NumCPU: 2}}
	if u, ok := r.CPU(); !ok || u.Pct != 0 || !r.OS.HasWindow() {
		t.Errorf("a measured idle window: %+v %v", u, ok)
	}
	r.Driver = Driver{}
	if s := r.Summarize(); s.DriverCPUS == nil || *s.DriverCPUS != 0 {
		t.Errorf("a measured zero driver CPU: %v", s.DriverCPUS)
	}
	js, _ := json.Marshal(r.Summarize())
	if !strings.Contains(string(js), `"driver_cpu_s":0`) {
		t.Errorf("the summary drops a measured zero: %s", js)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.json")
	if err := Write(p, sample()); err != nil {
		t.Fatal(err)
	}
	r, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Label != "native" || r.Transactions[0].Committed != 900 {
		t.Errorf("read back %+v", r)
	}
	h, err := r.Transactions[0].Latency.Decode()
	if err != nil || h.Count() != 1 {
		t.Errorf("histogram read back: %v %v", h, err)
	}
	// Nothing but the result is left in the directory.
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files after an atomic write", len(entries))
	}
}

func TestWriteToMissingDirectoryKeepsNothing(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "no", "such", "r.json"), sample()); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty.json":   "",
		"foreign.json": `{"a": 1}`,
		"future.json":  `{"schema": "dbparity.run/99"}`,
		"broken.json":  `{"schema": "dbparity.run/1", "label": `,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		_, err := Read(p)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing: %v", err)
	}
}

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "r.json")
	if err := CheckWritable(p, false); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte("x"), 0o644)
	if err := CheckWritable(p, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("existing file: %v", err)
	}
	if err := CheckWritable(p, true); err != nil {
		t.Errorf("existing file with --force: %v", err)
	}
	os.Remove(p)
	os.WriteFile(JournalPath(p), []byte("{}"), 0o644)
	if err := CheckWritable(p, false); err == nil || !strings.Contains(err.Error(), "journal") {
		t.Errorf("journal of a dead run: %v", err)
	}
	os.Remove(JournalPath(p))
	if err := CheckWritable(dir, true); err == nil {
		t.Error("a directory accepted as --out")
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "sub")); len(entries) != 0 {
		t.Errorf("probe files left behind: %v", entries)
	}
}

// Read takes files from anywhere: it must never panic, and its errors are
// one line.
func FuzzRead(f *testing.F) {
	b, _ := os.ReadFile("../report/testdata/show.json")
	f.Add(b)
	f.Add([]byte(`{"schema":"dbparity.run/1","transactions":[{"latency":{"hdr":"xx"}}]}`))
	f.Add([]byte(`{"schema":"dbparity.run/1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.json")
		os.WriteFile(p, data, 0o644)
		r, err := Read(p)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error %q", err)
			}
			return
		}
		r.Summarize()
		for _, tx := range r.Transactions {
			tx.Latency.Decode()
		}
	})
}

// A multi-target run's servers' CPU is summed; on one host the other
// servers are not "other processes", on hosts of their own the CPUs are
// all the hosts'.
func TestAggregateServerCPU(t *testing.T) {
	part := func(host string, server, other float64) *Run {
		r := &Run{Workload: Workload{Name: "w"}, Disclosure: &Disclosure{HostSource: "sql", Host: disclose.HostInfo{Hostname: host}},
			OS: &OS{Window: ostat.Rates{IntervalS: 10, NumCPU: 2, CPUBusyPct: 50, ServerCPUCores: &server, OtherCPUCores: other}}}
		return r
	}
	a, err := Aggregate("one", []*Run{part("h", 0.5, 0.6), part("h", 0.4, 0.7)})
	if err != nil {
		t.Fatal(err)
	}
	if w := a.OS.Window; *w.ServerCPUCores != 0.9 || math.Abs(w.OtherCPUCores-0.2) > 1e-9 || w.NumCPU != 2 {
		t.Errorf("one host: server %v, other %v, %d CPUs", *w.ServerCPUCores, w.OtherCPUCores, w.NumCPU)
	}
	b, err := Aggregate("two", []*Run{part("h1", 0.5, 0.1), part("h2", 0.4, 0.1)})
	if err != nil {
		t.Fatal(err)
	}
	if w := b.OS.Window; *w.ServerCPUCores != 0.9 || w.NumCPU != 4 || w.OtherCPUCores != 0.1 || *w.ServerCPUPct != 22.5 {
		t.Errorf("two hosts: server %v (%v%%), other %v, %d CPUs", *w.ServerCPUCores, *w.ServerCPUPct, w.OtherCPUCores, w.NumCPU)
	}
}

// A multi-target run keeps its database sections: the load profile and
// the waits are the targets' summed (per transaction over all their
// transactions), device lines once per database host.
func TestAggregateProfilesAndWaits(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	part := func(host string, commits, cpu, devReads float64, waits []WaitEvent, active int64) *Run {
		lp := &Profile{Source: "postgres 15", Seconds: 10, Transactions: commits, Lines: []ProfileLine{
			{Name: "DB CPU", Unit: "s", Total: f(cpu), PerSecond: f(cpu / 10), PerTx: f(cpu / commits), Source: "os.server_cpu_s"},
			{Name: "Read IO requests", Unit: "requests", Total: f(devReads), PerSecond: f(devReads / 10), Source: "os.device_reads"},
			{Name: "Block changes", Unit: "blocks", Source: "not available", Note: "needs pg_stat_statements"},
		}}
		return &Run{Workload: Workload{Name: "w"}, Disclosure: &Disclosure{Host: disclose.HostInfo{Hostname: host}}, LoadProfile: lp,
			Waits: &Waits{Source: "pg_stat_activity", IntervalMs: 100, Samples: 100, ActiveSamples: active, AvgActiveSessions: float64(active) / 100, Events: waits}}
	}
	a := part("h", 1000, 2, 50, []WaitEvent{{Class: "CPU", Event: "CPU", Samples: 60}, {Class: "LWLock", Event: "WALWrite", Samples: 20}}, 80)
	b := part("h", 3000, 4, 50, []WaitEvent{{Class: "CPU", Event: "CPU", Samples: 100}, {Class: "IO", Event: "DataFileRead", Samples: 20}}, 120)
	c := part("h2", 1000, 1, 30, nil, 0)
	r, err := Aggregate("x", []*Run{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	lp := r.LoadProfile
	if lp == nil || lp.Transactions != 5000 {
		t.Fatalf("load profile %+v", lp)
	}
	if l := lp.Line("DB CPU"); *l.Total != 7 || math.Abs(*l.PerSecond-0.7) > 1e-12 || math.Abs(*l.PerTx-7.0/5000) > 1e-12 {
		t.Errorf("DB CPU: total %v, /s %v, /tx %v", *l.Total, *l.PerSecond, *l.PerTx)
	}
	// Targets 1 and 2 share host h: its devices are counted once.
	if l := lp.Line("Read IO requests"); *l.Total != 80 || l.PerTx != nil {
		t.Errorf("device reads: total %v (want 50 + 30), per tx %v", *l.Total, l.PerTx)
	}
	if l := lp.Line("Block changes"); l == nil || l.Total != nil || l.Note == "" {
		t.Errorf("a line no target measured: %+v", l)
	}
	w := r.Waits
	if w == nil || w.ActiveSamples != 200 || w.AvgActiveSessions != 2 || len(w.Events) != 3 {
		t.Fatalf("waits %+v", w)
	}
	if e := w.Events[0]; e.Event != "CPU" || e.Samples != 160 || e.PctDBTime != 80 {
		t.Errorf("first event %+v, want CPU 160 samples, 80%% of DB time", e)
	}
}
