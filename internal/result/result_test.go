package result

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	if s.DriverCPUS != 2 || s.DriverCPUPerTxUs != 2e6/1200 || s.DriverCPUPerStmtUs != 100 {
		t.Errorf("driver cost %v %v %v", s.DriverCPUS, s.DriverCPUPerTxUs, s.DriverCPUPerStmtUs)
	}
	if s.Transactions["new_order"].Count != 1 || s.Transactions["new_order"].P50Ms < 2.9 {
		t.Errorf("new_order %+v", s.Transactions["new_order"])
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
