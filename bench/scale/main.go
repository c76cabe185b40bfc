// Command scale measures what each session costs the driver when a run
// has thousands of them: for each engine it runs `dbparity run` as a
// subprocess on a managed server (max_connections raised to fit), with
// slob reading (no update, so the sessions do not contend for rows) at
// one total rate (--rate) for every session count, and prints per count:
// the rate reached, the driver's CPU per transaction and its ratio to the
// smallest count's, the Go scheduler's latency p99, how long the server's
// start and the sessions' connecting took (from the command's start to
// the measured window, less the warm-up), and the driver's resident memory (VmRSS, sampled every
// second of the measured window) with, against the smallest count, the
// memory each further session costs (the connection library's included),
// beside what the connection library alone holds per connection (this
// benchmark opens the connections itself and measures its own memory).
//
//	go run ./bench/scale [-dbparity PATH] [-engines postgres,mariadb,pgbouncer] [-sessions 64,2000] [-bouncer-sessions 64,5000] [-rate 400] [-duration 5m] [-warmup 30s]
//
// The engine pgbouncer is PostgreSQL behind PgBouncer in transaction mode
// (Debian's package, started by this benchmark on loopback TCP, 20
// server connections): the sessions connect to it with
// default_query_exec_mode=exec, the mode a transaction pooler needs, so
// its figures include the unprepared path's cost; -bouncer-sessions are
// its counts.
//
// Targets (issue 33): memory per session ≤ 64 KB beyond the connection
// library's own, CPU per transaction within 1.2x of the 64-session
// figure, scheduler latency p99 ≤ 10 ms. The machine needs memory for the
// servers' backends too (2,000 PostgreSQL backends take several GB).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/engine/managed"
)

type row struct {
	engine       string
	sessions     int
	tps          float64
	cpuPerTxUs   float64
	schedP99Ms   float64
	connectS     float64
	rssMB        float64
	failed       string
	perSessionKB float64
	cpuRatio     float64
}

func main() {
	bin := flag.String("dbparity", "", "the dbparity binary (default: built from this checkout)")
	engines := flag.String("engines", "postgres,mariadb,pgbouncer", "managed engines to run (pgbouncer: PostgreSQL behind PgBouncer)")
	counts := flag.String("sessions", "64,2000", "session counts, the first the baseline")
	bouncerCounts := flag.String("bouncer-sessions", "64,5000", "session counts through PgBouncer, the first the baseline")
	rate := flag.Float64("rate", 400, "the total rate, transactions/s, the same at every count")
	duration := flag.Duration("duration", 5*time.Minute, "measured window of each run")
	warmup := flag.Duration("warmup", 30*time.Second, "warm-up of each run")
	flag.Parse()
	work, err := os.MkdirTemp("", "dbparity-scale-")
	if err != nil {
		fail(err)
	}
	os.Chmod(work, 0o755) // the servers' user enters it when run as root
	defer os.RemoveAll(work)
	if *bin == "" {
		*bin = filepath.Join(work, "dbparity")
		if out, err := exec.Command("go", "build", "-o", *bin, "./cmd/dbparity").CombinedOutput(); err != nil {
			fail(fmt.Errorf("build dbparity: %v\n%s", err, out))
		}
	}
	direct, err := parseCounts("-sessions", *counts)
	if err != nil {
		fail(err)
	}
	pooled, err := parseCounts("-bouncer-sessions", *bouncerCounts)
	if err != nil {
		fail(err)
	}
	var rows []row
	lib := map[string]float64{} // the connection library's KB per connection
	for _, engine := range strings.Split(*engines, ",") {
		ns := direct
		if engine == "pgbouncer" {
			ns = pooled
		}
		maxN := slices.Max(ns)
		library := engine
		if engine == "pgbouncer" {
			library = "postgres" // the same library, pgx
		}
		if _, done := lib[library]; !done {
			kb, err := libraryCost(library, work, ns[0], maxN)
			if err != nil {
				logf("%s: the library's own cost not measured: %v", engine, err)
			} else {
				lib[library] = kb
				logf("%s: the connection library holds %.0f KB per connection", engine, kb)
			}
		}
		var tg, loadTg []string // the run's target flags, and the load's when they differ
		switch engine {
		case "postgres":
			tg = []string{"--managed", engine, "--pg-data", filepath.Join(work, "pg"), "--pg-set", fmt.Sprintf("max_connections=%d", maxN+50)}
		case "mariadb":
			tg = []string{"--managed", engine, "--my-data", filepath.Join(work, "mariadb"), "--my-set", fmt.Sprintf("max_connections=%d", maxN+50)}
		case "pgbouncer":
			b, err := startBouncer(work, maxN)
			if err != nil {
				rows = append(rows, row{engine: engine, failed: err.Error()})
				continue
			}
			defer b.stop()
			tg, loadTg = []string{"--target", b.pooled}, []string{"--target", b.direct}
		default:
			fail(fmt.Errorf("-engines: postgres, mariadb or pgbouncer, not %q", engine))
		}
		logf("%s: loading slob", engine)
		load := tg
		if loadTg != nil {
			load = loadTg // the load's DDL and COPY go straight to the server
		}
		if out, err := exec.Command(*bin, append([]string{"load", "--workload", "slob", "--scale", "20000"}, load...)...).CombinedOutput(); err != nil {
			rows = append(rows, row{engine: engine, failed: "load: " + lastLine(out)})
			continue
		}
		managed := tg
		var base *row
		for _, n := range ns {
			r := measure(*bin, work, engine, managed, n, *rate, *warmup, *duration)
			if base == nil && r.failed == "" {
				base = &r
			} else if base != nil && r.failed == "" {
				r.perSessionKB = (r.rssMB - base.rssMB) * 1024 / float64(n-base.sessions)
				r.cpuRatio = r.cpuPerTxUs / base.cpuPerTxUs
			}
			rows = append(rows, r)
		}
	}
	fmt.Printf("\n## dbparity with thousands of sessions\n\n%s UTC; slob reading (--update-pct 0), %g transactions/s in total at every count, %s measured after %s\n\n",
		time.Now().UTC().Format("2006-01-02 15:04"), *rate, *duration, *warmup)
	fmt.Println("| engine | sessions | tps | driver CPU µs/tx | vs first | sched p99 ms | start and connect s | driver RSS MB | KB per further session | of it the library's |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		if r.failed != "" {
			fmt.Printf("| %s | %d | failed: %s |||||||\n", r.engine, r.sessions, r.failed)
			continue
		}
		ratio, per, libKB := "", "", ""
		if r.cpuRatio > 0 {
			ratio, per = fmt.Sprintf("%.2fx", r.cpuRatio), fmt.Sprintf("%.0f", r.perSessionKB)
			library := r.engine
			if library == "pgbouncer" {
				library = "postgres"
			}
			if kb, ok := lib[library]; ok {
				libKB = fmt.Sprintf("%.0f", kb)
			}
		}
		fmt.Printf("| %s | %d | %.0f | %.0f | %s | %.2f | %.1f | %.0f | %s | %s |\n", r.engine, r.sessions, r.tps, r.cpuPerTxUs, ratio,
			r.schedP99Ms, r.connectS, r.rssMB, per, libKB)
	}
}

func parseCounts(flagName, list string) ([]int, error) {
	var ns []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s %s: whole numbers above 0", flagName, list)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// bouncer is a managed PostgreSQL behind a PgBouncer: the URL sessions
// use (through the pooler, unprepared), the server's own, and what stops
// both.
type bouncer struct {
	pooled, direct string
	stop           func()
}

// startBouncer starts a managed PostgreSQL listening on loopback and a
// PgBouncer in transaction mode in front of it with room for clients
// sessions and 20 server connections.
func startBouncer(work string, clients int) (*bouncer, error) {
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"} {
			if _, e := os.Stat(p); e == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("no pgbouncer: apt-get install -y pgbouncer")
	}
	inst, err := managed.Start(context.Background(), managed.Options{DataDir: filepath.Join(work, "pg-bouncer"), Loopback: true,
		Settings: []string{"max_connections=100"}})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		inst.Stop()
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := filepath.Join(work, "pgbouncer")
	os.MkdirAll(dir, 0o755)
	conf, users := filepath.Join(dir, "pgbouncer.ini"), filepath.Join(dir, "userlist.txt")
	os.WriteFile(users, []byte(fmt.Sprintf("%q \"\"\n", inst.User)), 0o644)
	ini := fmt.Sprintf(`[databases]
%[1]s = host=127.0.0.1 port=%[2]d dbname=%[1]s user=%[3]s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %[4]d
unix_socket_dir =
auth_type = trust
auth_file = %[5]s
pool_mode = transaction
default_pool_size = 20
max_client_conn = %[6]d
listen_backlog = 4096
`, inst.Database, inst.Port, inst.User, port, users, clients+100)
	if err := os.WriteFile(conf, []byte(ini), 0o644); err != nil {
		inst.Stop()
		return nil, err
	}
	args := []string{conf}
	if os.Geteuid() == 0 {
		args = []string{"-u", managed.OSUser, conf} // it refuses to run as root
	}
	cmd := exec.Command(bin, args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		inst.Stop()
		return nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait(); inst.Stop() }
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if i == 50 {
			stop()
			return nil, fmt.Errorf("pgbouncer did not listen: %s", lastLine(log.Bytes()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	url := func(port int) string {
		return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", inst.User, port, inst.Database)
	}
	b := &bouncer{pooled: url(port) + "&default_query_exec_mode=exec", direct: url(inst.Port), stop: stop}
	logf("pgbouncer %s: transaction mode, 20 server connections, up to %d clients", b.pooled, clients+100)
	return b, nil
}

// libraryCost is what the connection library alone holds per open
// connection: this process opens from connections, then to, on a managed
// server of engine name, and divides the growth of its heap and stacks in use
// (after a garbage collection) by the connections added.
func libraryCost(name, work string, from, to int) (float64, error) {
	ctx := context.Background()
	o := managed.Options{DataDir: filepath.Join(work, name+"-lib"), Settings: []string{fmt.Sprintf("max_connections=%d", to+50)}}
	start := managed.Start
	if name == "mariadb" {
		start = managed.StartMariaDB
	}
	inst, err := start(ctx, o)
	if err != nil {
		return 0, err
	}
	defer inst.Stop()
	tg, err := engine.Open(inst.URL())
	if err != nil {
		return 0, err
	}
	defer tg.Close()
	var conns []engine.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	open := func(n int) (float64, error) {
		for len(conns) < n {
			c, err := tg.Connect(ctx)
			if err != nil {
				return 0, err
			}
			if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
				return 0, err
			}
			conns = append(conns, c)
		}
		// Heap and goroutine stacks in use after a collection: what the
		// connections hold, whatever an earlier probe left to the OS.
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapInuse+m.StackInuse) / (1 << 20), nil
	}
	a, err := open(from)
	if err != nil {
		return 0, err
	}
	b, err := open(to)
	if err != nil {
		return 0, err
	}
	return (b - a) * 1024 / float64(to-from), nil
}

// measure runs n sessions at rate and reads what they cost.
func measure(bin, work, engine string, managed []string, n int, rate float64, warmup, duration time.Duration) row {
	r := row{engine: engine, sessions: n}
	out := filepath.Join(work, fmt.Sprintf("%s-%d.json", engine, n))
	args := append([]string{"run", "--workload", "slob", "--update-pct", "0", "--users", strconv.Itoa(n), "--rate", fmt.Sprint(rate),
		"--warmup", warmup.String(), "--duration", duration.String(), "--label", fmt.Sprintf("%s-%d", engine, n), "--out", out, "--force",
		"--no-collect", "--progress-interval", "1s"}, managed...)
	logf("%s: %d sessions at %g/s", engine, n, rate)
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	pr, pw, _ := os.Pipe()
	cmd.Stderr = pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		r.failed = err.Error()
		return r
	}
	pw.Close()
	measuring := make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Split(scanCR)
		seen := false
		for sc.Scan() {
			l := sc.Text()
			stderr.WriteString(l + "\n")
			if !seen && measurePhase.MatchString(l) {
				seen = true
				measuring <- time.Now()
			}
		}
	}()
	var peak float64
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var measureAt time.Time
	for {
		select {
		case at := <-measuring:
			measureAt = at
		case err := <-done:
			if err != nil {
				r.failed = fmt.Sprintf("%v: %s", err, lastLine(stderr.Bytes()))
				return r
			}
			var res struct {
				Driver struct {
					SchedP99Ms float64 `json:"sched_latency_p99_ms"`
				} `json:"driver"`
			}
			b, err := os.ReadFile(out)
			if err == nil {
				err = json.Unmarshal(b, &res)
			}
			if err != nil {
				r.failed = err.Error()
				return r
			}
			sum, err := exec.Command(bin, "show", "--json", out).Output()
			var s struct {
				TPS        float64  `json:"tps"`
				CPUPerTxUs *float64 `json:"driver_cpu_per_tx_us"`
			}
			if err == nil {
				err = json.Unmarshal(sum, &s)
			}
			if err != nil || s.CPUPerTxUs == nil {
				r.failed = fmt.Sprintf("show: %v", err)
				return r
			}
			r.tps, r.cpuPerTxUs, r.schedP99Ms, r.rssMB = s.TPS, *s.CPUPerTxUs, res.Driver.SchedP99Ms, peak
			if !measureAt.IsZero() {
				// From the start to the measured window, less the warm-up:
				// the server's start and the sessions' connecting.
				r.connectS = max(0, measureAt.Sub(start).Seconds()-warmup.Seconds())
			}
			return r
		case <-tick.C:
			if !measureAt.IsZero() {
				peak = max(peak, rss(cmd.Process.Pid))
			}
		}
	}
}

// measurePhase matches the progress line once the measured window began
// (not the start line's "measured").
var measurePhase = regexp.MustCompile(`\bmeasure\b`)

// rss is a process's resident memory in MB (VmRSS).
func rss(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// scanCR splits on \n and on the \r the progress line is redrawn with.
func scanCR(data []byte, atEOF bool) (int, []byte, error) {
	for i, c := range data {
		if c == '\n' || c == '\r' {
			return i + 1, data[:i], nil
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05")+" "+format+"\n", a...)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scale:", err)
	os.Exit(1)
}
