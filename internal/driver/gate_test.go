package driver

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/workload"
)

// turnWorker runs 2 ms transactions and counts how many of its side and
// of the other are under way, to catch the two sides working at once.
type turnWorker struct {
	fakeWorker
	mine, other *atomic.Int64
	overlaps    *atomic.Int64
}

func (w *turnWorker) Run(ctx context.Context, c engine.Conn) (workload.Outcome, error) {
	w.mine.Add(1)
	defer w.mine.Add(-1)
	if w.other.Load() > 0 {
		w.overlaps.Add(1)
	}
	time.Sleep(2 * time.Millisecond)
	if w.other.Load() > 0 {
		w.overlaps.Add(1)
	}
	return workload.Outcome{}, nil
}

// Two gated runs taking turns never work at once: closing a gate waits for
// its transactions; each run's active time is about half its window, and
// its slices hold its commits.
func TestGatedRunsTakeTurns(t *testing.T) {
	var busy [2]atomic.Int64
	var overlaps atomic.Int64
	gates := [2]*Gate{NewGate(), NewGate()}
	gates[0].Open()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // 50 ms turns
		cur := 0
		for ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			gates[cur].Close(ctx)
			cur = 1 - cur
			gates[cur].Open()
		}
	}()
	var res [2]*Result
	var wg sync.WaitGroup
	for k := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := config("", nil)
			cfg.Duration = time.Second
			cfg.Gate = gates[k]
			cfg.NewWorker = func(int) workload.Worker {
				return &turnWorker{mine: &busy[k], other: &busy[1-k], overlaps: &overlaps}
			}
			var err error
			if res[k], err = Run(context.Background(), cfg); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	cancel()
	if n := overlaps.Load(); n > 0 {
		t.Errorf("the two sides worked at once %d times", n)
	}
	for k, r := range res {
		if r == nil {
			t.FailNow()
		}
		share := r.Active.Seconds() / r.Measured().Seconds()
		if share < 0.35 || share > 0.65 {
			t.Errorf("side %d: active %s of %s", k, r.Active, r.Measured())
		}
		var inSlices int64
		for _, s := range r.Slices {
			if s.Start.Before(r.MeasureStart) || s.End.After(r.MeasureEnd) {
				t.Errorf("side %d: slice %v-%v outside the window", k, s.Start, s.End)
			}
			inSlices += s.Commits
		}
		committed := sum(r.Phases[Measure].Committed)
		if len(r.Slices) < 6 || inSlices == 0 || inSlices > committed {
			t.Errorf("side %d: %d slices with %d commits, %d committed in the window", k, len(r.Slices), inSlices, committed)
		}
	}
}

func TestWithinCutsSpansAtTheWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := func(a, b int, cpu time.Duration) Span {
		return Span{Start: t0.Add(time.Duration(a) * time.Second), End: t0.Add(time.Duration(b) * time.Second), Commits: 10, CPU: CPU{User: cpu}}
	}
	spans := []Span{s(0, 2, 2*time.Second), s(4, 6, time.Second), s(8, 10, 4*time.Second)}
	open, cpu, whole := Within(spans, t0.Add(time.Second), t0.Add(9*time.Second))
	if open != 4*time.Second || cpu.User != 4*time.Second || len(whole) != 1 || !whole[0].Start.Equal(t0.Add(4*time.Second)) {
		t.Errorf("open %s, cpu %s, whole %v", open, cpu.User, whole)
	}
}
