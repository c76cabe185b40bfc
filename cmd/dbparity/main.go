// Command dbparity measures whether a database workload runs as fast on one
// platform as on another, and where the time goes. This package holds flags
// and subcommands only; the work is done in internal/runner.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/dbparity/dbparity/internal/atomicfile"
	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/cpuset"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/runner"
	"github.com/dbparity/dbparity/internal/target"
	"github.com/dbparity/dbparity/internal/target/managed"
	"github.com/dbparity/dbparity/internal/workload"
	_ "github.com/dbparity/dbparity/internal/workload/orderentry" // registers order-entry
	_ "github.com/dbparity/dbparity/internal/workload/slob"       // registers slob
)

// Exit codes; documented in the README.
const (
	exitOK          = 0
	exitFailure     = 1 // the database, the disk or the run failed
	exitUsage       = 2 // bad command line, URL or parameter
	exitCheckFailed = 3 // a consistency condition does not hold; a replay's end state differs from --verify's
	exitInterrupted = 130
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"load", "create the workload's schema and load its data", cmdLoad},
		{"run", "run the workload and write a result file", cmdRun},
		{"check", "verify the workload's consistency conditions", cmdCheck},
		{"show", "print the summary of a result file", cmdShow},
		{"compare", "compare result files grouped by label: verdicts and side-by-side tables", cmdCompare},
		{"ab", "run the workload against two targets in interleaved rounds and compare them as pairs", cmdAB},
		{"sweep", "run the workload at each step of a parameter (users, rate, warehouses, cpus), on one target or two interleaved, and compare", cmdSweep},
		{"recover", "turn the journal of a run that died into a result file marked partial", cmdRecover},
		{"capture", "read server logs, or the traffic itself (a proxy, or packets), into a capture file of the application's workload", cmdCapture},
		{"replay", "replay a capture against a target and write a result file", cmdReplay},
		{"merge", "combine the results of the parts of one run (run --part I/N) into one result", cmdMerge},
		{"hlog", "write a result's latency histograms as an HdrHistogram interval log (.hlog)", cmdHlog},
		{"k8s", "write the Kubernetes Jobs that run one run split over N driver pods, and merge it", cmdK8s},
		{"snapshot", "record every table's rows (counts and checksums) and sequences, to verify a replay's end state", cmdSnapshot},
		{"version", "print the version", func(context.Context, []string) error {
			fmt.Println("dbparity", runner.Version)
			return nil
		}},
	}
}

func main() {
	os.Exit(realMain(os.Args[1:]))
}

// profileCPU writes a CPU profile of the command to $DBPARITY_CPUPROFILE
// when it is set (for the developers: go tool pprof reads it), and
// returns what stops it.
func profileCPU() func() {
	path := os.Getenv("DBPARITY_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dbparity: DBPARITY_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

func realMain(args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return realMain([]string{args[1], "--help"})
		}
		printUsage(os.Stdout)
		return exitOK
	}
	var cmd *command
	for i := range commands {
		if commands[i].name == args[0] {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		fmt.Fprintf(os.Stderr, "dbparity: unknown command %q: run dbparity help\n", args[0])
		return exitUsage
	}
	ctx, stop := interruptible()
	defer stop()
	defer profileCPU()()
	err := cmd.run(ctx, args[1:])
	if err == nil || errors.Is(err, flag.ErrHelp) {
		if err == nil {
			warnPasswordArgs(os.Stderr, args[1:])
		}
		return exitOK
	}
	fmt.Fprintf(os.Stderr, "dbparity %s: %s\n", cmd.name, oneLine(err))
	var ue runner.UsageError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, runner.ErrCheckFailed), errors.Is(err, runner.ErrEndStateDiffers):
		return exitCheckFailed
	case errors.Is(err, runner.ErrInterrupted):
		return exitInterrupted
	case ctx.Err() != nil:
		// Only a signal cancels ctx before stop runs: whatever the error
		// (a managed server's start cut short, say), the user stopped it.
		return exitInterrupted
	}
	return exitFailure
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// interruptible returns a context cancelled by the first SIGINT or SIGTERM;
// a run then finishes its current transactions and writes its partial
// result.
func interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		n := 0
		for range sig {
			n++
			if n == 1 {
				fmt.Fprintln(os.Stderr, "\ndbparity: stopping: the current transactions get 2 s to finish, then what was measured is written")
				cancel()
			} else {
				fmt.Fprintln(os.Stderr, "dbparity: still stopping; statements still running are cancelled within 2 s")
			}
		}
	}()
	return ctx, func() { signal.Stop(sig); cancel() }
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "dbparity: does my database workload run as fast on the new platform, and if not, where does the time go?")
	fmt.Fprintln(w, "\nusage: dbparity COMMAND [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nrun dbparity COMMAND --help for its flags; workloads:", strings.Join(workload.Names(), ", "))
}

// common binds the flags shared by load, run and check.
type common struct {
	opts     runner.Common
	workload string
	pgSet    multi
	mySet    multi
	targets  multi
}

// eachTarget is the command's targets: the one of Common, or one per
// --target when several are given.
func (c *common) eachTarget() []runner.Target {
	if len(c.targets) <= 1 {
		return []runner.Target{c.opts.Target}
	}
	var ts []runner.Target
	for _, u := range c.targets {
		t := c.opts.Target
		t.URL = u
		ts = append(ts, t)
	}
	return ts
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// newFlags builds a command's flag set. The workload's own flags depend on
// which workload is chosen, so --workload is read from args first.
func newFlags(name string, args []string) (*flag.FlagSet, *common, error) {
	fs, c := targetFlags(name)
	c.workload = workloadArg(args)
	w, err := workload.New(c.workload)
	if err != nil {
		return nil, nil, runner.UsageError{Err: err}
	}
	c.opts.Workload = w
	fs.StringVar(&c.workload, "workload", c.workload, "workload: "+strings.Join(workload.Names(), ", "))
	fs.Uint64Var(&c.opts.Seed, "seed", 1, "seed of all random choices; the same seed repeats a load or run exactly")
	w.Flags(fs)
	return fs, c, nil
}

// targetFlags builds a command's flag set with the flags that name the
// target (replay has those and no workload's).
func targetFlags(name string) (*flag.FlagSet, *common) {
	fs := flag.NewFlagSet("dbparity "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &common{}
	t := &c.opts.Target
	fs.Var(&c.targets, "target", "database URL: postgres://USER@HOST:PORT/DB or sqlite://PATH (default sqlite://dbparity-data/dbparity.db); repeat it to load, check or run several targets (run drives them at once)")
	fs.StringVar(&t.Managed, "managed", "", "start a throw-away local server instead of --target: postgres or mariadb")
	fs.StringVar(&t.PGBin, "pg-bin", "", "managed: directory of initdb, pg_ctl and postgres (default: found on PATH)")
	fs.Var(major{&t.PGVersion}, "pg-version", "managed: the PostgreSQL major `version` to run (14 to 18): from --pg-bin, the local installation, --pg-dist or an archive in dbparity-data/pg-dist (default: the local binaries)")
	fs.StringVar(&t.PGDist, "pg-dist", "", "managed, with --pg-version: an archive of that version's binaries to unpack once into dbparity-data/pg-dist (a .jar of "+managed.DistArtifact+", or its .txz)")
	fs.StringVar(&t.PGData, "pg-data", "", "managed: cluster directory, kept between commands (default dbparity-data/pg, or dbparity-data/pgN with --pg-version N)")
	fs.Var(&c.pgSet, "pg-set", "managed: server setting name=value (repeatable)")
	fs.StringVar(&t.PGConf, "pg-conf", "", "managed: file of postgresql.conf lines")
	fs.StringVar(&t.MyBin, "my-bin", "", "managed mariadb: directory of mariadbd and mariadb-install-db (default: found on PATH, /usr/sbin, /usr/bin)")
	fs.StringVar(&t.MyData, "my-data", "", "managed mariadb: data directory, kept between commands (default dbparity-data/mariadb)")
	fs.Var(&c.mySet, "my-set", "managed mariadb: server option name=value (repeatable)")
	fs.StringVar(&t.MyConf, "my-conf", "", "managed mariadb: option file ([mysqld] lines)")
	fs.StringVar(&t.PGPreset, "pg-preset", "", "managed: named settings, overridden by --pg-conf and --pg-set: small-cache (16 MB shared_buffers, SLOB's method)")
	fs.StringVar(&t.MyPreset, "my-preset", "", "managed mariadb: named settings, overridden by --my-conf and --my-set: small-cache (16 MB InnoDB buffer pool, SLOB's method)")
	fs.Var(positive{d: &c.opts.ProgressInterval}, "progress-interval", "when stderr is not a terminal (CI, nohup, a pod's log): write a plain progress line every `duration` (default 10s; on a terminal the line is redrawn in place)")
	t.Timeout = 30 * time.Second
	fs.Var(positive{d: &t.Timeout}, "statement-timeout", "give up on any connection attempt, and in run, ab and sweep on any statement (sessions and collectors), the server has not answered for this `duration` (above 0)")
	return fs, c
}

// workloadArg finds --workload's value before flags are parsed.
func workloadArg(args []string) string {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, "workload="); ok {
			return v
		}
		if a == "workload" && i+1 < len(args) {
			return args[i+1]
		}
		if a == "" { // "--" ends the flags
			break
		}
	}
	return "order-entry"
}

// otherWorkloadsHelp lists the flags of the workloads not chosen (their
// flags exist only with --workload NAME), so that --help shows them all.
func (c *common) otherWorkloadsHelp(w io.Writer) {
	if c.opts.Workload == nil {
		return
	}
	for _, name := range workload.Names() {
		if name == c.workload {
			continue
		}
		other, err := workload.New(name)
		if err != nil {
			continue
		}
		wf := flag.NewFlagSet(name, flag.ContinueOnError)
		other.Flags(wf)
		n := 0
		wf.VisitAll(func(*flag.Flag) { n++ })
		if n == 0 {
			continue
		}
		fmt.Fprintf(w, "\nflags of --workload %s (given with it):\n", name)
		wf.SetOutput(w)
		wf.PrintDefaults()
	}
}

// parse parses args, prints help on -h, and fills the common options.
func (c *common) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fmt.Fprintf(os.Stdout, "usage: %s [flags]\n\nflags:\n", fs.Name())
			fs.PrintDefaults()
			c.otherWorkloadsHelp(os.Stdout)
			return err
		}
		return runner.UsageError{Err: fmt.Errorf("%v (see %s --help)", err, fs.Name())}
	}
	if fs.NArg() > 0 {
		return runner.UsageError{Err: fmt.Errorf("unexpected argument %q (see %s --help)", fs.Arg(0), fs.Name())}
	}
	c.opts.Target.PGSet = c.pgSet
	c.opts.Target.MySet = c.mySet
	if err := c.opts.Target.ManagedVersion(); err != nil {
		return err
	}
	if len(c.targets) > 0 {
		c.opts.Target.URL = c.targets[0]
	}
	if len(c.targets) > 1 && c.opts.Target.Managed != "" {
		return runner.UsageError{Err: errors.New("--managed starts one server: give several --target URLs, or one --managed")}
	}
	c.opts.Stdout, c.opts.Stderr = os.Stdout, os.Stderr
	c.opts.TTY = term.IsTerminal(int(os.Stderr.Fd()))
	c.opts.Target.Progress = os.Stderr
	if c.opts.Workload != nil {
		var wf flag.FlagSet
		c.opts.Workload.Flags(&wf)
		fs.Visit(func(f *flag.Flag) {
			if wf.Lookup(f.Name) != nil {
				c.opts.Explicit = append(c.opts.Explicit, f.Name)
			}
		})
	}
	return nil
}

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
	fs.DurationVar(&o.MetricsLinger, "metrics-linger", 0, "with --metrics-addr: keep serving the final values this `long` after the work ends, so that a scrape sees them (your scrape interval)")
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

// positive is a duration flag that refuses 0 and negative values: an
// interval of 0 means nothing (the library reads 0 as its default, so the
// command line must refuse it rather than pass it on).
type positive struct {
	d   *time.Duration
	min time.Duration // the least that makes sense; 0: anything above 0
}

func (p positive) String() string {
	if p.d == nil {
		return "0s"
	}
	return p.d.String()
}

func (p positive) Set(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return errors.New("not a duration (for example 1s or 250ms)")
	case d <= 0:
		return errors.New("must be above 0 (for example 1s or 250ms)")
	case d < p.min:
		return fmt.Errorf("must be at least %s: a collector reads the server and the host each time", p.min)
	}
	*p.d = d
	return nil
}

// count is an int flag that refuses 0 and negative values: a run of no
// users or no repetitions is a mistake, not a default.
type count struct{ n *int }

// major is a PostgreSQL major version flag (--pg-version): one that
// dbparity manages.
type major struct{ n *int }

func (m major) String() string {
	if m.n == nil || *m.n == 0 {
		return ""
	}
	return strconv.Itoa(*m.n)
}

func (m major) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || !slices.Contains(managed.SupportedMajors, n) {
		return fmt.Errorf("choose a major version: %s", managed.SupportedText())
	}
	*m.n = n
	return nil
}

func (c count) String() string {
	if c.n == nil {
		return "0"
	}
	return strconv.Itoa(*c.n)
}

func (c count) Set(s string) error {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return errors.New("not a whole number")
	case n < 1:
		return errors.New("must be at least 1")
	}
	*c.n = n
	return nil
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
	aVer, bVer     int // --a-pg-version, --b-pg-version
	labelA, labelB string
}

func (sf *sidesFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&sf.aURL, "a", "", "target of side A (default --target, or --managed)")
	fs.StringVar(&sf.bURL, "b", "", "target of side B (default --target, or --managed)")
	fs.Var(&sf.aSet, "a-pg-set", "managed: a server setting name=value for side A only (repeatable)")
	fs.Var(&sf.bSet, "b-pg-set", "managed: a server setting name=value for side B only (repeatable)")
	fs.Var(&sf.aMySet, "a-my-set", "managed mariadb: a server option name=value for side A only (repeatable)")
	fs.Var(&sf.bMySet, "b-my-set", "managed mariadb: a server option name=value for side B only (repeatable)")
	fs.Var(count{&sf.aCPUs}, "a-cpus", "managed: confine side A's server to `N` CPUs")
	fs.Var(count{&sf.bCPUs}, "b-cpus", "managed: confine side B's server to `N` CPUs")
	fs.Var(major{&sf.aVer}, "a-pg-version", "managed postgres: the major `version` of side A's server (each version has its own data directory, loaded when empty)")
	fs.Var(major{&sf.bVer}, "b-pg-version", "managed postgres: the major `version` of side B's server")
	fs.StringVar(&sf.labelA, "label-a", "a", "label of side A, the baseline")
	fs.StringVar(&sf.labelB, "label-b", "b", "label of side B")
}

// given tells whether any flag of a second side was given.
func (sf *sidesFlags) given() bool {
	return sf.aURL != "" || sf.bURL != "" || len(sf.aSet) > 0 || len(sf.bSet) > 0 || len(sf.aMySet) > 0 || len(sf.bMySet) > 0 ||
		sf.aCPUs > 0 || sf.bCPUs > 0 || sf.aVer > 0 || sf.bVer > 0
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
	if (sf.aVer > 0 || sf.bVer > 0) && base.Managed != "postgres" {
		return a, b, runner.UsageError{Err: errors.New("--a-pg-version and --b-pg-version choose managed servers' versions: give --managed postgres")}
	}
	if err := confine(&a, sf.aCPUs); err != nil {
		return a, b, err
	}
	if err := confine(&b, sf.bCPUs); err != nil {
		return a, b, err
	}
	if sf.aURL == sf.bURL && strings.Join(sf.aSet, ",") == strings.Join(sf.bSet, ",") && strings.Join(sf.aMySet, ",") == strings.Join(sf.bMySet, ",") &&
		slices.Equal(a.CPUs, b.CPUs) && a.PGVersion == b.PGVersion {
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
	files, err := runner.AB(ctx, o)
	if err != nil {
		return err
	}
	return compareFiles(files, o.LabelA)
}

// compareFiles prints the comparison of the result files a command wrote.
func compareFiles(files []string, baseline string) error {
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
	files, err := runner.Sweep(ctx, o)
	if len(files) == 0 {
		return err
	}
	// The steps that finished are compared even when a later one failed.
	if cerr := compareFiles(files, o.Sides[0].Label); cerr != nil && err == nil {
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
			fmt.Printf("%s:\n", target.Redact(t.URL))
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

func cmdShow(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity show", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print the summary as a JSON object")
	literals := fs.Bool("show-literals", false, "replay results: show statement texts with their literal values (when the replay kept them)")
	htmlOut := fs.String("html", "", "also write the run as a self-contained HTML page with charts to this file")
	force := fs.Bool("force", false, "with --html: replace a file that is not a dbparity report")
	// Accept the flag after the file name too: dbparity show run.json --json.
	flags, files := splitArgs(args, "html")
	if err := fs.Parse(append(flags, files...)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Println("usage: dbparity show [--json] [--show-literals] [--html PAGE [--force]] FILE")
			return err
		}
		return runner.UsageError{Err: fmt.Errorf("%v (usage: dbparity show [--json] FILE)", err)}
	}
	if fs.NArg() != 1 {
		return runner.UsageError{Err: errors.New("name one result file (usage: dbparity show [--json] FILE)")}
	}
	r, err := result.Read(fs.Arg(0))
	if err != nil {
		return runner.UsageError{Err: err}
	}
	if *htmlOut != "" {
		if err := notAnInput("--html", *htmlOut, fs.Arg(0)); err != nil {
			return err
		}
		if err := checkHTML(*htmlOut, *force); err != nil {
			return err
		}
		if err := writeHTML(*htmlOut, func(w io.Writer) error { return report.RunHTML(w, r) }); err != nil {
			return err
		}
	}
	if *asJSON {
		return report.JSONWith(os.Stdout, r, report.Options{Literals: *literals})
	}
	return report.TextWith(os.Stdout, r, report.Options{Literals: *literals})
}

func cmdCompare(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity compare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	baseline := fs.String("baseline", "", "label of the group the others are compared with (default the first file's)")
	force := fs.Bool("force", false, "compare runs of another workload, version or scale anyway, and replace an --html file that is not a dbparity report")
	format := fs.String("format", "text", "text, markdown, csv or json")
	htmlOut := fs.String("html", "", "also write a self-contained HTML report with charts to this file")
	groupBy := fs.String("group", "label", "group runs by label, or by a disclosed fact (driver.users, disclosure.host.kernel, ...)")
	over := fs.String("over", "", "read the runs as a sweep over users, rate, warehouses or cpus, taken from each run's own settings (runs of dbparity sweep record theirs)")
	atCPU := fs.Float64("at-cpu", 0, "a sweep's throughput at equal CPU utilisation is compared at this utilisation in % (default: the highest every group reached)")
	flags, files := splitArgs(args, "baseline", "format", "html", "group", "over", "at-cpu")
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Println("usage: dbparity compare [--baseline LABEL] [--group FACT] [--over PARAM] [--at-cpu PCT] [--format text|markdown|csv|json] [--html FILE] [--force] FILE...")
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
			return err
		}
		return runner.UsageError{Err: fmt.Errorf("%v (usage: dbparity compare [--baseline LABEL] FILE...)", err)}
	}
	if len(files) < 2 {
		return runner.UsageError{Err: errors.New("name at least two result files (usage: dbparity compare [--baseline LABEL] FILE...)")}
	}
	if *atCPU < 0 || *atCPU > 100 {
		return runner.UsageError{Err: fmt.Errorf("--at-cpu %g: a utilisation between 0 and 100%%", *atCPU)}
	}
	if *htmlOut != "" {
		if err := notAnInput("--html", *htmlOut, files...); err != nil {
			return err
		}
		if err := checkHTML(*htmlOut, *force); err != nil {
			return err
		}
	}
	render := map[string]func(io.Writer, *report.Comparison) error{
		"text": report.CompareText, "markdown": report.CompareMarkdown, "csv": report.CompareCSV, "json": report.CompareJSON}[*format]
	if render == nil {
		return runner.UsageError{Err: fmt.Errorf("--format %q: choose text, markdown, csv or json", *format)}
	}
	var runs []*result.Run
	for _, f := range files {
		r, err := result.Read(f)
		if err != nil {
			return runner.UsageError{Err: err}
		}
		runs = append(runs, r)
	}
	gs, err := compare.GroupRuns(runs, files, *groupBy, *baseline)
	if err != nil {
		return runner.UsageError{Err: err}
	}
	param := *over
	if param == "" {
		param = compare.SweepParam(gs)
	}
	if param == "" {
		if err := compare.TwoGroups(gs, *groupBy); err != nil {
			return runner.UsageError{Err: err}
		}
	}
	if !*force {
		w, err := workload.New(runs[0].Workload.Name)
		var loadParams []string
		if err == nil {
			loadParams = append(w.Meta().LoadParams, w.Meta().RunParams...)
		}
		// A sweep over warehouses compares scales on purpose.
		loadParams = slices.DeleteFunc(loadParams, func(p string) bool { return p == param })
		if err := compare.Comparable(gs, loadParams); err != nil {
			return runner.UsageError{Err: err}
		}
	}
	c, err := report.NewComparisonWith(gs, report.CompareOptions{Over: *over, AtCPU: *atCPU})
	if err != nil {
		return runner.UsageError{Err: err}
	}
	if *htmlOut != "" {
		if err := writeHTML(*htmlOut, func(w io.Writer) error { return report.CompareHTML(w, c) }); err != nil {
			return err
		}
	}
	return render(os.Stdout, c)
}

// writeHTML writes the HTML report through a temporary file beside it and
// a rename, so that a failed write leaves neither half a report nor the
// temporary file.
func writeHTML(path string, write func(io.Writer) error) error {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(path, b.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "HTML report written to %s\n", path)
	return nil
}

// checkHTML refuses an --html file that must not be replaced: a directory,
// a file in a directory that does not exist, dbparity's data (a result, a
// journal, a capture: not even with force), or any file but an earlier
// report of compare's own unless force.
func checkHTML(path string, force bool) error {
	usage := func(format string, a ...any) error {
		return runner.UsageError{Err: fmt.Errorf("--html %s: %s", path, fmt.Sprintf(format, a...))}
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if d, err := os.Stat(filepath.Dir(path)); err != nil || !d.IsDir() {
			return usage("directory %s does not exist", filepath.Dir(path))
		}
		return nil
	case err != nil:
		return usage("%v", errors.Unwrap(err))
	case st.IsDir():
		return usage("is a directory: name a file")
	}
	head := make([]byte, 4096)
	f, err := os.Open(path)
	if err != nil {
		return usage("%v", errors.Unwrap(err))
	}
	n, _ := io.ReadFull(f, head)
	f.Close()
	head = head[:n]
	if m := dbparityData.FindSubmatch(head); m != nil {
		return usage("holds dbparity data (%s), which is never replaced: choose another name", m[1])
	}
	if !force && !bytes.Contains(head, []byte(report.HTMLGenerator)) {
		return usage("exists and is not a dbparity HTML report: choose another name, or add --force to replace it")
	}
	return nil
}

// dbparityData matches the head of dbparity's own JSON files: results and
// journals ("schema") and captures ("format").
var dbparityData = regexp.MustCompile(`^\s*\{\s*"(?:schema|format)"\s*:\s*"(dbparity\.[^"]*)"`)

func cmdRecover(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity recover", flag.ContinueOnError)
	o := runner.RecoverOptions{Stdout: os.Stdout}
	fs.StringVar(&o.Out, "out", "", "result file to write (default: the one the journal stood for, FILE.journal without .journal)")
	fs.BoolVar(&o.Force, "force", false, "replace --out if it exists")
	fs.Float64Var(&o.MaxErrorPct, "max-error-pct", result.DefaultMaxErrorPct, "mark the recovered run failed when more than this percentage of its transactions failed")
	files, err := parseOwn(fs, args, "dbparity recover [--out FILE] [--force] FILE.journal", "out", "max-error-pct")
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return runner.UsageError{Err: errors.New("name one journal (usage: dbparity recover [--out FILE] FILE.journal)")}
	}
	o.Journal = files[0]
	if err := notAnInput("--out", o.Out, files...); err != nil {
		return err
	}
	return runner.Recover(o)
}

// warnPasswordArgs warns once, when a command that had a password on its
// command line has done its work (an error stays one line): the results
// never hold it, but other users of the host saw it (ps) while it ran.
func warnPasswordArgs(w io.Writer, args []string) {
	if strings.Join(runner.RedactArgs(args), "\x00") != strings.Join(args, "\x00") {
		fmt.Fprintln(w, "dbparity: warning: the password on the command line was visible to other users of this host (ps) while dbparity ran: "+
			"give it in PGPASSWORD or ~/.pgpass (PostgreSQL), MYSQL_PWD (MySQL, MariaDB) instead")
	}
}

// notAnInput refuses an output that is one of the command's inputs
// (the same path, or the same file by another name): --force replaces
// an output, never what the command reads.
func notAnInput(flagName, out string, inputs ...string) error {
	if out == "" {
		return nil
	}
	outInfo, outErr := os.Stat(out)
	outAbs, _ := filepath.Abs(out)
	for _, in := range inputs {
		inAbs, _ := filepath.Abs(in)
		same := outAbs == inAbs
		if inInfo, err := os.Stat(in); err == nil && outErr == nil {
			same = same || os.SameFile(inInfo, outInfo)
		}
		if same {
			return runner.UsageError{Err: fmt.Errorf("%s %s is one of the files this command reads: choose another file (--force never replaces an input)", flagName, out)}
		}
	}
	return nil
}

// parseOwn parses a command's own flags, which may follow its files;
// usageLine is printed with --help and named in errors.
func parseOwn(fs *flag.FlagSet, args []string, usageLine string, valued ...string) ([]string, error) {
	fs.SetOutput(io.Discard)
	flags, files := splitArgs(args, valued...)
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Println("usage: " + usageLine)
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
			return nil, err
		}
		return nil, runner.UsageError{Err: fmt.Errorf("%v (usage: %s)", err, usageLine)}
	}
	return files, nil
}

// splitArgs separates flags from file names so that flags may follow the
// files (dbparity compare a.json b.json --html r.html); valued names the
// flags that take the next word as their value.
func splitArgs(args []string, valued ...string) (flags, files []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case slices.Contains(valued, strings.TrimLeft(a, "-")):
			flags = append(flags, a)
			if i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		case strings.HasPrefix(a, "-"):
			flags = append(flags, a)
		default:
			files = append(files, a)
		}
	}
	return flags, files
}
