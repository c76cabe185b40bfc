// Command dbhostcost measures what each source of the database host's
// figures costs per reading and how closely the non-local ones agree with
// /proc read directly. It starts a managed PostgreSQL and a node_exporter
// on 127.0.0.1, loads the server with order-entry sessions, and reads the
// sources in turn, side by side, over the same windows:
//
//	go run ./bench/dbhostcost -readings 200 -window 5s -windows 5
//
// Per reading it prints the driver-side time (round trip and parsing) and
// the time the database host spent answering: the backend's CPU for the
// sql source (its /proc/PID/stat before and after), the exporter's CPU
// for node-exporter. Then, per window, the differences of each source from
// local /proc for CPU seconds, context switches, interrupts and disk IOs.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/bench/internal/benchenv"
	"github.com/dbparity/dbparity/internal/collect/dbhost"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/runner"
)

func main() {
	readings := flag.Int("readings", 200, "readings of each source for the cost")
	window := flag.Duration("window", 5*time.Second, "length of each agreement window")
	windows := flag.Int("windows", 5, "agreement windows")
	flag.Parse()
	if err := run(*readings, *window, *windows); err != nil {
		fmt.Fprintln(os.Stderr, "dbhostcost:", err)
		os.Exit(1)
	}
}

func run(readings int, window time.Duration, windows int) error {
	ctx := context.Background()
	env, err := benchenv.Start(ctx)
	if err != nil {
		return err
	}
	defer env.Close()
	common, err := env.LoadOrderEntry(ctx, 2)
	if err != nil {
		return err
	}
	url, stop, err := startExporter()
	if err != nil {
		return err
	}
	defer stop()

	// Load in the background for the whole measurement.
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go runner.Run(lctx, runner.RunOptions{Common: common, Users: 2, Duration: time.Hour, Label: "load",
		Out: filepath.Join(env.Dir, "load.json"), Force: true, Collect: runner.CollectOptions{Off: true}})
	time.Sleep(2 * time.Second)

	tg, err := engine.Open(env.Inst.URL())
	if err != nil {
		return err
	}
	conn, err := tg.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return err
	}
	local, err := dbhost.NewLocal(env.Inst.PID)
	if err != nil {
		return err
	}
	sql, err := dbhost.NewSQL(ctx, conn)
	if err != nil {
		return err
	}
	defer sql.Close()
	ne, err := dbhost.NewNodeExporter(url, 10*time.Second)
	if err != nil {
		return err
	}
	exporterPID := exporter.Process.Pid

	fmt.Printf("cost per reading (%d readings each, order-entry on 2 sessions beside)\n", readings)
	fmt.Printf("  %-14s %14s %18s\n", "source", "driver ms", "db host CPU ms")
	for _, s := range []struct {
		src dbhost.Source
		pid int // the process on the database host that answers
	}{{local, 0}, {sql, backend}, {ne, exporterPID}} {
		cpu0 := procCPU(s.pid)
		start := time.Now()
		for i := 0; i < readings; i++ {
			if _, err := s.src.Read(ctx); err != nil {
				return fmt.Errorf("%s: %w", s.src.Name(), err)
			}
		}
		elapsed := time.Since(start)
		host := "n/a (in the driver)"
		if s.pid > 0 {
			host = fmt.Sprintf("%.3f", (procCPU(s.pid)-cpu0)*1000/float64(readings))
		}
		fmt.Printf("  %-14s %14.3f %18s\n", s.src.Name(), elapsed.Seconds()*1000/float64(readings), host)
	}

	fmt.Printf("\nagreement with local /proc over %d windows of %s (percent difference; worst)\n", windows, window)
	worst := map[string]float64{}
	for w := 0; w < windows; w++ {
		a, err := edge(ctx, local, sql, ne)
		if err != nil {
			return err
		}
		time.Sleep(window)
		b, err := edge(ctx, local, sql, ne)
		if err != nil {
			return err
		}
		ref := figures(ostat.Between(a[0], b[0]))
		for i, name := range []string{"sql", "node-exporter"} {
			got := figures(ostat.Between(a[i+1], b[i+1]))
			for k, v := range got {
				d := 100 * math.Abs(v-ref[k]) / math.Max(math.Abs(ref[k]), 1e-9)
				worst[name+" "+k] = math.Max(worst[name+" "+k], d)
			}
		}
	}
	for _, name := range []string{"sql", "node-exporter"} {
		fmt.Printf("  %-14s", name)
		for _, k := range []string{"cpu busy s", "cpu user s", "cpu system s", "context switches", "interrupts", "disk IOs", "server cpu s"} {
			if v, ok := worst[name+" "+k]; ok {
				fmt.Printf("  %s %.2f%%", k, v)
			}
		}
		fmt.Println()
	}
	return nil
}

// edge reads local, the others, and local again; the local reading is
// the midpoint of its two, centred on the others as the tests do.
func edge(ctx context.Context, local dbhost.Source, others ...dbhost.Source) ([]*ostat.Snapshot, error) {
	l1, err := local.Read(ctx)
	if err != nil {
		return nil, err
	}
	out := []*ostat.Snapshot{nil}
	for _, o := range others {
		s, err := o.Read(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	l2, err := local.Read(ctx)
	if err != nil {
		return nil, err
	}
	m := *l2
	m.At = l1.At.Add(l2.At.Sub(l1.At) / 2)
	mid := func(a, b float64) float64 { return (a + b) / 2 }
	m.CPU = ostat.CPUTimes{User: mid(l1.CPU.User, l2.CPU.User), Nice: mid(l1.CPU.Nice, l2.CPU.Nice), System: mid(l1.CPU.System, l2.CPU.System),
		Idle: mid(l1.CPU.Idle, l2.CPU.Idle), Iowait: mid(l1.CPU.Iowait, l2.CPU.Iowait), IRQ: mid(l1.CPU.IRQ, l2.CPU.IRQ),
		SoftIRQ: mid(l1.CPU.SoftIRQ, l2.CPU.SoftIRQ), Steal: mid(l1.CPU.Steal, l2.CPU.Steal)}
	m.ContextSwitches = (l1.ContextSwitches + l2.ContextSwitches) / 2
	m.Interrupts = (l1.Interrupts + l2.Interrupts) / 2
	if l1.ServerCPU != nil && l2.ServerCPU != nil {
		v := mid(*l1.ServerCPU, *l2.ServerCPU)
		m.ServerCPU = &v
	}
	out[0] = &m
	return out, nil
}

// figures are the window's totals compared across sources.
func figures(r ostat.Rates) map[string]float64 {
	cores := func(pct float64) float64 { return pct / 100 * float64(r.NumCPU) * r.IntervalS }
	f := map[string]float64{
		"cpu busy s": cores(r.CPUBusyPct), "cpu user s": cores(r.CPUUserPct), "cpu system s": cores(r.CPUSystemPct),
		"context switches": r.ContextSwitchesPerS * r.IntervalS, "interrupts": r.InterruptsPerS * r.IntervalS,
	}
	var ios float64
	for _, d := range r.Disks {
		ios += (d.ReadsPerS + d.WritesPerS) * r.IntervalS
	}
	f["disk IOs"] = ios
	if r.ServerCPUCores != nil {
		f["server cpu s"] = *r.ServerCPUCores * r.IntervalS
	}
	return f
}

// procCPU is a process's user+system CPU in seconds, 0 for pid 0.
func procCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) / 100
}

var exporter *exec.Cmd

// startExporter runs Debian's node_exporter on a free loopback port.
func startExporter() (url string, stop func(), err error) {
	port := 19000 + os.Getpid()%1000
	addr := "127.0.0.1:" + strconv.Itoa(port)
	exporter = exec.Command("/usr/bin/prometheus-node-exporter", "--web.listen-address="+addr)
	if err := exporter.Start(); err != nil {
		return "", nil, fmt.Errorf("start node_exporter (apt-get install prometheus-node-exporter): %w", err)
	}
	stop = func() { exporter.Process.Kill(); exporter.Wait() }
	url = "http://" + addr + "/metrics"
	src, _ := dbhost.NewNodeExporter(url, time.Second)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := src.Read(context.Background()); err == nil {
			return url, stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("node_exporter did not answer on %s", url)
}
