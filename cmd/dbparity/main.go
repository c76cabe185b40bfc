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
