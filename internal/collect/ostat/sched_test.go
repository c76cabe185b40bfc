package ostat

import (
	"math"
	"testing"
	"time"
)

// The server's run delay is summed process by process: a backend that
// exits takes only its own time away, one that started counts from zero.
func TestServerRunDelay(t *testing.T) {
	a := map[int]float64{10: 1.0, 11: 2.0, 12: 5.0}
	b := map[int]float64{10: 1.5, 11: 2.25, 13: 0.5} // 12 exited, 13 started
	got := serverRunDelay(a, b)
	if got == nil || math.Abs(*got-1.25) > 1e-9 {
		t.Fatalf("serverRunDelay = %v, want 1.25", got)
	}
	if serverRunDelay(nil, b) != nil {
		t.Error("no first reading must give no figure, not the whole lifetime")
	}

	t0 := time.Unix(1000, 0)
	rd := func(v float64) *float64 { return &v }
	x := &Snapshot{At: t0, RunDelay: rd(10), ServerRunDelay: a}
	y := &Snapshot{At: t0.Add(2 * time.Second), RunDelay: rd(11), ServerRunDelay: b}
	r := Between(x, y)
	if r.RunDelayPerS == nil || math.Abs(*r.RunDelayPerS-0.5) > 1e-9 {
		t.Errorf("host run delay %v s/s, want 0.5", r.RunDelayPerS)
	}
	if r.ServerRunDelayPerS == nil || math.Abs(*r.ServerRunDelayPerS-0.625) > 1e-9 {
		t.Errorf("server run delay %v s/s, want 0.625", r.ServerRunDelayPerS)
	}
	m := MergeRates(r, Between(y, &Snapshot{At: t0.Add(4 * time.Second), RunDelay: rd(11), ServerRunDelay: b}))
	if m.RunDelayPerS == nil || math.Abs(*m.RunDelayPerS-0.25) > 1e-9 {
		t.Errorf("merged host run delay %v s/s, want 0.25", m.RunDelayPerS)
	}
}

// The live server tree's run delay is read from /proc/PID/schedstat.
func TestRunDelayOfLiveProcess(t *testing.T) {
	r, err := New(Options{ServerPID: 1})
	if err != nil {
		t.Skip("no PID 1 visible:", err)
	}
	p, err := r.fs.Proc(1)
	if err != nil {
		t.Skip(err)
	}
	if _, err := p.Schedstat(); err != nil {
		t.Skip("this kernel keeps no /proc/PID/schedstat")
	}
	s, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	// The tree is the whole machine here; a process may exit between the
	// walk and its schedstat, so only PID 1 is sure to be there.
	if _, ok := s.ServerRunDelay[1]; !ok {
		t.Errorf("no run delay for PID 1 (%d of the tree's %d processes have one)", len(s.ServerRunDelay), s.ServerProcs)
	}
}

// Paging rates come from /proc/vmstat's counters over the interval (the
// fixtures' vmstat: pgmajfault +219, pswpin +10, pswpout +32).
func TestVMStatFixture(t *testing.T) {
	r := Between(readFixture(t, "proc-a", fixtureServer), readFixture(t, "proc-b", fixtureServer))
	const dt = 1.094866251
	for _, c := range []struct {
		name string
		got  *float64
		want float64
	}{{"major faults/s", r.MajorFaultsPerS, 219 / dt}, {"swap in pages/s", r.SwapInPagesPerS, 10 / dt}, {"swap out pages/s", r.SwapOutPagesPerS, 32 / dt}} {
		if c.got == nil || math.Abs(*c.got-c.want) > 1e-6 {
			t.Errorf("%s = %v, want %.6f", c.name, c.got, c.want)
		}
	}
}
