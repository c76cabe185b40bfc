package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/collect"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/live"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/snapshot"
	"github.com/dbparity/dbparity/internal/workload/replay"
)

// ReplayOptions are the options of `dbparity replay`.
type ReplayOptions struct {
	Common
	Capture string  // the capture file
	Speed   float64 // 0: as fast as possible
	// Sync is replay.SyncCommit (default), replay.SyncStatement or
	// replay.SyncNone.
	Sync string
	// StallTimeout reports statements and waits that last longer.
	StallTimeout time.Duration
	MapUser      map[string]string
	MapDB        map[string]string
	// Filter picks the sessions; ExcludeStatement skips statements by
	// text; ReplayAdmin sends the statements that change the server.
	Filter           replay.Filter
	ExcludeStatement *regexp.Regexp
	ReplayAdmin      bool
	// Warmup replays, before the measured replay and unmeasured, the
	// capture's first Warmup of time; WarmupAll the whole capture once.
	Warmup    time.Duration
	WarmupAll bool
	// Verify is an end-state snapshot (dbparity snapshot) the target must
	// match once the replay is done.
	Verify   string
	Literals bool // keep one statement text per fingerprint in the result
	Label    string
	Out      string
	Force    bool
	Collect  CollectOptions
	Command  []string
	// MetricsAddr serves live metrics at /metrics there while the replay
	// runs (--metrics-addr); Live is a server a caller started instead.
	MetricsAddr   string
	Live          *live.Server
	MetricsLinger time.Duration
	// ShareCPUs lets a paced replay (Speed above 0) run on half this
	// host's CPUs when the target is on this host (the command sets it;
	// GOMAXPROCS in the environment overrides it). It changes the whole
	// process's GOMAXPROCS while the replay runs, so that a caller
	// running other work in the process leaves it unset. A replay as fast
	// as possible keeps every CPU: each statement's wake-up is on its
	// time, and on one CPU it waits for the others'.
	ShareCPUs bool
}

// ReplayVersion changes when the replay's timing or accounting changes:
// 2 synchronises sessions by what the capture proves happened before,
// and counts transactions with savepoints and autocommit statements; 3
// synchronises on commits by default.
const ReplayVersion = "3"

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
	if o.Live == nil && o.MetricsAddr != "" {
		srv, err := startLive(o.MetricsAddr, o.MetricsLinger, cmp.Or(o.Label, "replay"), "replay", nil, o.Stderr)
		if err != nil {
			return err
		}
		defer srv.Close(ctx)
		o.Live = srv
	}
	switch o.Sync {
	case "":
		o.Sync = replay.SyncCommit
	case replay.SyncCapture:
		o.Sync = replay.SyncStatement
	case replay.SyncCommit, replay.SyncStatement, replay.SyncNone:
	default:
		return usage("--sync %q: choose %s, %s or %s", o.Sync, replay.SyncCommit, replay.SyncStatement, replay.SyncNone)
	}
	if o.StallTimeout < 0 {
		return usage("--stall-timeout %s: must be above 0", o.StallTimeout)
	}
	if o.Warmup < 0 {
		return usage("--warmup %s: must not be negative", o.Warmup)
	}
	if err := validateDBHost(o.Collect); err != nil {
		return err
	}
	labelDefault := o.Label == ""
	if labelDefault {
		o.Label = DefaultLabel(o.Target)
	}
	c, err := capture.Read(o.Capture)
	if err != nil {
		return UsageError{err}
	}
	if len(c.Sessions) == 0 {
		return usage("%s holds no sessions: nothing to replay", o.Capture)
	}
	var want *snapshot.Snapshot
	if o.Verify != "" {
		if want, err = snapshot.Read(o.Verify); err != nil {
			return UsageError{err}
		}
	}
	kept := 0
	for i := range c.Sessions {
		if o.Filter.Keep(&c.Sessions[i]) {
			kept++
		}
	}
	if kept == 0 {
		return usage("the session filters leave none of the %d captured sessions: check --include-session and --exclude-session", len(c.Sessions))
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
	if err := replayable(c, t.Dialect); err != nil {
		return UsageError{err}
	}
	sv, err := serverVersion(ctx, t)
	if err != nil {
		return err
	}
	if o.Sync != replay.SyncNone {
		if err := lockWaitsVisible(ctx, t); err != nil {
			return err
		}
	}
	fmt.Fprint(o.Stderr, plan(c, o, t.URL, kept))
	if o.ShareCPUs && o.Speed > 0 {
		if note, restore := ShareCPUs(t.OnThisHost()); note != "" {
			defer restore()
			fmt.Fprintf(o.Stderr, "  %s\n", note)
		}
	}
	if labelDefault {
		fmt.Fprintf(o.Stderr, "  %s\n", labelNote(o.Label))
	}
	types, typing := typeParams(ctx, c, t, o)
	if typing.Texts > 0 || typing.Failed > 0 {
		fmt.Fprintf(o.Stderr, "  parameters typed by inference: %d in %d statement texts (%d executions); %d texts the server could not prepare before the replay run untyped\n",
			typing.Params, typing.Texts, typing.Executions, typing.Failed)
	}
	ro := replay.Options{
		Capture: c, Speed: o.Speed, Sync: o.Sync, StallTimeout: o.StallTimeout, MapUser: o.MapUser, MapDB: o.MapDB,
		ExcludeStatement: o.ExcludeStatement, ReplayAdmin: o.ReplayAdmin, Types: types, Literals: o.Literals,
		Connect: t.ConnectReplay,
	}
	if !o.Filter.Empty() {
		ro.Keep = o.Filter.Keep
	}
	if o.WarmupAll || o.Warmup > 0 {
		if err := warmUp(ctx, ro, o); err != nil {
			return err
		}
	}
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
	ob, err := startObserving(ctx, t, o.Collect, false, journal)
	if err != nil {
		return err
	}
	defer ob.Close()
	p := &progress{w: o.Stderr, tty: o.TTY, interval: o.ProgressInterval}
	cpu0 := driver.ProcessCPU()
	done = false
	ro.Started = func(at time.Time) { ob.Phase(driver.Measure, at) }
	ro.Stopped = func(at time.Time) { ob.Phase(driver.Drain, at) }
	lr := o.Live.Run(live.Labels{Label: o.Label, Workload: "replay"})
	ro.Progress = func(s replay.Progress) {
		p.show(replayStatus(o.Label, s))
		lr.ReplayProgress(s.Issued, s.Errors, s.Lag)
		lr.Tick(live.State{Phase: "measure", Sessions: s.ActiveSessions})
	}
	ro.OnInterval = func(iv metrics.Interval) { journal.Append(result.JournalEntry{Interval: &iv}) }
	res, runErr := replay.Run(ctx, ro)
	if res != nil {
		lr.ReplayProgress(res.Replayed, res.Errors, 0)
		for _, oc := range res.Outcomes {
			if replay.OutcomeChanged(oc.Kind) {
				lr.Divergent(oc.Kind, oc.Count)
			}
		}
		lr.Tick(live.State{Phase: "drain"})
	}
	p.clear()
	if res == nil {
		done = true // nothing ran
		return runErr
	}
	cpu := driver.ProcessCPU().Sub(cpu0)
	r, err := replayRun(o, t, sv, c, res, cpu, typing)
	if err != nil {
		return err
	}
	if err := ob.Finish(r); err != nil {
		return err
	}
	// Replays have no warm-up of the driver's kind: its warning does not
	// apply (--warmup replays part of the capture instead).
	r.Warnings = slices.DeleteFunc(r.Warnings, func(w string) bool { return strings.HasPrefix(w, "no warm-up") })
	if want != nil {
		r.Replay.Verify = o.Verify
		switch {
		case ctx.Err() != nil || res.Partial:
			r.Replay.EndStateSkipped = "the replay was interrupted: its end state is not the capture's to compare"
		default:
			var keep func(*capture.Session) bool
			if !o.Filter.Empty() {
				keep = o.Filter.Keep
			}
			db, note := verifyDatabase(ctx, t, c, keep, o.MapDB, want)
			if note != "" {
				r.Replay.Notes = append(r.Replay.Notes, note)
			}
			if r.Replay.EndState, err = verify(ctx, t, o.Target, db, want, causes(c, keep), diverged(r.Replay.Outcomes)); err != nil {
				r.Replay.EndStateSkipped = strings.Join(strings.Fields(err.Error()), " ")
				r.Warnings = append(r.Warnings, fmt.Sprintf("end state not verified: %v", err))
			}
		}
	}
	if err := result.Write(o.Out, r); err != nil {
		return err
	}
	done = true
	rpo := RunOptions{Common: o.Common, Out: o.Out}
	if errors.Is(runErr, context.Canceled) {
		runErr = driver.ErrInterrupted
	}
	if err := reportRun(rpo, r, runErr); err != nil {
		return t.explain(err, o.Out)
	}
	if r.Replay.EndStateDiffers() {
		return fmt.Errorf("%w from %s: %s (result written to %s)", ErrEndStateDiffers, o.Verify, r.Replay.EndState.Summary, o.Out)
	}
	return nil
}

// typeParams types the parameters the server cannot infer (replay.Type),
// preparing each statement text on a connection as its user to its
// database, one per pair, opened on first need.
func typeParams(ctx context.Context, c *capture.Capture, t *opened, o ReplayOptions) (map[int][]uint32, replay.Typing) {
	conns := map[[2]string]engine.ReplayConn{}
	failed := map[[2]string]bool{}
	defer func() {
		for _, rc := range conns {
			rc.Close()
		}
	}()
	describe := func(ctx context.Context, user, db, text string, types []uint32) ([]uint32, error) {
		k := [2]string{mappedName(o.MapUser, user), mappedName(o.MapDB, db)}
		rc := conns[k]
		if rc == nil {
			if failed[k] {
				return nil, errors.New("no connection")
			}
			var err error
			if rc, err = t.ConnectReplay(ctx, k[0], k[1], "dbparity-replay-typing"); err != nil {
				// The target's own user and database, as the sessions will.
				if rc, err = t.ConnectReplay(ctx, "", "", "dbparity-replay-typing"); err != nil {
					failed[k] = true
					return nil, err
				}
			}
			conns[k] = rc
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return rc.Describe(dctx, text, types)
	}
	return replay.Type(ctx, c, describe)
}

// warmUp replays the capture's first o.Warmup (or all of it) unmeasured:
// for the caches, as the studies did before a measured replay.
func warmUp(ctx context.Context, ro replay.Options, o ReplayOptions) error {
	c := ro.Capture
	if !o.WarmupAll {
		c = leading(c, o.Warmup)
	}
	fmt.Fprintf(o.Stderr, "warm-up: replaying %s of the capture unmeasured (%d statements); it writes too: the end state includes it\n",
		c.End.Sub(c.Start).Round(time.Millisecond), c.Statements())
	ro.Capture, ro.Literals = c, false
	p := &progress{w: o.Stderr, tty: o.TTY, interval: o.ProgressInterval}
	ro.Progress = func(s replay.Progress) { p.show(replayStatus(o.Label+" warm-up", s)) }
	_, err := replay.Run(ctx, ro)
	p.clear()
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return nil
}

// leading is the part of c that started within d of its start: sessions
// cut at d, those that start later left out.
func leading(c *capture.Capture, d time.Duration) *capture.Capture {
	out := *c
	out.Sessions = nil
	for _, s := range c.Sessions {
		if s.Start >= d {
			continue
		}
		k := sort.Search(len(s.Statements), func(i int) bool { return s.Statements[i].Offset >= d })
		s.Statements = s.Statements[:k]
		s.End = min(s.End, d)
		out.Sessions = append(out.Sessions, s)
	}
	out.End = out.Start.Add(min(d, c.End.Sub(c.Start)))
	return &out
}

// lockWaitsVisible checks, before a synchronised replay starts, that its
// monitor may read the server's lock waits: without them a wait for
// another session's commit that forms a cycle with a lock wait is never
// released, and the replay freezes until the server's lock timeout.
func lockWaitsVisible(ctx context.Context, t *opened) error {
	rc, err := t.ConnectReplay(ctx, "", "", "dbparity-replay-monitor")
	if err != nil {
		return err
	}
	defer rc.Close()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, _, err := rc.Blockers(qctx, nil); err != nil {
		if t.Dialect == engine.MySQL {
			return fmt.Errorf("the replay cannot read InnoDB's lock waits (%s): GRANT PROCESS ON *.* TO the --target user, "+
				"or replay with --sync none", strings.Join(strings.Fields(err.Error()), " "))
		}
		return fmt.Errorf("the replay cannot read the server's lock waits (%s): replay with --sync none", strings.Join(strings.Fields(err.Error()), " "))
	}
	return nil
}

// causes are the reasons, known from the capture, that a table may end
// otherwise than the capture's end state: a COPY FROM STDIN whose rows
// the log does not hold, statements that write values drawn at random
// (random(), gen_random_uuid()), and, from MySQL's and MariaDB's logs,
// which hold no insert ids, statements that write the AUTO_INCREMENT
// value their session took last (LAST_INSERT_ID()); the clock's values
// are the date and time columns' the comparison sets apart.
func causes(c *capture.Capture, keep func(*capture.Session) bool) map[string]snapshot.Cause {
	out := map[string]snapshot.Cause{}
	seen := map[int]bool{}
	idsUnknown := c.Engine == capture.EngineMySQL && !c.FromWire()
	for i := 0; idsUnknown && i < len(c.Sessions); i++ {
		for _, st := range c.Sessions[i].Statements {
			if st.InsertID > 0 {
				idsUnknown = false // a slow log that holds them
				break
			}
		}
	}
	for i := range c.Sessions {
		if keep != nil && !keep(&c.Sessions[i]) {
			continue
		}
		for _, st := range c.Sessions[i].Statements {
			if seen[st.Text] {
				continue
			}
			seen[st.Text] = true
			text := c.Texts[st.Text]
			if table, ok := capture.CopyFromStdin(text); ok {
				out[table] = snapshot.Cause{Why: "its COPY FROM STDIN rows are not in the server log (data not captured)", Rows: true}
				continue
			}
			table := capture.WrittenTable(text)
			if table == "" {
				continue
			}
			if v := capture.Volatile(text); v != "" && !capture.Clock(v) {
				if _, ok := out[table]; !ok {
					out[table] = snapshot.Cause{Why: "the application's statements write it with " + v + ", whose values differ from run to run"}
				}
			}
			if idsUnknown && capture.CallsLastInsertID(text) {
				if _, ok := out[table]; !ok {
					out[table] = snapshot.Cause{Why: "the application's statements write it with LAST_INSERT_ID(), the AUTO_INCREMENT value " +
						"their session took last, which concurrent sessions took in another order (the log does not hold the values)"}
				}
			}
		}
	}
	return out
}

// diverged names, per table, the replayed statements that write it and
// ended otherwise than in the capture (a new error, one that vanished or
// changed, a COMMIT that rolled back or committed): a table that then
// differs differs after them. It stays a difference (they are the
// replay's divergence), but the report says which statements.
func diverged(outcomes []result.ReplayOutcome) map[string]string {
	n := map[string]int64{}
	first := map[string]string{}
	for _, o := range outcomes {
		switch o.Kind {
		case replay.New, replay.Vanished, replay.Changed:
		default:
			continue
		}
		table := capture.WrittenTable(o.Fingerprint)
		if table == "" {
			continue
		}
		n[table] += o.Count
		if _, ok := first[table]; !ok {
			state := o.Captured
			if o.Kind == replay.New {
				state = o.Replayed
			}
			first[table] = fmt.Sprintf("%s %s: %s", o.Kind, state, firstN(o.Fingerprint, 60))
		}
	}
	out := map[string]string{}
	for table, k := range n {
		out[table] = fmt.Sprintf("after %d statement(s) writing it ended otherwise than captured (%s)", k, first[table])
	}
	return out
}

func firstN(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// verifyDatabase is the database whose end state --verify compares: the
// snapshot's (renamed by --map-db) when the capture's sessions wrote it
// (connected to it, created it, or changed to it), or when the target
// names none; else "", the target's own. A workload that creates its own
// database runs against a target whose database exists before it (the
// server's), and its end state is in the database it made. note says
// which other databases the capture used, which the snapshot (of one
// database) does not hold.
func verifyDatabase(ctx context.Context, t *opened, c *capture.Capture, keep func(*capture.Session) bool, mapDB map[string]string,
	want *snapshot.Snapshot) (db, note string) {
	used := map[string]bool{}
	mysql := c.Engine == capture.EngineMySQL
	seen := map[int]bool{}
	for i := range c.Sessions {
		s := &c.Sessions[i]
		if keep != nil && !keep(s) {
			continue
		}
		if s.Database != "" {
			used[mappedName(mapDB, s.Database)] = true
		}
		for _, st := range s.Statements {
			if seen[st.Text] {
				continue
			}
			seen[st.Text] = true
			if verb, name, _, _ := capture.Database(c.Texts[st.Text], mysql); name != "" && verb != "DROP" {
				used[mappedName(mapDB, name)] = true
			}
		}
	}
	wantDB := mappedName(mapDB, want.Database)
	own := targetDatabase(ctx, t)
	if wantDB != "" && wantDB != own && (used[wantDB] || own == "") {
		db = wantDB
	}
	compared := cmp.Or(db, own)
	var others []string
	for name := range used {
		if name != compared {
			others = append(others, name)
		}
	}
	if len(others) > 0 {
		sort.Strings(others)
		note = fmt.Sprintf("the capture's sessions also used %s: --verify compared %s, the database its snapshot holds (a snapshot reads one database)",
			strings.Join(others, ", "), compared)
	}
	return db, note
}

// targetDatabase is the database the target connects to, "" when it
// names none or cannot be read.
func targetDatabase(ctx context.Context, t *opened) string {
	c, err := t.ConnectCollector(ctx, snapshotApp)
	if err != nil {
		return ""
	}
	defer c.Close()
	q := "SELECT current_database()"
	if t.Dialect == engine.MySQL {
		q = "SELECT coalesce(database(), '')"
	}
	var name string
	if c.QueryRow(ctx, q).Scan(&name) != nil {
		return ""
	}
	return name
}

// inDatabase opens the target's server with another database: its URL
// (or keyword/value string) with that database in place of its own.
func inDatabase(t *opened, tg Target, db string) (*engine.Target, error) {
	raw := tg.URL
	if t.managed != nil {
		raw = t.managed.URL()
	}
	if !strings.Contains(raw, "://") {
		raw += " dbname='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(db) + "'"
	} else {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("the end state of database %s: %w", db, err)
		}
		u.Path, u.RawPath = "/"+db, ""
		raw = u.String()
	}
	other, err := engine.Open(raw)
	if err != nil {
		return nil, fmt.Errorf("the end state of database %s: %w", db, err)
	}
	other.ConnectTimeout = t.ConnectTimeout
	return other, nil
}

// verify compares the target (or its database db, when not "") with the
// expected end state; why names the causes the capture knows of tables
// that may differ, after the statements of the replay's divergence that
// wrote each table.
func verify(ctx context.Context, t *opened, tg Target, db string, want *snapshot.Snapshot, why map[string]snapshot.Cause, after map[string]string) (*result.EndState, error) {
	target := t.Target
	if db != "" {
		other, err := inDatabase(t, tg, db)
		if err != nil {
			return nil, err
		}
		defer other.Close()
		target = other
	}
	c, err := target.ConnectCollector(ctx, snapshotApp)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	got, err := snapshot.Take(ctx, c, target.Dialect, target.URL)
	if err != nil {
		return nil, err
	}
	cmp := snapshot.Compare(want, got)
	cmp.Explain(why)
	cmp.After(after)
	es := &result.EndState{Expected: want.Target, Summary: cmp.Summary(), Sequences: cmp.Sequences}
	for _, d := range cmp.Tables {
		es.Tables = append(es.Tables, result.EndTable(d))
	}
	es.Match, es.ClockOnly, es.Explained, es.Of = cmp.Matching()
	return es, nil
}

// plan says what a replay will do, before it writes anything.
func plan(c *capture.Capture, o ReplayOptions, url string, kept int) string {
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
	sync := "each statement waits for the other sessions' commits that completed before it in the capture (--sync commit)"
	switch o.Sync {
	case replay.SyncStatement:
		sync = "each statement waits for every statement of another session that ended before it started in the capture (--sync statement)"
	case replay.SyncNone:
		sync = "sessions do not wait for each other (--sync none)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "replaying %s: %d sessions, %d statements captured over %s\n", o.Capture, len(c.Sessions),
		c.Statements(), c.End.Sub(c.Start).Round(time.Millisecond))
	if kept < len(c.Sessions) {
		fmt.Fprintf(&b, "  the session filters keep %d of the %d sessions\n", kept, len(c.Sessions))
	}
	fmt.Fprintf(&b, "  against %s, as users %s, databases %s\n", url, names(users), names(dbs))
	fmt.Fprintf(&b, "  at %s; %s\n", speed, sync)
	fmt.Fprintf(&b, "  this writes to the target: restore it to the capture's starting point first (see docs/replay.md)\n")
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
	line := fmt.Sprintf("%s replay %s  %d/%d statements  %8.1f/s  %d sessions%s  errors %d", label,
		s.Elapsed.Round(time.Second), s.Issued, s.Total, s.StatementsPerSec, s.ActiveSessions, lag, s.Errors)
	if s.SyncWaiting > 0 {
		line += fmt.Sprintf("  waiting %d", s.SyncWaiting)
	}
	if s.Released > 0 {
		line += fmt.Sprintf("  sync released %d", s.Released)
	}
	if s.Stalled > 0 {
		line += fmt.Sprintf("  STALLED %d", s.Stalled)
	}
	return line
}

// replayRun turns a replay's result into a result file's run: one
// transaction type, "statement", so that show and compare read it like
// any run, and the replay section beside it.
func replayRun(o ReplayOptions, t *opened, sv string, c *capture.Capture, res *replay.Result, cpu driver.CPU, typing replay.Typing) (*result.Run, error) {
	r := &result.Run{
		Schema: result.Schema, Label: o.Label,
		Tool:    result.Tool{Name: "dbparity", Version: Version, GoVersion: runtime.Version()},
		Command: RedactArgs(o.Command),
		Start:   res.Start, End: res.End, MeasureStart: res.Start, MeasureEnd: res.End,
		Partial: res.Partial, PartialReason: res.PartialReason,
		Workload: result.Workload{Name: "replay", Version: ReplayVersion, Params: map[string]any{
			"capture": o.Capture, "speed": o.Speed, "sync": res.Sync, "sessions": res.Sessions,
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
		Speed: res.Speed, Sync: res.Sync, Sessions: res.Sessions, SessionsFailed: res.SessionsFailed,
		SessionsFiltered: res.SessionsFiltered, Statements: res.Statements, Replayed: res.Replayed, OK: res.OK, RowsCompared: res.RowsCompared,
		Errors: res.Errors, NotReplayed: res.NotReplayed, CapturedCommits: res.CapturedCommits,
		ReplayedCommits: res.ReplayedCommits, CapturedTransactions: res.CapturedTransactions,
		ReplayedTransactions: res.ReplayedTransactions, Notes: res.Notes, Literals: o.Literals,
		WritesChanged: res.WritesChanged, TablesChanged: res.TablesChanged, WritesUntold: res.WritesUntold, FromWire: res.FromWire,
		ServerRollbacks: res.ServerRollbacks, Retries: res.Retries}
	if len(res.Admin) > 0 {
		rp.Admin = res.Admin
	}
	if typing != (replay.Typing{}) {
		rp.Typing = &result.ReplayTyping{Texts: typing.Texts, Params: typing.Params, Executions: typing.Executions, Failed: typing.Failed}
	}
	hist := func(h *metrics.Histogram) (*result.Histogram, error) {
		if h == nil || h.Count() == 0 {
			return nil, nil
		}
		x, err := result.NewHistogram(h)
		return &x, err
	}
	if rp.Lag, err = hist(res.Lag); err != nil {
		return nil, err
	}
	if rp.SyncWait, err = hist(res.SyncWait); err != nil {
		return nil, err
	}
	for _, rel := range res.Releases {
		rp.Releases = append(rp.Releases, result.ReplayRelease{AtS: rel.At.Seconds(), Session: c.Sessions[rel.Session].ID,
			Statement: rel.Statement, WaitedS: rel.Waited.Seconds(), Cycle: rel.Cycle})
	}
	for _, st := range res.Stalls {
		s := c.Sessions[st.Session]
		rp.Stalls = append(rp.Stalls, result.ReplayStall{AtS: st.At.Seconds(), Session: s.ID, Statement: st.Statement,
			Fingerprint: capture.Fingerprint(c.Texts[s.Statements[st.Statement].Text]), Seconds: st.Seconds,
			What: st.What, Waiting: st.Waiting})
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
		sw, err := hist(f.SyncWait)
		if err != nil {
			return nil, err
		}
		rp.Fingerprints = append(rp.Fingerprints, result.ReplayFingerprint{Text: f.Text, Example: f.Example,
			Calls: f.Calls, Replayed: f.Replayed, CaptureErrors: f.CaptureErrors, ReplayErrors: f.ReplayErrors,
			Capture: ch, Replay: rh, SyncWait: sw})
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

// replayable checks that the capture's engine is the target's: a
// capture's SQL is its server's dialect.
func replayable(c *capture.Capture, d engine.Dialect) error {
	from := c.Engine
	if from == "" {
		from = capture.EnginePostgres
	}
	switch {
	case d == engine.SQLite:
		return engine.ErrReplayDialect
	case from == capture.EngineMySQL && d != engine.MySQL:
		return fmt.Errorf("the capture comes from MySQL or MariaDB logs: replay it against a mysql:// or mariadb:// target, not %s", d)
	case from != capture.EngineMySQL && d == engine.MySQL:
		return fmt.Errorf("the capture comes from PostgreSQL logs: replay it against a postgres:// target, not %s", d)
	}
	return nil
}
