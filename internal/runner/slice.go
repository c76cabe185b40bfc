package runner

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/result"
)

// MinSlice is the shortest slice ab --slice takes: a slice must hold many
// transactions, and the switch (the last transactions of one side ending)
// must be a small part of it.
const MinSlice = 200 * time.Millisecond

func (o *ABOptions) validateSlice() error {
	switch {
	case o.Slice < MinSlice:
		return usage("--slice %s: must be at least %s (for example 2s)", o.Slice, MinSlice)
	case o.Duration < 8*o.Slice:
		return usage("--slice %s with --duration %s: the window must hold at least 8 slices (4 of each side), so lengthen --duration or shorten --slice", o.Slice, o.Duration)
	case o.Rate > 0:
		return usage("--slice and --rate both given: a target rate needs its target all the time; choose one")
	case len(o.Targets) > 1:
		return usage("--slice takes one target per side")
	}
	return nil
}

// slicedRound runs one round of ab --slice: both sides' sessions connect,
// then the sides take turns in slices of o.Slice, first first, in the
// order ABBA ABBA ..., through warm-up and measured window alike. Host
// noise slower than a few slices then falls on both sides equally and
// cancels in the round's ratio. Each side's result file holds its own
// slices; its rates are over them (result.Slicing). It returns the files
// written: both, or, when one side failed, whatever was written.
func slicedRound(ctx context.Context, o ABOptions, sides [2]abSide, outs [2]string, round, first int) ([]string, error) {
	var ts [2]*opened
	defer func() {
		for _, t := range ts {
			if t != nil {
				t.close()
			}
		}
	}()
	var versions [2]string
	want := o.Workload.Params()
	var loaded string
	for k, s := range sides {
		t, err := openTarget(ctx, s.t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.label, err)
		}
		ts[k] = t
		c := o.Common
		c.Target = s.t
		ro := o.RunOptions
		ro.Load = ro.Load || s.load
		if err := loadOrPrepare(ctx, t, c, ro, o.Reload); err != nil {
			return nil, fmt.Errorf("%s: %w", s.label, err)
		}
		// Both sides share one workload, whose parameters prepare read
		// from the loaded data: they must agree.
		if p := fmt.Sprint(o.Workload.Params()); loaded == "" {
			loaded = p
		} else if p != loaded {
			return nil, usage("%s was loaded with %s, %s with %s: load both sides alike", s.label, p, sides[0].label, loaded)
		}
		if err := checkExplicit(ctx, t, c, want); err != nil {
			return nil, fmt.Errorf("%s: %w", s.label, err)
		}
		if versions[k], err = serverVersion(ctx, t); err != nil {
			return nil, fmt.Errorf("%s: %w", s.label, err)
		}
	}
	users, err := sessions(o.RunOptions)
	if err != nil {
		return nil, err
	}

	var ros [2]RunOptions
	var runs [2]*result.Run
	var journals [2]*result.Journal
	var done [2]bool
	defer func() {
		for k, j := range journals {
			if j != nil {
				j.Close(done[k])
			}
		}
	}()
	for k, s := range sides {
		ro := o.RunOptions
		ro.Target, ro.Label, ro.Round, ro.Out, ro.Repeat, ro.Users = s.t, s.label, round, outs[k], 1, users
		ros[k] = ro
		runs[k] = describe(ro, ts[k], versions[k])
		runs[k].Driver.Slicing = &result.Slicing{SliceS: o.Slice.Seconds(), With: sides[1-k].label}
		if journals[k], err = result.OpenJournal(ro.Out, runs[k]); err != nil {
			return nil, err
		}
	}

	p := &progress{w: o.Stderr, tty: o.TTY, interval: o.ProgressInterval}
	var mu sync.Mutex
	var status [2]driver.Status
	total := o.Warmup + o.Duration
	show := func(k int, s driver.Status) {
		mu.Lock()
		defer mu.Unlock()
		status[k] = s
		p.show(fmt.Sprintf("round %d %s/%s  %-7s  %s %8.1f tps  %s %8.1f tps (in turns)", round, s.Elapsed.Round(time.Second), total,
			s.Phase, sides[0].label, status[0].TPS, sides[1].label, status[1].TPS))
	}
	gates := [2]*driver.Gate{driver.NewGate(), driver.NewGate()}
	gates[first].Open()
	b := newBarrier(2)
	sctx, stopSlicer := context.WithCancel(ctx)
	slicerDone := make(chan struct{})
	go func() {
		defer close(slicerDone)
		select {
		case <-b.open:
		case <-sctx.Done():
			return
		}
		slice(sctx, gates, first, o.Slice)
	}()
	// A side that fails ends the other: a round with one side is no pair.
	rctx, cancelRound := context.WithCancel(ctx)
	defer cancelRound()
	var runErrs, errs [2]error
	var wg sync.WaitGroup
	for k := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r *result.Run
			r, runErrs[k], errs[k] = drive(rctx, ts[k], ros[k], runs[k], hooks{
				progress: func(s driver.Status) { show(k, s) },
				journal:  journals[k],
				ready:    b.wait,
				gate:     gates[k],
			})
			if errs[k] != nil {
				b.fail(fmt.Errorf("%s: %w", sides[k].label, errs[k]))
				cancelRound()
			}
			runs[k] = r
		}()
	}
	wg.Wait()
	stopSlicer()
	<-slicerDone
	p.clear()
	var written []string
	var failed error
	for k := range sides {
		if errs[k] != nil {
			done[k] = runs[k] == nil
			continue
		}
		// A side cancelled because the other failed ends interrupted: its
		// partial result is written all the same.
		err := finishRun(ros[k], runs[k], runErrs[k], journals[k], &done[k])
		if done[k] {
			written = append(written, ros[k].Out)
		}
		failed = cmp.Or(failed, err)
	}
	for k := range sides {
		if errs[k] != nil { // the cause, rather than the other side's interruption
			return written, fmt.Errorf("%s (%s): %w", sides[k].label, ts[k].URL, errs[k])
		}
	}
	return written, failed
}

// slice swaps the open gate every slot in the order ABBA ABBA ... (first
// is A), on a fixed clock: a slot's end does not move with a slow drain.
// The gate that closes waits for its transactions to end before the
// other opens.
func slice(ctx context.Context, gates [2]*driver.Gate, first int, d time.Duration) {
	start := time.Now()
	cur := first
	t := time.NewTimer(d)
	defer t.Stop()
	for j := 1; ; j++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next := first
		if j%4 == 1 || j%4 == 2 {
			next = 1 - first
		}
		if next != cur {
			gates[cur].Close(ctx)
			gates[next].Open()
			cur = next
		}
		t.Reset(max(0, time.Until(start.Add(time.Duration(j+1)*d))))
	}
}
