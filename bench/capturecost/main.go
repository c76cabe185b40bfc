// Command capturecost measures what capturing a workload costs the server
// it watches, side by side in one run: order-entry's throughput with no
// capture, with log capture (log_min_duration_statement = 0, csvlog, as
// docs/capture.md asks), through the wire capture's proxy (dbparity
// capture --proxy) and with the packets read off lo (dbparity capture
// --listen-on lo, as root), at -users sessions each (default 8 and 64), in
// interleaved rounds; and each wire capturer's own CPU per 1,000
// statements and the size of its capture file per hour.
//
//	go run ./bench/capturecost [-dbparity PATH] [-users 8,64] [-rounds 2] [-duration 20s] [-warehouses 4]
//
// The server is a managed PostgreSQL reached over TCP on loopback, so that
// the proxy adds one local hop and nothing else differs. Ratios are the
// medians of each variant's rounds over no capture's. Progress goes to
// stderr, the markdown table to stdout.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

type options struct {
	bin        string
	users      []int
	rounds     int
	duration   time.Duration
	warmup     time.Duration
	warehouses int
}

func main() {
	var o options
	users := "8,64"
	flag.StringVar(&o.bin, "dbparity", "", "dbparity binary (default: go build ./cmd/dbparity into a temporary directory)")
	flag.StringVar(&users, "users", users, "comma-separated session counts")
	flag.IntVar(&o.rounds, "rounds", 2, "interleaved rounds of the three variants at each session count")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "measured window of each run")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "warm-up of each run")
	flag.IntVar(&o.warehouses, "warehouses", 4, "order-entry warehouses")
	flag.Parse()
	for _, u := range strings.Split(users, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(u))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "capturecost: -users %q: give session counts above 0\n", users)
			os.Exit(2)
		}
		o.users = append(o.users, n)
	}
	if o.rounds < 1 || o.duration <= 0 || o.warmup < 0 || o.warehouses < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "capturecost: -rounds, -duration and -warehouses must be above 0; no arguments are taken")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "capturecost:", err)
		os.Exit(1)
	}
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", a...)
}

// measurement is one run of one variant.
type measurement struct {
	tps        float64
	proxyCPU   float64 // seconds (proxy only)
	statements int     // captured (proxy only)
	bytes      int64   // capture file (proxy only)
	seconds    float64 // the proxy's life (proxy only)
}

func run(ctx context.Context, o options) error {
	work, err := os.MkdirTemp("", "capturecost-")
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
	logf("starting postgres")
	inst, err := managed.Start(ctx, managed.Options{DataDir: filepath.Join(work, "pg"), Loopback: true,
		Settings: []string{"logging_collector=on", "log_destination=csvlog", "log_directory=capture-log", "max_connections=200"}})
	if err != nil {
		return err
	}
	defer inst.Stop()
	direct := "127.0.0.1:" + strconv.Itoa(inst.Port)
	url := func(addr string) string {
		return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", inst.User, addr, inst.Database)
	}
	logf("loading order-entry, %d warehouses", o.warehouses)
	if out, err := exec.CommandContext(ctx, o.bin, "load", "--workload", "order-entry", "--warehouses", strconv.Itoa(o.warehouses),
		"--target", url(direct)).CombinedOutput(); err != nil {
		return fmt.Errorf("load: %v\n%s", err, out)
	}
	psql := func(sql string) error { return execSQL(ctx, inst, sql) }
	variants := []string{"none", "log", "proxy", "sniff"}
	results := map[string]map[int][]measurement{}
	for _, v := range variants {
		results[v] = map[int][]measurement{}
	}
	for _, users := range o.users {
		for round := 1; round <= o.rounds; round++ {
			order := rotate(variants, round-1)
			for _, v := range order {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				logf("users %d, round %d: %s", users, round, v)
				var m measurement
				var err error
				switch v {
				case "none":
					m.tps, err = drive(ctx, o, url(direct), users, work)
				case "log":
					if err = psql("ALTER SYSTEM SET log_min_duration_statement = 0"); err == nil {
						m.tps, err = drive(ctx, o, url(direct), users, work)
						if rerr := psql("ALTER SYSTEM RESET log_min_duration_statement"); err == nil {
							err = rerr
						}
					}
				case "proxy":
					m, err = throughProxy(ctx, o, inst, direct, users, work, url)
				case "sniff":
					m, err = sniffed(ctx, o, inst, direct, users, work, url)
				}
				if err != nil {
					return fmt.Errorf("%s at %d users: %w", v, users, err)
				}
				logf("  %.1f tps", m.tps)
				results[v][users] = append(results[v][users], m)
			}
		}
	}
	printTable(o, results)
	return nil
}

// rotate starts the variants' order at k, so that no variant always runs
// first in a round.
func rotate(vs []string, k int) []string {
	k %= len(vs)
	return append(append([]string{}, vs[k:]...), vs[:k]...)
}

// execSQL runs one statement as the managed server's superuser and
// reloads the configuration.
func execSQL(ctx context.Context, inst *managed.Instance, sql string) error {
	psql, err := exec.LookPath("psql")
	if err != nil {
		m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql")
		if len(m) == 0 {
			return errors.New("psql is not installed")
		}
		psql = m[len(m)-1]
	}
	for _, q := range []string{sql, "SELECT pg_reload_conf()"} {
		out, err := exec.CommandContext(ctx, psql, "-X", "-q", "-h", inst.SocketDir, "-p", strconv.Itoa(inst.Port), "-U", inst.User,
			"-d", inst.Database, "-c", q).CombinedOutput()
		if err != nil {
			return fmt.Errorf("psql %s: %v\n%s", q, err, out)
		}
	}
	time.Sleep(200 * time.Millisecond) // the backends read the new setting
	return nil
}

// drive runs order-entry against url and returns its throughput.
func drive(ctx context.Context, o options, url string, users int, work string) (float64, error) {
	out := filepath.Join(work, "run.json")
	os.Remove(out)
	cmd := exec.CommandContext(ctx, o.bin, "run", "--workload", "order-entry", "--users", strconv.Itoa(users),
		"--duration", o.duration.String(), "--warmup", o.warmup.String(), "--no-collect", "--label", "x", "--out", out, "--force",
		"--target", url)
	if b, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("run: %v\n%s", err, tail(b))
	}
	r, err := result.Read(out)
	if err != nil {
		return 0, err
	}
	return r.Summarize().TPS, nil
}

var statementsLine = regexp.MustCompile(`(?m)^statements: (\d+)`)

// throughProxy runs order-entry through a dbparity capture --proxy
// process and measures the proxy: its CPU, what it captured.
func throughProxy(ctx context.Context, o options, inst *managed.Instance, direct string, users int, work string, url func(string) string) (measurement, error) {
	var m measurement
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return m, err
	}
	addr := ln.Addr().String()
	ln.Close()
	capFile := filepath.Join(work, "proxy.capture")
	life := o.warmup + o.duration + 30*time.Second
	proxy := exec.CommandContext(ctx, o.bin, "capture", "--proxy", addr, "--upstream", direct, "--out", capFile, "--force",
		"--duration", life.String())
	stdout, err := proxy.StdoutPipe()
	if err != nil {
		return m, err
	}
	stderr, err := proxy.StderrPipe()
	if err != nil {
		return m, err
	}
	t0 := time.Now()
	if err := proxy.Start(); err != nil {
		return m, err
	}
	ready := bufio.NewReader(stderr)
	if _, err := ready.ReadString('\n'); err != nil { // "capturing: ..." once it listens
		proxy.Wait()
		return m, fmt.Errorf("the proxy did not start: %v", err)
	}
	m.tps, err = drive(ctx, o, url(addr), users, work)
	proxy.Process.Signal(os.Interrupt) // ends the capture now, written
	var text strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		text.WriteString(sc.Text() + "\n")
	}
	werr := proxy.Wait()
	m.seconds = time.Since(t0).Seconds()
	if err != nil {
		return m, err
	}
	if werr != nil {
		return m, fmt.Errorf("capture --proxy: %v\n%s", werr, text.String())
	}
	if ru, ok := proxy.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.proxyCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	if mm := statementsLine.FindStringSubmatch(text.String()); mm != nil {
		m.statements, _ = strconv.Atoi(mm[1])
	}
	if st, err := os.Stat(capFile); err == nil {
		m.bytes = st.Size()
	}
	return m, nil
}

// sniffed runs order-entry straight to the server while a dbparity
// capture --listen-on lo reads its packets, and measures the capturer.
func sniffed(ctx context.Context, o options, inst *managed.Instance, direct string, users int, work string, url func(string) string) (measurement, error) {
	var m measurement
	capFile := filepath.Join(work, "sniff.capture")
	life := o.warmup + o.duration + 30*time.Second
	c := exec.CommandContext(ctx, o.bin, "capture", "--listen-on", "lo", "--port", strconv.Itoa(inst.Port), "--out", capFile, "--force",
		"--duration", life.String())
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	t0 := time.Now()
	if err := c.Start(); err != nil {
		return m, err
	}
	time.Sleep(time.Second) // its socket is bound
	var err error
	m.tps, err = drive(ctx, o, url(direct), users, work)
	time.Sleep(200 * time.Millisecond) // the last packets are read
	c.Process.Signal(os.Interrupt)
	werr := c.Wait()
	m.seconds = time.Since(t0).Seconds()
	if err != nil {
		return m, err
	}
	if werr != nil {
		return m, fmt.Errorf("capture --listen-on: %v\n%s", werr, out.String())
	}
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.proxyCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	if mm := statementsLine.FindStringSubmatch(out.String()); mm != nil {
		m.statements, _ = strconv.Atoi(mm[1])
	}
	if st, err := os.Stat(capFile); err == nil {
		m.bytes = st.Size()
	}
	return m, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func printTable(o options, results map[string]map[int][]measurement) {
	fmt.Printf("\n## What capturing costs the server (order-entry, %d warehouses, %s windows, %d interleaved rounds)\n\n", o.warehouses, o.duration, o.rounds)
	fmt.Printf("%s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Println("| sessions | capture | transactions/s (median) | ratio to none | capturer CPU ms per 1,000 statements | capture MB per hour |")
	fmt.Println("|---:|---|---:|---:|---:|---:|")
	for _, users := range o.users {
		tps := func(v string) float64 {
			var xs []float64
			for _, m := range results[v][users] {
				xs = append(xs, m.tps)
			}
			return median(xs)
		}
		none := tps("none")
		for _, v := range []string{"none", "log", "proxy", "sniff"} {
			x := tps(v)
			ratio := "1.00"
			if v != "none" && none > 0 {
				ratio = fmt.Sprintf("%.2f", x/none)
			}
			cpu, size := "-", "-"
			if v == "proxy" || v == "sniff" {
				var cpus, sizes []float64
				for _, m := range results[v][users] {
					if m.statements > 0 {
						cpus = append(cpus, 1e6*m.proxyCPU/float64(m.statements))
					}
					if m.seconds > 0 {
						sizes = append(sizes, float64(m.bytes)/1e6*3600/m.seconds)
					}
				}
				cpu, size = fmt.Sprintf("%.1f", median(cpus)), fmt.Sprintf("%.0f", median(sizes))
			}
			name := map[string]string{"none": "none", "log": "server log (log_min_duration_statement = 0, csvlog)", "proxy": "wire (capture --proxy)",
				"sniff": "wire (capture --listen-on lo, the packets)"}[v]
			fmt.Printf("| %d | %s | %.1f | %s | %s | %s |\n", users, name, x, ratio, cpu, size)
		}
	}
	fmt.Println("\nThe capturer's CPU is its whole process's (the proxy's relaying and decoding; the packet reader's reading, reassembling and decoding), per statement it captured; the file size is over its life (warm-up and measured window), per hour at that rate. The packet reader needs CAP_NET_RAW (root).")
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}
