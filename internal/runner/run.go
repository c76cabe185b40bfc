package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/collect"
	"github.com/dbparity/dbparity/internal/driver"
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
}

func (o *RunOptions) validate() error {
	switch {
	case o.Users < 1:
		return usage("--users %d: must be at least 1", o.Users)
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
	// Fail now, not after a ten-minute run, if the result cannot be written.
	if err := result.CheckWritable(o.Out, o.Force); err != nil {
		return UsageError{err}
	}
	t, err := openTarget(ctx, o.Target)
	if err != nil {
		return err
	}
	defer t.close()

	if notLoaded, err := prepare(ctx, t, o.Workload); notLoaded && o.Load {
		if err := load(ctx, t, o.Common, o.LoadWorkers); err != nil {
			return err
		}
		if _, err := prepare(ctx, t, o.Workload); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if err := checkExplicit(ctx, t, o.Common); err != nil {
		return err
	}
	serverVersion, err := serverVersion(ctx, t)
	if err != nil {
		return err
	}

	w := o.Workload
	p := &progress{w: o.Stderr, tty: o.TTY}
	fmt.Fprintf(o.Stderr, "running %s on %s: %d users, %s warm-up, %s measured\n", w.Meta().Name, t.URL,
		o.Users, o.Warmup, o.Duration)
	res, runErr := driver.Run(ctx, driver.Config{
		Users: o.Users, Warmup: o.Warmup, Duration: o.Duration, TxTypes: w.TxTypes(),
		NewWorker: func(id int) workload.Worker { return w.NewWorker(id, o.Seed, t.Dialect) },
		Connect:   t.Connect,
		StopGrace: o.StopGrace,
		Progress: func(s driver.Status) {
			p.show(fmt.Sprintf("%s %5s  %-7s  %8.1f tps  p95 %7.2f ms  errors %d", o.Label,
				s.Elapsed.Round(time.Second), s.Phase, s.TPS, float64(s.P95)/1e6, s.Errors))
		},
	})
	p.clear()
	if runErr != nil && !errors.Is(runErr, driver.ErrInterrupted) {
		return runErr
	}
	r, err := buildResult(o, t, serverVersion, res)
	if err != nil {
		return err
	}
	if err := result.Write(o.Out, r, t.secret); err != nil {
		return err
	}
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

func buildResult(o RunOptions, t *opened, serverVersion string, res *driver.Result) (*result.Run, error) {
	w := o.Workload
	m := w.Meta()
	r := &result.Run{
		Schema: result.Schema, Label: o.Label, Partial: res.Partial, PartialReason: res.Reason,
		Tool:    result.Tool{Name: "dbparity", Version: Version, GoVersion: runtime.Version()},
		Command: RedactArgs(o.Command),
		Start:   res.Start, End: res.End, MeasureStart: res.MeasureStart, MeasureEnd: res.MeasureEnd,
		Workload: result.Workload{Name: m.Name, Version: m.Version, Disclaimer: m.Disclaimer, Params: w.Params()},
		Target: result.Target{Dialect: t.Dialect.String(), URL: t.URL, Managed: t.managed != nil,
			ServerVersion: serverVersion, Settings: t.Settings},
		Host: collect.Host(),
		Driver: result.Driver{Users: o.Users, WarmupS: o.Warmup.Seconds(), DurationS: o.Duration.Seconds(),
			Seed: o.Seed, Reconnects: res.Reconnects, CPUUserS: res.MeasureCPU.User.Seconds(),
			CPUSysS: res.MeasureCPU.Sys.Seconds(), TotalCPUS: res.TotalCPU.Total().Seconds()},
		Errors: res.Phases[driver.Measure].Classes, Statements: res.Phases[driver.Measure].Statements,
		ErrorSamples: res.FirstErrors, Series: res.Series, Phases: map[string]result.Phase{},
	}
	types := w.TxTypes()
	measured := res.Phases[driver.Measure]
	for i, name := range types {
		h, err := result.NewHistogram(res.Latency[i])
		if err != nil {
			return nil, err
		}
		r.Transactions = append(r.Transactions, result.Transaction{Name: name, Committed: measured.Committed[i],
			Rollbacks: measured.Rollbacks[i], Errors: measured.Errors[i], Retries: measured.Retries[i], Latency: h})
	}
	var err error
	if r.Commit, err = result.NewHistogram(res.Commit); err != nil {
		return nil, err
	}
	for p, ps := range res.Phases {
		ph := result.Phase{Committed: map[string]int64{}, Rollbacks: map[string]int64{}, Errors: map[string]int64{},
			Statements: ps.Statements}
		for i, name := range types {
			ph.Committed[name], ph.Rollbacks[name], ph.Errors[name] = ps.Committed[i], ps.Rollbacks[i], ps.Errors[i]
		}
		r.Phases[driver.PhaseNames[p]] = ph
	}
	return r, nil
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
