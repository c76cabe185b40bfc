// Command soak measures whether a long run stays bounded: it runs
// `dbparity run` as a subprocess (64 sessions of order-entry, 30 minutes
// by default) on a managed PostgreSQL or the SQLite default, samples the
// process's resident memory (VmRSS) and the journal's size every 10 s, and
// prints the memory after the first minute and at the end, the slope of
// memory after the first minute (least squares, MB/hour), the result
// file's size and what it would be after 24 hours, the journal's and any
// side file's growth per hour, then PASS or FAIL against the targets: a
// slope under 1 MB/h and a 24-hour result under 5 MB. The result's series
// grow until they hold their bound of points (1,440 by default: 24 minutes
// at one a second) and then stay within it, so the memory target is judged
// on the slope once they are full; -series-points 120 fills them within
// the first three minutes of a 30-minute run.
//
//	go run ./bench/soak [-target postgres|sqlite] [-duration 30m] [-users 64] [-series-points N] [-bin PATH]
//
// It exits 0 when both targets are met, 3 when one is missed, 1 when the
// benchmark itself failed and 130 when interrupted (after printing what it
// measured).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dbparity/dbparity/internal/metrics"
)

// The targets of a day-long run.
const (
	maxSlopeMBPerHour = 1.0
	maxResultMB24h    = 5.0
	day               = 24 * time.Hour
)

type options struct {
	bin        string
	target     string
	duration   time.Duration
	warmup     time.Duration
	users      int
	warehouses int
	every      time.Duration
	points     int // --series-points of the run; 0: its default
	keep       bool
	verbose    bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "dbparity binary to measure (default: build ./cmd/dbparity)")
	flag.StringVar(&o.target, "target", "postgres", "postgres (a managed server from the local binaries) or sqlite (the embedded default)")
	flag.DurationVar(&o.duration, "duration", 30*time.Minute, "measured window of the run")
	flag.DurationVar(&o.warmup, "warmup", 10*time.Second, "warm-up of the run")
	flag.IntVar(&o.users, "users", 64, "sessions")
	flag.IntVar(&o.warehouses, "warehouses", 4, "order-entry warehouses to load")
	flag.DurationVar(&o.every, "every", 10*time.Second, "sample memory and the journal every duration")
	flag.IntVar(&o.points, "series-points", 0, "the run's --series-points (default its own, 1440): a small bound fills early, so the slope after it shows any growth that is not the bounded series")
	flag.BoolVar(&o.keep, "keep", false, "keep the working directory (database, result, dbparity's output)")
	flag.BoolVar(&o.verbose, "v", false, "show dbparity's progress")
	flag.Parse()
	if o.target != "postgres" && o.target != "sqlite" {
		fmt.Fprintln(os.Stderr, "soak: --target must be postgres or sqlite")
		os.Exit(2)
	}
	if o.duration < 2*time.Minute || o.every <= 0 || o.users <= 0 || o.warehouses <= 0 {
		fmt.Fprintln(os.Stderr, "soak: --duration must be at least 2m (memory is measured after the first minute); --every, --users and --warehouses above 0")
		os.Exit(2)
	}
	code, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run(o options) (int, error) {
	dir, err := os.MkdirTemp("", "dbparity-soak-")
	if err != nil {
		return 1, err
	}
	os.Chmod(dir, 0o755) // the managed server's user (when run as root) must enter it
	if o.keep {
		fmt.Fprintln(os.Stderr, "soak: working directory", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if o.bin == "" {
		o.bin = filepath.Join(dir, "dbparity")
		fmt.Fprintln(os.Stderr, "soak: building dbparity")
		cmd := exec.Command("go", "build", "-o", o.bin, "github.com/dbparity/dbparity/cmd/dbparity")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return 1, fmt.Errorf("build dbparity (run from the module, or give --bin): %w", err)
		}
	}
	where := []string{"--target", "sqlite://" + filepath.Join(dir, "soak.db")}
	if o.target == "postgres" {
		where = []string{"--managed", "postgres", "--pg-data", filepath.Join(dir, "pg")}
	}
	fmt.Fprintf(os.Stderr, "soak: loading %d warehouses (%s)\n", o.warehouses, o.target)
	load := exec.Command(o.bin, append([]string{"load", "--warehouses", strconv.Itoa(o.warehouses)}, where...)...)
	if out, err := load.CombinedOutput(); err != nil {
		return 1, fmt.Errorf("dbparity load: %w\n%s", err, tail(out, 20))
	}

	results := filepath.Join(dir, "results") // the result and nothing else: any other file in it is a side file
	if err := os.Mkdir(results, 0o755); err != nil {
		return 1, err
	}
	out := filepath.Join(results, "soak.json")
	args := append([]string{"run", "--users", strconv.Itoa(o.users), "--duration", o.duration.String(),
		"--warmup", o.warmup.String(), "--label", "soak", "--out", out}, where...)
	if o.points > 0 {
		args = append(args, "--series-points", strconv.Itoa(o.points))
	}
	cmd := exec.Command(o.bin, args...)
	logPath := filepath.Join(dir, "dbparity.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return 1, err
	}
	defer logf.Close()
	cmd.Stdout = logf
	cmd.Stderr = logf
	if o.verbose {
		cmd.Stderr = io.MultiWriter(logf, os.Stderr)
	}
	fmt.Fprintf(os.Stderr, "soak: dbparity %s\n", strings.Join(args, " "))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 1, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)

	var samples []sample
	interrupted := false
	take := func() {
		s := sample{at: time.Since(start), rssKB: vmRSS(cmd.Process.Pid), journal: -1}
		if fi, err := os.Stat(out + ".journal"); err == nil {
			s.journal = fi.Size()
		}
		if s.rssKB > 0 {
			samples = append(samples, s)
		}
	}
	tick := time.NewTicker(o.every)
	defer tick.Stop()
	lastReport := time.Now()
	take()
	var runErr error
wait:
	for {
		select {
		case runErr = <-exited:
			break wait
		case s := <-sig:
			// The run writes what it measured, marked partial; wait for it.
			interrupted = true
			cmd.Process.Signal(s)
		case <-tick.C:
			take()
			if time.Since(lastReport) >= 5*time.Minute && len(samples) > 0 {
				lastReport = time.Now()
				s := samples[len(samples)-1]
				fmt.Fprintf(os.Stderr, "soak: %s: RSS %.1f MB, journal %.1f MB\n", s.at.Round(time.Second), float64(s.rssKB)/1024, float64(max(0, s.journal))/(1<<20))
			}
		}
	}
	elapsed := time.Since(start)
	if runErr != nil && !interrupted {
		b, _ := os.ReadFile(logPath)
		return 1, fmt.Errorf("dbparity run: %w\n%s", runErr, tail(b, 20))
	}
	pass, err := report(os.Stdout, o, samples, out, results, elapsed)
	switch {
	case err != nil:
		return 1, err
	case interrupted:
		return 130, nil
	case !pass:
		return 3, nil
	}
	return 0, nil
}

type sample struct {
	at      time.Duration
	rssKB   int64
	journal int64 // bytes; -1 when there is no journal (yet, or any more)
}

// vmRSS is the process's resident set in kB, 0 when it cannot be read.
func vmRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// slope is the least-squares slope of y over x.
func slope(x, y []float64) float64 {
	n := float64(len(x))
	if n < 2 {
		return 0
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// report prints the figures and tells whether both targets are met.
func report(w io.Writer, o options, samples []sample, out, results string, elapsed time.Duration) (bool, error) {
	// Memory after the first minute, up to the end of the measured window
	// (the result's encoding at the very end is not growth).
	end := o.warmup + o.duration
	var xs, ys []float64
	var at1m, last sample
	var peak int64
	for _, s := range samples {
		peak = max(peak, s.rssKB)
		if s.at < time.Minute {
			continue
		}
		if at1m.at == 0 {
			at1m = s
		}
		if s.at <= end {
			xs, ys = append(xs, s.at.Hours()), append(ys, float64(s.rssKB)/1024)
			last = s
		}
	}
	rssSlope := slope(xs, ys)
	half := len(xs) / 2 // the slope of the second half shows whether growth slows down
	lateSlope := slope(xs[half:], ys[half:])
	// The series grow until they hold their bound of points (one a second),
	// then merge and stay within it: growth after that is not theirs.
	points := o.points
	if points == 0 {
		points = metrics.DefaultSeriesPoints
	}
	filled := max(time.Minute, o.warmup+time.Duration(points)*time.Second+30*time.Second)
	var fx, fy []float64
	for i := range xs {
		if xs[i] >= filled.Hours() {
			fx, fy = append(fx, xs[i]), append(fy, ys[i])
		}
	}

	var jx, jy []float64
	var jmax int64
	for _, s := range samples {
		if s.journal >= 0 && s.at <= end {
			jx, jy = append(jx, s.at.Hours()), append(jy, float64(s.journal)/(1<<20))
			jmax = max(jmax, s.journal)
		}
	}

	fi, err := os.Stat(out)
	if err != nil {
		return false, fmt.Errorf("the run wrote no result: %w", err)
	}
	est, err := estimate(out)
	if err != nil {
		return false, err
	}
	var sides []string
	var sideBytes int64
	entries, _ := os.ReadDir(results)
	for _, e := range entries {
		if e.Name() == filepath.Base(out) {
			continue
		}
		if info, err := e.Info(); err == nil {
			sides = append(sides, fmt.Sprintf("%s %.1f KB", e.Name(), float64(info.Size())/1024))
			sideBytes += info.Size()
		}
	}

	mb := func(kb int64) string { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }
	runH := est.runSeconds / 3600
	fmt.Fprintf(w, "\nsoak: %d sessions of order-entry on %s, %s measured (%s in all), memory every %s\n\n", o.users, o.target, o.duration, elapsed.Round(time.Second), o.every)
	row := func(label, value string) { fmt.Fprintf(w, "%-40s %s\n", label, value) }
	row("RSS after 1 minute", fmt.Sprintf("%s (at %s)", mb(at1m.rssKB), at1m.at.Round(time.Second)))
	row("RSS at the end of the measured window", fmt.Sprintf("%s (at %s)", mb(last.rssKB), last.at.Round(time.Second)))
	row("RSS peak", mb(peak))
	row("RSS slope after 1 minute", fmt.Sprintf("%.2f MB/hour (%d samples; %.1f KB/s; %.0f MB a day)", rssSlope, len(xs), rssSlope*1024/3600, rssSlope*24))
	row("RSS slope, second half of those", fmt.Sprintf("%.2f MB/hour", lateSlope))
	if len(fx) >= 2 {
		row("RSS slope once the series are full", fmt.Sprintf("%.2f MB/hour (after %s: %d points each; %d samples)", slope(fx, fy), filled.Round(time.Second), points, len(fx)))
	} else {
		row("RSS slope once the series are full", fmt.Sprintf("not seen: the series fill their %d points after %s", points, filled.Round(time.Second)))
	}
	row("result file", fmt.Sprintf("%.1f KB for %.1f min of run (%.1f KB/hour if it grew linearly)", float64(fi.Size())/1024, runH*60, float64(fi.Size())/1024/runH))
	for _, s := range est.series {
		how := fmt.Sprintf("%.0f s a point: grows with the run, %d points at 24 h", s.step, s.points24)
		if s.bounded {
			how = fmt.Sprintf("downsampled to %.0f s a point: at most %d points at 24 h (a halving series holds at most twice what it holds after its first halving)", s.step, s.points24)
		}
		row("  series "+s.path, fmt.Sprintf("%d points, %.1f KB (%.0f bytes a point); %s", s.points, float64(s.bytes)/1024, float64(s.bytes)/float64(max(1, s.points)), how))
	}
	row("  everything else", fmt.Sprintf("%.1f KB", float64(est.fixed)/1024))
	row("result file at 24 h (estimated)", fmt.Sprintf("%.2f MB", est.bytes24/(1<<20)))
	if len(jx) >= 2 {
		row("journal during the run", fmt.Sprintf("%.2f MB/hour (largest %.1f MB; %.0f MB a day)", slope(jx, jy), float64(jmax)/(1<<20), slope(jx, jy)*24))
	} else {
		row("journal during the run", "none seen")
	}
	if len(sides) > 0 {
		row("side files after the run", fmt.Sprintf("%s: %.2f MB/hour", strings.Join(sides, ", "), float64(sideBytes)/(1<<20)/runH))
	} else {
		row("side files after the run", "none")
	}
	pass := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	// The target is on growth that goes on: after the first minute, and
	// after the bounded series have filled when that is later.
	gate := rssSlope
	if filled > time.Minute && len(fx) >= 2 {
		gate = slope(fx, fy)
	}
	okRSS := len(xs) >= 2 && gate < maxSlopeMBPerHour
	okSize := est.bytes24 < maxResultMB24h*(1<<20)
	fmt.Fprintln(w)
	row("RSS slope < 1 MB/hour", fmt.Sprintf("%s (after the first minute, or once the series are full: %.2f MB/hour)", pass(okRSS), gate))
	row("result at 24 h < 5 MB", fmt.Sprintf("%s (%.2f MB)", pass(okSize), est.bytes24/(1<<20)))
	if o.duration < 30*time.Minute {
		fmt.Fprintf(w, "(a %s run: the targets are stated for 30 minutes extrapolated)\n", o.duration)
	}
	if bound := time.Duration(points) * time.Second; o.duration+o.warmup <= bound {
		fmt.Fprintf(w, "(a series bounded at %d points looks unbounded in a run of %s or less: a series not yet merged is extrapolated as if it grew)\n",
			points, bound)
	}
	return okRSS && okSize, nil
}

// seriesSize is one series of the result file.
type seriesSize struct {
	path     string
	points   int
	bytes    int
	step     float64 // median seconds a point covers
	bounded  bool
	points24 int
}

type sizeEstimate struct {
	runSeconds float64
	series     []seriesSize
	fixed      int     // bytes of everything but the series
	bytes24    float64 // the file after 24 hours
}

// estimate reads the result file and extrapolates it to a day. A series
// is any array of objects that all have a length in seconds ("s" or
// "interval_s"); the rest of the file is taken as fixed. A series whose
// points cover about one second each grows with the run; one whose points
// cover more was downsampled, and a series that halves when full holds at
// most twice the points it holds after its first halving.
func estimate(path string) (sizeEstimate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return sizeEstimate{}, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return sizeEstimate{}, fmt.Errorf("read %s: %w", path, err)
	}
	var e sizeEstimate
	t0, err1 := time.Parse(time.RFC3339Nano, fmt.Sprint(doc["start"]))
	t1, err2 := time.Parse(time.RFC3339Nano, fmt.Sprint(doc["end"]))
	if err1 != nil || err2 != nil || !t1.After(t0) {
		return e, fmt.Errorf("%s has no start and end", path)
	}
	e.runSeconds = t1.Sub(t0).Seconds()
	var walk func(v any, path string)
	walk = func(v any, p string) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(v[k], strings.TrimPrefix(p+"."+k, "."))
			}
		case []any:
			if s, ok := asSeries(v); ok {
				enc, _ := json.Marshal(v)
				s.path, s.bytes = p, len(enc)
				s.points24 = int(float64(s.points) * day.Seconds() / e.runSeconds)
				if s.bounded {
					s.points24 = 2 * s.points
				}
				e.series = append(e.series, s)
				return
			}
			for i, x := range v {
				walk(x, fmt.Sprintf("%s[%d]", p, i))
			}
		}
	}
	walk(doc, "")
	e.fixed = len(bytes.TrimSpace(b))
	e.bytes24 = 0
	for _, s := range e.series {
		e.fixed -= s.bytes
		e.bytes24 += float64(s.bytes) / float64(s.points) * float64(s.points24)
	}
	e.bytes24 += float64(e.fixed)
	return e, nil
}

func asSeries(v []any) (seriesSize, bool) {
	if len(v) < 2 {
		return seriesSize{}, false
	}
	var secs []float64
	for _, x := range v {
		m, ok := x.(map[string]any)
		if !ok {
			return seriesSize{}, false
		}
		s, ok := m["s"].(float64)
		if !ok {
			s, ok = m["interval_s"].(float64)
		}
		if !ok {
			return seriesSize{}, false
		}
		secs = append(secs, s)
	}
	sort.Float64s(secs)
	step := secs[len(secs)/2]
	return seriesSize{points: len(v), step: step, bounded: step > 1.5}, true
}

func tail(b []byte, lines int) string {
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
