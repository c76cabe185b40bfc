package runner

import (
	"bytes"
	"context"
	"flag"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/workload"
	_ "github.com/dbparity/dbparity/internal/workload/slob"
)

func slob(t *testing.T, args ...string) workload.Workload {
	t.Helper()
	w, err := workload.New("slob")
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	w.Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return w
}

// One row per block on PostgreSQL; UPDATE_PCT=0 changes no row and writes
// no WAL, UPDATE_PCT=100 makes every operation an update: checked against
// the server's own counters.
func TestSlobOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Without full-page images the WAL of an update does not depend on how
	// many pages the run happened to touch first after a checkpoint, which
	// on a busy machine (fewer updates in the same time) made lite updates
	// look as heavy as heavy ones.
	direct, _ := managedServer(t, "full_page_writes=off")
	var out bytesBuffer
	c := Common{Target: direct, Workload: slob(t, "--schemas", "2", "--scale", "3000", "--work-unit", "8"), Seed: 1, Stdout: &out, Stderr: &out}
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out.String())
	}
	// The load says how many rows share a block: one, counted.
	if s := out.String(); !strings.Contains(s, "slob_1: 3000 rows, 1.00 per block of 8 KB") {
		t.Errorf("the load does not report one row per block:\n%s", s)
	}
	if err := Check(ctx, c); err != nil {
		t.Fatalf("check (one row per block): %v\n%s", err, out.String())
	}
	var size int64
	queryRow(t, direct, "SELECT pg_relation_size('slob_1')", &size)
	if size != 3000*8192 {
		t.Errorf("slob_1 takes %d bytes for 3000 rows, want 3000 blocks of 8 KB", size)
	}

	counters := func() (updated, wal, written float64) {
		queryRow(t, direct, `SELECT (SELECT tup_updated FROM pg_stat_database WHERE datname = current_database())::float8,
			(SELECT wal_bytes FROM pg_stat_wal)::float8,
			(SELECT buffers_checkpoint + buffers_clean + buffers_backend FROM pg_stat_bgwriter)::float8`, &updated, &wal, &written)
		return
	}
	checkpoint := func() {
		execSQL(t, direct, "CHECKPOINT")
	}
	run := func(args ...string) *result.Run {
		c.Workload = slob(t, append([]string{"--work-unit", "8"}, args...)...)
		c.Explicit = []string{"threads-per-schema"}
		path := filepath.Join(t.TempDir(), "s.json")
		err := Run(ctx, RunOptions{Common: c, Duration: 1500 * time.Millisecond, Warmup: 0, Label: "slob",
			Out: path, Collect: CollectOptions{Off: true}})
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
		r, err := result.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1200 * time.Millisecond) // backends publish their counters within a second of exiting
		return r
	}
	checkpoint()
	u0, w0, b0 := counters()
	r := run("--update-pct", "0", "--threads-per-schema", "2")
	checkpoint()
	u1, w1, b1 := counters()
	if r.Driver.Users != 4 {
		t.Errorf("2 schemas × 2 threads per schema ran %d sessions", r.Driver.Users)
	}
	if u1 != u0 || r.Transactions[1].Committed != 0 || r.Transactions[0].Committed == 0 {
		t.Errorf("UPDATE_PCT=0: %v rows updated, result %d reads %d updates", u1-u0, r.Transactions[0].Committed, r.Transactions[1].Committed)
	}
	if w1-w0 > 64<<10 {
		t.Errorf("UPDATE_PCT=0 wrote %v bytes of WAL", w1-w0)
	}
	// The load froze every row: reads set no hint bits, so nothing is
	// written to the data files but a block or two of the catalogs.
	if b1-b0 > 8 {
		t.Errorf("UPDATE_PCT=0 wrote %v blocks to the data files", b1-b0)
	}

	updates := func(r *result.Run) (all int64) {
		for _, p := range r.Phases {
			all += p.Committed["update"]
			if p.Committed["read"] != 0 {
				t.Errorf("UPDATE_PCT=100 did %d reads", p.Committed["read"])
			}
		}
		return all
	}
	checkpoint()
	u1, w1, _ = counters()
	r = run("--update-pct", "100")
	u2, w2, _ := counters()
	n := updates(r)
	if n == 0 || u2-u1 != float64(n*8) {
		t.Errorf("UPDATE_PCT=100: the server updated %v rows, the result counts %d updates of 8 rows", u2-u1, n)
	}
	liteWAL := (w2 - w1) / float64(n*8)

	checkpoint()
	u2, w2, _ = counters()
	r = run("--update-pct", "100", "--redo-stress", "heavy")
	u3, w3, _ := counters()
	n = updates(r)
	heavyWAL := (w3 - w2) / float64(n*8)
	if n == 0 || u3-u2 != float64(n*8) {
		t.Errorf("REDO_STRESS=heavy: the server updated %v rows, the result counts %d updates of 8 rows", u3-u2, n)
	}
	// A heavy update logs the whole new row (1,000 bytes of pad); a light
	// one only what changed.
	if heavyWAL-liteWAL < 700 {
		t.Errorf("WAL per updated row: lite %.0f bytes, heavy %.0f bytes", liteWAL, heavyWAL)
	}
	t.Logf("WAL per updated row: lite %.0f bytes, heavy %.0f bytes; UPDATE_PCT=0 wrote %v blocks", liteWAL, heavyWAL, b1-b0)
}

// bytesBuffer is a bytes.Buffer that is safe to write from the load's
// progress goroutine and the test.
type bytesBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *bytesBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *bytesBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.b.Bytes()...)
}

func (b *bytesBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestSessionsFromThreadsPerSchema(t *testing.T) {
	t.Parallel()
	w := slob(t, "--schemas", "3", "--threads-per-schema", "2")
	for _, c := range []struct {
		users    int
		explicit []string
		want     int
		fails    bool
	}{
		{0, nil, 6, false},
		{5, nil, 5, false}, // --users alone wins
		{6, []string{"threads-per-schema"}, 6, false},
		{5, []string{"threads-per-schema"}, 0, true},
	} {
		n, err := sessions(RunOptions{Common: Common{Workload: w, Explicit: c.explicit}, Users: c.users})
		if n != c.want || (err != nil) != c.fails {
			t.Errorf("users %d, explicit %v: %d sessions, err %v", c.users, c.explicit, n, err)
		}
	}
	oe, _ := workload.New("order-entry")
	if n, _ := sessions(RunOptions{Common: Common{Workload: oe}}); n != 4 {
		t.Errorf("order-entry default: %d sessions", n)
	}
}

// Two managed instances driven at once: each target's part matches what
// its own server counted, and the aggregate is their sum with merged
// histograms.
func TestMultiTargetSlob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := managedServer(t)
	b, _ := managedServer(t, "synchronous_commit=off")
	var out bytesBuffer
	c := Common{Workload: slob(t, "--scale", "2000", "--work-unit", "4", "--update-pct", "20"), Seed: 1, Stdout: &out, Stderr: &out}
	updated := func(tg Target) (n float64) {
		queryRow(t, tg, "SELECT tup_updated::float8 FROM pg_stat_database WHERE datname = current_database()", &n)
		return n
	}
	var before [2]float64
	for i, tg := range []Target{a, b} {
		c.Target = tg
		if err := Load(ctx, LoadOptions{Common: c}); err != nil {
			t.Fatalf("load: %v\n%s", err, out.String())
		}
		// The load's own rows (its record in dbparity_meta) reach the
		// counters up to a second later: 3 rows more were seen without this.
		time.Sleep(1200 * time.Millisecond)
		before[i] = updated(tg)
	}
	path := filepath.Join(t.TempDir(), "multi.json")
	err := Run(ctx, RunOptions{Common: c, Targets: []Target{a, b}, Users: 2, Duration: 2 * time.Second,
		Warmup: 500 * time.Millisecond, Label: "two", Out: path})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	time.Sleep(1200 * time.Millisecond) // backends publish their counters within a second
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Parts) != 2 || r.Driver.Users != 4 {
		t.Fatalf("%d parts, %d users", len(r.Parts), r.Driver.Users)
	}
	for i, tg := range []Target{a, b} {
		p := r.Parts[i]
		if p.Target.URL != tg.URL {
			t.Errorf("part %d is %s, want %s", i+1, p.Target.URL, tg.URL)
		}
		var updates int64
		for _, ph := range p.Phases {
			updates += ph.Committed["update"]
		}
		if got := updated(tg) - before[i]; updates == 0 || got != float64(4*updates) {
			t.Errorf("target %d: the server updated %v rows, its part counts %d updates of 4 rows", i+1, got, updates)
		}
		if p.IO == nil || p.IO.PhysicalReads == nil {
			t.Errorf("target %d: no IO units", i+1)
		}
	}
	// The windows coincide: both started after the barrier, each at its
	// phase timer, which fires late on a host short of CPU by what the
	// driver's threads wake late (237 ms apart once with a second suite
	// beside): within 200 ms and the parts' latest wake.
	late := time.Duration(max(r.Parts[0].Driver.WakeMaxMs, r.Parts[1].Driver.WakeMaxMs) * float64(time.Millisecond))
	if d := r.Parts[0].MeasureStart.Sub(r.Parts[1].MeasureStart).Abs(); d > 200*time.Millisecond+late {
		t.Errorf("measured windows start %v apart (threads woke up to %v late)", d, late)
	}
	for j, tx := range r.Transactions {
		p0, p1 := r.Parts[0].Transactions[j], r.Parts[1].Transactions[j]
		if tx.Committed != p0.Committed+p1.Committed || tx.Latency.Count != p0.Latency.Count+p1.Latency.Count {
			t.Errorf("%s: aggregate %d committed (%d timed), parts %d+%d (%d+%d)", tx.Name, tx.Committed, tx.Latency.Count,
				p0.Committed, p1.Committed, p0.Latency.Count, p1.Latency.Count)
		}
		lo, hi := min(p0.Latency.MaxMs, p1.Latency.MaxMs), max(p0.Latency.MaxMs, p1.Latency.MaxMs)
		if tx.Latency.MaxMs != hi || tx.Latency.P50Ms < min(p0.Latency.P50Ms, p1.Latency.P50Ms) ||
			tx.Latency.P50Ms > max(p0.Latency.P50Ms, p1.Latency.P50Ms) {
			t.Errorf("%s: merged max %.3f p50 %.3f; parts max %.3f/%.3f p50 %.3f/%.3f", tx.Name, tx.Latency.MaxMs,
				tx.Latency.P50Ms, lo, hi, p0.Latency.P50Ms, p1.Latency.P50Ms)
		}
	}
	if r.IO == nil || *r.IO.PhysicalReads != *r.Parts[0].IO.PhysicalReads+*r.Parts[1].IO.PhysicalReads ||
		*r.IO.LogicalReads != *r.Parts[0].IO.LogicalReads+*r.Parts[1].IO.LogicalReads {
		t.Errorf("aggregate IO units are not the sum of the parts'")
	}
	if s := out.String(); !strings.Contains(s, "targets (driven at once") {
		t.Errorf("summary has no targets table:\n%s", s)
	}
	// Both servers are the database's: their CPU is summed, not counted
	// as other processes competing with the first; and a setting only
	// one target has is in the aggregate's disclosure, with its target.
	w, w1, w2 := r.OS.Window, r.Parts[0].OS.Window, r.Parts[1].OS.Window
	if w.ServerCPUCores == nil || w1.ServerCPUCores == nil || w2.ServerCPUCores == nil ||
		math.Abs(*w.ServerCPUCores-*w1.ServerCPUCores-*w2.ServerCPUCores) > 1e-9 {
		t.Errorf("aggregate server CPU %v, parts %v and %v", w.ServerCPUCores, w1.ServerCPUCores, w2.ServerCPUCores)
	} else if w.OtherCPUCores > max(w1.OtherCPUCores-*w2.ServerCPUCores, 0)+1e-9 {
		t.Errorf("aggregate other CPU %.3f: the second server's %.3f cores still counted as other (part 1: %.3f)",
			w.OtherCPUCores, *w2.ServerCPUCores, w1.OtherCPUCores)
	}
	if d := r.Disclosure; d == nil || d.Database == nil || !strings.Contains(d.Database.Settings["synchronous_commit"], "off") ||
		!strings.Contains(d.Database.Settings["synchronous_commit"], "(target 2)") {
		t.Errorf("the aggregate's disclosure does not show target 2's synchronous_commit: %+v", d)
	}
}
