package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/collect"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/target"
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
	Collect   CollectOptions
	// Repeat runs the measurement this many times (loading at most once),
	// writing OUT-1.json ... OUT-N.json.
	Repeat int
	// Round is recorded in the result: the round of an interleaved A/B.
	Round int
	// Targets, when two or more, are driven at once (each with Users
	// sessions) into one result: the aggregate, with a part per target.
	// Common.Target is then unused.
	Targets []Target
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
	case strings.TrimSpace(o.Label) == "":
		return usage("--label is empty: name the platform (for example native or vm)")
	}
	return o.Workload.Validate()
}

// Run executes one run and writes its result file. It returns
// ErrInterrupted (after writing the partial result) when ctx is cancelled.
func Run(ctx context.Context, o RunOptions) error {
	if o.Label == "" {
		o.Label, _ = os.Hostname()
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
	if len(o.Targets) > 1 {
		return runMulti(ctx, o, outs)
	}
	t, err := openTarget(ctx, o.Target)
	if err != nil {
		return err
	}
	defer t.close()

	if notLoaded, err := prepare(ctx, t, o.Workload, true); notLoaded && o.Load {
		if err := load(ctx, t, o.Common, o.LoadWorkers); err != nil {
			return err
		}
		if _, err := prepare(ctx, t, o.Workload, true); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if err := checkExplicit(ctx, t, o.Common); err != nil {
		return err
	}
	if o.Users, err = sessions(o); err != nil {
		return err
	}
	serverVersion, err := serverVersion(ctx, t)
	if err != nil {
		return err
	}
	return repeat(o, outs, func(o RunOptions) error { return runOnce(ctx, t, o, serverVersion) })
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
	r := describe(o, t, serverVersion)
	journal, err := result.OpenJournal(o.Out, r)
	if err != nil {
		return err
	}
	// The journal goes once the result is written, or when nothing ran.
	done := false
	defer func() { journal.Close(done) }()
	p := &progress{w: o.Stderr, tty: o.TTY}
	fmt.Fprintf(o.Stderr, "running %s on %s: %d users, %s warm-up, %s measured\n", o.Workload.Meta().Name, t.URL,
		o.Users, o.Warmup, o.Duration)
	total := o.Warmup + o.Duration
	r, runErr, err := drive(ctx, t, o, r, hooks{
		progress: func(s driver.Status) {
			p.show(fmt.Sprintf("%s %s/%s  %-7s  %8.1f tps  p95 %7.2f ms  errors %d", o.Label,
				s.Elapsed.Round(time.Second), total, s.Phase, s.TPS, float64(s.P95)/1e6, s.Errors))
		},
		interval: func(iv metrics.Interval) { journal.Append(iv) },
	})
	p.clear()
	if err != nil {
		done = r == nil
		return err
	}
	if err := result.Write(o.Out, r, t.secret); err != nil {
		return err
	}
	done = true
	return reportRun(o, r, runErr)
}

// hooks are what drive calls back during a run.
type hooks struct {
	progress func(driver.Status)
	interval func(metrics.Interval)
	// ready, if set, holds the start until every target is connected.
	ready func(context.Context) error
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
	ob, err := observe(ctx, t, o.Collect, o.Workload.Meta().TestsIO)
	if err != nil {
		return nil, nil, err
	}
	defer ob.close()
	w := o.Workload
	if o.Warmup == 0 {
		r.Warnings = append(r.Warnings, "no warm-up: the measured window starts with cold caches and connections")
	}
	res, runErr := driver.Run(ctx, driver.Config{
		Users: o.Users, Warmup: o.Warmup, Duration: o.Duration, TxTypes: w.TxTypes(),
		NewWorker:  func(id int) workload.Worker { return w.NewWorker(id, o.Seed, t.Dialect) },
		Connect:    t.Connect,
		StopGrace:  o.StopGrace,
		Progress:   h.progress,
		OnInterval: h.interval,
		OnPhase:    ob.phase,
		Ready:      h.ready,
	})
	if runErr != nil && !errors.Is(runErr, driver.ErrInterrupted) {
		if res == nil {
			return nil, nil, runErr
		}
		return r, nil, runErr
	}
	if err := measure(r, w.TxTypes(), res); err != nil {
		return nil, nil, err
	}
	if err := ob.finish(r); err != nil {
		return nil, nil, err
	}
	return r, runErr, nil
}

// reportRun prints a written result and turns how the run ended into the
// command's error.
func reportRun(o RunOptions, r *result.Run, runErr error) error {
	if err := report.Text(o.Stdout, r); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "\nresult written to %s\n", o.Out)
	s := r.Summarize()
	switch {
	case errors.Is(runErr, driver.ErrInterrupted):
		return fmt.Errorf("run %w: partial result written to %s", ErrInterrupted, o.Out)
	case r.Partial:
		return fmt.Errorf("run %s: %s (first error: %s)", r.PartialReason, o.Out, firstError(r))
	case s.Commits == 0 && s.Errors > 0:
		return fmt.Errorf("run failed: no transaction committed, %d errors (first: %s)", s.Errors, firstError(r))
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

func serverVersion(ctx context.Context, t *opened) (string, error) {
	c, err := t.Connect(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return t.Dialect.ServerVersion(ctx, c)
}

// safeName keeps a label usable as a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r < ' ' {
			return '_'
		}
		return r
	}, s)
}

// describe fills what a result says of the run before it starts: what ran,
// where, on what, how it was driven.
func describe(o RunOptions, t *opened, serverVersion string) *result.Run {
	w := o.Workload
	m := w.Meta()
	return &result.Run{
		Schema: result.Schema, Label: o.Label, Round: o.Round,
		Tool:     result.Tool{Name: "dbparity", Version: Version, GoVersion: runtime.Version()},
		Command:  RedactArgs(o.Command),
		Start:    time.Now(),
		Workload: result.Workload{Name: m.Name, Version: m.Version, Disclaimer: m.Disclaimer, Params: w.Params()},
		Target: result.Target{Dialect: t.Dialect.String(), URL: t.URL, Managed: t.managed != nil,
			ServerVersion: serverVersion, Settings: t.Settings},
		Host:   collect.Host(),
		Driver: result.Driver{Users: o.Users, WarmupS: o.Warmup.Seconds(), DurationS: o.Duration.Seconds(), Seed: o.Seed},
	}
}

// measure adds what the driver measured to r.
func measure(r *result.Run, types []string, res *driver.Result) error {
	r.Partial, r.PartialReason = res.Partial, res.Reason
	r.Start, r.End, r.MeasureStart, r.MeasureEnd = res.Start, res.End, res.MeasureStart, res.MeasureEnd
	r.Driver.Reconnects = res.Reconnects
	r.Driver.CPUUserS, r.Driver.CPUSysS = res.MeasureCPU.User.Seconds(), res.MeasureCPU.Sys.Seconds()
	r.Driver.TotalCPUS = res.TotalCPU.Total().Seconds()
	measured := res.Phases[driver.Measure]
	r.Errors, r.Statements, r.ErrorSamples, r.Series = measured.Classes, measured.Statements, res.FirstErrors, res.Series
	for i, name := range types {
		h, err := result.NewHistogram(res.Latency[i])
		if err != nil {
			return err
		}
		r.Transactions = append(r.Transactions, result.Transaction{Name: name, Committed: measured.Committed[i],
			Rollbacks: measured.Rollbacks[i], Errors: measured.Errors[i], Retries: measured.Retries[i], Latency: h})
	}
	var err error
	if r.Commit, err = result.NewHistogram(res.Commit); err != nil {
		return err
	}
	r.Phases = map[string]result.Phase{}
	for p, ps := range res.Phases {
		ph := result.Phase{Committed: map[string]int64{}, Rollbacks: map[string]int64{}, Errors: map[string]int64{},
			Statements: ps.Statements}
		for i, name := range types {
			ph.Committed[name], ph.Rollbacks[name], ph.Errors[name] = ps.Committed[i], ps.Rollbacks[i], ps.Errors[i]
		}
		r.Phases[driver.PhaseNames[p]] = ph
	}
	return nil
}

// RedactArgs removes passwords from a command line: URL user info and
// password parameters, whether the URL stands alone or after --flag=.
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") {
			out[i] = k + "=" + target.Redact(v)
			continue
		}
		out[i] = target.Redact(a)
	}
	return out
}
