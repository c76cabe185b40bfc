package runner

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

// A server frozen (SIGSTOP) inside the window, its statements timing out
// only after the window's end: no figure is inflated by the time lost,
// the timed-out statements are the window's timeout errors, and the
// outage starts at the last answer, not at the timeout. PostgreSQL and
// MariaDB.
func TestFrozenWindowFigures(t *testing.T) {
	t.Parallel()
	servers := map[string]func(t *testing.T) (Target, *managed.Instance){
		"postgres": func(t *testing.T) (Target, *managed.Instance) { return managedServer(t) },
		"mariadb":  frozenMariaDB,
	}
	for _, name := range []string{"postgres", "mariadb"} {
		t.Run(name, func(t *testing.T) {
			tg, inst := servers[name](t)
			ctx := context.Background()
			c, out := common(t, tg)
			if err := Load(ctx, LoadOptions{Common: c}); err != nil {
				t.Fatalf("load: %v\n%s", err, out)
			}
			const users, window, timeout = 4, 10 * time.Second, 3 * time.Second
			// Frozen 7.5 s into the window: the statements time out at
			// 10.5 s, after the window ended at 10 s.
			// frozeAt is just before the SIGSTOP was sent, sentAt just
			// after: a saturated host may hold the goroutine between the
			// two (0.7 s once, a second suite beside).
			var frozeAt, sentAt time.Time
			// A warm-up, as by default. PostgreSQL's backends publish their
			// counts up to a second late (later when their flush finds the
			// lock taken); the sessions publish theirs before every reading
			// (observe.Settler), so the last reading before the freeze is
			// right, and so is the window's start.
			o := RunOptions{Common: c, Label: "frozen", Users: users, Duration: window, Warmup: 2 * time.Second,
				Faults: Faults{StatementTimeout: timeout}, Out: filepath.Join(t.TempDir(), "r.json")}
			o.phaseHook = func(p int, at time.Time) {
				if p == driver.Measure {
					time.AfterFunc(time.Until(at.Add(7500*time.Millisecond)), func() {
						frozeAt = time.Now()
						inst.Signal(syscall.SIGSTOP)
						sentAt = time.Now()
					})
				}
			}
			defer inst.Signal(syscall.SIGCONT)
			err := Run(ctx, o)
			inst.Signal(syscall.SIGCONT)
			r, rerr := result.Read(o.Out)
			if rerr != nil {
				t.Fatalf("no result (run: %v): %v\n%s", err, rerr, out)
			}
			if frozeAt.IsZero() {
				t.Fatal("the server was never frozen")
			}
			froze := frozeAt.Sub(r.MeasureStart).Seconds()
			t.Logf("frozen %.2f s into the %s window; run: %v; warnings %q", froze, window, err, r.Warnings)

			// Point 7: the timeouts are the window's errors, the outage
			// starts at the last answer.
			if r.Errors["timeout"] < 1 {
				t.Errorf("errors %v: want the statements cut by the timeout as class timeout", r.Errors)
			}
			if n := len(r.Events); n == 0 || r.Events[n-1].Kind != "outage" {
				t.Errorf("events %+v: want an outage", r.Events)
			} else if at, sent := r.Events[n-1].Start.Sub(frozeAt).Seconds(), sentAt.Sub(frozeAt).Seconds(); at < -1 || at > sent+0.5 {
				t.Errorf("the outage starts %+.2f s from the freeze (its signal sent in %.2f s), want at the last answer before it", at, sent)
			}

			// Point 1: each rate of the load profile against the same rate
			// over the time it covers, which must be the unfrozen part of
			// the window up to its last reading before the freeze: at most
			// three ticks of a second before it, as the reading of the tick
			// before the freeze may still be unanswered when the server
			// stops, and a busy host's readings may take longer than a
			// tick (1.8 s and 2.5 s before it, with a second suite
			// beside). The
			// series are integrated over exactly that time, a partly
			// covered interval in proportion: with hogs beside the test a
			// second's rate moves by 10% and more.
			lp := r.LoadProfile
			if lp == nil {
				t.Fatalf("no load profile; warnings %q", r.Warnings)
			}
			start := r.MeasureStart.Sub(r.Start).Seconds()
			if lp.Seconds > sentAt.Sub(r.MeasureStart).Seconds()+0.05 || lp.Seconds < froze-3.0 {
				t.Errorf("the profile covers %.2f s of the window, frozen %.2f s into it: want its last reading before the freeze", lp.Seconds, froze)
			}
			cut := start + lp.Seconds
			// within is the part of [at-secs, at] (seconds from the run's
			// start) inside the covered time.
			within := func(at, secs float64) float64 {
				if secs <= 0 {
					return 0
				}
				return max(min(at, cut)-max(at-secs, start), 0) / secs
			}
			var txs, secs float64
			for _, iv := range r.Series {
				if f := within(iv.At, iv.Seconds); iv.Phase == "measure" && f > 0 {
					txs += f * float64(iv.Commits+iv.Rollbacks+iv.Errors)
					secs += f * iv.Seconds
				}
			}
			var cpu, cpuSecs float64
			if r.OS != nil {
				for _, p := range r.OS.Series {
					at := p.To.Sub(r.Start).Seconds()
					if f := within(at, p.IntervalS); p.ServerCPUCores != nil && f > 0 {
						cpu += *p.ServerCPUCores * f * p.IntervalS
						cpuSecs += f * p.IntervalS
					}
				}
			}
			rate := func(name string) (float64, bool) {
				l := lp.Line(name)
				if l == nil || l.PerSecond == nil {
					return 0, false
				}
				return *l.PerSecond, true
			}
			// Issue 48: within 10%, with a CPU hog on every core beside the
			// test; the transactions also within those the sessions may
			// have in flight at either edge, counted on the server's side
			// of it and not the driver's or the other way (a suite beside
			// and a benchmark: 8 transactions/s, 48 in the time covered,
			// and 8 in flight are 17%).
			near := func(what string, got, want, slack float64) {
				t.Logf("%s: %.3f/s in the profile, %.3f/s over the time it covers", what, got, want)
				if math.Abs(got-want) > (0.10+slack)*want {
					t.Errorf("%s: %.3f/s in the load profile, %.3f/s over the unfrozen part of the window it covers: more than %.0f%% apart",
						what, got, want, 100*(0.10+slack))
				}
			}
			t.Logf("profile over %.2f s (%s); driver: %.0f transactions in %.2f s", lp.Seconds, lp.Note, txs, secs)
			if got, ok := rate("Transactions"); !ok || secs == 0 {
				t.Errorf("no transactions rate (%v) or no unfrozen driver interval (%v s)", ok, secs)
			} else {
				// The time covered may begin after the window's start, by
				// what its first reading waited for a starved server (now
				// placed at the server's instant): the driver's rate over
				// any span as long before the freeze bounds it too
				// (37.9/s in the profile, 32.2/s over the window's first
				// 5.6 s, 1.9 s before a freeze, with a second suite beside).
				slack := 2 * users / max(txs, 1)
				lo, hi := spanRates(r, lp.Seconds, froze)
				t.Logf("transactions: %.3f/s in the profile, %.3f/s over the window's first %.2f s, %.3f to %.3f/s over spans as long before the freeze",
					got, txs/secs, lp.Seconds, lo, hi)
				if got < min(lo, txs/secs)*(0.90-slack) || got > max(hi, txs/secs)*(1.10+slack) {
					t.Errorf("transactions: %.3f/s in the load profile, %.3f to %.3f/s over the unfrozen part of the window: more than %.0f%% outside",
						got, min(lo, txs/secs), max(hi, txs/secs), 100*(0.10+slack))
				}
			}
			if got, ok := rate("DB CPU"); ok {
				if cpuSecs > 0 {
					// And within 0.01 cores: a server that a saturated host
					// leaves almost idle (0.014 against 0.020) is read in
					// /proc's 10 ms ticks, at edges apart by as many.
					want := cpu / cpuSecs
					near("DB CPU", got, want, 0.01/max(want, 1e-9))
				}
				if got > float64(runtime.NumCPU())*1.05 {
					t.Errorf("DB CPU %.2f s/s on %d CPUs", got, runtime.NumCPU())
				}
			}
			for _, l := range []string{"DB time", "DB time (sampled)"} {
				if got, ok := rate(l); ok && got > users*1.05 {
					t.Errorf("%s %.2f s/s with %d sessions", l, got, users)
				}
			}
		})
	}
}

// frozenMariaDB starts a managed MariaDB for the test (skipped without
// one, failed under CI=true) and returns its target and instance.
func frozenMariaDB(t *testing.T) (Target, *managed.Instance) {
	tg := managedMariaDB(t)
	inst, err := managed.StartMariaDB(context.Background(), managed.Options{DataDir: tg.MyData})
	if err != nil {
		t.Fatal(fmt.Errorf("managed mariadb: %w", err))
	}
	t.Cleanup(func() { inst.Stop() })
	return Target{URL: inst.URL()}, inst
}
