package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/result"
)

// abSliced runs ab --slice between a and b with o's settings and returns
// the result files by label and round, and ab's error.
func abSliced(t *testing.T, c Common, a, b Target, o ABOptions) (map[string]*result.Run, error) {
	t.Helper()
	dir := t.TempDir()
	o.Common, o.A, o.B, o.Prefix = c, a, b, filepath.Join(dir, "ab")
	o.Users, o.Label = 2, "x"
	o.Collect = CollectOptions{Off: true}
	files, err := AB(context.Background(), o)
	runs := map[string]*result.Run{}
	for _, f := range files {
		r, rerr := result.Read(f)
		if rerr != nil {
			t.Fatalf("%s: %v", f, rerr)
		}
		runs[fmt.Sprintf("%s-%d", r.Label, r.Round)] = r
	}
	return runs, err
}

// ab --slice on two SQLite files: each side's result holds its own
// slices, which never overlap the other's in time, its throughput is over
// them, and compare pairs the rounds.
func TestABSliced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, out := common(t, Target{})
	a, b := Target{URL: "sqlite://" + filepath.Join(dir, "a.db")}, Target{URL: "sqlite://" + filepath.Join(dir, "b.db")}
	runs, err := abSliced(t, c, a, b, ABOptions{RunOptions: RunOptions{Duration: 2400 * time.Millisecond, Warmup: 200 * time.Millisecond, Load: true},
		Rounds: 2, Slice: 200 * time.Millisecond})
	if err != nil || len(runs) != 4 {
		t.Fatalf("%d results, %v\n%s", len(runs), err, out)
	}
	for round := 1; round <= 2; round++ {
		ra, rb := runs[fmt.Sprintf("a-%d", round)], runs[fmt.Sprintf("b-%d", round)]
		type span struct{ from, to time.Time }
		var spans [2][]span
		for k, r := range []*result.Run{ra, rb} {
			sl := r.Driver.Slicing
			window := r.MeasureEnd.Sub(r.MeasureStart).Seconds()
			// Each side about half the window, less the time each slot
			// loses to its start on a busy host, or more by the
			// transactions in flight at its end (0.29 and 0.725 of it,
			// with a second suite beside): that the slices never overlap
			// is checked below.
			if sl == nil || sl.SliceS != 0.2 || sl.With != []string{"b", "a"}[k] || sl.ActiveS < 0.2*window || sl.ActiveS > 0.85*window {
				t.Fatalf("%s round %d: slicing %+v in a %.2f s window", r.Label, round, sl, window)
			}
			if s := r.Summarize(); s.DurationS != sl.ActiveS || s.Commits == 0 {
				t.Errorf("%s: summary over %.2f s, %d commits", r.Label, s.DurationS, s.Commits)
			}
			for _, x := range sl.Slices {
				from := r.MeasureStart.Add(time.Duration(x.T * float64(time.Second)))
				spans[k] = append(spans[k], span{from, from.Add(time.Duration(x.S * float64(time.Second)))})
			}
		}
		for _, x := range spans[0] {
			for _, y := range spans[1] {
				if x.from.Before(y.to) && y.from.Before(x.to) {
					t.Errorf("round %d: a's slice %v overlaps b's %v", round, x, y)
				}
			}
		}
		// 12 slots of 200 ms: each side has 3 spans on the clock; a busy
		// machine may trim one at an edge of the window.
		if len(spans[0]) < 2 || len(spans[1]) < 2 {
			t.Errorf("round %d: slices %d and %d", round, len(spans[0]), len(spans[1]))
		}
	}
	ga := compare.Group{Label: "a", Runs: []*result.Run{runs["a-1"], runs["a-2"]}}
	gb := compare.Group{Label: "b", Runs: []*result.Run{runs["b-1"], runs["b-2"]}}
	if _, _, paired := compare.Rounds(ga, gb); !paired {
		t.Error("sliced rounds are not paired")
	}
}

func TestABSliceUsage(t *testing.T) {
	t.Parallel()
	c, _ := common(t, Target{})
	a, b := Target{URL: "sqlite://a.db"}, Target{URL: "sqlite://b.db"}
	for _, tc := range []struct {
		o    ABOptions
		want string
	}{
		{ABOptions{RunOptions: RunOptions{Duration: time.Minute}, Rounds: 3, Slice: 100 * time.Millisecond}, "--slice 100ms: must be at least 200ms"},
		{ABOptions{RunOptions: RunOptions{Duration: 10 * time.Second}, Rounds: 3, Slice: 2 * time.Second}, "the window must hold at least 8 slices"},
		{ABOptions{RunOptions: RunOptions{Duration: time.Minute, Rate: 100}, Rounds: 3, Slice: 2 * time.Second}, "--slice and --rate both given"},
	} {
		o := tc.o
		o.Common, o.A, o.B, o.Prefix = c, a, b, filepath.Join(t.TempDir(), "ab")
		_, err := AB(context.Background(), o)
		var ue UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a usage error with %q", tc.o.Slice, err, tc.want)
		}
	}
}

// A side whose server freezes (SIGSTOP) in a sliced round does not hold
// the other: the round ends when its window does (plus the statement
// timeout), the frozen side's result is written marked failed, the other
// side's whole (over the turns it had).
func TestABSlicedFrozenSide(t *testing.T) {
	t.Parallel()
	ta, _ := managedServer(t)
	tb, ib := managedServer(t)
	c, out := common(t, ta)
	for _, tg := range []Target{ta, tb} {
		c.Target = tg
		if err := Load(context.Background(), LoadOptions{Common: c}); err != nil {
			t.Fatalf("load: %v\n%s", err, out)
		}
	}
	time.AfterFunc(2*time.Second, func() {
		if _, err := ib.Signal(syscall.SIGSTOP); err != nil {
			t.Error(err)
		}
	})
	defer ib.Signal(syscall.SIGCONT)
	start := time.Now()
	runs, err := abSliced(t, c, ta, tb, ABOptions{RunOptions: RunOptions{Duration: 5 * time.Second, Warmup: 500 * time.Millisecond,
		Faults: Faults{StatementTimeout: 2 * time.Second, AbortAfter: 2 * time.Second}}, Rounds: 1, Slice: 500 * time.Millisecond})
	took := time.Since(start)
	t.Logf("sliced round with b frozen after 2 s: ended after %s: %v", took, err)
	if took > 15*time.Second {
		t.Errorf("the round took %s: window 5.5 s, statement timeout 2 s", took)
	}
	if err == nil || !strings.Contains(err.Error(), "failed") {
		t.Errorf("round with a frozen side returned %v, want its failure", err)
	}
	a, b := runs["a-1"], runs["b-1"]
	if a == nil || b == nil {
		t.Fatalf("results written: %v\n%s", runs, out)
	}
	if !b.Failed || a.Failed || a.Partial {
		t.Errorf("b failed %v (%s); a failed %v partial %v", b.Failed, b.FailedReason, a.Failed, a.Partial)
	}
	// Each of b's turns waits for its statements (or connection attempts)
	// to time out before a's opens: a's share of the window is small, but
	// measured.
	if s := a.Summarize(); s.Commits == 0 || a.Driver.Slicing.ActiveS <= 0 {
		t.Errorf("a: %d commits in %.1f s of slices", s.Commits, a.Driver.Slicing.ActiveS)
	}
}
