package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/workload/orderentry"
)

func TestParsePart(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // error text; "" for none
	}{
		{"0/3", ""}, {"2/3", ""}, {"3/3", "counts from 0 to 2"}, {"-1/3", "counts from 0"},
		{"1", "give I/N"}, {"a/b", "give I/N"}, {"0/0", "between 1 and"},
	} {
		_, err := ParsePart(c.in)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("--part %s: %v, want %q", c.in, err, c.want)
		}
	}
}

// Each part gets whole shares of the data: order-entry's sessions of one
// home warehouse all go to one part; every session to exactly one part.
func TestPartSessions(t *testing.T) {
	oe := &orderentry.OrderEntry{Warehouses: 4, HomeWarehouse: "fixed"}
	owner := map[int]int{}
	for i := range 3 {
		ids, err := partSessions(oe, 20, &Part{Index: i, Of: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range ids {
			if _, ok := owner[g]; ok {
				t.Errorf("session %d in two parts", g)
			}
			owner[g] = i
		}
	}
	for g := range 20 {
		if owner[g] != owner[g%4] {
			t.Errorf("session %d (warehouse %d) in part %d, session %d of the same warehouse in part %d", g, g%4+1, owner[g], g%4, owner[g%4])
		}
	}
	if len(owner) != 20 {
		t.Errorf("%d of 20 sessions in a part", len(owner))
	}
	if _, err := partSessions(oe, 20, &Part{Index: 0, Of: 5}); err == nil || !strings.Contains(err.Error(), "4 home warehouses") {
		t.Errorf("5 parts of 4 warehouses: %v", err)
	}
	oe.HomeWarehouse = "random"
	if _, err := partSessions(oe, 2, &Part{Index: 2, Of: 3}); err == nil || !strings.Contains(err.Error(), "--users at least 3") {
		t.Errorf("3 parts of 2 sessions: %v", err)
	}
}

// The faults of a split run end in bounded time with one clear error and
// no result: a part whose partners never come gives up after
// --barrier-timeout; a run id used again is refused; a --start-at in the
// past is refused. Two parts given one --start-at run at once (their
// windows within 100 ms) and merge.
func TestPartBarrierFaults(t *testing.T) {
	tg, inst := managedServer(t)
	ctx := context.Background()
	c, out := common(t, tg)
	c.Workload.(*orderentry.OrderEntry).Warehouses = 2
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	dir := t.TempDir()
	run := func(p *Part, name string) error {
		return Run(ctx, RunOptions{Common: c, Users: 2, Duration: 2 * time.Second, Warmup: 500 * time.Millisecond,
			Label: "split", Out: filepath.Join(dir, name), Part: p, Collect: CollectOptions{Off: true}})
	}
	start := time.Now()
	err := run(&Part{Index: 0, Of: 2, RunID: "lonely", BarrierTimeout: 1500 * time.Millisecond}, "lonely.json")
	if err == nil || !strings.Contains(err.Error(), "only 1 of 2 parts of run \"lonely\" registered") {
		t.Errorf("a part alone: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a part alone gave up after %s", took)
	}
	for _, f := range []string{"lonely.json", "lonely.json.journal"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("a part that never started left %s", f)
		}
	}
	// The server frozen (SIGSTOP) while the part waits for its partners:
	// the wait ends after --statement-timeout, not --barrier-timeout.
	signal := func(sig syscall.Signal) {
		for _, pid := range inst.Processes() {
			syscall.Kill(pid, sig)
		}
	}
	t.Cleanup(func() { signal(syscall.SIGCONT) })
	time.AfterFunc(1500*time.Millisecond, func() { signal(syscall.SIGSTOP) })
	start = time.Now()
	err = Run(ctx, RunOptions{Common: c, Users: 2, Duration: 2 * time.Second, Label: "split", Out: filepath.Join(dir, "frozen.json"),
		Part: &Part{Index: 0, Of: 2, RunID: "frozen", BarrierTimeout: time.Minute}, Collect: CollectOptions{Off: true},
		Faults: Faults{StatementTimeout: 2 * time.Second}})
	took := time.Since(start)
	signal(syscall.SIGCONT)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 2s") || took > 15*time.Second {
		t.Errorf("a part waiting on a frozen server: %v after %s", err, took.Round(time.Millisecond))
	}
	t.Logf("a frozen server ended the barrier's wait after %s: %v", took.Round(time.Millisecond), err)

	var ue UsageError
	err = run(&Part{Index: 0, Of: 2, RunID: "lonely", BarrierTimeout: time.Second}, "again.json")
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("a run id used again: %v", err)
	}
	if err := run(&Part{Index: 0, Of: 2, StartAt: time.Now().Add(-time.Minute)}, "past.json"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "past") {
		t.Errorf("--start-at in the past: %v", err)
	}

	at := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = run(&Part{Index: i, Of: 2, StartAt: at}, []string{"p0.json", "p1.json"}[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("parts with --start-at: %v\n%s", err, out)
	}
	var parts []*result.Run
	files := []string{filepath.Join(dir, "p0.json"), filepath.Join(dir, "p1.json")}
	for _, f := range files {
		r, err := result.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, r)
	}
	m, err := result.Merge(parts, files, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.Merged.SkewMs > 100 || m.Driver.Users != 2 || parts[0].Part.Sync != "start-at" {
		t.Errorf("skew %.1f ms, users %d, sync %q", m.Merged.SkewMs, m.Driver.Users, parts[0].Part.Sync)
	}
	if d := parts[0].MeasureStart.Sub(at.Add(500 * time.Millisecond)); d < 0 || d > 100*time.Millisecond {
		t.Errorf("the window started %s after --start-at and the warm-up", d)
	}
	t.Logf("windows %.1f ms apart", m.Merged.SkewMs)
}
