package rawio

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds, from 1 ns (a page-cache hit is a
// few hundred) to a minute, to three significant digits; a slower read is
// recorded as a minute, and the exact maximum is kept beside.
const (
	lowestLatency  = 1
	highestLatency = int64(time.Minute)
	sigFigs        = 3
)

// redropEvery is how often a buffered fallback drops the file's pages
// again, so that re-reads of blocks read earlier in the run mostly miss the
// cache as they would with O_DIRECT.
const redropEvery = 100 * time.Millisecond

// measurement is what the readers of one run counted.
type measurement struct {
	hist    *hdr.Histogram
	max     time.Duration
	reads   int64
	elapsed time.Duration
}

// fill sets r's figures from m.
func (m measurement) fill(r *Result, block int) {
	r.Reads = m.reads
	r.Elapsed = m.elapsed
	r.IOPS = float64(m.reads) / m.elapsed.Seconds()
	r.MBps = r.IOPS * float64(block) / 1e6
	r.LatencyP50 = time.Duration(m.hist.ValueAtQuantile(50))
	r.LatencyP99 = time.Duration(m.hist.ValueAtQuantile(99))
	r.LatencyMax = m.max
	// The histogram reports the top of a value's bucket, which can exceed
	// the exact maximum by its precision.
	r.LatencyP50 = min(r.LatencyP50, m.max)
	r.LatencyP99 = min(r.LatencyP99, m.max)
}

// readRandom runs o.Workers readers on path for the warm-up and the measured
// time. A read counts when it starts after the warm-up and completes before
// the end, so the count and the time are those of one window.
func readRandom(ctx context.Context, path string, o Options, direct, redrop bool) (measurement, error) {
	// A reader blocked in pread keeps its P until the runtime's monitor
	// takes it back, tens of microseconds later: with fewer Ps than
	// readers, fewer than Workers reads would be in flight, and the queue
	// depth would be GOMAXPROCS's, not Workers'. So each reader gets a P,
	// as each fio job is a process of its own.
	if prev := runtime.GOMAXPROCS(0); prev < o.Workers+1 {
		runtime.GOMAXPROCS(o.Workers + 1)
		defer runtime.GOMAXPROCS(prev)
	}
	blocks := o.Size / int64(o.Block)
	base := time.Now()
	start := o.warmup()
	end := start + o.Duration
	var stop atomic.Bool
	readers := make([]reader, o.Workers)
	var wg sync.WaitGroup
	for i := range readers {
		rd := &readers[i]
		wg.Go(func() {
			rd.err = rd.run(path, direct, i, o.Block, blocks, base, start, end, &stop)
			if rd.err != nil {
				stop.Store(true)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	timer := time.NewTimer(end)
	defer timer.Stop()
	var tick <-chan time.Time
	if redrop {
		t := time.NewTicker(redropEvery)
		defer t.Stop()
		tick = t.C
	}
wait:
	for {
		select {
		case <-ctx.Done():
			stop.Store(true)
			<-done
			return measurement{}, ctx.Err()
		case <-timer.C:
			stop.Store(true)
		case <-tick:
			_ = dropCache(path) // a failure was reported when the run began
		case <-done:
			break wait
		}
	}

	m := measurement{hist: hdr.New(lowestLatency, highestLatency, sigFigs), elapsed: o.Duration}
	for _, rd := range readers {
		if rd.err != nil {
			return measurement{}, rd.err
		}
		m.hist.Merge(rd.hist)
		m.reads += rd.reads
		m.max = max(m.max, rd.max)
	}
	if m.reads == 0 {
		return measurement{}, fmt.Errorf("rawio: no read completed within the measured %v", o.Duration)
	}
	return m, nil
}

// reader is one concurrent reader: its own file descriptor, as a database
// backend has, its own random sequence and its own histogram, merged after.
type reader struct {
	hist  *hdr.Histogram
	max   time.Duration
	reads int64
	err   error
}

// run reads blocks at uniformly random block-aligned offsets until stop is
// set or the measured window ends. Times are offsets from base, on the
// monotonic clock.
func (rd *reader) run(path string, direct bool, id, block int, blocks int64, base time.Time, start, end time.Duration, stop *atomic.Bool) error {
	rd.hist = hdr.New(lowestLatency, highestLatency, sigFigs)
	f, err := openReader(path, direct)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := alignedBuffer(block)
	rng := rand.New(rand.NewPCG(0x64627061726974, uint64(id))) // "dbparit", then the reader
	for !stop.Load() {
		off := rng.Int64N(blocks) * int64(block)
		t0 := time.Since(base)
		if _, err := f.ReadAt(buf, off); err != nil {
			return fmt.Errorf("rawio: read %d bytes at %d: %w", block, off, err)
		}
		t1 := time.Since(base)
		if t1 > end {
			return nil
		}
		if t0 < start {
			continue
		}
		d := t1 - t0
		rd.reads++
		rd.max = max(rd.max, d)
		_ = rd.hist.RecordValue(min(max(int64(d), lowestLatency), highestLatency)) // clamped into range: cannot fail
	}
	return nil
}

// openReader opens path for one reader. Buffered readers tell the kernel
// their reads are random, so that no read-ahead reads more than a block.
func openReader(path string, direct bool) (*os.File, error) {
	if direct {
		f, err := openDirect(path)
		if err != nil {
			return nil, fmt.Errorf("rawio: open %s with O_DIRECT: %w", path, err)
		}
		return f, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("rawio: %w", err)
	}
	_ = fadvise(f, 0, 0, fadvRandom) // only a hint: without it, read-ahead inflates the figures a little
	return f, nil
}
