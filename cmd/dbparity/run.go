package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/cpuset"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/runner"
)

func cmdLoad(ctx context.Context, args []string) error {
	fs, c, err := newFlags("load", args)
	if err != nil {
		return err
	}
	o := runner.LoadOptions{}
	fs.IntVar(&o.Workers, "workers", 0, "connections to load with (default one per core)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	o.Common = c.opts
	for _, t := range c.eachTarget() {
		o.Target = t
		if err := runner.Load(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

func cmdRun(ctx context.Context, args []string) error {
	o, err := runOptions(args)
	if err != nil {
		return err
	}
	return runner.Run(ctx, o)
}

// runOptions parses run's command line (k8s checks the parts' with it).
func runOptions(args []string) (runner.RunOptions, error) {
	fs, c, err := newFlags("run", args)
	if err != nil {
		return runner.RunOptions{}, err
	}
	o := runner.RunOptions{}
	runFlags(fs, &o)
	fs.StringVar(&o.Label, "label", "", "the platform's name in results (default the target's engine and host, postgres@db1)")
	fs.StringVar(&o.Out, "out", "", "result file (default dbparity-data/results/LABEL-TIME.json)")
	o.Repeat = 1
	fs.Var(count{&o.Repeat}, "repeat", "run N times (loading at most once), writing OUT-1.json ... OUT-N.json (default 1)")
	var part, startAt string
	pt := runner.Part{}
	fs.StringVar(&part, "part", "", "run the `I/N`-th share of the sessions (I from 0) of a run split over N driver processes; dbparity merge combines their results")
	fs.StringVar(&startAt, "start-at", "", "with --part: start every part's warm-up at this `time` (RFC 3339; clocks synchronised) instead of the barrier in the target database")
	fs.StringVar(&pt.RunID, "run-id", "", "with --part: the run's name in the barrier table dbparity_barrier, the same for all its parts (default the label)")
	fs.DurationVar(&pt.BarrierTimeout, "barrier-timeout", 10*time.Minute, "with --part: how long to wait for the other parts to register")
	var cpus int
	fs.Var(count{&cpus}, "cpus", "with --managed: confine the server to `N` CPUs (the highest numbered), disclosed and the denominator of its CPU utilisation")
	if err := c.parse(fs, args); err != nil {
		return o, err
	}
	if err := confine(&c.opts.Target, cpus); err != nil {
		return o, err
	}
	if part == "" && (startAt != "" || pt.RunID != "") {
		return o, runner.UsageError{Err: errors.New("--start-at and --run-id shape the parts of a split run: give --part I/N too")}
	}
	if part != "" {
		p, err := runner.ParsePart(part)
		if err != nil {
			return o, runner.UsageError{Err: err}
		}
		p.RunID, p.BarrierTimeout = pt.RunID, pt.BarrierTimeout
		if startAt != "" {
			if p.StartAt, err = time.Parse(time.RFC3339Nano, startAt); err != nil {
				return o, runner.UsageError{Err: fmt.Errorf("--start-at %q: not an RFC 3339 time (for example 2026-11-24T15:04:05Z)", startAt)}
			}
		}
		if pt.BarrierTimeout <= 0 {
			return o, runner.UsageError{Err: errors.New("--barrier-timeout: must be above 0 (for example 10m)")}
		}
		o.Part = p
	}
	o.Common = c.opts
	o.StatementTimeout = c.opts.Target.Timeout
	o.Command = append([]string{"dbparity", "run"}, args...)
	if len(c.targets) > 1 {
		o.Targets = c.eachTarget()
	}
	return o, nil
}

// dbHostFlags binds how the database host is observed (run, ab, replay).
func dbHostFlags(fs *flag.FlagSet, o *runner.CollectOptions) {
	fs.StringVar(&o.DBHost, "db-host", "auto", "collectors: how to read the database host's OS figures and facts: auto (local, else node-exporter when given, else sql), local, sql (pg_read_file, needs pg_read_server_files), node-exporter, none")
	fs.StringVar(&o.DBHostMetrics, "db-host-metrics", "", "collectors: `URL` of a node_exporter on the database host (http://HOST:9100/metrics)")
}

// runFlags binds the flags that shape a run, shared by run and ab.
func runFlags(fs *flag.FlagSet, o *runner.RunOptions) {
	fs.Var(count{&o.Users}, "users", "sessions, one connection and one goroutine each (default 4; slob: schemas × threads-per-schema)")
	fs.DurationVar(&o.Duration, "duration", 60*time.Second, "length of the measured window")
	fs.DurationVar(&o.Warmup, "warmup", 10*time.Second, "warm-up before the measured window, not measured")
	fs.BoolVar(&o.Force, "force", false, "replace result files that exist")
	fs.BoolVar(&o.Load, "load", false, "load the workload first when its schema is missing (takes load's flags)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve live OpenMetrics at http://`HOST:PORT`/metrics while the command runs (for Prometheus; deploy/grafana has a dashboard)")
	fs.DurationVar(&o.MetricsLinger, "metrics-linger", 0, "with --metrics-addr: keep serving the final values for this `duration` after the work ends, so that a scrape sees them (your scrape interval)")
	fs.IntVar(&o.LoadWorkers, "workers", 0, "with --load: connections to load with (default one per core)")
	fs.BoolVar(&o.Collect.Off, "no-collect", false, "run no collectors (database, waits, OS): to measure what they cost")
	o.Collect.Interval, o.Collect.WaitInterval = time.Second, 100*time.Millisecond
	fs.Var(positive{&o.Collect.Interval, 100 * time.Millisecond}, "interval", "collectors: read database and OS counters every `duration` (at least 100ms)")
	fs.Var(positive{&o.Collect.WaitInterval, 10 * time.Millisecond}, "wait-interval", "collectors: sample session states every `duration` (at least 10ms)")
	fs.IntVar(&o.Collect.DBPID, "db-pid", 0, "collectors: PID of the database server's main process when it runs on this host, for DB CPU (managed: automatic)")
	dbHostFlags(fs, &o.Collect)
	o.AbortAfter = 10 * time.Second
	fs.Var(positive{d: &o.AbortAfter}, "abort-after", "abort the run, failed, when no transaction has committed for this `duration` while transactions fail (above 0)")
	o.SeriesPoints = metrics.DefaultSeriesPoints
	fs.Var(count{&o.SeriesPoints}, "series-points", fmt.Sprintf("points kept of each series in the result; a longer run merges adjacent points and keeps every point in OUT.series.gz (default %d)", metrics.DefaultSeriesPoints))
	o.MaxErrorPct = fs.Float64("max-error-pct", result.DefaultMaxErrorPct, "mark the run failed (exit 1) when more than this percentage of the measured window's transactions failed")
	fs.Float64Var(&o.Rate, "rate", 0, "open loop: start this many transactions per second in all (served by whichever session is free); latency counts from each one's intended start, and a run that cannot keep up says so (default: none, each session runs back to back)")
	fs.StringVar(&o.Arrival, "arrival", "", "with --rate: uniform (evenly spaced, the default) or poisson (random gaps, mean 1/rate)")
}

// confine sets a managed server's CPUs to the last n of this host's (n
// 0: unchanged), as sweep's cpus= steps do.
func confine(t *runner.Target, n int) error {
	if n == 0 {
		return nil
	}
	cpus, err := cpuset.Last(n)
	if err != nil {
		return runner.UsageError{Err: fmt.Errorf("--cpus %d: %w", n, err)}
	}
	t.CPUs = cpus
	return nil
}

// sidesFlags are the flags of two sides, A and B, of ab and sweep.
type sidesFlags struct {
	aURL, bURL     string
	aSet, bSet     multi
	aMySet, bMySet multi
	aCPUs, bCPUs   int
	aVer, bVer     int    // --a-pg-version, --b-pg-version
	aBin, bBin     string // --a-pg-bin, --b-pg-bin
	labelA, labelB string
}

func (sf *sidesFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&sf.aURL, "a", "", "side A's target `URL` (default --target, or --managed)")
	fs.StringVar(&sf.bURL, "b", "", "side B's target `URL` (default --target, or --managed)")
	fs.Var(&sf.aSet, "a-pg-set", "managed: a server setting `name=value` for side A only (repeatable)")
	fs.Var(&sf.bSet, "b-pg-set", "managed: a server setting `name=value` for side B only (repeatable)")
	fs.Var(&sf.aMySet, "a-my-set", "managed mariadb: a server option `name=value` for side A only (repeatable)")
	fs.Var(&sf.bMySet, "b-my-set", "managed mariadb: a server option `name=value` for side B only (repeatable)")
	fs.Var(count{&sf.aCPUs}, "a-cpus", "managed: confine side A's server to `N` CPUs")
	fs.Var(count{&sf.bCPUs}, "b-cpus", "managed: confine side B's server to `N` CPUs")
	fs.Var(major{&sf.aVer}, "a-pg-version", "managed postgres: the major `version` of side A's server (each version has its own data directory, loaded when empty)")
	fs.Var(major{&sf.bVer}, "b-pg-version", "managed postgres: the major `version` of side B's server")
	fs.StringVar(&sf.aBin, "a-pg-bin", "", "managed postgres: the `directory` of side A's server binaries (initdb, pg_ctl, postgres), so that both sides can be of one kind of build")
	fs.StringVar(&sf.bBin, "b-pg-bin", "", "managed postgres: the `directory` of side B's server binaries")
	fs.StringVar(&sf.labelA, "label-a", "a", "label of side A, the baseline")
	fs.StringVar(&sf.labelB, "label-b", "b", "label of side B")
}

// given tells whether any flag of a second side was given.
func (sf *sidesFlags) given() bool {
	return sf.aURL != "" || sf.bURL != "" || len(sf.aSet) > 0 || len(sf.bSet) > 0 || len(sf.aMySet) > 0 || len(sf.bMySet) > 0 ||
		sf.aCPUs > 0 || sf.bCPUs > 0 || sf.aVer > 0 || sf.bVer > 0 || sf.aBin != "" || sf.bBin != ""
}

// sides returns the targets of A and B from the common target.
func (sf *sidesFlags) sides(base runner.Target) (a, b runner.Target, err error) {
	a, b = base, base
	if sf.aURL != "" {
		a.URL, a.Managed = sf.aURL, ""
	}
	if sf.bURL != "" {
		b.URL, b.Managed = sf.bURL, ""
	}
	a.PGSet = append(append([]string(nil), a.PGSet...), sf.aSet...)
	b.PGSet = append(append([]string(nil), b.PGSet...), sf.bSet...)
	a.MySet = append(append([]string(nil), a.MySet...), sf.aMySet...)
	b.MySet = append(append([]string(nil), b.MySet...), sf.bMySet...)
	if sf.aVer > 0 {
		a.PGVersion = sf.aVer
	}
	if sf.bVer > 0 {
		b.PGVersion = sf.bVer
	}
	if sf.aBin != "" {
		a.PGBin = sf.aBin
	}
	if sf.bBin != "" {
		b.PGBin = sf.bBin
	}
	if (sf.aVer > 0 || sf.bVer > 0 || sf.aBin != "" || sf.bBin != "") && base.Managed != "postgres" {
		return a, b, runner.UsageError{Err: errors.New("--a-pg-version, --b-pg-version, --a-pg-bin and --b-pg-bin choose managed servers' binaries: give --managed postgres")}
	}
	if err := confine(&a, sf.aCPUs); err != nil {
		return a, b, err
	}
	if err := confine(&b, sf.bCPUs); err != nil {
		return a, b, err
	}
	if sf.aURL == sf.bURL && strings.Join(sf.aSet, ",") == strings.Join(sf.bSet, ",") && strings.Join(sf.aMySet, ",") == strings.Join(sf.bMySet, ",") &&
		slices.Equal(a.CPUs, b.CPUs) && a.PGVersion == b.PGVersion && a.PGBin == b.PGBin {
		return a, b, runner.UsageError{Err: errors.New("sides A and B are the same: give --a and --b targets, or --a-pg-set / --b-pg-set / --a-pg-version / --b-pg-version with --managed postgres (--a-my-set / --b-my-set with --managed mariadb)")}
	}
	return a, b, nil
}

func cmdAB(ctx context.Context, args []string) error {
	fs, c, err := newFlags("ab", args)
	if err != nil {
		return err
	}
	o := runner.ABOptions{}
	runFlags(fs, &o.RunOptions)
	var cpus int
	fs.Var(count{&cpus}, "cpus", "with --managed: confine both sides' servers to `N` CPUs (--a-cpus, --b-cpus: one side)")
	var sf sidesFlags
	sf.bind(fs)
	fs.IntVar(&o.Rounds, "rounds", 3, "rounds: each runs A and B once, in an order drawn from --seed (3 give a verdict; more narrow it)")
	fs.BoolVar(&o.Reload, "reload", false, "load the workload again before every run")
	fs.StringVar(&o.Prefix, "prefix", "", "result files are PREFIX-LABEL-ROUND.json (default dbparity-data/results/ab)")
	fs.DurationVar(&o.Slice, "slice", 0, "run A and B at once, taking turns in slices of this length (ABBA), so that slow host noise cancels in each round (for example 2s; 0: one after the other)")
	htmlOut := htmlFlag(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if len(c.targets) > 1 {
		return runner.UsageError{Err: errors.New("ab takes one --target (or --a and --b)")}
	}
	if err := confine(&c.opts.Target, cpus); err != nil {
		return err
	}
	o.Common = c.opts
	o.StatementTimeout = c.opts.Target.Timeout
	o.Command = append([]string{"dbparity", "ab"}, args...)
	o.LabelA, o.LabelB = sf.labelA, sf.labelB
	if o.A, o.B, err = sf.sides(c.opts.Target); err != nil {
		return err
	}
	if err := htmlOutOK(*htmlOut, o.Force, abFiles(o)...); err != nil {
		return err
	}
	files, err := runner.AB(ctx, o)
	if err != nil {
		return err
	}
	return compareFiles(files, o.LabelA, *htmlOut)
}

// htmlFlag binds --html of ab and sweep: the comparison they print, also
// written as compare --html writes it; their --force then also replaces
// an --html file that is not a dbparity report.
func htmlFlag(fs *flag.FlagSet) *string {
	if f := fs.Lookup("force"); f != nil {
		f.Usage = "replace result files that exist, and an --html file that is not a dbparity report"
	}
	return fs.String("html", "", "also write the comparison printed at the end as a self-contained HTML report with charts to this `file` (as compare --html)")
}

// abFiles are the result files ab will write (runner.AB names them so:
// PREFIX-LABEL-ROUND.json), which --html must not name.
func abFiles(o runner.ABOptions) []string {
	prefix := o.Prefix
	if prefix == "" {
		prefix = filepath.Join(runner.DefaultDataDir, "results", "ab")
	}
	var files []string
	for r := 1; r <= min(o.Rounds, 1000); r++ {
		for _, l := range []string{o.LabelA, o.LabelB} {
			l = strings.Map(func(c rune) rune {
				if c == '/' || c == os.PathSeparator || c < ' ' {
					return '_'
				}
				return c
			}, l)
			files = append(files, fmt.Sprintf("%s-%s-%d.json", prefix, l, r))
		}
	}
	return files
}

// sweepFiles are the result files sweep will write, which --html must
// not name.
func sweepFiles(o runner.SweepOptions) []string {
	prefix := o.Prefix
	if prefix == "" {
		prefix = filepath.Join(runner.DefaultDataDir, "results", "sweep")
	}
	var files []string
	for _, s := range o.Sides {
		label := s.Label
		if label == "" {
			label = runner.DefaultLabel(s.Target)
		}
		for _, v := range o.Values {
			for rep := 1; rep <= min(o.Repeat, 1000); rep++ {
				files = append(files, runner.SweepFile(prefix, label, o.Param, v, rep))
			}
		}
	}
	return files
}

// compareFiles prints the comparison of the result files a command wrote
// and, with htmlOut, writes it there as the HTML report too.
func compareFiles(files []string, baseline, htmlOut string) error {
	var runs []*result.Run
	for _, f := range files {
		r, err := result.Read(f)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	gs, err := compare.GroupRuns(runs, files, "label", baseline)
	if err != nil {
		return err
	}
	c, err := report.NewComparisonWith(gs, report.CompareOptions{})
	if err != nil {
		return err
	}
	if htmlOut != "" {
		if err := writeHTML(htmlOut, func(w io.Writer) error { return report.CompareHTML(w, c) }); err != nil {
			return err
		}
	}
	fmt.Println()
	return report.CompareText(os.Stdout, c)
}

func cmdSweep(ctx context.Context, args []string) error {
	fs, c, err := newFlags("sweep", args)
	if err != nil {
		return err
	}
	o := runner.SweepOptions{}
	runFlags(fs, &o.RunOptions)
	var sf sidesFlags
	sf.bind(fs)
	over := fs.String("over", "", "the parameter and its steps: users=4,8,16 (or users=1..64, doublings), rate=100,200,400, warehouses=1,2,4, cpus=1,2 (a managed server's CPUs)")
	label := fs.String("label", "", "the platform's name, with one target (default the target's engine and host, postgres@db1)")
	until := fs.String("until-cpu", "", "stop after the first step at which the database server's CPU reached this utilisation, for example 85% (users= or rate= sweeps)")
	o.Repeat = 1
	fs.Var(count{&o.Repeat}, "repeat", "runs of each side at each step (with two sides: interleaved rounds; 3 give an interval) (default 1)")
	fs.StringVar(&o.Prefix, "prefix", "", "result files are PREFIX-LABEL-PARAM=VALUE-REPETITION.json (default dbparity-data/results/sweep)")
	htmlOut := htmlFlag(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if len(c.targets) > 1 {
		return runner.UsageError{Err: errors.New("sweep takes one --target (or --a and --b)")}
	}
	if *over == "" {
		return runner.UsageError{Err: errors.New("--over is missing: name the parameter and its steps, for example --over users=4,8,16")}
	}
	if o.Param, o.Values, err = runner.ParseSteps(*over); err != nil {
		return err
	}
	if *until != "" {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(*until), "%"), 64)
		if err != nil {
			return runner.UsageError{Err: fmt.Errorf("--until-cpu %q: want a utilisation such as 85%%", *until)}
		}
		o.UntilCPU = v
	}
	o.Common = c.opts
	o.StatementTimeout = c.opts.Target.Timeout
	o.Command = append([]string{"dbparity", "sweep"}, args...)
	if sf.given() {
		if *label != "" {
			return runner.UsageError{Err: errors.New("--label names the one target; with --a/--b give --label-a and --label-b")}
		}
		a, b, err := sf.sides(c.opts.Target)
		if err != nil {
			return err
		}
		o.Sides = []runner.Side{{Target: a, Label: sf.labelA}, {Target: b, Label: sf.labelB}}
	} else {
		o.Sides = []runner.Side{{Target: c.opts.Target, Label: *label}}
	}
	if err := htmlOutOK(*htmlOut, o.Force, sweepFiles(o)...); err != nil {
		return err
	}
	files, err := runner.Sweep(ctx, o)
	if len(files) == 0 {
		return err
	}
	// The steps that finished are compared even when a later one failed.
	if cerr := compareFiles(files, o.Sides[0].Label, *htmlOut); cerr != nil && err == nil {
		return cerr
	}
	return err
}

func cmdCheck(ctx context.Context, args []string) error {
	fs, c, err := newFlags("check", args)
	if err != nil {
		return err
	}
	if err := c.parse(fs, args); err != nil {
		return err
	}
	// Every target is checked; the first failure decides the exit code.
	var first error
	ts := c.eachTarget()
	for _, t := range ts {
		o := c.opts
		o.Target = t
		if len(ts) > 1 {
			fmt.Printf("%s:\n", engine.Redact(t.URL))
		}
		switch err := runner.Check(ctx, o); {
		case err != nil && first == nil:
			first = err
		case err != nil:
			fmt.Fprintf(os.Stderr, "dbparity: %v\n", err)
		}
	}
	return first
}
