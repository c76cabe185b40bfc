package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func histogram(t *testing.T, base time.Duration, n int) result.Histogram {
	h := metrics.NewHistogram()
	for i := 1; i <= n; i++ {
		h.Record(base + time.Duration(i)*base/time.Duration(n))
	}
	r, err := result.NewHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sample(t *testing.T) *result.Run {
	start := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	return &result.Run{
		Schema: result.Schema, Label: "native", Partial: true, PartialReason: "interrupted",
		Start: start, MeasureStart: start.Add(10 * time.Second), MeasureEnd: start.Add(70 * time.Second),
		Workload: result.Workload{Name: "order-entry", Version: "1", Disclaimer: "TPC-C derived, not TPC-C compliant"},
		Target:   result.Target{Dialect: "postgres", URL: "postgres://bench@db1/bench", ServerVersion: "15.18"},
		Driver:   result.Driver{Users: 8, WarmupS: 10, CPUUserS: 3, CPUSysS: 1},
		Transactions: []result.Transaction{
			{Name: "new_order", Committed: 2700, Rollbacks: 27, Retries: 3, Latency: histogram(t, 4*time.Millisecond, 2727)},
			{Name: "payment", Committed: 2580, Errors: 2, Latency: histogram(t, 2*time.Millisecond, 2580)},
		},
		Commit:       histogram(t, 300*time.Microsecond, 5280),
		Errors:       map[string]int64{"deadlock": 2},
		ErrorSamples: map[string]string{"deadlock": "ERROR: deadlock detected (SQLSTATE 40P01)"},
		Statements:   100000,
		LoadProfile: &result.Profile{Source: "postgres 15.18", Seconds: 60, Transactions: 5300, Lines: []result.ProfileLine{
			{Name: "DB time", Unit: "s", Total: f(120), PerSecond: f(2), PerTx: f(120.0 / 5300), Source: "pg_stat_database.active_time"},
			{Name: "Block changes", Unit: "blocks", Source: "not available", Note: "needs pg_stat_statements.shared_blks_dirtied"},
		}},
		Waits: &result.Waits{Source: "pg_stat_activity", IntervalMs: 100, Samples: 600, ActiveSamples: 1200, AvgActiveSessions: 2,
			Events: []result.WaitEvent{{Class: "CPU", Event: "CPU", Samples: 900, PctDBTime: 75, AvgActive: 1.5},
				{Class: "IO", Event: "WALSync", Samples: 300, PctDBTime: 25, AvgActive: 0.5}}},
		Warnings: []string{"no warm-up: the measured window starts with cold caches and connections"},
		OS: &result.OS{DataDevice: "nvme0n1", Window: ostat.Rates{IntervalS: 60, NumCPU: 8, CPUUserPct: 40, CPUSystemPct: 10,
			CPUIowaitPct: 2, CPUStealPct: 1, CPUIdlePct: 47, CPUBusyPct: 53, InterruptsPerS: 20000, ContextSwitchesPerS: 80000,
			Load1: 4.5, Load5: 4, Load15: 3, ProcsRunning: 5, SelfCPUCores: 0.8, SelfCPUPct: 10, ServerCPUCores: f(3.2),
			ServerCPUPct: f(40), OtherCPUCores: 0.24, OtherCPUPct: 3,
			IOPressure: &ostat.PressureRates{SomePct: 4.5, FullPct: f(1.5)},
			Disks:      []ostat.DiskRates{{Name: "nvme0n1", ReadsPerS: 120, WritesPerS: 2400, ReadMBPerS: 0.94, WriteMBPerS: 30.5, RAwaitMs: 0.1, WAwaitMs: 0.04, AquSz: 0.2, UtilPct: 35}, {Name: "sdb"}},
			Nets:       []ostat.NetRates{{Name: "eth0", RxPacketsPerS: 15000, TxPacketsPerS: 14000, RxMBPerS: 3.1, TxMBPerS: 12.4}},
			MemTotalMB: 64000, MemUsedMB: 20000, MemCachedMB: 30000, MemShmemMB: 8000, MemDirtyMB: 120, MemAvailableMB: 40000}},
	}
}

func f(v float64) *float64 { return &v }

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./internal/report -update to accept):\n%s", name, got)
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	time.Local = time.UTC
	var b bytes.Buffer
	if err := Text(&b, sample(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "show.txt", b.Bytes())
}

func TestJSON(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := JSON(&b, sample(t)); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"label", "workload", "duration_s", "tps", "nopm", "partial", "errors", "driver_cpu_s", "transactions"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	golden(t, "show.json", b.Bytes())
}

// runs builds n runs labelled label whose throughput is scale times the
// sample's, with a little spread.
func runs(t *testing.T, label string, n int, scale float64) ([]*result.Run, []string) {
	var rs []*result.Run
	var files []string
	for i := range n {
		r := sample(t)
		r.Label, r.Partial, r.PartialReason = label, false, ""
		for k := range r.Transactions {
			r.Transactions[k].Committed = int64(float64(r.Transactions[k].Committed) * scale * (1 + 0.01*float64(i)))
		}
		if label == "vm" {
			r.Disclosure = &result.Disclosure{Database: &result.Database{Settings: map[string]string{"shared_buffers": "2GB"}}}
		} else {
			r.Disclosure = &result.Disclosure{Database: &result.Database{Settings: map[string]string{"shared_buffers": "1GB"}}}
		}
		rs = append(rs, r)
		files = append(files, fmt.Sprintf("%s-%d.json", label, i+1))
	}
	return rs, files
}

func TestCompareText(t *testing.T) {
	t.Parallel()
	a, fa := runs(t, "native", 6, 1)
	b, fb := runs(t, "vm", 6, 0.9)
	gs, err := compare.Groups(append(a, b...), append(fa, fb...), "")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := CompareText(&out, NewComparison(gs)); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.txt", out.Bytes())
	if !strings.Contains(out.String(), "vm throughput = 90.0% of native (95% CI") {
		t.Errorf("no verdict of a 10%% slower vm:\n%s", out.String())
	}
	c := NewComparison(gs)
	out.Reset()
	if err := CompareMarkdown(&out, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.md", out.Bytes())
	out.Reset()
	if err := CompareCSV(&out, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.csv", out.Bytes())
	recs, err := csv.NewReader(bytes.NewReader(out.Bytes())).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v", err)
	}
	found := false
	for _, r := range recs {
		found = found || (r[1] == "transactions/s" && r[2] == "90.2" && r[3] == "81.2" && r[4] == "0.90x")
	}
	if !found {
		t.Errorf("CSV lacks the throughput row: %q", recs)
	}
	// The verdicts have numeric columns.
	var verdict []string
	for _, r := range recs {
		if r[0] == "verdicts" && r[3] == "throughput (tps)" {
			verdict = r
		}
	}
	if len(verdict) < 14 || verdict[4] != "true" || verdict[13] != "worse" {
		t.Fatalf("CSV verdict record %q", verdict)
	}
	for i, col := range []string{"ratio", "ci_lo", "ci_hi", "p"} {
		if x, err := strconv.ParseFloat(verdict[6+i], 64); err != nil || !(x >= 0) {
			t.Errorf("CSV %s %q is not a number", col, verdict[6+i])
		}
	}

	out.Reset()
	if err := CompareJSON(&out, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.json", out.Bytes())
	var doc struct {
		Schema      string
		Comparisons []struct {
			A, B     string
			Verdicts []map[string]any
		}
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	if doc.Schema != "dbparity.compare/1" || len(doc.Comparisons) != 1 || doc.Comparisons[0].B != "vm" {
		t.Fatalf("JSON %+v", doc)
	}
	v := doc.Comparisons[0].Verdicts[0]
	if v["verdict"] != "worse" || v["primary"] != true || v["n_a"] != 6.0 || v["ratio"] == nil || v["ci_hi"].(float64) >= 1 {
		t.Errorf("JSON verdict %v", v)
	}
}

// A database host read another way names its source, never claims
// dbparity's CPU on it, shows where the platform took time, and puts the
// driver's host apart; one that could not be seen says how to see it.
func TestShowDatabaseHostSources(t *testing.T) {
	t.Parallel()
	r := sample(t)
	r.OS.Source = "sql"
	r.OS.Window.ServerRunDelayPerS = f(0.21)
	r.DriverOS = &result.OS{Source: "local", Window: ostat.Rates{IntervalS: 60, NumCPU: 4, CPUBusyPct: 30, SelfCPUCores: 1.1, SelfCPUPct: 27.5}}
	r.Disclosure = &result.Disclosure{HostSource: "sql", DriverHost: &disclose.HostInfo{Hostname: "client1"}}
	var out bytes.Buffer
	if err := Text(&out, r); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"database host os (source: sql: the host's /proc read through the database connection",
		"cpu used by the database 3.20 cores",
		"run-queue delay: server 0.210 s/s (2.386 ms/tx)", // 0.21 s/s at 88 tx/s (5280 in 60 s)
		"driver host client1 (local /proc, 4 CPUs): busy 30.0%, dbparity 1.10 cores (27.5%)",
		"platform (database host, source: sql)",
		"    driver    client1 (the driver's host, not the platform)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("show lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "cpu used by dbparity") {
		t.Errorf("dbparity's CPU claimed on the database host:\n%s", s)
	}
	r.OS = nil
	r.Disclosure.HostSource = "none"
	out.Reset()
	if err := Text(&out, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "database host: not observed (give --db-host-metrics") || !strings.Contains(out.String(), "driver host client1") {
		t.Errorf("unobserved database host:\n%s", out.String())
	}
}
