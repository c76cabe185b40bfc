// Command saturated checks dbparity's figures on a saturated host: it
// runs order-entry and slob on a managed PostgreSQL and a managed
// MariaDB, each alone and then with a CPU hog on every core at the
// driver's priority (started by the bench and always killed), and prints
// every load-profile, IO-profile and host figure of the result beside its
// ground truth over the same window, marking any figure more than 5% off
// with its reason.
//
//	go run ./bench/saturated [-engines postgres,mariadb] [-workloads order-entry,slob] [-modes alone,hogs] [-hogs N] [-users 4] [-duration 10s] [-warmup 3s]
//
// The driver runs in this process (package runner, as `dbparity run`),
// against a server the bench starts once per engine, so that the truths
// can be read around each run:
//
//   - transactions and rollbacks: the driver's own counts of the window;
//     executes, where they come from the driver, its statements; logons,
//     its reconnects;
//   - what the server keeps current (PostgreSQL's WAL insert position for
//     the WAL size, pg_stat_statements, pg_stat_bgwriter; MariaDB's global
//     status and performance_schema): read every -sample beside the run in
//     a connection of the bench's own (on PostgreSQL one open transaction,
//     with stats_fetch_consistency = none, so that the readings add no
//     transaction to the window) and interpolated at the window's edges.
//     The WAL position also counts the records' alignment and the pages'
//     headers, which pg_stat_wal.wal_bytes does not: 2-4% more;
//   - what PostgreSQL's sessions publish late (pg_stat_database,
//     pg_stat_wal's records): read again once quiet, before and after the
//     run (every session gone, so every count published), and the run's
//     total shared out to the window as pg_stat_statements' real-time
//     figure of the same work (shared_blks_hit for blks_hit,
//     total_exec_time for active_time, ...), else as the window's share of
//     the driver's transactions. A truth approximate, which the reason of
//     a figure off says; a warm-up run before the first measured run keeps
//     warm-up and window alike;
//   - /proc (host CPU, interrupts, context switches, the server's and the
//     driver's CPU, run-queue waits, devices): read every -sample beside
//     the run, the first and the last readings inside the window taken
//     after the fact.
//
// The target is the server's URL, not --managed (the server must outlive
// each run), with --db-pid set: the data device is then unknown to the
// collectors, and the device figures are every disk's (but device-mapper
// and md), on both sides. The sampled figures (ASH) are compared with the
// server's own: DB time (sampled) with its active time, DB CPU (sampled)
// with the server's CPU from /proc.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/collect/pgstat"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/runner"
	"github.com/dbparity/dbparity/internal/workload"
	_ "github.com/dbparity/dbparity/internal/workload/orderentry" // registers order-entry
	_ "github.com/dbparity/dbparity/internal/workload/slob"       // registers slob
)

type config struct {
	users            int
	duration, warmup time.Duration
	prewarm          time.Duration
	period           time.Duration
	hogs             int
	keep             bool
}

func main() {
	engines := flag.String("engines", "postgres,mariadb", "managed engines: postgres, mariadb")
	workloads := flag.String("workloads", "order-entry,slob", "workloads: order-entry, slob")
	modes := flag.String("modes", "alone,hogs", "alone (no hog) and hogs (a CPU hog on every core), in this order")
	var cfg config
	flag.IntVar(&cfg.users, "users", 4, "sessions (slob: schemas, one session each)")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "measured window of each run")
	flag.DurationVar(&cfg.warmup, "warmup", 3*time.Second, "warm-up of each run")
	flag.DurationVar(&cfg.prewarm, "prewarm", 5*time.Second, "an unmeasured run before the first measured run of each workload (caches warm)")
	flag.DurationVar(&cfg.period, "sample", 100*time.Millisecond, "how often the truths beside the run are read")
	flag.IntVar(&cfg.hogs, "hogs", runtime.NumCPU(), "CPU hogs in mode hogs (default: one per core)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the result files (their directory is printed)")
	flag.Parse()

	h := &hogs{}
	var servers []*managed.Instance
	work, err := os.MkdirTemp("", "dbparity-saturated-")
	if err != nil {
		fail(err)
	}
	os.Chmod(work, 0o755) // the servers' user enters it when run as root
	cleanup := func() {
		h.stop()
		for _, s := range servers {
			s.Stop()
		}
		if !cfg.keep {
			os.RemoveAll(work)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go exitOnSignal(sig, h, cleanup)
	defer cleanup()

	ctx := context.Background()
	for _, eng := range split(*engines) {
		inst, err := startServer(ctx, eng, work)
		if err != nil {
			logf("%s: %v", eng, err)
			continue
		}
		servers = append(servers, inst)
		for _, wl := range split(*workloads) {
			outs, err := bench(ctx, h, inst, eng, wl, split(*modes), work, cfg)
			if err != nil {
				logf("%s %s: %v", eng, wl, err)
			}
			if len(outs) > 0 {
				printTable(os.Stdout, eng, inst.Version, wl, outs, cfg)
			}
		}
		inst.Stop()
	}
	if cfg.keep {
		logf("result files kept in %s", work)
	}
}

func startServer(ctx context.Context, eng, work string) (*managed.Instance, error) {
	o := managed.Options{Log: os.Stderr}
	switch eng {
	case "postgres":
		o.DataDir = filepath.Join(work, "pg")
		return managed.Start(ctx, o)
	case "mariadb":
		o.DataDir = filepath.Join(work, "mariadb")
		return managed.StartMariaDB(ctx, o)
	}
	return nil, fmt.Errorf("-engines: postgres or mariadb, not %q", eng)
}

// newWorkload makes the workload with the bench's parameters.
func newWorkload(name string, cfg config) (workload.Workload, error) {
	w, err := workload.New(name)
	if err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	w.Flags(fs)
	set := map[string]string{}
	switch name {
	case "order-entry":
		set = map[string]string{"warehouses": "2"}
	case "slob":
		// A table per session, larger than shared_buffers together (the
		// engine reads from the page cache), a quarter of the operations
		// updating.
		set = map[string]string{"schemas": strconv.Itoa(cfg.users), "scale": "5000", "threads-per-schema": "1",
			"update-pct": "25", "work-unit": "16"}
	}
	for k, v := range set {
		if err := fs.Set(k, v); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// bench loads one workload and measures it in each mode.
func bench(ctx context.Context, h *hogs, inst *managed.Instance, eng, wl string, modes []string, work string, cfg config) ([]*outcome, error) {
	w, err := newWorkload(wl, cfg)
	if err != nil {
		return nil, err
	}
	c := runner.Common{Target: runner.Target{URL: inst.URL()}, Workload: w, Seed: 1, Stdout: io.Discard, Stderr: io.Discard}
	logf("%s %s: loading", eng, wl)
	if err := runner.Load(ctx, runner.LoadOptions{Common: c}); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	users := cfg.users
	if wl == "slob" {
		users = 0 // schemas × threads per schema
	}
	if cfg.prewarm > 0 {
		logf("%s %s: warming the caches for %s", eng, wl, cfg.prewarm)
		err := runner.Run(ctx, runner.RunOptions{Common: c, Users: users, Duration: cfg.prewarm, Label: "prewarm",
			Out: filepath.Join(work, fmt.Sprintf("%s-%s-prewarm.json", eng, wl)), Collect: runner.CollectOptions{Off: true}})
		if err != nil {
			return nil, fmt.Errorf("prewarm: %w", err)
		}
	}
	var outs []*outcome
	for _, mode := range modes {
		n := 0
		switch mode {
		case "alone":
		case "hogs":
			n = cfg.hogs
		default:
			return outs, fmt.Errorf("-modes: alone or hogs, not %q", mode)
		}
		logf("%s %s: %s (%d hogs)", eng, wl, mode, n)
		o, err := measure(ctx, h, n, inst, eng, c, users, mode, filepath.Join(work, fmt.Sprintf("%s-%s-%s.json", eng, wl, mode)), cfg)
		if err != nil {
			return outs, fmt.Errorf("%s: %w", mode, err)
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// measure is one run with its truths: quiet counters before, the
// sampler and the hogs beside, quiet counters after.
func measure(ctx context.Context, h *hogs, nhogs int, inst *managed.Instance, eng string, c runner.Common, users int,
	mode, out string, cfg config) (*outcome, error) {
	tg, err := engine.Open(inst.URL())
	if err != nil {
		return nil, err
	}
	defer tg.Close()
	qc, err := tg.ConnectCollector(ctx, benchApp)
	if err != nil {
		return nil, err
	}
	defer qc.Close()
	sc, err := tg.ConnectCollector(ctx, benchApp)
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	o := &outcome{mode: mode, engine: eng, period: cfg.period}
	var qr *pgstat.Reader
	var read func(context.Context) (map[string]float64, error)
	var pgs *pgSampler
	if eng == "postgres" {
		if qr, err = pgstat.NewReader(ctx, qc); err != nil {
			return nil, err
		}
		if o.q0, err = pgQuiet(ctx, qc, qr, 30*time.Second); err != nil {
			return nil, err
		}
		if pgs, err = newPGSampler(ctx, sc); err != nil {
			return nil, err
		}
		read = pgs.read
	} else if read, err = mySampler(ctx, sc); err != nil {
		return nil, err
	}
	osr, err := ostat.New(ostat.Options{ServerPID: inst.PID})
	if err != nil {
		return nil, err
	}
	s := startSampler(cfg.period, osr, read)
	if nhogs > 0 {
		if err := h.start(nhogs); err != nil {
			s.finish()
			return nil, err
		}
	}
	o.err = runner.Run(ctx, runner.RunOptions{Common: c, Users: users, Duration: cfg.duration, Warmup: cfg.warmup,
		Label: mode, Out: out, Collect: runner.CollectOptions{DBPID: inst.PID}})
	h.stop()
	samples, note, serr := s.finish()
	o.note = note
	if pgs != nil {
		pgs.end(ctx)
		if q1, err := pgQuiet(ctx, qc, qr, 30*time.Second); err == nil {
			o.q1 = q1
		} else {
			logf("%s %s: no quiet reading after the run: %v", eng, mode, err)
		}
	}
	if serr != nil {
		return nil, serr
	}
	o.samples = samples
	if o.r, err = result.Read(out); err != nil {
		return nil, errors.Join(o.err, err)
	}

	return o, nil
}

// printTable prints each figure of the runs of one workload against its
// truth, the modes side by side, and the reasons of those off below.
func printTable(w io.Writer, eng, version, wl string, outs []*outcome, cfg config) {
	fmt.Fprintf(w, "\n%s %s, %s, %s window after a %s warm-up; truth: per second over the same window\n",
		eng, version, wl, cfg.duration, cfg.warmup)
	for _, o := range outs {
		s := o.r.Summarize()
		line := fmt.Sprintf("  %-6s %.0f tps, %d sessions", o.mode, s.TPS, o.r.Driver.Users)
		if o.r.OS != nil && o.r.OS.HasWindow() {
			ow := o.r.OS.Window
			line += fmt.Sprintf(", host CPU %.0f%% busy, load %.1f", ow.CPUBusyPct, ow.Load1)
		}
		if lag, ok := o.txLag(); ok {
			line += fmt.Sprintf("; the server's transactions %+.2f s of the rate from the driver's", lag)
		}
		if o.r.OS != nil && o.r.OS.HasWindow() {
			line += fmt.Sprintf("; OS readings %s", o.osOffsets())
		}
		if o.note != "" {
			line += "; " + o.note
		}
		if o.err != nil {
			line += "; run: " + o.err.Error()
		}
		fmt.Fprintln(w, line)
	}
	figs := make([][]figure, len(outs))
	for i, o := range outs {
		figs[i] = o.figures()
	}
	fmt.Fprintf(w, "  %-14s %-28s %-9s", "section", "figure", "unit")
	for _, o := range outs {
		fmt.Fprintf(w, " | %-6s %11s %11s %6s    ", o.mode, "dbparity", "truth", "ratio")
	}
	fmt.Fprintln(w)
	var notes []string
	for _, f := range figs[0] {
		fmt.Fprintf(w, "  %-14s %-28s %-9s", f.section, f.name, f.unit)
		for j := range outs {
			g := find(figs[j], f.section, f.name)
			if g == nil {
				fmt.Fprintf(w, " | %-6s %11s %11s %6s    ", "", "-", "-", "")
				continue
			}
			mark := "  "
			if g.off() {
				notes = append(notes, fmt.Sprintf("%s, %s %s: %s", outs[j].mode, g.section, g.name, g.reason))
				mark = fmt.Sprintf("%2d", len(notes))
			}
			truth, ratio := "n/a", ""
			if g.known {
				truth = num(g.truth)
				if g.truth != 0 {
					ratio = fmt.Sprintf("%.3f", g.got/g.truth)
				}
			}
			fmt.Fprintf(w, " | %-6s %11s %11s %6s %s", "", num(g.got), truth, ratio, offMark(mark, g.off()))
		}
		fmt.Fprintln(w)
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "  off by more than %.0f%%:\n", 100*tolerance)
		for i, n := range notes {
			fmt.Fprintf(w, "  %2d. %s\n", i+1, n)
		}
	}
}

func offMark(mark string, off bool) string {
	if !off {
		return "   "
	}
	return "!" + mark
}

func find(fs []figure, section, name string) *figure {
	for i := range fs {
		if fs[i].section == section && fs[i].name == name {
			return &fs[i]
		}
	}
	return nil
}

// num prints a figure with about four significant digits.
func num(x float64) string {
	switch a := max(x, -x); {
	case a == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case a >= 0.1:
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

func split(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, "saturated: "+format+"\n", a...) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "saturated:", err)
	os.Exit(1)
}
