package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

// row is one client's line of the table.
type row struct {
	client     string
	skipped    string // why the client did not run
	failed     string // why its recording failed
	statements int64  // captured; -1 unknown
	captureS   float64
	replays    []*replayRow // speed 1, then max
	before     []*replayRow // the same by -before's build
	peer       []*peerRow   // pgreplay's replays of the same log
	notes      []string     // printed under the table
	extra      []*row       // more rows of the same run (another log of it)
}

// replayRow is one replay of a capture.
type replayRow struct {
	speed          string
	notFinished    time.Duration // killed at this limit
	failed         string        // no result
	seconds        float64
	syncWaits      int64 // statements whose wait was recorded (zero waits too); -1: absent
	syncWaitMeanMs float64
	sync           string // the replay's --sync, as its result says
	releases       int
	end            string
	// cpuPerStmt is dbparity's own CPU (user+sys, from its getrusage)
	// over the replay's window, synchronisation and monitor included, per
	// statement sent, in µs; procPerStmt the same over the whole process
	// (loading the capture and verifying the end state too), from the
	// rusage of the process that ended. 0: unknown.
	cpuPerStmt, procPerStmt float64
}

// recording is a client's capture and the end state it left.
type recording struct {
	dir        string // the client's work directory
	capture    string
	end        string
	statements int64
	captureS   float64
	source     string // what it was captured from, when a run has several
	// pgreplay is pgreplay's replay file of the same log (pgreplay -f),
	// when pgreplay is installed and read it.
	pgreplay string
}

// Settings of every managed PostgreSQL start: speed over durability.
var fast = []string{"fsync=off", "autovacuum=off"}

// logging makes the server's log capturable.
var logging = []string{"logging_collector=on", "log_destination=csvlog", "log_directory=capture-log",
	"log_min_duration_statement=0", "log_connections=on", "log_disconnections=on", "log_parameter_max_length=-1"}

// replaySettings are those of the servers replays run on.
var replaySettings = []string{"fsync=off", "autovacuum=off", "max_connections=250"}

// pgClient is a PostgreSQL client for recordPG.
type pgClient struct {
	settings []string // added to the setup's and the capture's server settings
	loopback bool     // the server also listens on 127.0.0.1 (JDBC)
	setup    func(ctx context.Context, inst *managed.Instance, dir string) error
	run      func(ctx context.Context, inst *managed.Instance, dir string) error
}

// clientDir makes the client's work directory.
func (b *bench) clientDir(name string) (string, error) {
	dir := filepath.Join(b.work, name)
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o755)
}

// clientLimit bounds a client's run: its duration and then some.
func (b *bench) clientLimit(d time.Duration) time.Duration { return 3*d + 5*time.Minute }

// recordPG records a PostgreSQL client and replays it at both speeds.
func (b *bench) recordPG(name string, c pgClient) *row {
	r := &row{statements: -1}
	dir, err := b.clientDir(name)
	if err != nil {
		r.failed = err.Error()
		return r
	}
	rec, err := b.capturePG(dir, c, r)
	if err != nil {
		r.failed = firstLine(err.Error())
		logf("%s: recording failed: %v", name, err)
		return r
	}
	r.statements, r.captureS = rec.statements, rec.captureS
	for _, speed := range []string{"1", "max"} {
		if b.ctx.Err() != nil {
			break
		}
		b.both(r, func(bin string) *replayRow { return b.replayPG(bin, rec, speed) })
	}
	if rec.pgreplay != "" {
		for _, speed := range []string{"1", "max"} {
			if b.ctx.Err() != nil {
				break
			}
			r.peer = append(r.peer, b.pgreplayPG(rec, speed))
		}
	}
	return r
}

// both replays with this build and, when -before names one, with the
// build before, in turns (the order swapped from one call to the next),
// so that the two meet the same conditions.
func (b *bench) both(r *row, replay func(bin string) *replayRow) {
	if b.o.before == "" {
		r.replays = append(r.replays, replay(b.bin))
		return
	}
	b.turn = !b.turn
	if b.turn {
		r.replays = append(r.replays, replay(b.bin))
		r.before = append(r.before, replay(b.o.before))
		return
	}
	r.before = append(r.before, replay(b.o.before))
	r.replays = append(r.replays, replay(b.bin))
}

// capturePG runs setup, copies the starting state, runs the client with
// statement logging, snapshots the end state and captures the log.
func (b *bench) capturePG(dir string, c pgClient, r *row) (*recording, error) {
	data, start := filepath.Join(dir, "pg"), filepath.Join(dir, "start")
	startServer := func(settings ...string) (*managed.Instance, error) {
		all := append(append(append([]string{}, fast...), c.settings...), settings...)
		if len(settings) > 0 && b.o.pgreplay != "" {
			all = append(all, "log_statement=all") // pgreplay reads no other
		}
		return managed.Start(b.ctx, managed.Options{DataDir: data, Settings: all, Loopback: c.loopback})
	}
	logf("setup")
	inst, err := startServer()
	if err != nil {
		return nil, err
	}
	if err := c.setup(b.ctx, inst, dir); err != nil {
		inst.Stop()
		return nil, fmt.Errorf("setup: %w", err)
	}
	if err := inst.Stop(); err != nil {
		return nil, err
	}
	if err := copyDir(data, start); err != nil {
		return nil, err
	}
	logf("running the client with statement logging on")
	if inst, err = startServer(logging...); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := c.run(b.ctx, inst, dir); err != nil {
		// What it did is still a capture: replay it, and say so.
		logf("client: %v", err)
		r.notes = append(r.notes, "client: "+firstLine(err.Error()))
	}
	logf("client ran %s", time.Since(t0).Round(100*time.Millisecond))
	// The end state is read with logging off, so that the snapshot's
	// queries are not part of the capture.
	if err := inst.Stop(); err != nil {
		return nil, err
	}
	if inst, err = startServer(); err != nil {
		return nil, err
	}
	rec := &recording{dir: dir, end: filepath.Join(dir, "end.snap"), capture: filepath.Join(dir, "client.capture")}
	err = b.command(10*time.Minute, filepath.Join(dir, "snapshot.log"), dir, nil, b.bin, "snapshot", "--target", inst.URL(), "--out", rec.end, "--force")
	if serr := inst.Stop(); err == nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	logs, _ := filepath.Glob(filepath.Join(data, "capture-log", "*.csv"))
	if len(logs) == 0 {
		return nil, errors.New("the server wrote no csvlog")
	}
	if err := b.captureLogs(rec, append([]string{"--param-max-length", "-1"}, logs...)); err != nil {
		return nil, err
	}
	if b.o.pgreplay != "" {
		b.parsePgreplay(rec, logs)
	}
	if b.o.keep == "" {
		os.RemoveAll(data) // the starting state and the capture are what the replays need
	}
	return rec, nil
}

// captureLogs runs dbparity capture and reads its summary.
func (b *bench) captureLogs(rec *recording, args []string) error {
	logFile := filepath.Join(rec.dir, "capture.log")
	if err := b.command(30*time.Minute, logFile, rec.dir, nil, b.bin, append([]string{"capture", "--out", rec.capture, "--force"}, args...)...); err != nil {
		return err
	}
	out, _ := os.ReadFile(logFile)
	rec.statements, rec.captureS = captured(out)
	logf("captured %d statements over %.1f s", rec.statements, rec.captureS)
	return nil
}

// captured reads a capture's summary: its statements (-1 when it does not
// say) and its span.
func captured(out []byte) (statements int64, seconds float64) {
	statements = -1
	if m := statementsLine.FindSubmatch(out); m != nil {
		statements, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if m := spanLine.FindSubmatch(out); m != nil {
		if d, err := time.ParseDuration(string(m[1])); err == nil {
			seconds = d.Seconds()
		}
	}
	return statements, seconds
}

var (
	statementsLine = regexp.MustCompile(`(?m)^statements: (\d+)`)
	spanLine       = regexp.MustCompile(`(?m)^capture: .*\(([0-9.a-zµ]+)\)$`)
)

// replayPG replays rec at speed with the dbparity bin on a fresh copy of
// its starting state.
func (b *bench) replayPG(bin string, rec *recording, speed string) *replayRow {
	inst, stop, err := b.freshPG(rec, "replay-"+speed)
	if err != nil {
		return &replayRow{speed: speed, failed: firstLine(err.Error())}
	}
	defer stop()
	return b.replay(bin, rec, speed, inst.URL())
}

// freshPG starts a managed PostgreSQL on a copy of rec's starting state
// in rec.dir/name; stop stops it and, without -keep, removes the copy.
func (b *bench) freshPG(rec *recording, name string) (inst *managed.Instance, stop func(), err error) {
	data := filepath.Join(rec.dir, name)
	os.RemoveAll(data)
	remove := func() {
		if b.o.keep == "" {
			os.RemoveAll(data)
		}
	}
	if err := copyDir(filepath.Join(rec.dir, "start"), data); err != nil {
		remove()
		return nil, nil, err
	}
	if inst, err = managed.Start(b.ctx, managed.Options{DataDir: data, Settings: replaySettings}); err != nil {
		remove()
		return nil, nil, err
	}
	return inst, func() { inst.Stop(); remove() }, nil
}

// replay runs dbparity replay (the binary bin) against url and reads its
// result.
func (b *bench) replay(bin string, rec *recording, speed, url string, extra ...string) *replayRow {
	rr := &replayRow{speed: speed, syncWaits: -1}
	// Named after the capture: a run captured several ways keeps each's.
	name := strings.TrimSuffix(filepath.Base(rec.capture), ".capture") + "-replay-" + speed
	who := ""
	if bin != b.bin {
		name += "-before"
		who = " (before)"
	}
	out := filepath.Join(rec.dir, name+".json")
	logFile := filepath.Join(rec.dir, name+".log")
	os.Remove(out)
	args := []string{"replay", "--capture", rec.capture, "--target", url, "--speed", speed, "--verify", rec.end,
		"--out", out, "--no-collect", "--label", "x", "--force"}
	if b.o.sync != "" {
		args = append(args, "--sync", b.o.sync)
	}
	args = append(args, extra...)
	logf("replay --speed %s%s (limit %s)", speed, who, b.o.limit)

	ctx, cancel := context.WithTimeout(b.ctx, b.o.limit)
	defer cancel()
	f, err := os.Create(logFile)
	if err != nil {
		rr.failed = err.Error()
		return rr
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = rec.dir, f, f
	// Killed at the limit: a replay that stalls may not heed an interrupt.
	cmd.WaitDelay = 5 * time.Second
	t0 := time.Now()
	runErr := cmd.Run()
	took := time.Since(t0)
	if ctx.Err() == context.DeadlineExceeded && b.ctx.Err() == nil {
		rr.notFinished = b.o.limit
		logf("replay --speed %s: not finished after %s, killed; its output ends:\n%s", speed, b.o.limit, indent(fileTail(logFile, 10), "    | "))
		return rr
	}
	var exit *exec.ExitError
	endDiffers := errors.As(runErr, &exit) && exit.ExitCode() == 3 // a verdict, not a failure
	if runErr != nil && !endDiffers {
		logf("replay --speed %s: %v after %s; its output ends:\n%s", speed, runErr, took.Round(100*time.Millisecond), indent(fileTail(logFile, 20), "    | "))
	}
	res, err := result.Read(out)
	if err != nil {
		rr.failed = "no result"
		if runErr != nil {
			rr.failed = "failed: " + firstLine(runErr.Error())
		}
		return rr
	}
	rp := res.Replay
	if rp == nil {
		rr.failed = "no replay in the result"
		return rr
	}
	rr.seconds, rr.releases = rp.ReplaySeconds, len(rp.Releases)
	if rp.Replayed > 0 {
		rr.cpuPerStmt = (res.Driver.CPUUserS + res.Driver.CPUSysS) * 1e6 / float64(rp.Replayed)
		if ps := cmd.ProcessState; ps != nil {
			rr.procPerStmt = float64((ps.UserTime() + ps.SystemTime()).Microseconds()) / float64(rp.Replayed)
		}
	}
	if rp.SyncWait != nil {
		rr.syncWaits, rr.syncWaitMeanMs = rp.SyncWait.Count, rp.SyncWait.MeanMs
	}
	rr.sync = rp.Sync
	x := readExtra(out)
	rr.end = endState(rp.EndState, x)
	if rp.EndState == nil && x.Replay.EndStateSkipped != "" {
		rr.end = "not verified: " + x.Replay.EndStateSkipped
	}
	logf("replay --speed %s%s: %.1f s (captured %.1f s), %d of %d statements replayed, %d errors, %d divergent, transactions %d of %d, sync released %d; dbparity CPU %.1f µs/statement in the replay (target %d), %.1f with loading and verifying; %s",
		speed, who, rp.ReplaySeconds, rp.CaptureSeconds, rp.Replayed, rp.Statements, rp.Errors, rp.Divergent(),
		rp.ReplayedTransactions, rp.CapturedTransactions, len(rp.Releases), rr.cpuPerStmt, cpuTargetUS, rr.procPerStmt, summary(rp.EndState))
	return rr
}

func summary(es *result.EndState) string {
	if es == nil {
		return "end state not verified"
	}
	return es.Summary
}

// extra are result fields that only newer dbparity builds write, read
// from the JSON itself so that the bench builds against either.
type extra struct {
	Replay struct {
		EndStateSkipped string `json:"end_state_skipped"`
		EndState        *struct {
			Explained int `json:"explained"`
			Tables    []struct {
				Name  string `json:"name"`
				Cause string `json:"cause"`
			} `json:"tables"`
		} `json:"end_state"`
	} `json:"replay"`
}

func readExtra(path string) extra {
	var x extra
	if b, err := os.ReadFile(path); err == nil {
		json.Unmarshal(b, &x)
	}
	return x
}

// endState is the table's short form of a verified end state: how many
// tables match (apart from columns the clock sets), how many differ for a
// cause the replay names, then the others, named.
func endState(es *result.EndState, x extra) string {
	if es == nil {
		return "not verified"
	}
	cause := map[string]string{}
	explained := 0
	if xe := x.Replay.EndState; xe != nil {
		explained = xe.Explained
		for _, t := range xe.Tables {
			cause[t.Name] = t.Cause
		}
	}
	s := fmt.Sprintf("%d of %d match", es.Match+es.ClockOnly, es.Of)
	if explained > 0 {
		s += fmt.Sprintf(", %d differ for a named cause", explained)
	}
	var clock, bad []string
	for _, t := range es.Tables {
		name := strings.TrimPrefix(t.Name, "public.")
		switch t.Verdict {
		case "match":
		case "match apart from date/time columns":
			clock = append(clock, name+"."+strings.Join(t.Columns, ","))
		case "differs for a named cause":
			why := cause[t.Name]
			if why == "" {
				why = "cause not given"
			}
			bad = append(bad, fmt.Sprintf("%s differs: %s", name, why))
		case "differs":
			if t.GotRows != t.WantRows {
				bad = append(bad, fmt.Sprintf("%s differs (%d rows, want %d)", name, t.GotRows, t.WantRows))
			} else if len(t.Columns) > 0 {
				bad = append(bad, fmt.Sprintf("%s differs in %s", name, strings.Join(t.Columns, ",")))
			} else {
				// Every column's checksum matches: the same values, combined
				// into rows differently (ids handed out in another order).
				bad = append(bad, fmt.Sprintf("%s differs (%d rows, every column alike: rows combine differently)", name, t.GotRows))
			}
		case "missing":
			bad = append(bad, name+" missing")
		case "extra":
			bad = append(bad, name+" extra")
		default:
			bad = append(bad, name+" "+t.Verdict)
		}
	}
	if len(clock) > 0 {
		s += " (clock only: " + strings.Join(clock, "; ") + ")"
	}
	if len(bad) > 0 {
		s += "; " + strings.Join(bad, "; ")
	}
	if len(es.Sequences) > 0 {
		s += "; sequences differ: " + strings.Join(es.Sequences, ", ")
	}
	return s
}

// copyDir copies a data directory, ownership and modes kept.
func copyDir(from, to string) error {
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a %s %s: %v: %s", from, to, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// execPG runs SQL (several statements, no parameters) on the server.
func execPG(ctx context.Context, inst *managed.Instance, sql string) error {
	conn, err := pgx.Connect(ctx, inst.URL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// pgArgs are a libpq program's connection flags for inst.
func pgArgs(inst *managed.Instance) []string {
	return []string{"-h", inst.SocketDir, "-p", strconv.Itoa(inst.Port), "-U", inst.User}
}

// libpqDSN is inst's keyword/value connection string.
func libpqDSN(inst *managed.Instance) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s", inst.SocketDir, inst.Port, inst.User, inst.Database)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
