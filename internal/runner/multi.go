package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/result"
)

// runMulti drives every target of o.Targets at once, as the published
// scale-out studies run SLOB on 4 and then 8 hosts: each target gets
// o.Users sessions, all targets' measured windows start together, and one
// result file holds the aggregate with each target's run as a part.
func runMulti(ctx context.Context, o RunOptions, outs []string) error {
	var ts []*opened
	defer func() {
		for _, t := range ts {
			t.close()
		}
	}()
	var versions []string
	var loaded map[string]any
	// Prepare replaces the load parameters with the loaded ones.
	want := o.Workload.Params()
	for i, tt := range o.Targets {
		t, err := openTarget(ctx, tt)
		if err != nil {
			return fmt.Errorf("target %d: %w", i+1, err)
		}
		ts = append(ts, t)
		c := o.Common
		c.Target = tt
		if err := loadOrPrepare(ctx, t, c, o, false); err != nil {
			return fmt.Errorf("target %d: %w", i+1, err)
		}
		// Prepare reads the loaded parameters into the one workload all
		// targets share: they must agree.
		params := o.Workload.Params()
		if loaded == nil {
			loaded = params
		} else if a, b := fmt.Sprint(loaded), fmt.Sprint(params); a != b {
			return usage("target %d was loaded with %v, target 1 with %v: load every target alike", i+1, params, loaded)
		}
		if err := checkExplicit(ctx, t, c, want); err != nil {
			return fmt.Errorf("target %d: %w", i+1, err)
		}
		v, err := serverVersion(ctx, t)
		if err != nil {
			return fmt.Errorf("target %d: %w", i+1, err)
		}
		versions = append(versions, v)
	}
	var err error
	if o.Users, err = sessions(o); err != nil {
		return err
	}
	return repeat(o, outs, func(o RunOptions) error { return runMultiOnce(ctx, ts, o, versions) })
}

// runMultiOnce is one measurement of every target at once.
func runMultiOnce(ctx context.Context, ts []*opened, o RunOptions, versions []string) error {
	n := len(ts)
	parts := make([]*result.Run, n)
	for i, t := range ts {
		parts[i] = describe(o, t, versions[i])
		parts[i].Label = fmt.Sprintf("%s/%d", o.Label, i+1)
	}
	head, err := result.Aggregate(o.Label, parts)
	if err != nil {
		return err
	}
	// A killed multi-target run leaves a journal that says it started;
	// the series are in the parts, which only the final file holds.
	journal, err := result.OpenJournal(o.Out, head)
	if err != nil {
		return err
	}
	done := false
	defer func() { journal.Close(done) }()
	var urls []string
	for _, t := range ts {
		urls = append(urls, t.URL)
	}
	fmt.Fprintf(o.Stderr, "running %s on %d targets at once (%s): %d users each, %s warm-up, %s measured\n",
		o.Workload.Meta().Name, n, strings.Join(urls, ", "), o.Users, o.Warmup, o.Duration)

	p := &progress{w: o.Stderr, tty: o.TTY, interval: o.ProgressInterval}
	var mu sync.Mutex
	status := make([]driver.Status, n)
	total := o.Warmup + o.Duration
	show := func(i int, s driver.Status) {
		mu.Lock()
		defer mu.Unlock()
		status[i] = s
		var tps float64
		var errs int64
		var p95 time.Duration
		for _, x := range status {
			tps, errs, p95 = tps+x.TPS, errs+x.Errors, max(p95, x.P95)
		}
		p.show(fmt.Sprintf("%s %s/%s  %-7s  %8.1f tps on %d targets  p95 %7.2f ms (highest)  errors %d", o.Label,
			s.Elapsed.Round(time.Second), total, s.Phase, tps, n, float64(p95)/1e6, errs))
	}
	b := newBarrier(n)
	runErrs := make([]error, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r *result.Run
			r, runErrs[i], errs[i] = drive(ctx, t, o, parts[i], hooks{
				progress: func(s driver.Status) { show(i, s) },
				ready:    b.wait,
			})
			if errs[i] != nil {
				b.fail(fmt.Errorf("target %d: %w", i+1, errs[i]))
				if r == nil {
					parts[i] = nil
				}
			}
		}()
	}
	wg.Wait()
	p.clear()
	for i, err := range errs {
		if err != nil {
			// A target that failed makes the aggregate meaningless: the
			// others' parts are not written as if it were whole.
			done = parts[i] == nil
			return fmt.Errorf("target %d (%s): %w", i+1, ts[i].URL, err)
		}
	}
	// Each part was judged alone (a target whose every transaction failed
	// fails the whole), and the aggregate as one.
	for _, p := range parts {
		p.Judge(*o.Faults.withDefaults().MaxErrorPct)
	}
	if head, err = result.Aggregate(o.Label, parts); err != nil {
		return err
	}
	return finishRun(o, head, errors.Join(runErrs...), journal, &done)
}

// barrier holds every target's start until all are connected, or lets
// them all go with an error when one fails first.
type barrier struct {
	mu      sync.Mutex
	waiting int
	err     error
	open    chan struct{}
	at      time.Time // when the last one arrived: every target's start
}

func newBarrier(n int) *barrier { return &barrier{waiting: n, open: make(chan struct{})} }

func (b *barrier) wait(ctx context.Context) (time.Time, error) {
	b.mu.Lock()
	b.waiting--
	if b.waiting == 0 && b.err == nil {
		b.at = time.Now()
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.at, b.err
}

func (b *barrier) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return
	}
	b.err = err
	if b.waiting > 0 {
		close(b.open)
	}
}
