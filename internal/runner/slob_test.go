package runner

import (
	"bytes"
	"context"
	"flag"
	"path/filepath"
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
	ctx := context.Background()
	direct, _ := managedServer(t)
	var out bytesBuffer
	c := Common{Target: direct, Workload: slob(t, "--schemas", "2", "--scale", "3000", "--work-unit", "8"), Seed: 1, Stdout: &out, Stderr: &out}
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out.String())
	}
	if err := Check(ctx, c); err != nil {
		t.Fatalf("check (one row per block): %v\n%s", err, out.String())
	}
	var size int64
	queryRow(t, direct, "SELECT pg_relation_size('slob_1')", &size)
	if size != 3000*8192 {
		t.Errorf("slob_1 takes %d bytes for 3000 rows, want 3000 blocks of 8 KB", size)
	}

	counters := func() (updated, wal float64) {
		queryRow(t, direct, `SELECT (SELECT tup_updated FROM pg_stat_database WHERE datname = current_database())::float8,
			(SELECT wal_bytes FROM pg_stat_wal)::float8`, &updated, &wal)
		return
	}
	run := func(pct string) *result.Run {
		c.Workload = slob(t, "--work-unit", "8", "--update-pct", pct)
		path := filepath.Join(t.TempDir(), "s.json")
		err := Run(ctx, RunOptions{Common: c, Users: 2, Duration: 1500 * time.Millisecond, Warmup: 0, Label: "slob" + pct,
			Out: path, Collect: CollectOptions{Off: true}})
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
		r, err := result.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	u0, w0 := counters()
	r := run("0")
	time.Sleep(1200 * time.Millisecond) // backends publish their counters within a second of exiting
	u1, w1 := counters()
	if u1 != u0 || r.Transactions[1].Committed != 0 || r.Transactions[0].Committed == 0 {
		t.Errorf("UPDATE_PCT=0: %v rows updated, result %d reads %d updates", u1-u0, r.Transactions[0].Committed, r.Transactions[1].Committed)
	}
	if w1-w0 > 64<<10 {
		t.Errorf("UPDATE_PCT=0 wrote %v bytes of WAL", w1-w0)
	}

	r = run("100")
	time.Sleep(1200 * time.Millisecond)
	u2, _ := counters()
	var all int64
	for _, p := range r.Phases {
		all += p.Committed["update"]
		if p.Committed["read"] != 0 {
			t.Errorf("UPDATE_PCT=100 did %d reads", p.Committed["read"])
		}
	}
	if all == 0 || u2-u1 != float64(all*8) {
		t.Errorf("UPDATE_PCT=100: the server updated %v rows, the result counts %d updates of 8 rows", u2-u1, all)
	}
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
