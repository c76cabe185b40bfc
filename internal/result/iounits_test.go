package result

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/metrics"
)

func f(v float64) *float64 { return &v }

// ioRun is a run whose engine read physical blocks/s and whose data
// device served deviceReads requests/s (negative: a remote server).
func ioRun(data, cache int64, logical, physical, deviceReads float64) *Run {
	r := &Run{
		LoadProfile: &Profile{Lines: []ProfileLine{
			{Name: "Logical reads", PerSecond: f(logical), Total: f(logical * 10)},
			{Name: "Physical reads", PerSecond: f(physical), Total: f(physical * 10)},
			{Name: "Physical writes", PerSecond: f(5)},
			{Name: "WAL (redo) size", PerSecond: f(1000)},
		}},
		IOProfile:  &Profile{Lines: []ProfileLine{{Name: "Read I/O time", Total: f(physical * 10 * 0.2)}}},
		Disclosure: &Disclosure{Database: &Database{DataBytes: data, BufferCacheBytes: cache, BlockSize: 8192}},
		Host:       Host{MemoryBytes: 24 << 30},
	}
	if deviceReads >= 0 {
		r.Disclosure.Storage = &disclose.StorageInfo{}
		r.OS = &OS{DataDevice: "vda", Window: ostat.Rates{IntervalS: 60, Disks: []ostat.DiskRates{
			{Name: "vda", ReadsPerS: deviceReads, ReadMBPerS: deviceReads * 8192 / 1e6},
			{Name: "vdb", ReadsPerS: 1e6}, // not the data's device
		}}}
	}
	return r
}

func TestIOUnitsSayWhereReadsCameFrom(t *testing.T) {
	for _, c := range []struct {
		run    *Run
		served string
		says   string
	}{
		{ioRun(100<<20, 128<<20, 1000, 0, 0), ServedBufferCache, "fits in the database buffer cache (128 MB"},
		{ioRun(1<<30, 16<<20, 1000, 0, 0), ServedBufferCache, "no physical reads"},
		{ioRun(1<<30, 16<<20, 1000, 800, 10), ServedPageCache, "the devices served 1.2% of the database's 800 physical reads/s"},
		{ioRun(1<<30, 16<<20, 1000, 800, 400), ServedMixed, "storage and memory together"},
		{ioRun(1<<30, 16<<20, 1000, 800, 790), ServedStorage, "this run measured storage."},
		{ioRun(1<<30, 16<<20, 1000, 800, -1), ServedUnknown, "not visible without the database host's device counters"},
	} {
		u := c.run.ComputeIOUnits()
		if u.ServedFrom != c.served || !strings.Contains(u.Statement, c.says) {
			t.Errorf("served from %q: %s\nwant %q saying %q", u.ServedFrom, u.Statement, c.served, c.says)
		}
	}
	u := ioRun(1<<30, 16<<20, 1000, 800, 790).ComputeIOUnits()
	if math.Abs(*u.CacheHitRatio-0.2) > 1e-9 || *u.ReadIOPS != 790 || *u.ReadMs != 0.2 || *u.EngineReadMB != 800*8192/1e6 || *u.RedoBytes != 1000 {
		t.Errorf("units: hit %v, read IOPS %v, read ms %v, engine MB/s %v", *u.CacheHitRatio, *u.ReadIOPS, *u.ReadMs, *u.EngineReadMB)
	}
	if (&Run{}).ComputeIOUnits() != nil {
		t.Error("IO units without collectors")
	}
}

func part(t *testing.T, url string, lat []time.Duration, warnings ...string) *Run {
	t.Helper()
	h := metrics.NewHistogram()
	for _, d := range lat {
		h.Record(d)
	}
	hist, err := NewHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	r := ioRun(1<<30, 16<<20, 1000, 800, 790)
	r.IO = r.ComputeIOUnits()
	r.Host.Hostname = "h"
	now := time.Now()
	r.Schema, r.Workload, r.Target.URL, r.Warnings = Schema, Workload{Name: "slob", Version: "2"}, url, warnings
	r.MeasureStart, r.MeasureEnd = now, now.Add(time.Second)
	r.Driver = Driver{Users: 2, CPUUserS: 1}
	r.Transactions = []Transaction{{Name: "read", Committed: int64(len(lat)), Latency: hist}}
	r.Commit = hist
	r.Phases = map[string]Phase{"measure": {Committed: map[string]int64{"read": int64(len(lat))}}}
	r.Series = []metrics.Interval{{Commits: int64(len(lat)), P95Micros: lat[len(lat)-1].Microseconds(), ActiveSess: 2}}
	return r
}

func TestAggregate(t *testing.T) {
	a := part(t, "pg://a", []time.Duration{time.Millisecond, 2 * time.Millisecond}, "shared", "only a")
	b := part(t, "pg://b", []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}, "shared")
	r, err := Aggregate("x", []*Run{a, b})
	if err != nil {
		t.Fatal(err)
	}
	tx := r.Transactions[0]
	if tx.Committed != 5 || tx.Latency.Count != 5 || tx.Latency.MaxMs < 29.9 || r.Commit.Count != 5 {
		t.Errorf("merged: %d committed, %d timed, max %.1f ms", tx.Committed, tx.Latency.Count, tx.Latency.MaxMs)
	}
	if r.Driver.Users != 4 || r.Driver.CPUUserS != 1 || a.Driver.CPUUserS != 0 {
		t.Errorf("users %d, driver CPU %v (parts %v): the process's CPU is counted once", r.Driver.Users, r.Driver.CPUUserS, a.Driver.CPUUserS)
	}
	if s := r.Series[0]; s.Commits != 5 || s.ActiveSess != 4 || s.P95Micros != 30000 {
		t.Errorf("series: %+v", s)
	}
	if r.Phases["measure"].Committed["read"] != 5 {
		t.Errorf("phases: %+v", r.Phases)
	}
	// Both parts read the same device of the same host: counted once.
	if u := r.IO; *u.PhysicalReads != 1600 || *u.ReadIOPS != 790 || u.DataBytes != 2<<30 {
		t.Errorf("IO: physical %v, read IOPS %v, data %d", *u.PhysicalReads, *u.ReadIOPS, u.DataBytes)
	}
	want := []string{"every target: shared", "target 1: only a"}
	if strings.Join(r.Warnings, "|") != strings.Join(want, "|") {
		t.Errorf("warnings %q, want %q", r.Warnings, want)
	}
	if !strings.HasPrefix(r.Target.URL, "2 targets: pg://a pg://b") {
		t.Errorf("target %q", r.Target.URL)
	}
	b.Workload.Version = "1"
	if _, err := Aggregate("x", []*Run{a, b}); err == nil {
		t.Error("parts of different workload versions aggregated")
	}
}

// The memory beside the page cache's share is the database host's, not
// the driver's, when the database ran elsewhere; a local run's old result
// (no memory in its disclosure) keeps the one host's.
func TestIOUnitsMemoryOfTheDatabaseHost(t *testing.T) {
	r := ioRun(1<<30, 16<<20, 1000, 800, 5) // the page cache served 99% of the reads
	r.Disclosure.HostSource = "sql"
	r.Disclosure.Host.Memory.TotalBytes = 64 << 30
	if u := r.ComputeIOUnits(); u.MemoryBytes != 64<<30 || !strings.Contains(u.Statement, "(host memory 64 GB)") {
		t.Errorf("memory %d, statement %q", u.MemoryBytes, u.Statement)
	}
	r.Disclosure.Host.Memory.TotalBytes = 0
	if u := r.ComputeIOUnits(); u.MemoryBytes != 0 {
		t.Errorf("a remote host's unknown memory taken from the driver's: %d", u.MemoryBytes)
	}
	r.Disclosure.HostSource = ""
	if u := r.ComputeIOUnits(); u.MemoryBytes != 24<<30 {
		t.Errorf("an old local result's memory %d", u.MemoryBytes)
	}
}
