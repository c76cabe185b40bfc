// Command dbparity measures whether a database workload runs as fast on one
// platform as on another, and where the time goes. This package holds flags
// and subcommands only; the work is done in internal/runner.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/dbparity/dbparity/internal/runner"
	"github.com/dbparity/dbparity/internal/workload"
	_ "github.com/dbparity/dbparity/internal/workload/orderentry" // registers order-entry
	_ "github.com/dbparity/dbparity/internal/workload/slob"       // registers slob
)

// Exit codes; documented in docs/commands.md.
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
	usage         []string // what follows "dbparity NAME" in --help's usage lines (default "[flags]")
	examples      []string // --help's examples, each within a terminal's width
}

var commands []command

func init() {
	commands = []command{
		{"load", "create the workload's schema and load its data", cmdLoad, nil, []string{
			"dbparity load --warehouses 4                  # the embedded SQLite database",
			"dbparity load --target postgres://bench@db1:5432/bench --warehouses 10",
			"dbparity load --workload slob --scale 100000 --managed postgres",
		}},
		{"run", "run the workload and write a result file", cmdRun, nil, []string{
			"dbparity run --target postgres://bench@db1/bench --users 32 --duration 10m",
			"dbparity run --managed postgres --load --users 8 --label pg --out pg.json",
			"dbparity run --rate 500 --arrival poisson --metrics-addr 127.0.0.1:9464",
		}},
		{"check", "verify the workload's consistency conditions", cmdCheck, nil, []string{
			"dbparity check                                # the embedded SQLite database",
			"dbparity check --target postgres://bench@db1/bench",
			"dbparity check --target postgres://db1/oe --target postgres://db2/oe",
		}},
		{"show", "print the summary of a result file", cmdShow, []string{"[--json] [--show-literals] [--html PAGE [--force]] FILE"}, []string{
			"dbparity show native.json",
			"dbparity show --json native.json",
			"dbparity show native.json --html native.html",
		}},
		{"compare", "compare result files grouped by label: verdicts and side-by-side tables", cmdCompare,
			[]string{"[--baseline LABEL] [--group FACT] [--over PARAM] [--at-cpu PCT] [--format text|markdown|csv|json] [--html FILE] [--force] FILE..."}, []string{
				"dbparity compare native-*.json vm-*.json --baseline native",
				"dbparity compare *.json --group disclosure.host.kernel --format markdown",
				"dbparity compare sweep-*.json --over users --html sweep.html",
			}},
		{"ab", "run the workload against two targets in interleaved rounds and compare them as pairs", cmdAB, nil, []string{
			"dbparity ab --a postgres://db1/oe --b postgres://db2/oe --html ab.html",
			"dbparity ab --managed postgres --b-pg-set synchronous_commit=off --rounds 5",
			"dbparity ab --a postgres://db1/oe --b postgres://db2/oe --slice 2s --rounds 10",
		}},
		{"sweep", "run the workload at each step of a parameter (users, rate, warehouses, cpus), on one target or two interleaved, and compare", cmdSweep, nil, []string{
			"dbparity sweep --managed postgres --over users=1..8 --repeat 3",
			"dbparity sweep --target postgres://db1/oe --over users=2..64 --until-cpu 85%",
			"dbparity sweep --managed postgres --over cpus=1,2 --users 8 --html cpus.html",
		}},
		{"recover", "turn the journal of a run that died into a result file marked partial", cmdRecover,
			[]string{"[--out FILE] [--force] FILE.journal"}, []string{
				"dbparity recover dbparity-data/results/pg-20261124T150405Z.json.journal",
				"dbparity recover --out partial.json run.json.journal",
			}},
		{"capture", "read server logs, or the traffic itself (a proxy, or packets), into a capture file of the application's workload", cmdCapture,
			[]string{"--out CAPTURE [flags] LOG... (or --from LOG, repeatable)",
				"--out CAPTURE --proxy HOST:PORT --upstream HOST:PORT [--duration D]",
				"--out CAPTURE --listen-on IFACE --port PORT [--duration D]"}, []string{
				"dbparity capture --from 'postgresql-*.csv' --out app.capture",
				"dbparity capture --proxy :6432 --upstream db1:5432 --out app.capture",
				"dbparity capture --listen-on eth0 --port 5432 --out app.capture --duration 30m",
			}},
		{"replay", "replay a capture against a target and write a result file", cmdReplay,
			[]string{"--capture CAPTURE --target URL [flags]"}, []string{
				"dbparity replay --capture app.capture --target postgres://replay@newhost/app",
				"dbparity replay --capture app.capture --target postgres://newhost/app \\",
				"    --verify end.snap --label new --out new.json",
				"dbparity replay --capture app.capture --target postgres://db2/app --speed max",
			}},
		{"merge", "combine the results of the parts of one run (run --part I/N) into one result", cmdMerge,
			[]string{"--out RUN.json [--force] [--wait D] PART.json..."}, []string{
				"dbparity merge --out run.json part-0.json part-1.json part-2.json",
				"dbparity merge --out run.json --wait 30m results/part-*.json",
			}},
		{"hlog", "write a result's latency histograms as an HdrHistogram interval log (.hlog)", cmdHlog,
			[]string{"[--out FILE.hlog [--force]] RESULT.json"}, []string{
				"dbparity hlog run.json > run.hlog",
				"dbparity hlog --out run.hlog run.json",
			}},
		{"k8s", "write the Kubernetes Jobs that run one run split over N driver pods, and merge it", cmdK8s,
			[]string{"--parts N --image IMAGE --claim PVC [flags] -- RUN FLAGS (the target, workload, --users, --duration, --label ...)"}, []string{
				"dbparity k8s --parts 3 --image REGISTRY/dbparity:TAG --claim results \\",
				"    -- --target postgres://bench@db.svc:5432/oe --users 96 --duration 10m",
				"dbparity k8s --parts 4 --image REGISTRY/dbparity:TAG --claim results \\",
				"    --secret oe-db --metrics -- --target postgres://bench@db.svc/oe --users 64",
			}},
		{"snapshot", "record every table's rows (counts and checksums) and sequences, to verify a replay's end state", cmdSnapshot,
			[]string{"--target URL --out FILE [--force]"}, []string{
				"dbparity snapshot --target postgres://app@prod/app --out end.snap",
				"dbparity snapshot --target mysql://app@prod:3306/app --out end.snap --force",
			}},
		{"version", "print the version", cmdVersion, []string{""}, []string{"dbparity version"}},
	}
}

// commandNamed is the command of that name, or nil.
func commandNamed(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func cmdVersion(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity version", flag.ContinueOnError)
	if _, err := parseOwn(fs, args, "dbparity version"); err != nil {
		return err
	}
	fmt.Println("dbparity", runner.Version)
	return nil
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
	cmd := commandNamed(args[0])
	if cmd == nil {
		fmt.Fprintf(os.Stderr, "dbparity: unknown command %q: run dbparity help\n", args[0])
		return exitUsage
	}
	setStopNote(stopNoteOf(cmd.name))
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
				fmt.Fprintln(os.Stderr, "\n"+stopMessage())
				cancel()
			} else {
				fmt.Fprintln(os.Stderr, "dbparity: still stopping; statements still running are cancelled within 2 s")
			}
		}
	}()
	return ctx, func() { signal.Stop(sig); cancel() }
}

func printUsage(w io.Writer) {
	wrapText(w, "", "", "dbparity: does my database workload run as fast on the new platform, and if not, where does the time go?")
	fmt.Fprintln(w, "\nusage: dbparity COMMAND [flags]\n\ncommands:")
	for _, c := range commands {
		wrapText(w, fmt.Sprintf("  %-9s", c.name), strings.Repeat(" ", 11), c.summary)
	}
	fmt.Fprintln(w)
	wrapText(w, "", "", "run dbparity COMMAND --help for its flags and examples; workloads: "+strings.Join(workload.Names(), ", "))
}
