package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/result"
)

// ABOptions are the options of `dbparity ab`: the same workload against
// two targets, in rounds.
type ABOptions struct {
	RunOptions        // the run's settings; Target and Label are set per side
	A, B       Target // the two targets
	LabelA     string // default "a"
	LabelB     string // default "b"
	Rounds     int    // each round runs A and B once, in random order
	Reload     bool   // load the workload before every run
	Prefix     string // result files: PREFIX-LABEL-ROUND.json
	// Slice, when above 0, runs each round's two sides at once, taking
	// turns in slices of this length (ABBA), instead of one after the
	// other: see slicedRound.
	Slice time.Duration
}

// abSide is one side of ab.
type abSide struct {
	t     Target
	label string
	// load: the side's own managed server was made for it (sliced
	// sides that shared one data directory): it is loaded when empty.
	load bool
}

// AB runs the rounds and returns the result files in the order written.
// The order within each round is drawn from the seed, so a study can be
// repeated exactly; it is recorded in each result's round.
func AB(ctx context.Context, o ABOptions) ([]string, error) {
	if o.Rounds < 1 || o.Rounds > 1000 {
		return nil, usage("--rounds %d: must be between 1 and 1000", o.Rounds)
	}
	if o.Live == nil && o.MetricsAddr != "" {
		// One endpoint for every round: each side's series under its label.
		srv, err := startLive(o.MetricsAddr, o.MetricsLinger, "ab", o.Workload.Meta().Name, nil, o.Stderr)
		if err != nil {
			return nil, err
		}
		defer srv.Close(ctx)
		o.Live = srv
	}
	if o.LabelA == "" {
		o.LabelA = "a"
	}
	if o.LabelB == "" {
		o.LabelB = "b"
	}
	if o.LabelA == o.LabelB {
		return nil, usage("--label-a and --label-b are both %q: name the two sides differently", o.LabelA)
	}
	if o.Prefix == "" {
		o.Prefix = filepath.Join(DefaultDataDir, "results", "ab")
	}
	if o.Slice > 0 {
		if err := o.validateSlice(); err != nil {
			return nil, err
		}
	}
	// A mistyped setting of either side is refused before the first
	// round, not when its turn comes.
	for _, t := range []Target{o.A, o.B} {
		if err := t.validateSettings(); err != nil {
			return nil, err
		}
	}
	sides := [2]abSide{{t: o.A, label: o.LabelA}, {t: o.B, label: o.LabelB}}
	if o.Slice > 0 && o.A.Managed != "" && o.A.Managed == o.B.Managed && o.A.dataDir() == o.B.dataDir() {
		// Sliced sides run at once: each needs its own managed server,
		// so B gets a data directory of its own, loaded when empty.
		dir := o.B.dataDir() + "-" + safeName(o.LabelB)
		if o.B.Managed == "mariadb" {
			sides[1].t.MyData = dir
		} else {
			sides[1].t.PGData = dir
		}
		sides[1].load = true
		fmt.Fprintf(o.Stderr, "%s runs on its own managed %s server, in %s (loaded there when empty)\n", o.LabelB, o.B.Managed, dir)
	} else if o.A.Managed != "" && o.B.Managed != "" && o.A.dataDir() != o.B.dataDir() {
		// Two managed servers of their own (two PostgreSQL versions, or
		// two data directories): each is loaded when empty.
		for k := range sides {
			sides[k].load = true
			fmt.Fprintf(o.Stderr, "%s runs on its own managed %s server, in %s (loaded there when empty)\n", sides[k].label, sides[k].t.Managed, sides[k].t.dataDir())
		}
	}
	name := func(s abSide, round int) string {
		return fmt.Sprintf("%s-%s-%d.json", o.Prefix, safeName(s.label), round)
	}
	// Every file must be writable before the first round.
	for r := 1; r <= o.Rounds; r++ {
		for _, s := range sides {
			if err := result.CheckWritable(name(s, r), o.Force); err != nil {
				return nil, UsageError{err}
			}
		}
	}
	g := rand.New(rand.NewPCG(o.Seed, 0xAB))
	var files []string
	for r := 1; r <= o.Rounds; r++ {
		order := []int{0, 1}
		if g.IntN(2) == 1 {
			order = []int{1, 0}
		}
		var labels []string
		for _, k := range order {
			labels = append(labels, sides[k].label)
		}
		if o.Slice > 0 {
			fmt.Fprintf(o.Stderr, "round %d of %d: %s in turns of %s (ABBA)\n", r, o.Rounds, strings.Join(labels, " and "), o.Slice)
			written, err := slicedRound(ctx, o, sides, [2]string{name(sides[0], r), name(sides[1], r)}, r, order[0])
			files = append(files, written...)
			if err != nil {
				return files, fmt.Errorf("round %d: %w", r, err)
			}
			continue
		}
		fmt.Fprintf(o.Stderr, "round %d of %d: %s\n", r, o.Rounds, strings.Join(labels, " then "))
		for _, k := range order {
			s := sides[k]
			ro := o.RunOptions
			ro.Target, ro.Label, ro.Round, ro.Out, ro.Repeat, ro.Brief = s.t, s.label, r, name(s, r), 1, true
			ro.Load = ro.Load || s.load
			if o.Reload {
				t, err := openTarget(ctx, s.t)
				if err != nil {
					return files, err
				}
				err = load(ctx, t, ro.Common, ro.LoadWorkers)
				t.close()
				if err != nil {
					return files, err
				}
			}
			if err := Run(ctx, ro); err != nil {
				return files, fmt.Errorf("round %d, %s: %w", r, s.label, err)
			}
			files = append(files, ro.Out)
		}
	}
	return files, nil
}
