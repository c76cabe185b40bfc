// Command peers runs dbparity's order-entry, in both execution modes, side
// by side with the peers users know, on one managed PostgreSQL (issue 16)
// or MariaDB (issue 33), in interleaved rounds, and prints what each
// costs: transactions per second, the client's CPU per transaction, round
// trips per transaction and the server's CPU per transaction, with
// dbparity's ratios to each peer, and the time each takes to load the same
// warehouses.
//
//	go run ./bench/peers [-engine postgres|mariadb] [-warehouses 4] [-users 8] [-duration 60s] [-warmup 15s] [-rounds 3]
//
// Every driver runs over TCP on loopback (BenchBase's JDBC cannot use a
// unix socket), each in its own database, with no collectors. The figures
// are measured the same way for all, from outside: the client's CPU from
// /proc/PID/stat, its write system calls from /proc/PID/io (a round trip
// is at least one write; pipelined statements share one), the server's
// transactions from pg_stat_database (PostgreSQL) or the global
// Com_commit + Com_rollback (MariaDB, which also gives the requests the
// clients sent: Questions) and its CPU from /proc (the product's own
// reader of a process tree's CPU, internal/collect/ostat), over the same
// window: after -warmup, for -duration. A TPC-C-like driver's own
// transactions are counted from its committed New-Orders (its orders
// table's new rows) over their share of the mix; the server's count is
// shown beside them (go-tpc makes two server transactions for each of
// its own on PostgreSQL). Absolute figures drift on shared machines: read
// the ratios, which come from the same rounds.
//
// Peers are found so, on PostgreSQL:
//   - pgbench (TPC-B-like, prepared): always, from PostgreSQL's binaries;
//     the floor a round trip costs.
//   - go-tpc: $GOTPC (the binary), else go-tpc on PATH.
//   - BenchBase: $BENCHBASE (the directory holding benchbase.jar, built
//     with -P postgres), and java on PATH.
//   - HammerDB: $HAMMERDB, the directory of a HammerDB 4.x (Tcl 8.6)
//     whose hammerdbcli runs (bench/peers/README.md says how to make one here); its
//     TPROC-C with stored procedures, the procedure-mode peer.
//
// On MariaDB:
//   - sysbench oltp_read_write: sysbench on PATH ($SYSBENCH); the floor.
//   - go-tpc: as above, with -d mysql.
//   - BenchBase: $BENCHBASE_MARIADB, else $BENCHBASE: a BenchBase built
//     with -P mariadb (its lib/ holds the MariaDB JDBC driver).
//   - HammerDB: $HAMMERDB, with the mariatcl package in its lib/.
//   - sysbench-tpcc: $SYSBENCH_TPCC, the directory of Percona-Lab's
//     tpcc.lua, run by sysbench.
//
// A peer that is not found is skipped with the reason; bench/peers/README.md says how
// to build each here.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/collect/ostat"
)

func main() {
	o := options{}
	flag.StringVar(&o.engine, "engine", "postgres", "managed server: postgres or mariadb")
	flag.IntVar(&o.warehouses, "warehouses", 4, "warehouses of every TPC-C-like driver")
	flag.IntVar(&o.users, "users", 8, "sessions of every driver")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "measured window of each run")
	flag.DurationVar(&o.warmup, "warmup", 15*time.Second, "time each run runs before its window (JVM warm-up, caches)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each runs every driver once, in an order drawn from -seed")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the rounds' orders")
	flag.IntVar(&o.pgbenchScale, "pgbench-scale", 10, "pgbench scale factor (PostgreSQL)")
	flag.IntVar(&o.sysbenchRows, "sysbench-rows", 250000, "rows of each of sysbench oltp_read_write's 4 tables (MariaDB)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

type options struct {
	engine                                                string
	warehouses, users, rounds, pgbenchScale, sysbenchRows int
	duration, warmup                                      time.Duration
	seed                                                  uint64
}

// driver is one load generator.
type driver struct {
	name string
	kind string // kindClient, kindProcedures or kindFloor
	db   string
	// orders is the table a New-Order adds a row to ("" for the floor):
	// its rows, counted exactly, check each driver's transaction count.
	orders string
	// share is New-Order's share of the driver's committed and rolled-back
	// transactions (0: newOrderShare, the standard mix).
	share float64
	// createsDB: its load creates db itself (HammerDB refuses one that
	// exists on PostgreSQL).
	createsDB bool
	// load fills db; nil when another driver's load does (dbparity's two
	// modes share theirs).
	load func(ctx context.Context) *exec.Cmd
	// run runs the workload for d in all.
	run func(ctx context.Context, d time.Duration) *exec.Cmd
	// trips, when set, reads the round trips per transaction the driver
	// counted itself at its sockets (dbparity's, which sends with send(2)).
	trips func() (float64, error)
}

const (
	kindClient     = "client SQL"
	kindProcedures = "procedures"
	kindFloor      = "floor"
)

// server is the managed server under the drivers.
type server interface {
	// name is the engine and its version ("PostgreSQL 15.18").
	name() string
	pid() int
	// drivers are dbparity's and the peers found; skipped names the others.
	drivers(bin string) (ds []driver, skipped []string)
	createDB(ctx context.Context, db string) error
	// read reads the server's counters into p: transactions of db (or of
	// the server) and, where the server counts them, client requests.
	read(ctx context.Context, db string, p *point) error
	// rows counts the rows of table in db.
	rows(ctx context.Context, db, table string) (int64, error)
	// settle writes the dirty pages before each run (a checkpoint).
	settle(ctx context.Context) error
	// notes are the report's footnotes on how the columns are read.
	notes() []string
	// issue is the issue whose targets the report checks.
	issue() string
	stop()
}

// bench is the server and the drivers.
type bench struct {
	o   options
	dir string
	srv server
}

func run(o options) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dbparity-peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755) // the server's user (when run as root) must enter it
	bin := filepath.Join(dir, "dbparity")
	fmt.Fprintln(os.Stderr, "building dbparity")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/dbparity").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/dbparity (run the bench from the repository's root): %v: %s", err, out)
	}
	b := &bench{o: o, dir: dir}
	switch o.engine {
	case "postgres":
		b.srv, err = startPostgres(ctx, b)
	case "mariadb":
		b.srv, err = startMariaDB(ctx, b)
	default:
		err = fmt.Errorf("-engine: postgres or mariadb, not %q", o.engine)
	}
	if err != nil {
		return err
	}
	defer b.srv.stop()

	drivers, skipped := b.srv.drivers(bin)
	for _, s := range skipped {
		fmt.Fprintln(os.Stderr, "skipped:", s)
	}
	loads := map[string]time.Duration{}
	for _, d := range drivers {
		if !d.createsDB {
			if err := b.srv.createDB(ctx, d.db); err != nil {
				return err
			}
		}
		if d.load == nil {
			continue
		}
		fmt.Fprintf(os.Stderr, "%s: loading\n", d.name)
		start := time.Now()
		if out, err := runCmd(d.load(ctx)); err != nil {
			return fmt.Errorf("%s load: %v: %s", d.name, err, tail(out))
		}
		loads[d.name] = time.Since(start)
	}
	g := rand.New(rand.NewPCG(o.seed, 16))
	samples := map[string][]sample{}
	for r := 1; r <= o.rounds; r++ {
		order := slices.Clone(drivers)
		g.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, d := range order {
			if err := b.srv.settle(ctx); err != nil {
				return err
			}
			s, err := b.measure(ctx, d)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r, d.name, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %-26s %7.0f tps  client %6.0f µs/tx  %5.1f writes/tx  server %6.0f µs/tx  %.2f server transactions/tx",
				r, d.name, s.tps(), s.clientPerTx(), s.writesPerTx(), s.serverPerTx(), s.serverPerDriverTx())
			if s.a.requests >= 0 {
				fmt.Fprintf(os.Stderr, "  %.1f statements/tx", s.requestsPerTx())
			}
			fmt.Fprintln(os.Stderr)
			samples[d.name] = append(samples[d.name], s)
		}
	}
	b.report(drivers, skipped, samples, loads)
	return nil
}

// find returns $env, else name on PATH.
func find(env, name string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s: %v", env, err)
		}
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("not on PATH and $%s not set", env)
	}
	return p, nil
}

// benchbase finds a BenchBase built for the engine: the first of envs
// set, the directory of benchbase.jar whose lib/ holds the engine's JDBC
// driver (jar, a glob).
func benchbase(profile, jar string, envs ...string) (string, error) {
	dir, env := "", envs[0]
	for _, e := range envs {
		if dir = os.Getenv(e); dir != "" {
			env = e
			break
		}
	}
	if dir == "" {
		return "", fmt.Errorf("$%s (the directory of benchbase.jar, built with -P %s) not set", strings.Join(envs, " or $"), profile)
	}
	if _, err := os.Stat(filepath.Join(dir, "benchbase.jar")); err != nil {
		return "", fmt.Errorf("$%s: %v", env, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "lib", jar)); len(m) == 0 {
		return "", fmt.Errorf("$%s: no %s in its lib/: not built with -P %s", env, jar, profile)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return "", errors.New("java not on PATH")
	}
	return dir, nil
}

// point is what is read at one moment of a run.
type point struct {
	at        time.Time
	clientCPU time.Duration
	writes    int64 // the client's write system calls
	serverCPU time.Duration
	xacts     int64 // the server's commits and rollbacks (of the driver's database on PostgreSQL)
	requests  int64 // the requests clients sent the server (MariaDB's Questions); -1 where not counted
	orders    int64 // rows of the driver's orders table: New-Orders committed
}

// sample is a run's window: the difference of two points, and the
// driver's New-Order share.
type sample struct {
	a, b  point
	share float64
	trips float64 // the driver's own count of round trips per transaction; 0: not counted
}

// txs is the driver's transactions in the window: for a TPC-C-like
// driver its committed New-Orders (rows of its orders table) over their
// share of the mix, 45% less the 1% rolled back in the standard mix; for
// the floor the server's transactions. A driver may make more server
// transactions than its own (go-tpc on PostgreSQL makes two):
// serverPerDriverTx shows it.
func (s sample) txs() float64 {
	if n := s.b.orders - s.a.orders; n > 0 {
		share := s.share
		if share == 0 {
			share = newOrderShare
		}
		return float64(n) / share
	}
	return float64(s.b.xacts - s.a.xacts)
}

// newOrderShare is New-Order's share of the committed and rolled-back
// transactions of the standard mix.
const newOrderShare = 0.45 * 0.99

func (s sample) tps() float64 { return s.txs() / s.b.at.Sub(s.a.at).Seconds() }
func (s sample) clientPerTx() float64 {
	return float64((s.b.clientCPU - s.a.clientCPU).Microseconds()) / s.txs()
}
func (s sample) serverPerTx() float64 {
	return float64((s.b.serverCPU - s.a.serverCPU).Microseconds()) / s.txs()
}
func (s sample) writesPerTx() float64   { return float64(s.b.writes-s.a.writes) / s.txs() }
func (s sample) roundTrips() float64    { return s.trips }
func (s sample) requestsPerTx() float64 { return float64(s.b.requests-s.a.requests) / s.txs() }

// serverPerDriverTx is how many transactions the server counted for each
// of the driver's.
func (s sample) serverPerDriverTx() float64 { return float64(s.b.xacts-s.a.xacts) / s.txs() }

// measure runs d for warm-up + window + a margin and reads the window.
func (b *bench) measure(ctx context.Context, d driver) (sample, error) {
	cmd := d.run(ctx, b.o.warmup+b.o.duration+5*time.Second)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pid := cmd.Process.Pid
	// The product's own readers of a process tree's CPU: the server's,
	// and the client's (its threads and any child process).
	server, err := ostat.New(ostat.Options{ServerPID: b.srv.pid()})
	var client *ostat.Reader
	if err == nil {
		client, err = ostat.New(ostat.Options{ServerPID: pid})
	}
	if err != nil {
		cmd.Process.Kill()
		<-done
		return sample{}, err
	}
	read := func() (point, error) {
		p := point{at: time.Now(), writes: procWrites(pid), requests: -1}
		for _, x := range []struct {
			r  *ostat.Reader
			to *time.Duration
		}{{server, &p.serverCPU}, {client, &p.clientCPU}} {
			snap, err := x.r.Read()
			if err != nil {
				return p, err
			}
			if snap.ServerCPU == nil {
				return p, errors.New("no process CPU read")
			}
			*x.to = time.Duration(*snap.ServerCPU * float64(time.Second))
		}
		err := b.srv.read(ctx, d.db, &p)
		if err == nil && d.orders != "" {
			p.orders, err = b.srv.rows(ctx, d.db, d.orders)
		}
		return p, err
	}
	s := sample{share: d.share}
	wait := func(t time.Duration) error {
		select {
		case err := <-done:
			return fmt.Errorf("ended before its window did: %v: %s", err, tail(out.Bytes()))
		case <-time.After(t):
			return nil
		}
	}
	if err = wait(b.o.warmup); err == nil {
		if s.a, err = read(); err == nil {
			if err = wait(b.o.duration); err == nil {
				s.b, err = read()
			}
		}
	}
	if err != nil {
		cmd.Process.Kill()
		<-done
		return s, err
	}
	select {
	case err := <-done:
		if err != nil {
			return s, fmt.Errorf("%v: %s", err, tail(out.Bytes()))
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		return s, fmt.Errorf("did not end 2 minutes after its time: %s", tail(out.Bytes()))
	}
	if s.txs() <= 0 {
		return s, fmt.Errorf("the server counted no transactions in the window: %s", tail(out.Bytes()))
	}
	if d.trips != nil {
		if s.trips, err = d.trips(); err != nil {
			return s, err
		}
	}
	return s, nil
}

// runCmd runs cmd to its end. HammerDB exits 0 when a virtual user
// failed, so its "FINISHED FAILED" counts as a failure, with its error.
func runCmd(cmd *exec.Cmd) ([]byte, error) {
	out, err := cmd.CombinedOutput()
	if err == nil && bytes.Contains(out, []byte("FINISHED FAILED")) {
		for l := range strings.Lines(string(out)) {
			if strings.Contains(l, "Error in Virtual User") {
				return out, errors.New(strings.TrimSpace(l))
			}
		}
		return out, errors.New("a virtual user FINISHED FAILED")
	}
	return out, err
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], " | ")
}
