package runner

import (
	"context"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/collect"
	"github.com/dbparity/dbparity/internal/cpuset"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/workload"
)

func serverVersion(ctx context.Context, t *opened) (string, error) {
	c, err := t.Connect(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	v, err := t.Dialect.ServerVersion(ctx, c)
	if err == nil {
		t.roundTripMs = roundTrip(ctx, c, t.Dialect)
	}
	return v, err
}

// roundTrips is how many empty queries roundTrip times.
const roundTrips = 20

// roundTrip is the least time, in milliseconds, an empty query took on c
// of roundTrips: the network's round trip and the server's least answer,
// what every round trip of a transaction costs at least. 0 when not
// measured (SQLite: no network; or a query failed).
func roundTrip(ctx context.Context, c engine.Conn, dialect engine.Dialect) float64 {
	if dialect == engine.SQLite {
		return 0
	}
	least := time.Duration(-1)
	for range roundTrips {
		t0 := time.Now()
		if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
			return 0
		}
		if d := time.Since(t0); least < 0 || d < least {
			least = d
		}
	}
	return float64(least) / 1e6
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
	users := o.Users
	if o.partIDs != nil {
		users = len(o.partIDs)
	}
	return &result.Run{
		Schema: result.Schema, Label: o.Label, Round: o.Round,
		Tool:     result.Tool{Name: "dbparity", Version: Version, GoVersion: runtime.Version()},
		Command:  RedactArgs(o.Command),
		Start:    time.Now(),
		Workload: result.Workload{Name: m.Name, Version: m.Version, Disclaimer: m.Disclaimer, Params: w.Params()},
		Target: result.Target{Dialect: t.Dialect.String(), URL: t.URL, Managed: t.managed != nil,
			ServerVersion: serverVersion, Settings: t.Settings, CPUs: t.serverCPUs()},
		Host: collect.Host(),
		Driver: result.Driver{Users: users, WarmupS: o.Warmup.Seconds(), DurationS: o.Duration.Seconds(), Seed: o.Seed,
			Think: thinkScale(w), RoundTripMs: t.roundTripMs},
		Step: o.Step,
	}
}

// measure adds what the driver measured to r.
func measure(r *result.Run, types []string, res *driver.Result) error {
	r.Partial, r.PartialReason = res.Partial, res.Reason
	if res.Aborted {
		r.Failed, r.FailedReason = true, strings.TrimPrefix(res.Reason, "aborted: ")
	}
	r.Start, r.End, r.MeasureStart, r.MeasureEnd = res.Start, res.End, res.MeasureStart, res.MeasureEnd
	r.Events = nil
	for _, e := range res.Events {
		r.Events = append(r.Events, result.Event(e))
	}
	r.Driver.Reconnects = res.Reconnects
	r.Driver.CPUUserS, r.Driver.CPUSysS = res.MeasureCPU.User.Seconds(), res.MeasureCPU.Sys.Seconds()
	if sl := r.Driver.Slicing; sl != nil {
		sl.ActiveS, sl.Slices = res.Active.Seconds(), nil
		for _, x := range res.Slices {
			sl.Slices = append(sl.Slices, result.Slice{T: x.Start.Sub(res.MeasureStart).Seconds(),
				S: x.End.Sub(x.Start).Seconds(), Commits: x.Commits})
		}
	}
	driverLoad(r, res)
	r.Driver.TotalCPUS = res.TotalCPU.Total().Seconds()
	if res.SeriesStep > 1 {
		r.Driver.SeriesStep = res.SeriesStep
	}
	measured := res.Phases[driver.Measure]
	r.Errors, r.Statements, r.ErrorSamples, r.Series = measured.Classes, measured.Statements, res.FirstErrors, res.Series
	r.RoundTrips = measured.RoundTrips
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
	if res.Rate != nil {
		if r.Driver.Rate, err = rateOf(res, measured, r.Driver.Users); err != nil {
			return err
		}
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

// rateOf is what an open-loop run measured of its schedule.
func rateOf(res *driver.Result, measured driver.PhaseStats, sessions int) (*result.Rate, error) {
	q, err := result.NewHistogram(res.Queue)
	if err != nil {
		return nil, err
	}
	rt := &result.Rate{TargetTPS: res.Rate.Target, Arrival: res.Rate.Arrival, Queue: q,
		LagEndS: res.Rate.LagEnd.Seconds(), WarmupBacklog: res.Rate.Dropped}
	var done int64
	for i := range measured.Committed {
		done += measured.Committed[i] + measured.Rollbacks[i] + measured.Errors[i]
	}
	secs := res.Measured().Seconds()
	if secs > 0 {
		rt.AchievedTPS = float64(done) / secs
	}
	rt.MaxLagS = rt.LagEndS
	for _, iv := range res.Series {
		if iv.Phase == driver.PhaseNames[driver.Measure] {
			rt.MaxLagS = max(rt.MaxLagS, float64(iv.LagMillis)/1000)
		}
	}
	rt.Judge(sessions, secs)
	return rt, nil
}

// thinkScale is the scale of the keying and think times the workload's
// sessions take (0: none).
func thinkScale(w workload.Workload) float64 {
	if th, ok := w.(workload.Thinking); ok {
		return th.ThinkScale()
	}
	return 0
}

// driverLoad records the driver's own load over the measured window and
// judges whether it may have been the bottleneck. An embedded engine
// (SQLite) runs inside the driver: its CPU is the database's work, so the
// judgement does not apply.
func driverLoad(r *result.Run, res *driver.Result) {
	d := &r.Driver
	d.CPUs = runtime.GOMAXPROCS(0)
	if cpus, err := cpuset.Available(); err == nil && len(cpus) < d.CPUs {
		d.CPUs = len(cpus)
	}
	secs := res.Measured().Seconds()
	if d.Slicing != nil {
		secs = res.Active.Seconds() // its CPU is that of its own slices
	}
	if secs > 0 && d.CPUs > 0 {
		d.CPUShare = res.MeasureCPU.Total().Seconds() / (secs * float64(d.CPUs))
	}
	d.SchedP99Ms = float64(res.Sched.P99) / 1e6
	d.SchedMaxMs = float64(res.Sched.Max) / 1e6
	d.WakeP99Ms = float64(res.Wake.P99) / 1e6
	d.WakeMaxMs = float64(res.Wake.Max) / 1e6
	var done int64
	ps := res.Phases[driver.Measure]
	for i := range ps.Committed {
		done += ps.Committed[i] + ps.Rollbacks[i] + ps.Errors[i]
	}
	if done > 0 {
		d.GapUsPerTx = float64(res.Gap.Microseconds()) / float64(done)
	}
	if r.Target.Dialect != engine.SQLite.String() {
		d.JudgeDriver()
	}
}
