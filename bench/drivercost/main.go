// Command drivercost measures what dbparity's driver costs next to
// pgbench, on one managed PostgreSQL in one run: order-entry throughput and
// the driver's CPU per committed transaction and per statement, then the
// same figures for pgbench's built-in TPC-B-like script against the same
// server. The server's CPU for each is read from /proc, so the client's
// share can be set against it. Absolute figures drift on shared machines;
// read the ratios.
//
//	go run ./bench/drivercost [-users 4] [-duration 30s] [-warehouses 2]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/bench/internal/benchenv"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/runner"
	"github.com/dbparity/dbparity/internal/target/managed"
)

func main() {
	users := flag.Int("users", 4, "sessions (dbparity users, pgbench clients)")
	duration := flag.Duration("duration", 30*time.Second, "measured time of each benchmark")
	warehouses := flag.Int("warehouses", 2, "order-entry warehouses")
	scale := flag.Int("scale", 10, "pgbench scale factor")
	flag.Parse()
	if err := run(*users, *duration, *warehouses, *scale); err != nil {
		fmt.Fprintln(os.Stderr, "drivercost:", err)
		os.Exit(1)
	}
}

type figures struct {
	name       string
	tps        float64
	txs        int64   // transactions counted for the CPU figures
	stmtsPerTx float64 // statements sent per transaction
	clientCPU  time.Duration
	serverCPU  time.Duration
}

func run(users int, duration time.Duration, warehouses, scale int) error {
	ctx := context.Background()
	env, err := benchenv.Start(ctx)
	if err != nil {
		return err
	}
	defer env.Close()
	inst := env.Inst

	oe, err := orderEntry(ctx, env, users, duration, warehouses)
	if err != nil {
		return err
	}
	pb, err := pgbench(ctx, inst, users, duration, scale)
	if err != nil {
		return err
	}
	fmt.Printf("\ndriver cost, %d sessions, %s each, PostgreSQL %s on this host (%d cores)\n\n", users, duration, inst.Version, numCPU())
	fmt.Printf("%-28s %18s %18s %10s\n", "", "order-entry", "pgbench tpcb-like", "ratio")
	row := func(label string, a, b float64, format string) {
		ratio := "-"
		if b != 0 {
			ratio = fmt.Sprintf("%.2fx", a/b)
		}
		fmt.Printf("%-28s %18s %18s %10s\n", label, fmt.Sprintf(format, a), fmt.Sprintf(format, b), ratio)
	}
	us := func(d time.Duration, n float64) float64 { return float64(d.Microseconds()) / n }
	row("transactions/s", oe.tps, pb.tps, "%.0f")
	row("statements per transaction", oe.stmtsPerTx, pb.stmtsPerTx, "%.1f")
	row("client CPU µs/transaction", us(oe.clientCPU, float64(oe.txs)), us(pb.clientCPU, float64(pb.txs)), "%.1f")
	row("client CPU µs/statement", us(oe.clientCPU, float64(oe.txs)*oe.stmtsPerTx), us(pb.clientCPU, float64(pb.txs)*pb.stmtsPerTx), "%.2f")
	row("server CPU µs/transaction", us(oe.serverCPU, float64(oe.txs)), us(pb.serverCPU, float64(pb.txs)), "%.1f")
	row("client CPU / server CPU", oe.clientCPU.Seconds()/oe.serverCPU.Seconds(), pb.clientCPU.Seconds()/pb.serverCPU.Seconds(), "%.3f")
	return nil
}

func orderEntry(ctx context.Context, env *benchenv.Env, users int, duration time.Duration, warehouses int) (figures, error) {
	fmt.Fprintf(os.Stderr, "order-entry: loading %d warehouses\n", warehouses)
	c, err := env.LoadOrderEntry(ctx, warehouses)
	if err != nil {
		return figures{}, err
	}
	inst := env.Inst
	out := filepath.Join(env.Dir, "oe.json")
	before := serverCPU(inst.PID)
	err = runner.Run(ctx, runner.RunOptions{Common: c, Users: users, Duration: duration, Warmup: 0, Label: "bench", Out: out,
		Collect: runner.CollectOptions{Off: true}}) // the driver alone: collectors have their own benchmark
	if err != nil {
		return figures{}, err
	}
	time.Sleep(500 * time.Millisecond) // let the postmaster reap the sessions' backends
	srv := serverCPU(inst.PID) - before
	r, err := result.Read(out)
	if err != nil {
		return figures{}, err
	}
	s := r.Summarize()
	// Whole run (no warm-up) against the process's whole CPU, so the client
	// and server windows match.
	var txs, stmts int64
	for _, p := range r.Phases {
		stmts += p.Statements
		for _, n := range p.Committed {
			txs += n
		}
		for _, n := range p.Rollbacks {
			txs += n
		}
	}
	return figures{name: "order-entry", tps: s.TPS, txs: txs, stmtsPerTx: float64(stmts) / float64(txs),
		clientCPU: time.Duration(r.Driver.TotalCPUS * float64(time.Second)), serverCPU: srv}, nil
}

// tpcbStatements is what pgbench's built-in tpcb-like script sends per
// transaction: BEGIN, three UPDATEs, a SELECT, an INSERT, END.
const tpcbStatements = 7

func pgbench(ctx context.Context, inst *managed.Instance, users int, duration time.Duration, scale int) (figures, error) {
	conn := []string{"-h", inst.SocketDir, "-p", strconv.Itoa(inst.Port), "-U", inst.User, inst.Database}
	fmt.Fprintf(os.Stderr, "pgbench: initialising scale %d\n", scale)
	init := exec.CommandContext(ctx, "pgbench", append([]string{"-i", "-q", "-s", strconv.Itoa(scale)}, conn...)...)
	if out, err := init.CombinedOutput(); err != nil {
		return figures{}, fmt.Errorf("pgbench -i: %v: %s", err, lastLine(out))
	}
	before := serverCPU(inst.PID)
	args := []string{"-c", strconv.Itoa(users), "-j", strconv.Itoa(min(users, numCPU())), "-M", "prepared",
		"-T", strconv.Itoa(int(duration.Seconds()))}
	cmd := exec.CommandContext(ctx, "pgbench", append(args, conn...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return figures{}, fmt.Errorf("pgbench: %v: %s", err, lastLine(out.Bytes()))
	}
	time.Sleep(500 * time.Millisecond)
	srv := serverCPU(inst.PID) - before
	txs := match(out.String(), `number of transactions actually processed: (\d+)`)
	tps := match(out.String(), `tps = ([0-9.]+) \(without initial connection time\)`)
	if txs == 0 || tps == 0 {
		return figures{}, fmt.Errorf("cannot read pgbench's output: %s", out.String())
	}
	client := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return figures{name: "pgbench", tps: tps, txs: int64(txs), stmtsPerTx: tpcbStatements, clientCPU: client, serverCPU: srv}, nil
}

func match(s, re string) float64 {
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// serverCPU is the CPU time of the postmaster, of its live children and of
// the children it has reaped (cutime, cstime), from /proc.
func serverCPU(postmaster int) time.Duration {
	total := procCPU(postmaster, true)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == postmaster {
			continue
		}
		if f := procStat(pid); len(f) > 2 && f[1] == strconv.Itoa(postmaster) {
			total += procCPU(pid, false)
		}
	}
	return total
}

const clockTicks = 100 // USER_HZ on Linux

// procStat returns the fields of /proc/PID/stat after the command name,
// starting with the state (field 3), so f[1] is the parent PID.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

func procCPU(pid int, withChildren bool) time.Duration {
	f := procStat(pid)
	if len(f) < 15 {
		return 0
	}
	var ticks int64
	last := 12 // utime, stime are fields 14, 15: f[11], f[12]
	if withChildren {
		last = 14 // cutime, cstime: f[13], f[14]
	}
	for k := 11; k <= last; k++ {
		n, _ := strconv.ParseInt(f[k], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

func numCPU() int {
	n := 0
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "processor") {
			n++
		}
	}
	return max(n, 1)
}
