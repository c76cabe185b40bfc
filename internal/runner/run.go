package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/collect/nodeexp"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/live"
	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/workload"
)

// Version is the tool version written into every result; set at build
// time with -ldflags "-X .../runner.Version=...".
var Version = "0.1.0-dev"

// RunOptions are the options of `dbparity run`.
type RunOptions struct {
	Common
	// Users is the number of sessions; 0 lets the workload decide (slob:
	// schemas × threads per schema), or 4.
	Users    int
	Duration time.Duration
	Warmup   time.Duration
	Label    string
	Out      string // result file; "" = dbparity-data/results/LABEL-TIME.json
	Force    bool   // replace an existing --out
	Load     bool   // load first when the schema is missing
	// LoadWorkers is --workers for the load that --load may do.
	LoadWorkers int
	// Command is the command line, recorded with credentials redacted.
	Command []string
	// StopGrace overrides how long sessions may finish after a stop.
	StopGrace time.Duration
	Faults
	Collect CollectOptions
	// SeriesPoints bounds the series in the result (--series-points; 0:
	// metrics.DefaultSeriesPoints).
	SeriesPoints int
	// Repeat runs the measurement this many times (loading at most once),
	// writing OUT-1.json ... OUT-N.json.
	Repeat int
	// Round is recorded in the result: the round of an interleaved A/B.
	Round int
	// Targets, when two or more, are driven at once (each with Users
	// sessions) into one result: the aggregate, with a part per target.
	// Common.Target is then unused.
	Targets []Target
	// Rate, when above 0, runs the workload open-loop at Rate
	// transactions per second for the whole run, spread over the
	// sessions; Arrival is uniform (default) or poisson.
	Rate    float64
	Arrival string
	// Step is recorded in the result: the step of a sweep.
	Step *result.Step
	// Brief prints one line per finished run instead of its summary (a
	// sweep's runs; show prints each file in full).
	Brief bool
	// Part, when set, runs one part of a run split over several driver
	// processes (--part I/N); partIDs are its sessions' global ids.
	Part    *Part
	partIDs []int
	// labelDefault: Label is DefaultLabel's, said when the run starts.
	labelDefault bool
	// MetricsAddr, when set, serves live metrics at /metrics there for
	// as long as the command lives (--metrics-addr); Live is that server
	// when a command that runs several runs (ab, sweep) started it.
	MetricsAddr string
	Live        *live.Server
	// MetricsLinger keeps the endpoint up this long after the command's
	// work, serving the final values (--metrics-linger).
	MetricsLinger time.Duration
	// phaseHook, when set, is told of each phase change of the run: a
	// test's way to inject a fault at a known instant of the window.
	phaseHook func(p int, at time.Time)
}

// Faults are the limits that end a run that cannot be trusted.
type Faults struct {
	// StatementTimeout bounds how long any statement (of the sessions or
	// the collectors) or connection attempt waits for the server.
	StatementTimeout time.Duration
	// AbortAfter ends a run in which nothing committed for this long while
	// transactions failed.
	AbortAfter time.Duration
	// MaxErrorPct fails a run whose measured window had more failed
	// transactions than this percentage (nil: result.DefaultMaxErrorPct).
	MaxErrorPct *float64
}

// withDefaults fills what was not set.
func (f Faults) withDefaults() Faults {
	if f.StatementTimeout <= 0 {
		f.StatementTimeout = 30 * time.Second
	}
	if f.AbortAfter <= 0 {
		f.AbortAfter = 10 * time.Second
	}
	if f.MaxErrorPct == nil {
		pct := result.DefaultMaxErrorPct
		f.MaxErrorPct = &pct
	}
	return f
}

func (f Faults) validate() error {
	switch {
	case f.StatementTimeout < 0:
		return usage("--statement-timeout %s: must be positive (for example 30s)", f.StatementTimeout)
	case f.AbortAfter < 0:
		return usage("--abort-after %s: must be positive (for example 10s)", f.AbortAfter)
	case f.MaxErrorPct != nil && (*f.MaxErrorPct < 0 || *f.MaxErrorPct > 100):
		return usage("--max-error-pct %g: must be between 0 and 100", *f.MaxErrorPct)
	}
	return nil
}

// outs returns the result files of the run or of each repetition.
func (o *RunOptions) outs() []string {
	if o.Repeat <= 1 {
		return []string{o.Out}
	}
	ext := filepath.Ext(o.Out)
	stem := strings.TrimSuffix(o.Out, ext)
	var out []string
	for i := 1; i <= o.Repeat; i++ {
		out = append(out, fmt.Sprintf("%s-%d%s", stem, i, ext))
	}
	return out
}

func (o *RunOptions) validate() error {
	switch {
	case o.Users < 0:
		return usage("--users %d: must be at least 1", o.Users)
	case o.Repeat < 0 || o.Repeat > 1000:
		return usage("--repeat %d: must be between 1 and 1000", o.Repeat)
	case o.Duration <= 0:
		return usage("--duration %s: must be positive (for example 60s or 10m)", o.Duration)
	case o.Warmup < 0:
		return usage("--warmup %s: must not be negative", o.Warmup)
	case o.SeriesPoints < 0 || o.SeriesPoints == 1:
		return usage("--series-points %d: keep at least 2", o.SeriesPoints)
	// 0 is the default (1s and 100ms): the command line refuses a 0 given
	// as a flag before it gets here.
	case o.Collect.Interval < 0:
		return usage("--interval %s: must be above 0 (for example 1s)", o.Collect.Interval)
	case o.Collect.WaitInterval < 0:
		return usage("--wait-interval %s: must be above 0 (for example 100ms)", o.Collect.WaitInterval)
	case strings.TrimSpace(o.Label) == "":
		return usage("--label is empty: name the platform (for example native or vm)")
	case o.Rate < 0 || math.IsInf(o.Rate, 0) || math.IsNaN(o.Rate):
		return usage("--rate %g: must be above 0 transactions per second (or 0 for none)", o.Rate)
	case o.Arrival != "" && o.Arrival != driver.Uniform && o.Arrival != driver.Poisson:
		return usage("--arrival %q: choose %s or %s", o.Arrival, driver.Uniform, driver.Poisson)
	case o.Rate == 0 && o.Arrival != "" && o.Arrival != driver.Uniform:
		return usage("--arrival %s needs --rate (arrivals are scheduled in an open-loop run only)", o.Arrival)
	}
	if err := o.Faults.validate(); err != nil {
		return err
	}
	if err := validateDBHost(o.Collect); err != nil {
		return err
	}
	if err := o.Workload.Validate(); err != nil {
		return err
	}
	if th, ok := o.Workload.(workload.Thinking); ok && o.Rate > 0 {
		if f := th.ThinkFlag(); f != "" {
			return usage("--rate and --%s both given: a target rate schedules the arrivals itself (open loop); choose one", f)
		}
	}
	return nil
}

// Run executes one run and writes its result file. It returns
// ErrInterrupted (after writing the partial result) when ctx is cancelled.
func Run(ctx context.Context, o RunOptions) error {
	if o.Label == "" {
		o.Label, o.labelDefault = DefaultLabel(o.Target), true
	}
	if err := o.validate(); err != nil {
		var ue UsageError
		if errors.As(err, &ue) {
			return err
		}
		return UsageError{err}
	}
	if o.Out == "" {
		o.Out = filepath.Join(DefaultDataDir, "results",
			fmt.Sprintf("%s-%s.json", safeName(o.Label), time.Now().Format("20060102-150405")))
	}
	// Fail now, not after a ten-minute run, if a result cannot be written.
	outs := o.outs()
	for _, out := range outs {
		if err := result.CheckWritable(out, o.Force); err != nil {
			return UsageError{err}
		}
	}
	if o.Part != nil {
		if len(o.Targets) > 1 || o.Repeat > 1 {
			return UsageError{errPartsAlone}
		}
		if o.Target.Managed != "" {
			return usage("--part with --managed: the parts of one run drive one server; start it once and give every part its --target")
		}
		if o.Load {
			return usage("--part with --load: every part would load the same tables; run dbparity load once before the parts")
		}
		if o.Part.RunID == "" {
			o.Part.RunID = o.Label
		}
		if o.Part.BarrierTimeout <= 0 {
			o.Part.BarrierTimeout = 10 * time.Minute
		}
		// Collectors run once, on part 0: the others' would count the
		// same database twice.
		o.Collect.Off = o.Collect.Off || o.Part.Index != 0
	}
	if o.Live == nil && o.MetricsAddr != "" {
		srv, err := startLive(o.MetricsAddr, o.MetricsLinger, o.Label, o.Workload.Meta().Name, o.Part, o.Stderr)
		if err != nil {
			return err
		}
		defer srv.Close(ctx)
		o.Live = srv
	}
	// The statement timeout bounds the connection attempts too.
	o.Target.Timeout = cmp.Or(o.Target.Timeout, o.Faults.withDefaults().StatementTimeout)
	for i := range o.Targets {
		o.Targets[i].Timeout = cmp.Or(o.Targets[i].Timeout, o.Target.Timeout)
	}
	if len(o.Targets) > 1 {
		return runMulti(ctx, o, outs)
	}
	t, err := openTarget(ctx, o.Target)
	if err != nil {
		return err
	}
	defer t.close()

	// Prepare replaces the load parameters with the loaded ones.
	want := o.Workload.Params()
	if err := loadOrPrepare(ctx, t, o.Common, o, false); err != nil {
		return err
	}
	if err := checkExplicit(ctx, t, o.Common, want); err != nil {
		return err
	}
	if o.Users, err = sessions(o); err != nil {
		return err
	}
	if o.Part != nil {
		if o.partIDs, err = partSessions(o.Workload, o.Users, o.Part); err != nil {
			return err
		}
	}
	serverVersion, err := serverVersion(ctx, t)
	if err != nil {
		return err
	}
	return repeat(o, outs, func(o RunOptions) error { return t.explain(runOnce(ctx, t, o, serverVersion), o.Out) })
}

// loadOrPrepare readies t for a run of o: the workload loaded first when
// reload is set (ab --reload), or when it is missing and o.Load; then its
// loaded parameters read into o.Workload (prepare). c is o.Common with t's
// Target.
func loadOrPrepare(ctx context.Context, t *opened, c Common, o RunOptions, reload bool) error {
	if reload {
		if err := load(ctx, t, c, o.LoadWorkers); err != nil {
			return err
		}
	}
	notLoaded, err := prepare(ctx, t, o.Workload, true)
	if !notLoaded || !o.Load {
		return err
	}
	if err := load(ctx, t, c, o.LoadWorkers); err != nil {
		return err
	}
	_, err = prepare(ctx, t, o.Workload, true)
	return err
}

// repeat measures once per result file of --repeat.
func repeat(o RunOptions, outs []string, once func(RunOptions) error) error {
	for i, out := range outs {
		if len(outs) > 1 {
			fmt.Fprintf(o.Stderr, "repetition %d of %d\n", i+1, len(outs))
		}
		o.Out = out
		if err := once(o); err != nil {
			return err
		}
	}
	return nil
}

// runOnce is one measurement against an opened, loaded target.
func runOnce(ctx context.Context, t *opened, o RunOptions, serverVersion string) error {
	if o.labelDefault && o.Stderr != nil {
		fmt.Fprintln(o.Stderr, labelNote(o.Label))
	}
	r := describe(o, t, serverVersion)
	if o.Part != nil {
		// In the journal's header: a part that dies can be recovered and
		// merged.
		r.Part = partRecord(o.Part, o.Users, o.partIDs, synced{})
	}
	journal, err := result.OpenJournal(o.Out, r)
	if err != nil {
		return err
	}
	// The journal goes once the result is written, or when nothing ran.
	done := false
	defer func() { journal.Close(done) }()
	p := &progress{w: o.Stderr, tty: o.TTY, interval: o.ProgressInterval}
	rate := ""
	if o.Rate > 0 {
		rate = fmt.Sprintf(" at %g transactions/s (%s arrivals)", o.Rate, cmp.Or(o.Arrival, driver.Uniform))
	}
	users := fmt.Sprint(o.Users)
	if o.Part != nil {
		users = fmt.Sprintf("%d of the run's %d", len(o.partIDs), o.Users)
	}
	fmt.Fprintf(o.Stderr, "running %s on %s: %s users%s, %s warm-up, %s measured\n", o.Workload.Meta().Name, t.URL,
		users, rate, o.Warmup, o.Duration)
	total := o.Warmup + o.Duration
	h := hooks{
		progress: func(s driver.Status) {
			p.show(fmt.Sprintf("%s %s/%s  %-7s  %8.1f tps  p95 %7.2f ms  errors %d", o.Label,
				s.Elapsed.Round(time.Second), total, s.Phase, s.TPS, float64(s.P95)/1e6, s.Errors))
		},
		journal: journal,
	}
	if o.Part != nil {
		h.ready = func(ctx context.Context) (time.Time, error) {
			s, err := o.Part.wait(ctx, t, o.Faults.withDefaults().StatementTimeout, func(m string) { fmt.Fprintln(o.Stderr, m) })
			r.Part = partRecord(o.Part, o.Users, o.partIDs, s)
			if err == nil {
				// How the start was agreed (the clock offset merge uses).
				err = journal.Append(result.JournalEntry{Part: r.Part})
			}
			// Each part's own start: a late process's window starts late,
			// which merge sees and flags.
			return time.Time{}, err
		}
	}
	r, runErr, err := drive(ctx, t, o, r, h)
	p.clear()
	if err != nil {
		done = r == nil
		return err
	}
	return finishRun(o, r, runErr, journal, &done)
}

// finishRun judges a measured run, writes its result and reports it.
// When the result cannot be written the journal is kept: it holds the run.
func finishRun(o RunOptions, r *result.Run, runErr error, journal *result.Journal, done *bool) error {
	r.Judge(*o.Faults.withDefaults().MaxErrorPct)
	if journal != nil && journal.Err() == nil && merged(r) {
		// The result's series were merged down: the journal keeps them all.
		if err := journal.KeepSeries(o.Out); err != nil {
			fmt.Fprintf(o.Stderr, "dbparity: %v (the result's series are merged, %d s a point)\n", err, r.Driver.SeriesStep)
		} else {
			r.SeriesFile = filepath.Base(result.SeriesPath(o.Out))
		}
	}
	if err := result.Write(o.Out, r); err != nil {
		if journal != nil {
			return fmt.Errorf("%w; %s holds the run (to its last whole line): make room, then run dbparity recover %s",
				err, result.JournalPath(o.Out), result.JournalPath(o.Out))
		}
		return err
	}
	*done = true
	return reportRun(o, r, runErr)
}

// merged tells whether the run's series were merged down to stay small.
func merged(r *result.Run) bool { return r.Driver.SeriesStep > 1 }

// hooks are what drive calls back during a run.
type hooks struct {
	progress func(driver.Status)
	// journal, if set, receives the series and checkpoints as they come.
	journal *result.Journal
	// ready, if set, holds the start until every target is connected.
	ready func(context.Context) (time.Time, error)
	// gate, if set, is the run's turn in a sliced round (ab --slice).
	gate *driver.Gate
}

// drive runs the collectors and the driver against t and fills r with
// what they measured. runErr is the driver's ErrInterrupted (r is then
// partial but complete); err is any other failure, with r nil when
// nothing ran.
func drive(ctx context.Context, t *opened, o RunOptions, r *result.Run, h hooks) (_ *result.Run, runErr, err error) {
	if o.Collect.Interval <= 0 {
		o.Collect.Interval = time.Second
	}
	if o.Collect.WaitInterval <= 0 {
		o.Collect.WaitInterval = 100 * time.Millisecond
	}
	f := o.Faults.withDefaults()
	o.Collect.StatementTimeout, o.Collect.SeriesPoints = f.StatementTimeout, o.SeriesPoints
	ob, err := startObserving(ctx, t, o.Collect, o.Workload.Meta().TestsIO, h.journal)
	if err != nil {
		return nil, nil, err
	}
	defer ob.Close()
	w := o.Workload
	if o.Warmup == 0 {
		r.Warnings = append(r.Warnings, "no warm-up: the measured window starts with cold caches and connections")
	}
	types := w.TxTypes()
	var onInterval func(driver.Tick) error
	if h.journal != nil {
		onInterval = func(tk driver.Tick) error { return journalTick(h.journal, types, tk, o.Stderr) }
	}
	// A part runs its share of the sessions, each as the session of that
	// global id, and its share of a target rate.
	users, global, rate := o.Users, func(id int) int { return id }, o.Rate
	if o.partIDs != nil {
		users, global = len(o.partIDs), func(id int) int { return o.partIDs[id] }
		rate = o.Rate * float64(users) / float64(o.Users)
	}
	progress := h.progress
	var observer driver.Observer
	lr := o.Live.Run(live.Labels{Label: o.Label, Workload: o.Workload.Meta().Name})
	if lr != nil {
		observer = lr
		lr.Tick(live.State{Phase: driver.PhaseNames[driver.Warmup], Rate: rate})
		progress = func(s driver.Status) {
			if h.progress != nil {
				h.progress(s)
			}
			lr.Tick(live.State{Phase: s.Phase, Sessions: s.Sessions, Rate: rate, RateLag: s.RateLag, Outage: s.Outage})
		}
	}
	// On PostgreSQL 15+ the sessions publish their counts before each
	// reading of the collectors (observe.Settler).
	connect, newWorker := settled(ob.Settler(), t.Connect,
		func(id int) workload.Worker { return w.NewWorker(global(id), o.Seed, t.Dialect) })
	res, runErr := driver.Run(ctx, driver.Config{
		Users: users, Warmup: o.Warmup, Duration: o.Duration, TxTypes: types,
		NewWorker:        newWorker,
		Connect:          connect,
		Rate:             rate,
		Arrival:          o.Arrival,
		Seed:             o.Seed,
		StopGrace:        o.StopGrace,
		StatementTimeout: f.StatementTimeout,
		AbortAfter:       f.AbortAfter,
		SeriesPoints:     o.SeriesPoints,
		Progress:         progress,
		Observer:         observer,
		OnInterval:       onInterval,
		OnPhase: func(p int, at time.Time) {
			ob.Phase(p, at)
			lr.Phase(driver.PhaseNames[p])
			if o.phaseHook != nil {
				o.phaseHook(p, at)
			}
		},
		Ready: h.ready,
		Gate:  h.gate,
	})
	if runErr != nil && !errors.Is(runErr, driver.ErrInterrupted) {
		if res == nil {
			return nil, nil, runErr
		}
		return r, nil, runErr
	}
	if err := measure(r, types, res); err != nil {
		return nil, nil, err
	}
	if err := ob.Finish(r); err != nil {
		return nil, nil, err
	}
	return r, runErr, nil
}

// journalTick writes one tick of the driver to the journal. The first
// write error is printed at once; returned, it ends the run.
func journalTick(j *result.Journal, types []string, tk driver.Tick, stderr io.Writer) error {
	iv := tk.Interval
	counts := make([]result.TypeCounts, len(tk.Types))
	for i, c := range tk.Types {
		counts[i] = result.TypeCounts(c)
	}
	err := j.Append(result.JournalEntry{Interval: &iv, Types: counts})
	if err == nil && tk.Checkpoint != nil {
		cp := &result.Run{}
		if err = measure(cp, types, tk.Checkpoint); err == nil {
			err = j.Append(result.JournalEntry{Checkpoint: cp})
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "\ndbparity: %v: ending the run\n", err)
	}
	return err
}

// reportRun prints a written result and turns how the run ended into the
// command's error.
func reportRun(o RunOptions, r *result.Run, runErr error) error {
	if o.Brief {
		if err := report.Line(o.Stdout, r, o.Out); err != nil {
			return err
		}
	} else {
		if err := report.Text(o.Stdout, r); err != nil {
			return err
		}
		fmt.Fprintf(o.Stdout, "\nresult written to %s\n", o.Out)
	}
	switch {
	case errors.Is(runErr, driver.ErrInterrupted):
		return fmt.Errorf("run %w: partial result written to %s", ErrInterrupted, o.Out)
	case r.Failed:
		return fmt.Errorf("run failed: %s (result written to %s, marked failed)", r.FailedReason, o.Out)
	case r.Partial:
		return fmt.Errorf("run %s: %s (first error: %s)", r.PartialReason, o.Out, firstError(r))
	}
	return nil
}

// sessions resolves --users against what the workload asks for.
func sessions(o RunOptions) (int, error) {
	ws, ok := o.Workload.(workload.Sessions)
	if !ok {
		if o.Users == 0 {
			return 4, nil
		}
		return o.Users, nil
	}
	n, flag := ws.Sessions()
	switch {
	case o.Users == 0:
		return n, nil
	case o.Users != n && slices.Contains(o.Explicit, flag):
		return 0, usage("--users %d contradicts --%s, which asks for %d sessions: give one of the two", o.Users, flag, n)
	}
	return o.Users, nil
}

func firstError(r *result.Run) string {
	for _, k := range sortedKeys(r.ErrorSamples) {
		return k + ": " + r.ErrorSamples[k]
	}
	return "none recorded"
}

// RedactArgs removes passwords from a command line: URL user info and
// password parameters, whether the URL stands alone or after --flag=;
// and a --db-host-metrics URL's user info and query (nodeexp.Redact).
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	metrics := func(flag string) bool { return strings.TrimLeft(flag, "-") == "db-host-metrics" }
	for i, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") {
			if metrics(k) {
				out[i] = k + "=" + nodeexp.Redact(v)
			} else {
				out[i] = k + "=" + engine.Redact(v)
			}
			continue
		}
		if i > 0 && strings.HasPrefix(args[i-1], "-") && metrics(args[i-1]) {
			out[i] = nodeexp.Redact(a)
			continue
		}
		out[i] = engine.Redact(a)
	}
	return out
}
