package driver

import (
	rtmetrics "runtime/metrics"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/metrics"
)

// schedLatency is the Go scheduler's latency histogram: how long
// goroutines waited, runnable, before they ran. A driver that its host
// starves of CPU (or that has too few threads for its sessions) shows it
// here first: its sessions wait to send the next statement.
const schedLatency = "/sched/latencies:seconds"

// schedSnapshot is the cumulative histogram at one moment.
type schedSnapshot struct {
	counts  []uint64
	buckets []float64 // len(counts)+1 boundaries, in seconds
}

func readSched() schedSnapshot {
	s := []rtmetrics.Sample{{Name: schedLatency}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindFloat64Histogram {
		return schedSnapshot{}
	}
	h := s[0].Value.Float64Histogram()
	return schedSnapshot{counts: append([]uint64(nil), h.Counts...), buckets: h.Buckets}
}

// SchedLatency is the scheduler's latency over a window.
type SchedLatency struct {
	P99, Max time.Duration
	Count    uint64 // goroutine wake-ups seen
}

// schedBetween is the latency between two snapshots: the 99th percentile
// and the largest, each the upper bound of its bucket.
func schedBetween(a, b schedSnapshot) SchedLatency {
	if len(a.counts) != len(b.counts) || len(b.counts) == 0 {
		return SchedLatency{}
	}
	d := make([]uint64, len(b.counts))
	var n uint64
	for i := range d {
		d[i] = b.counts[i] - a.counts[i]
		n += d[i]
	}
	var s SchedLatency
	s.Count = n
	if n == 0 {
		return s
	}
	upper := func(i int) time.Duration {
		v := b.buckets[i+1]
		if v > 3600 { // the last bucket is open: its lower bound then
			v = b.buckets[i]
		}
		return time.Duration(v * float64(time.Second))
	}
	want := uint64(float64(n)*0.99 + 0.5)
	var seen uint64
	for i, c := range d {
		if c == 0 {
			continue
		}
		seen += c
		if s.P99 == 0 && seen >= want {
			s.P99 = upper(i)
		}
		s.Max = upper(i)
	}
	return s
}

// wakePeriod is how often the wake probe sleeps and wakes.
const wakePeriod = 2 * time.Millisecond

// wakeProbe measures how late this process runs when it asks to: a
// goroutine sleeps wakePeriod at a time and records by how much each wake
// overshot. The runtime's histogram sees only goroutines waiting inside
// Go's scheduler; a driver whose threads wait for a CPU in the kernel's
// run queue (a host short of CPU, a busy neighbour on its cores) shows it
// here, as a timer that fires late.
type wakeProbe struct {
	mu   sync.Mutex
	late *metrics.Histogram
	stop chan struct{}
	done chan struct{}
}

func startWakeProbe() *wakeProbe {
	p := &wakeProbe{late: metrics.NewHistogram(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTimer(wakePeriod)
		defer t.Stop()
		for {
			asked := time.Now()
			select {
			case <-p.stop:
				return
			case <-t.C:
				late := time.Since(asked) - wakePeriod
				p.mu.Lock()
				p.late.Record(max(late, 0))
				p.mu.Unlock()
				t.Reset(wakePeriod)
			}
		}
	}()
	return p
}

// restart forgets what the probe saw (the warm-up's wakes).
func (p *wakeProbe) restart() {
	p.mu.Lock()
	p.late.Reset()
	p.mu.Unlock()
}

// WakeLatency is how late the wake probe's timer fired over a window.
type WakeLatency struct{ P99, Max time.Duration }

// result stops the probe and returns its 99th percentile and largest
// lateness; safe to call more than once.
func (p *wakeProbe) result() WakeLatency {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.late.Count() == 0 {
		return WakeLatency{}
	}
	return WakeLatency{p.late.Quantile(0.99), p.late.Max()}
}
