// Command hosts runs the studies across database hosts of their own
// (internal/testhost: a managed server in its own network, PID, mount
// and UTS namespaces at 198.18.N.2, behind a veth pair and a relay that
// adds a LAN's round trip, on CPUs set apart from the driver's), as a
// user runs them: the dbparity binary built from this checkout, its
// commands, its reports.
//
//	go run ./bench/hosts [-duration 5s] [-warmup 2s] [-rounds 3] [-users 1,2,4,8] [-delay 500us] [-studies 000,002,003,004,parts] [-keep DIR]
//
// The studies (docs/studies.md):
//
//   - 000: order-entry, A (no added delay) against B (0.5 ms added to
//     every round trip), two hosts, a sweep over users read at equal
//     CPU utilisation (dbparity sweep --a --b);
//   - 002: slob, MariaDB and PostgreSQL each on a host of its own, small
//     caches, interleaved rounds, AWR-style profiles side by side
//     (dbparity run, then compare), the hosts read by a node_exporter
//     inside each;
//   - 003: slob over 4 and then 8 hosts at once (run with several
//     --target, --db-host sql), interleaved rounds: efficiency of the
//     hosts added, and per host its server's CPU, IOPS and network;
//   - 004: capture on the database host (capture --listen-on eth0 inside
//     its namespaces) while an application runs, then replay from the
//     driver's side onto two copies of the starting state, one across
//     0.5 ms more, verified against the end state (snapshot, replay
//     --verify);
//   - parts: one run split over two driver hosts of their own (run
//     --part 0/2 and 1/2, each in a driver namespace), meeting at the
//     barrier across the links, merged: sums equal, windows within 10 ms.
//
// It prints each study's commands, its headline (the report's answer and
// grade) and its tables, and for every run whose database host figures
// came from outside (sql, node-exporter) the same figures read inside the
// host over the same window, and the largest difference. The driver runs
// on the CPUs the hosts' cpusets leave (taskset); every host shares the
// last CPU. Needs root, ip, nsenter, a cgroup v1 cpuset hierarchy,
// PostgreSQL's and MariaDB's server binaries and prometheus-node-exporter.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dbparity/dbparity/internal/cpuset"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/testhost"
)

type options struct {
	bin         string
	duration    time.Duration
	warmup      time.Duration
	rounds      int
	delay       time.Duration
	users       string // study 000's steps
	slobScale   int    // study 002
	slobUsers   int
	scaleOut    int // study 003's rows per host
	appDuration time.Duration
	studies     []string
	keep        string
	interval    time.Duration // the hosts' inside readings
	partsUsers  int
}

func main() {
	var o options
	var studies string
	flag.StringVar(&o.bin, "dbparity", "", "the dbparity binary (default: built from this checkout)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured window of each run")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "warm-up of each run")
	flag.IntVar(&o.rounds, "rounds", 3, "repetitions of each side (interleaved rounds; 3 give an interval)")
	flag.DurationVar(&o.delay, "delay", 500*time.Microsecond, "the round trip added to side B (000) and to the second replay (004)")
	flag.StringVar(&o.users, "users", "1,2,4,8", "study 000: the sweep's steps over users")
	flag.IntVar(&o.slobScale, "slob-scale", 5000, "study 002: slob rows (8 KB blocks) on each host, against a 16 MB cache")
	flag.IntVar(&o.slobUsers, "slob-users", 4, "study 002: slob sessions")
	flag.IntVar(&o.scaleOut, "scale-out-scale", 500, "study 003: slob rows on each of the 8 hosts")
	flag.DurationVar(&o.appDuration, "app-duration", 8*time.Second, "study 004: how long the captured application runs")
	flag.IntVar(&o.partsUsers, "parts-users", 4, "parts: sessions of the split run (half on each driver host)")
	flag.DurationVar(&o.interval, "inside-interval", 100*time.Millisecond, "how often each host is read from inside")
	flag.StringVar(&studies, "studies", "000,002,003,004,parts", "the studies to run (002 first, on two hosts of its own; then 004, 000, 003 and parts on eight PostgreSQL hosts)")
	flag.StringVar(&o.keep, "keep", "", "keep the result files and HTML reports in this directory (default: a temporary one, removed)")
	flag.Parse()
	o.studies = strings.Split(studies, ",")
	for _, s := range o.studies {
		if !slices.Contains([]string{"000", "002", "003", "004", "parts"}, s) {
			fail(fmt.Errorf("-studies: 000, 002, 003, 004 or parts, not %q", s))
		}
	}
	if o.rounds < 1 || o.duration <= 0 || o.warmup < 0 {
		fail(errors.New("-rounds must be at least 1 and -duration above 0"))
	}
	b, err := newBench(o)
	if err != nil {
		fail(err)
	}
	// Ctrl-C: the hosts go (their PID 1 would die with this process
	// anyway; Close also removes their links and cpusets).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		logf("interrupted: stopping the hosts")
		b.closeAll()
		os.Exit(130)
	}()
	code := b.run()
	b.closeAll()
	os.Exit(code)
}

// bench is one run of the studies.
type bench struct {
	o        options
	bin, dir string
	hostCPUs []int
	drvCPUs  []int // nil: the driver is not confined
	start    time.Time

	mu      sync.Mutex
	closers []func() error
	hosts   []*testhost.Host // every host started, for the inside checks
	checks  []check
}

func newBench(o options) (*bench, error) {
	if why := testhost.Unavailable(managed.Postgres); why != "" {
		return nil, errors.New(why)
	}
	for _, prog := range []string{"nsenter", "taskset"} {
		if _, err := exec.LookPath(prog); err != nil {
			return nil, fmt.Errorf("%s (util-linux) is needed", prog)
		}
	}
	b := &bench{o: o, start: time.Now()}
	if o.keep != "" {
		b.dir = o.keep
		if err := os.MkdirAll(b.dir, 0o755); err != nil {
			return nil, err
		}
	} else {
		d, err := os.MkdirTemp("", "dbparity-hosts-")
		if err != nil {
			return nil, err
		}
		b.dir = d
		b.closers = append(b.closers, func() error { return os.RemoveAll(d) })
	}
	os.Chmod(b.dir, 0o755)
	var err error
	if b.dir, err = filepath.Abs(b.dir); err != nil {
		return nil, err
	}
	if o.bin == "" {
		b.bin = filepath.Join(b.dir, "dbparity")
		if out, err := exec.Command("go", "build", "-o", b.bin, "./cmd/dbparity").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build dbparity (run from the module's root): %v\n%s", err, out)
		}
	} else if b.bin, err = filepath.Abs(o.bin); err != nil {
		return nil, err
	} else if _, err := os.Stat(b.bin); err != nil {
		return nil, fmt.Errorf("-dbparity: %w", err)
	}
	all, err := cpuset.Available()
	if err != nil {
		return nil, err
	}
	b.hostCPUs = all[len(all)-1:]
	if len(all) > 1 {
		b.drvCPUs = all[:len(all)-1]
	}
	return b, nil
}

// closeAll closes what the bench started, newest first.
func (b *bench) closeAll() {
	b.mu.Lock()
	cs := b.closers
	b.closers = nil
	b.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		if err := cs[i](); err != nil {
			logf("close: %v", err)
		}
	}
}

func (b *bench) onClose(f func() error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closers = append(b.closers, f)
}

// startHosts starts hosts with these options at once and closes them
// with the bench (or earlier, by the function returned).
func (b *bench) startHosts(opts ...testhost.Options) ([]*testhost.Host, func(), error) {
	hs := make([]*testhost.Host, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		if o.CPUs == nil {
			o.CPUs = b.hostCPUs
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hs[i], errs[i] = testhost.StartHost(o)
		}()
	}
	wg.Wait()
	var once sync.Once
	closeThem := func() {
		once.Do(func() {
			var wg sync.WaitGroup
			for _, h := range hs {
				if h != nil {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := h.Close(); err != nil {
							logf("host %d: %v", h.N, err)
						}
					}()
				}
			}
			wg.Wait()
		})
	}
	b.onClose(func() error { closeThem(); return nil })
	if err := errors.Join(errs...); err != nil {
		closeThem()
		return nil, nil, err
	}
	for _, h := range hs {
		logf("host %d: %s at %s, %s %s, CPUs %s", h.N, h.Hostname, h.Addr, h.Engine, h.Version, cpuset.Format(h.CPUs))
	}
	return hs, closeThem, nil
}

// dbparity runs the binary with args on the driver's CPUs in the work
// directory and returns its standard output.
func (b *bench) dbparity(args ...string) (string, error) {
	return b.exec(b.driverCommand(args...), args)
}

// driverCommand is the binary with args under taskset on the driver's
// CPUs (from the driver's namespace), in the work directory: its files
// are named relative to it, as in the reports.
func (b *bench) driverCommand(args ...string) *exec.Cmd {
	name, argv := b.bin, relArgs(b, args)
	if b.drvCPUs != nil {
		name, argv = "taskset", append([]string{"-c", cpuset.Format(b.drvCPUs), b.bin}, argv...)
	}
	c := exec.Command(name, argv...)
	c.Dir = b.dir
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return c
}

// exec runs c (dbparity with args) and returns its standard output; an
// error carries the end of its standard error.
func (b *bench) exec(c *exec.Cmd, args []string) (string, error) {
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	t0 := time.Now()
	logf("dbparity %s", shorten(strings.Join(relArgs(b, args), " ")))
	err := c.Run()
	logf("  %s, exit %d", time.Since(t0).Round(100*time.Millisecond), c.ProcessState.ExitCode())
	if err != nil {
		return stdout.String(), fmt.Errorf("dbparity %s: %w: %s", args[0], err, tail(stderr.String(), 6))
	}
	return stdout.String(), nil
}

// exitCode is the exit code an error of exec carries (-1 for none).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// ms is a duration in milliseconds, as the studies name the delay.
func ms(d time.Duration) string { return fmt.Sprintf("%g ms", d.Seconds()*1000) }

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// shorten drops what every URL repeats, for the log and the printed
// command lines.
func shorten(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "?sslmode=disable&", "?"), "?sslmode=disable", "")
}

// study is one study's output.
type study struct {
	id, title string
	setup     []string // what it ran on
	commands  []string // the command lines, as a user would type them
	report    string   // the report as printed (compare's, sweep's)
	answer    answer
	extra     []string // the bench's own tables
	took      time.Duration
	err       error
}

// answer is the report's opening: its sentences and grade.
type answer struct {
	Sentences  []string `json:"sentences"`
	Assessment struct {
		Label   string   `json:"label"`
		Caveats []string `json:"caveats"`
	} `json:"assessment"`
}

// command records a command line as the study's (paths relative to the
// work directory).
func (s *study) command(note string, args ...string) {
	line := "dbparity " + shorten(strings.Join(quoteArgs(args), " "))
	if note != "" {
		line += "    # " + note
	}
	s.commands = append(s.commands, line)
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " *?&;'") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

// compare runs dbparity compare on files against baseline: its text
// report (the study's, with an HTML file beside the results), its
// command line and its answer. --force lets compare set two engines side
// by side (002), which it refuses by default.
func (b *bench) compare(s *study, html, baseline string, files ...string) error {
	args := append([]string{"compare", "--baseline", baseline, "--html", html, "--force"}, files...)
	out, err := b.dbparity(args...)
	if err != nil {
		return err
	}
	s.report = out
	s.command("", relArgs(b, args)...)
	return b.answer(s, baseline, files...)
}

// answer reads the answer of compare over args (compare --format json).
func (b *bench) answer(s *study, baseline string, args ...string) error {
	js, err := b.dbparity(append([]string{"compare", "--baseline", baseline, "--format", "json", "--force"}, args...)...)
	if err != nil {
		return err
	}
	var doc struct {
		Answer answer `json:"answer"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		return fmt.Errorf("compare --format json: %w", err)
	}
	s.answer = doc.Answer
	return nil
}

func (b *bench) run() int {
	fmt.Printf("# dbparity studies across database hosts of their own\n\n")
	fmt.Printf("%s UTC; %s; hosts on CPU %s, the driver on CPU %s; windows %s after %s of warm-up, %d rounds\n",
		b.start.UTC().Format("2006-01-02 15:04"), machine(), cpuset.Format(b.hostCPUs), cpuset.Format(b.drvCPUs), b.o.duration, b.o.warmup, b.o.rounds)
	fmt.Printf("command: go run ./bench/hosts %s\n", strings.Join(os.Args[1:], " "))
	var done []*study
	failed := false
	run := func(id string, f func(*study) error) {
		if !slices.Contains(b.o.studies, id) {
			return
		}
		s := &study{id: id}
		t0 := time.Now()
		s.err = f(s)
		s.took = time.Since(t0)
		if s.err != nil {
			failed = true
			logf("study %s failed: %v", id, s.err)
		}
		printStudy(s)
		done = append(done, s)
	}
	// 002 first, on its own two hosts, closed before the eight others
	// start.
	run("002", b.study002)
	if slices.ContainsFunc(b.o.studies, func(s string) bool { return s != "002" }) {
		env, err := b.startEight()
		if err != nil {
			fmt.Printf("\nthe eight hosts did not start: %v\n", err)
			return 1
		}
		run("004", func(s *study) error { return b.study004(s, env) })
		run("000", func(s *study) error { return b.study000(s, env) })
		run("003", func(s *study) error { return b.study003(s, env) })
		run("parts", func(s *study) error { return b.studyParts(s, env) })
	}
	fmt.Printf("\n## Summary\n\n")
	for _, s := range done {
		if s.err != nil {
			fmt.Printf("- %s: failed: %v\n", s.id, firstLine(s.err.Error()))
			continue
		}
		fmt.Printf("- %s (%s): %s\n", s.id, s.took.Round(time.Second), headline(s))
	}
	printChecks(os.Stdout, "every run", b.checks, true)
	fmt.Printf("\nbench/hosts took %s\n", time.Since(b.start).Round(time.Second))
	if failed {
		return 1
	}
	return 0
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// headline is the answer's sentences and grade on one line.
func headline(s *study) string {
	if len(s.answer.Sentences) == 0 {
		return "(no answer)"
	}
	return strings.Join(s.answer.Sentences, "; ") + " — grade: " + s.answer.Assessment.Label
}

func printStudy(s *study) {
	fmt.Printf("\n## %s: %s\n\n", s.id, s.title)
	for _, l := range s.setup {
		fmt.Println(l)
	}
	if len(s.commands) > 0 {
		fmt.Println()
		for _, c := range s.commands {
			fmt.Println("    " + c)
		}
	}
	fmt.Printf("\ntook %s\n", s.took.Round(time.Second))
	if s.err != nil {
		fmt.Printf("\nFAILED: %v\n", s.err)
	}
	if len(s.answer.Sentences) > 0 {
		fmt.Printf("\nheadline: %s\ngrade: %s\n", strings.Join(s.answer.Sentences, "\n          "), s.answer.Assessment.Label)
		for _, c := range s.answer.Assessment.Caveats {
			fmt.Printf("  %s\n", c)
		}
	}
	if s.report != "" {
		fmt.Println()
		for _, l := range strings.Split(strings.TrimRight(s.report, "\n"), "\n") {
			fmt.Println("    " + l)
		}
	}
	for _, e := range s.extra {
		fmt.Println()
		fmt.Print(e)
	}
}

// machine names the machine: its CPUs and load.
func machine() string {
	load, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(load))
	la := "?"
	if len(f) > 0 {
		la = f[0]
	}
	all, _ := cpuset.Available()
	return fmt.Sprintf("%d CPUs, load average %s at the start", len(all), la)
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05")+" "+format+"\n", a...)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hosts:", err)
	os.Exit(1)
}
