package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/collect"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/target"
	"github.com/dbparity/dbparity/internal/workload/replay"
)

// ReplayOptions are the options of `dbparity replay`.
type ReplayOptions struct {
	Common
	Capture  string  // the capture file
	Speed    float64 // 0: as fast as possible
	Order    string
	MapUser  map[string]string
	MapDB    map[string]string
	Literals bool // keep one statement text per fingerprint in the result
	Label    string
	Out      string
	Force    bool
	Collect  CollectOptions
	Command  []string
}

// ReplayVersion changes when the replay's timing or accounting changes.
const ReplayVersion = "1"

// Replay plays a capture against the target and writes a result.
func Replay(ctx context.Context, o ReplayOptions) error {
	if o.Target.URL == "" && (o.Target.Managed == "" || o.Target.PGData == "") {
		return usage("replay writes to its target: name it with --target postgres://... (or --managed postgres --pg-data DIR)")
	}
	if o.Capture == "" {
		return usage("--capture FILE is required (make one with dbparity capture)")
	}
	if o.Speed < 0 {
		return usage("--speed %v: give a factor above 0 (2 is twice as fast) or max", o.Speed)
	}
	if o.Order != "" && o.Order != replay.OrderSession && o.Order != replay.OrderGlobal {
		return usage("--order %q: choose %s or %s", o.Order, replay.OrderSession, replay.OrderGlobal)
	}
	if err := o.Collect.validateDBHost(); err != nil {
		return err
	}
	if o.Label == "" {
		o.Label, _ = os.Hostname()
	}
	c, err := capture.Read(o.Capture)
	if err != nil {
		return UsageError{err}
	}
	if len(c.Sessions) == 0 {
		return usage("%s holds no sessions: nothing to replay", o.Capture)
	}
	if o.Out == "" {
		o.Out = filepath.Join(DefaultDataDir, "results",
			fmt.Sprintf("%s-replay-%s.json", safeName(o.Label), time.Now().Format("20060102-150405")))
	}
	if err := result.CheckWritable(o.Out, o.Force); err != nil {
		return UsageError{err}
	}
	t, err := openTarget(ctx, o.Target)
	if err != nil {
		return err
	}
	defer t.close()
	if t.Dialect != target.Postgres {
		return UsageError{target.ErrReplayDialect}
	}
	sv, err := serverVersion(ctx, t)
	if err != nil {
		return err
	}
	fmt.Fprint(o.Stderr, plan(c, o, t.URL))
	// A replay killed outright keeps its per-second series in the journal.
	journal, err := result.OpenJournal(o.Out, &result.Run{Schema: result.Schema, Label: o.Label,
		Command: RedactArgs(o.Command), Start: time.Now(), Workload: result.Workload{Name: "replay", Version: ReplayVersion},
		Target: result.Target{Dialect: t.Dialect.String(), URL: t.URL, ServerVersion: sv}})
	if err != nil {
		return err
	}
	// Kept only when the replay ran and its result could not be written.
	done := true
	defer func() { journal.Close(done) }()

	if o.Collect.Interval <= 0 {
		o.Collect.Interval = time.Second
	}
	if o.Collect.WaitInterval <= 0 {
		o.Collect.WaitInterval = 100 * time.Millisecond
	}
	ob, err := observe(ctx, t, o.Collect, false, journal)
	if err != nil {
		return err
	}
	defer ob.close()
	p := &progress{w: o.Stderr, tty: o.TTY}
	cpu0 := driver.ProcessCPU()
	done = false
	res, runErr := replay.Run(ctx, replay.Options{
		Capture: c, Speed: o.Speed, Order: o.Order, MapUser: o.MapUser, MapDB: o.MapDB, Literals: o.Literals,
		Connect:    t.ConnectReplay,
		Started:    func(at time.Time) { ob.phase(driver.Measure, at) },
		Stopped:    func(at time.Time) { ob.phase(driver.Drain, at) },
		Progress:   func(s replay.Progress) { p.show(replayStatus(o.Label, s)) },
		OnInterval: func(iv metrics.Interval) { journal.Append(result.JournalEntry{Interval: &iv}) },
	})
	p.clear()
	if res == nil {
		done = true // nothing ran
		return runErr
	}
	cpu := driver.ProcessCPU().Sub(cpu0)
	r, err := replayRun(o, t, sv, res, cpu)
	if err != nil {
		return err
	}
	if err := ob.finish(r); err != nil {
		return err
	}
	if err := result.Write(o.Out, r); err != nil {
		return err
	}
	done = true
	ro := RunOptions{Common: o.Common, Out: o.Out}
	if errors.Is(runErr, context.Canceled) {
		runErr = driver.ErrInterrupted
	}
	return reportRun(ro, r, runErr)
}

// plan says what a replay will do, before it writes anything.
func plan(c *capture.Capture, o ReplayOptions, url string) string {
	users, dbs := map[string]int{}, map[string]int{}
	for _, s := range c.Sessions {
		users[mappedName(o.MapUser, s.User)]++
		dbs[mappedName(o.MapDB, s.Database)]++
	}
	speed := "as fast as possible (order kept)"
	if o.Speed > 0 {
		speed = fmt.Sprintf("%gx the captured pace (about %s)", o.Speed,
			time.Duration(float64(c.End.Sub(c.Start))/o.Speed).Round(time.Second))
	}
	order := o.Order
	if order == "" {
		order = replay.OrderSession
	}
	var b strings.Builder
	fmt.Fprintf(&b, "replaying %s: %d sessions, %d statements captured over %s\n", o.Capture, len(c.Sessions),
		c.Statements(), c.End.Sub(c.Start).Round(time.Millisecond))
	fmt.Fprintf(&b, "  against %s, as users %s, databases %s\n", url, names(users), names(dbs))
	fmt.Fprintf(&b, "  at %s, %s order; this writes to the target: restore it to the capture's starting point first (see docs/replay.md)\n",
		speed, order)
	return b.String()
}

func names(m map[string]int) string {
	var out []string
	for k, n := range m {
		if k == "" {
			k = "(the target's)"
		}
		out = append(out, fmt.Sprintf("%s (%d)", k, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func mappedName(m map[string]string, s string) string {
	if v, ok := m[s]; ok {
		return v
	}
	return s
}

func replayStatus(label string, s replay.Progress) string {
	lag := ""
	if s.CaptureProgress > 0 {
		lag = fmt.Sprintf("  lag %7.1f ms", float64(s.Lag)/1e6)
	}
	return fmt.Sprintf("%s replay %s  %d/%d statements  %8.1f/s  %d sessions%s  errors %d", label,
		s.Elapsed.Round(time.Second), s.Issued, s.Total, s.StatementsPerSec, s.ActiveSessions, lag, s.Errors)
}

// replayRun turns a replay's result into a result file's run: one
// transaction type, "statement", so that show and compare read it like
// any run, and the replay section beside it.
func replayRun(o ReplayOptions, t *opened, sv string, res *replay.Result, cpu driver.CPU) (*result.Run, error) {
	r := &result.Run{
		Schema: result.Schema, Label: o.Label,
		Tool:    result.Tool{Name: "dbparity", Version: Version, GoVersion: runtime.Version()},
		Command: RedactArgs(o.Command),
		Start:   res.Start, End: res.End, MeasureStart: res.Start, MeasureEnd: res.End,
		Partial: res.Partial, PartialReason: res.PartialReason,
		Workload: result.Workload{Name: "replay", Version: ReplayVersion, Params: map[string]any{
			"capture": o.Capture, "speed": o.Speed, "order": res.Order, "sessions": res.Sessions,
			"statements": res.Statements, "capture_s": res.CaptureSeconds}},
		Target: result.Target{Dialect: t.Dialect.String(), URL: t.URL, Managed: t.managed != nil,
			ServerVersion: sv, Settings: t.Settings},
		Host: collect.Host(),
		Driver: result.Driver{Users: res.Sessions, DurationS: res.ReplaySeconds, CPUUserS: cpu.User.Seconds(),
			CPUSysS: cpu.Sys.Seconds(), TotalCPUS: cpu.Total().Seconds()},
		Statements: res.Replayed, Series: res.Series, ErrorSamples: res.FirstErrors,
		Errors: map[string]int64{},
	}
	lat, err := result.NewHistogram(res.Latency)
	if err != nil {
		return nil, err
	}
	r.Transactions = []result.Transaction{{Name: "statement", Committed: res.OK, Errors: res.Errors, Latency: lat}}
	if r.Commit, err = result.NewHistogram(res.Commit); err != nil {
		return nil, err
	}
	for _, oc := range res.Outcomes {
		if oc.Replayed != "" {
			r.Errors["sqlstate_"+oc.Replayed] += oc.Count
		}
	}
	r.Phases = map[string]result.Phase{"measure": {Committed: map[string]int64{"statement": res.OK},
		Errors: map[string]int64{"statement": res.Errors}, Rollbacks: map[string]int64{}, Statements: res.Replayed}}
	rp := &result.Replay{Capture: o.Capture, CaptureSeconds: res.CaptureSeconds, ReplaySeconds: res.ReplaySeconds,
		Speed: res.Speed, Order: res.Order, Sessions: res.Sessions, SessionsFailed: res.SessionsFailed,
		Statements: res.Statements, Replayed: res.Replayed, OK: res.OK, Errors: res.Errors, NotReplayed: res.NotReplayed,
		CapturedCommits: res.CapturedCommits, ReplayedCommits: res.ReplayedCommits, Notes: res.Notes, Literals: o.Literals}
	if res.Lag != nil {
		h, err := result.NewHistogram(res.Lag)
		if err != nil {
			return nil, err
		}
		rp.Lag = &h
	}
	for _, f := range res.Fingerprints {
		ch, err := result.NewHistogram(f.Capture)
		if err != nil {
			return nil, err
		}
		rh, err := result.NewHistogram(f.Replay)
		if err != nil {
			return nil, err
		}
		rp.Fingerprints = append(rp.Fingerprints, result.ReplayFingerprint{Text: f.Text, Example: f.Example,
			Calls: f.Calls, Replayed: f.Replayed, CaptureErrors: f.CaptureErrors, ReplayErrors: f.ReplayErrors,
			Capture: ch, Replay: rh})
	}
	for _, oc := range res.Outcomes {
		rp.Outcomes = append(rp.Outcomes, result.ReplayOutcome{Kind: oc.Kind, Fingerprint: oc.Fingerprint,
			Captured: oc.Captured, Replayed: oc.Replayed, Count: oc.Count, Message: oc.Message})
	}
	for _, d := range res.SessionDiffs {
		rp.SessionDiffs = append(rp.SessionDiffs, result.ReplaySessionDiff(d))
	}
	r.Replay = rp
	return r, nil
}
