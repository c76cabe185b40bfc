// Command captureparse measures how fast dbparity capture reads a
// PostgreSQL log into a capture file, side by side with pgreplay's parser
// (pgreplay -f, which parses a log and writes its replay file) on the same
// files: wall time, CPU (user and system, from each process's rusage) and
// peak RSS, in interleaved rounds, for csvlog and stderr logs at one or
// more log sizes (issue 51, point 2).
//
//	go run ./bench/captureparse [-dbparity PATH] [-before PATH] [-pgreplay PATH] [-rounds 5]
//		[-seconds 10,40] [-clients 4] [-scale 10] [-keep DIR] [-log FILE]...
//
// Without -log it makes the logs by a real run: a throw-away managed
// PostgreSQL logging every statement the way both tools read it
// (log_statement = 'all', which pgreplay needs, and
// log_min_duration_statement = 0, which gives dbparity its durations;
// connections and disconnections; csvlog and stderr at once, the stderr
// prefix pgreplay asks for), running pgbench -M extended and then -M
// simple for each -seconds value, one pair of log files per value, so
// that the sizes show whether memory grows with the log. With -log it
// reads the files given instead (.csv or .csv.gz are csvlog; any other
// name a stderr log with -prefix).
//
// Each round runs every file through each tool (dbparity; with -before,
// an earlier dbparity binary too, to compare a change in the same
// conditions; pgreplay), the order rotating from file to file and round
// to round, so that the load of the shared machine falls on all alike.
// Statements per second are of the statements dbparity captured
// (pgreplay's own count is in its row), and the ratios to pgreplay are
// the medians of each round's ratio. Progress goes to stderr, the
// markdown table to stdout. Run it from the repository's root.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dbparity/dbparity/internal/engine/managed"
)

// prefix is the stderr log_line_prefix pgreplay reads (its manual:
// '%m|%u|%d|%c|'); dbparity reads any prefix it is told.
const prefix = "%m|%u|%d|%c|"

type options struct {
	bin, before string
	pgreplay    string
	rounds      int
	seconds     []int
	clients     int
	scale       int
	keep        string
	logs        []string
	prefix      string
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	var o options
	seconds := "10,40"
	var logs listFlag
	flag.StringVar(&o.bin, "dbparity", "", "dbparity binary (default: go build ./cmd/dbparity into a temporary directory)")
	flag.StringVar(&o.before, "before", "", "an earlier dbparity binary, timed beside the other in the same rounds")
	flag.StringVar(&o.pgreplay, "pgreplay", "", "pgreplay binary (default: pgreplay on PATH; without one only dbparity is timed)")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved rounds")
	flag.StringVar(&seconds, "seconds", seconds, "comma-separated pgbench seconds per protocol, one log size each")
	flag.IntVar(&o.clients, "clients", 4, "pgbench clients")
	flag.IntVar(&o.scale, "scale", 10, "pgbench scale")
	flag.StringVar(&o.keep, "keep", "", "keep the generated logs in this directory (for profiling)")
	flag.Var(&logs, "log", "a log to read instead of making one (repeatable: .csv or .csv.gz is csvlog, anything else stderr)")
	flag.StringVar(&o.prefix, "prefix", prefix, "the log_line_prefix of the stderr logs given with -log")
	flag.Parse()
	o.logs = logs
	for _, s := range strings.Split(seconds, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "captureparse: -seconds %q: give whole seconds above 0\n", seconds)
			os.Exit(2)
		}
		o.seconds = append(o.seconds, n)
	}
	if o.rounds < 1 || o.clients < 1 || o.scale < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "captureparse: -rounds, -clients and -scale must be above 0; no arguments are taken")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "captureparse:", err)
		os.Exit(1)
	}
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", a...)
}

// logFile is one log both tools read.
type logFile struct {
	path   string
	csv    bool
	label  string // what made it: "pgbench 2 x 10 s"
	prefix string // stderr only
	bytes  int64
}

// sample is one tool's run on one file.
type sample struct {
	wall, cpu  float64 // seconds
	rss        int64   // peak, bytes
	statements int64   // the tool's own count; -1 when it does not say
}

func run(ctx context.Context, o options) error {
	work, err := os.MkdirTemp("", "captureparse-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	os.Chmod(work, 0o755) // the server's user enters it when run as root
	if o.bin == "" {
		o.bin = filepath.Join(work, "dbparity")
		logf("building dbparity")
		if out, err := exec.Command("go", "build", "-o", o.bin, "./cmd/dbparity").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	if o.pgreplay == "" {
		if p, err := exec.LookPath("pgreplay"); err == nil {
			o.pgreplay = p
		}
	}
	if o.pgreplay == "" {
		fmt.Println("pgreplay is not installed (apt-get install pgreplay): only dbparity is timed, without a peer to compare with.")
		fmt.Println()
	}
	var files []logFile
	if len(o.logs) > 0 {
		for _, p := range o.logs {
			st, err := os.Stat(p)
			if err != nil {
				return err
			}
			csv := strings.HasSuffix(p, ".csv") || strings.HasSuffix(p, ".csv.gz")
			files = append(files, logFile{path: p, csv: csv, label: filepath.Base(p), prefix: o.prefix, bytes: st.Size()})
		}
	} else {
		files, err = makeLogs(ctx, o, work)
		if err != nil {
			return err
		}
	}
	tools := []tool{{name: "dbparity", run: func(f logFile, out string) (sample, error) { return dbparity(ctx, o.bin, f, out) }}}
	if o.before != "" {
		tools = append(tools, tool{name: "dbparity (before)", run: func(f logFile, out string) (sample, error) { return dbparity(ctx, o.before, f, out) }})
	}
	if o.pgreplay != "" {
		tools = append(tools, tool{name: "pgreplay", run: func(f logFile, out string) (sample, error) { return pgreplay(ctx, o.pgreplay, f, out) }})
	}
	logf("load average at the start: %s", loadavg())
	results := make([][][]sample, len(files)) // [file][tool] rounds
	for i := range results {
		results[i] = make([][]sample, len(tools))
	}
	out := filepath.Join(work, "out")
	for round := 1; round <= o.rounds; round++ {
		for i, f := range files {
			for k := range tools {
				t := (k + round + i) % len(tools)
				if ctx.Err() != nil {
					return ctx.Err()
				}
				s, err := tools[t].run(f, out)
				if err != nil {
					return fmt.Errorf("round %d, %s: %w", round, f.path, err)
				}
				logf("round %d, %s %s: %s: %.2f s, %.2f s CPU, %.0f MB peak RSS, %d statements", round, format(f), f.label,
					tools[t].name, s.wall, s.cpu, float64(s.rss)/1e6, s.statements)
				results[i][t] = append(results[i][t], s)
				os.Remove(out)
			}
		}
	}
	logf("load average at the end: %s", loadavg())
	printTable(o, files, tools, results)
	return nil
}

// tool is a parser timed.
type tool struct {
	name string
	run  func(f logFile, out string) (sample, error)
}

// loadavg is /proc/loadavg's first three fields.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func format(f logFile) string {
	if f.csv {
		return "csvlog"
	}
	return "stderr"
}

// makeLogs runs pgbench against a managed server logging every
// statement, once per -seconds value, and returns each run's csvlog and
// stderr log.
func makeLogs(ctx context.Context, o options, work string) ([]logFile, error) {
	logf("starting postgres")
	data := filepath.Join(work, "pg")
	inst, err := managed.Start(ctx, managed.Options{DataDir: data, Settings: []string{
		"logging_collector=on", "log_destination=stderr,csvlog", "log_line_prefix=" + prefix,
		"log_directory=log-idle", "log_rotation_size=0", "log_rotation_age=0",
		"lc_messages=C", "log_timezone=UTC", "max_connections=100"}})
	if err != nil {
		return nil, err
	}
	defer inst.Stop()
	pgbench, err := pgTool("pgbench")
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "PGHOST="+inst.SocketDir, "PGPORT="+strconv.Itoa(inst.Port), "PGUSER="+inst.User, "PGDATABASE="+inst.Database)
	command := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, tail(out))
		}
		return nil
	}
	logf("pgbench -i -s %d", o.scale)
	if err := command(pgbench, "-i", "-q", "-s", strconv.Itoa(o.scale)); err != nil {
		return nil, err
	}
	psql, err := pgTool("psql")
	if err != nil {
		return nil, err
	}
	sql := func(statements ...string) error {
		args := []string{"-X", "-q", "-v", "ON_ERROR_STOP=1"}
		for _, s := range append(statements, "SELECT pg_reload_conf()") {
			args = append(args, "-c", s)
		}
		if err := command(psql, args...); err != nil {
			return err
		}
		time.Sleep(300 * time.Millisecond) // the logger and the backends read the new settings
		return nil
	}
	logging := []string{"log_statement = 'all'", "log_min_duration_statement = 0", "log_connections = on", "log_disconnections = on"}
	var files []logFile
	for _, secs := range o.seconds {
		dir := fmt.Sprintf("log-%ds", secs)
		set := []string{fmt.Sprintf("ALTER SYSTEM SET log_directory = '%s'", dir)}
		for _, l := range logging {
			set = append(set, "ALTER SYSTEM SET "+l)
		}
		if err := sql(set...); err != nil {
			return nil, err
		}
		for _, mode := range []string{"extended", "simple"} {
			logf("pgbench -M %s, %d clients, %d s, every statement logged", mode, o.clients, secs)
			if err := command(pgbench, "-n", "-M", mode, "-c", strconv.Itoa(o.clients), "-j", "2", "-T", strconv.Itoa(secs)); err != nil {
				return nil, err
			}
		}
		reset := []string{"ALTER SYSTEM SET log_directory = 'log-idle'"}
		for _, l := range logging {
			name, _, _ := strings.Cut(l, " ")
			reset = append(reset, "ALTER SYSTEM RESET "+name)
		}
		if err := sql(reset...); err != nil {
			return nil, err
		}
		for _, ext := range []string{".csv", ".log"} {
			m, _ := filepath.Glob(filepath.Join(data, dir, "*"+ext))
			if len(m) != 1 {
				return nil, fmt.Errorf("%s: want one %s file, found %d", dir, ext, len(m))
			}
			path := m[0]
			if o.keep != "" {
				if err := os.MkdirAll(o.keep, 0o755); err != nil {
					return nil, err
				}
				kept := filepath.Join(o.keep, fmt.Sprintf("pgbench-%ds%s", secs, ext))
				if b, err := exec.Command("cp", path, kept).CombinedOutput(); err != nil {
					return nil, fmt.Errorf("cp: %v: %s", err, b)
				}
				path = kept
			}
			st, err := os.Stat(path)
			if err != nil {
				return nil, err
			}
			files = append(files, logFile{path: path, csv: ext == ".csv", label: fmt.Sprintf("pgbench 2 x %d s", secs), prefix: prefix, bytes: st.Size()})
		}
	}
	// csvlog first, smaller first: the table's order.
	sort.SliceStable(files, func(i, j int) bool { return files[i].csv && !files[j].csv })
	return files, nil
}

// pgTool finds a PostgreSQL client program: on PATH, else in the newest
// /usr/lib/postgresql/*/bin.
func pgTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(m) == 0 {
		return "", errors.New(name + " is not installed")
	}
	return m[len(m)-1], nil
}

var (
	statementsLine = regexp.MustCompile(`(?m)^statements: (\d+)`)
	pgreplayTotal  = regexp.MustCompile(`(?m)^Total SQL statements processed: (\d+)`)
)

// dbparity times dbparity capture on f.
func dbparity(ctx context.Context, bin string, f logFile, out string) (sample, error) {
	args := []string{"capture", "--from", f.path, "--out", out, "--force", "--format", format(f)}
	if !f.csv {
		args = append(args, "--prefix", f.prefix)
	}
	s, b, err := timed(ctx, bin, args...)
	if err != nil {
		return s, err
	}
	s.statements = count(statementsLine, b)
	return s, nil
}

// pgreplay times pgreplay's parser on f, writing its replay file.
func pgreplay(ctx context.Context, bin string, f logFile, out string) (sample, error) {
	args := []string{"-f", "-o", out}
	if f.csv {
		args = append(args, "-c")
	}
	s, b, err := timed(ctx, bin, append(args, f.path)...)
	if err != nil {
		return s, err
	}
	s.statements = count(pgreplayTotal, b)
	return s, nil
}

func count(re *regexp.Regexp, b []byte) int64 {
	if m := re.FindSubmatch(b); m != nil {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return n
	}
	return -1
}

// timed runs a command to its end and reads its wall time, and its CPU
// and peak RSS from the rusage wait4 returned for it.
func timed(ctx context.Context, name string, args ...string) (sample, []byte, error) {
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	t0 := time.Now()
	err := cmd.Run()
	s := sample{wall: time.Since(t0).Seconds(), statements: -1}
	if err != nil {
		return s, buf.Bytes(), fmt.Errorf("%s: %v\n%s", filepath.Base(name), err, tail(buf.Bytes()))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		s.rss = ru.Maxrss << 10 // kilobytes on Linux
	}
	return s, buf.Bytes(), nil
}

func printTable(o options, files []logFile, tools []tool, results [][][]sample) {
	fmt.Printf("%s, %d interleaved rounds, medians; %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), o.rounds, machine())
	fmt.Println("| log | MB | tool | statements | statements/s | CPU ms per 1,000 statements | peak RSS MB | speed vs pgreplay | CPU vs pgreplay |")
	fmt.Println("|---|---:|---|---:|---:|---:|---:|---:|---:|")
	peer := -1
	for t := range tools {
		if tools[t].name == "pgreplay" {
			peer = t
		}
	}
	for i, f := range files {
		ours := results[i][0]
		if len(ours) == 0 {
			continue
		}
		n := float64(ours[0].statements)
		for t := range tools {
			ss := results[i][t]
			if len(ss) == 0 {
				continue
			}
			wall := median(pick(ss, func(s sample) float64 { return s.wall }))
			cpu := median(pick(ss, func(s sample) float64 { return s.cpu }))
			rss := median(pick(ss, func(s sample) float64 { return float64(s.rss) }))
			// Each round's ratio of runs side by side: the shared
			// machine's load drifts between rounds more than within one.
			speed, cost := "-", "-"
			if peer >= 0 && t != peer {
				p := results[i][peer]
				var sr, cr []float64
				for k := range min(len(ss), len(p)) {
					sr = append(sr, p[k].wall/ss[k].wall)
					if p[k].cpu > 0 {
						cr = append(cr, ss[k].cpu/p[k].cpu)
					}
				}
				speed, cost = spread(sr), spread(cr)
			}
			fmt.Printf("| %s, %s | %.0f | %s | %d | %.0f | %.2f | %.0f | %s | %s |\n", format(f), f.label, float64(f.bytes)/1e6,
				tools[t].name, ss[0].statements, n/wall, 1e6*cpu/n, rss/1e6, speed, cost)
		}
	}
	fmt.Println()
	fmt.Println("Statements/s and CPU per 1,000 statements are over the statements dbparity captured, for every tool (pgreplay's own count, in its row, is of the statements and executions it would replay); CPU is user and system time from each process's rusage, peak RSS its maxrss. Speed vs pgreplay is pgreplay's wall time over the tool's (above 1: faster), CPU vs pgreplay the tool's CPU over pgreplay's (below 1: cheaper), medians of the rounds' ratios [range].")
}

// machine says what the bench ran on: cores, memory, and the load.
func machine() string {
	mem := "unknown memory"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				mem = fmt.Sprintf("%.0f GB", kb/1e6)
			}
		}
	}
	return fmt.Sprintf("%d cores, %s, load average at the end %s", runtime.NumCPU(), mem, loadavg())
}

func pick(ss []sample, f func(sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// spread prints a median with its range.
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	return fmt.Sprintf("%.2f [%.2f-%.2f]", median(s), s[0], s[len(s)-1])
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}
