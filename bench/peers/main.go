// Command peers runs dbparity's order-entry, in both execution modes, side
// by side with the peers users know, on one managed PostgreSQL, in
// interleaved rounds, and prints what each costs: transactions per second,
// the client's CPU per transaction, round trips per transaction and the
// server's CPU per transaction, with dbparity's ratios to each peer, and
// the time each takes to load the same warehouses (issue 16).
//
//	go run ./bench/peers [-warehouses 4] [-users 8] [-duration 60s] [-warmup 15s] [-rounds 3]
//
// Every driver runs over TCP on loopback (BenchBase's JDBC cannot use a
// unix socket), each in its own database, with no collectors. The figures
// are measured the same way for all, from outside: the client's CPU from
// /proc/PID/stat, its write system calls from /proc/PID/io (a round trip
// is at least one write; pipelined statements share one), the server's
// transactions from pg_stat_database and its CPU from /proc (the
// product's own reader of a process tree's CPU, internal/collect/ostat), over the
// same window: after -warmup, for -duration. A TPC-C-like driver's own
// transactions are counted from its committed New-Orders (its orders
// table's new rows) over their share of the mix; the server's count is
// shown beside them (go-tpc makes two server transactions for each of
// its own). Absolute figures drift on
// shared machines: read the ratios, which come from the same rounds.
//
// Peers are found so:
//   - pgbench (TPC-B-like, prepared): always, from PostgreSQL's binaries;
//     the floor a round trip costs.
//   - go-tpc: $GOTPC (the binary), else go-tpc on PATH.
//   - BenchBase: $BENCHBASE (the directory holding benchbase.jar, built
//     with -P postgres), and java on PATH.
//   - HammerDB: $HAMMERDB, the directory of a HammerDB 4.x (Tcl 8.6)
//     whose hammerdbcli runs (the README says how to make one here); its
//     TPROC-C with stored procedures, the procedure-mode peer.
//
// A peer that is not found is skipped with the reason; the README says how
// to build each here.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/target/managed"
)

func main() {
	o := options{}
	flag.IntVar(&o.warehouses, "warehouses", 4, "warehouses of every TPC-C-like driver")
	flag.IntVar(&o.users, "users", 8, "sessions of every driver")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "measured window of each run")
	flag.DurationVar(&o.warmup, "warmup", 15*time.Second, "time each run runs before its window (JVM warm-up, caches)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each runs every driver once, in an order drawn from -seed")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the rounds' orders")
	flag.IntVar(&o.pgbenchScale, "pgbench-scale", 10, "pgbench scale factor")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

type options struct {
	warehouses, users, rounds, pgbenchScale int
	duration, warmup                        time.Duration
	seed                                    uint64
}

// driver is one load generator.
type driver struct {
	name string
	kind string // kindClient, kindProcedures or kindFloor
	db   string
	// orders is the table a New-Order adds a row to ("" for pgbench): its
	// rows, counted exactly, check each driver's transaction count.
	orders string
	// createsDB: its load creates db itself (HammerDB refuses one that
	// exists).
	createsDB bool
	// load fills db; nil when another driver's load does (dbparity's two
	// modes share theirs).
	load func(ctx context.Context) *exec.Cmd
	// run runs the workload for d in all.
	run func(ctx context.Context, d time.Duration) *exec.Cmd
}

const (
	kindClient     = "client SQL"
	kindProcedures = "procedures"
	kindFloor      = "floor"
)

// bench is the server and the drivers.
type bench struct {
	o     options
	inst  *managed.Instance
	dir   string
	admin *pgx.Conn
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
	inst, err := managed.Start(ctx, managed.Options{DataDir: filepath.Join(dir, "pg"), Log: os.Stderr, Loopback: true,
		Settings: []string{"max_wal_size=4GB", "autovacuum=off"}})
	if err != nil {
		return err
	}
	defer inst.Stop()
	b := &bench{o: o, inst: inst, dir: dir}
	if b.admin, err = pgx.Connect(ctx, b.url("postgres")); err != nil {
		return err
	}
	defer b.admin.Close(ctx)

	drivers, skipped := b.drivers(bin)
	for _, s := range skipped {
		fmt.Fprintln(os.Stderr, "skipped:", s)
	}
	loads := map[string]time.Duration{}
	for _, d := range drivers {
		if !d.createsDB {
			if _, err := b.admin.Exec(ctx, "CREATE DATABASE "+d.db); err != nil && !strings.Contains(err.Error(), "already exists") {
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
			if _, err := b.admin.Exec(ctx, "CHECKPOINT"); err != nil {
				return err
			}
			s, err := b.measure(ctx, d)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r, d.name, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %-26s %7.0f tps  client %6.0f µs/tx  %5.1f writes/tx  server %6.0f µs/tx  %.2f server transactions/tx\n",
				r, d.name, s.tps(), s.clientPerTx(), s.writesPerTx(), s.serverPerTx(), s.serverPerDriverTx())
			samples[d.name] = append(samples[d.name], s)
		}
	}
	b.report(drivers, skipped, samples, loads)
	return nil
}

// url is the loopback URL of database db.
func (b *bench) url(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", b.inst.User, b.inst.Port, db)
}

func (b *bench) drivers(bin string) (ds []driver, skipped []string) {
	o := b.o
	port := strconv.Itoa(b.inst.Port)
	oe := b.url("orderentry")
	dbp := func(mode string, extra ...string) driver {
		name := strings.Join(append([]string{"dbparity", mode}, extra...), " ")
		d := driver{name: name, db: "orderentry", orders: "orders", kind: kindClient,
			run: func(ctx context.Context, d time.Duration) *exec.Cmd {
				return exec.CommandContext(ctx, bin, append([]string{"run", "--target", oe, "--users", strconv.Itoa(o.users),
					"--duration", d.String(), "--warmup", "0s", "--mode", mode, "--no-collect", "--force",
					"--out", filepath.Join(b.dir, "run.json")}, extra...)...)
			}}
		if mode == "procedures" {
			d.kind = kindProcedures
		} else if len(extra) == 0 {
			d.load = func(ctx context.Context) *exec.Cmd {
				return exec.CommandContext(ctx, bin, "load", "--target", oe, "--warehouses", strconv.Itoa(o.warehouses))
			}
		}
		return d
	}
	ds = append(ds, dbp("client"), dbp("client", "--compact"), dbp("procedures"))

	pgbench, err := find("PGBENCH", "pgbench")
	if err != nil {
		pgbench = filepath.Join("/usr/lib/postgresql", b.inst.Version[:strings.IndexByte(b.inst.Version+".", '.')], "bin", "pgbench")
	}
	conn := []string{"-h", "127.0.0.1", "-p", port, "-U", b.inst.User, "pgbench"}
	ds = append(ds, driver{name: "pgbench tpcb prepared", kind: kindFloor, db: "pgbench",
		load: func(ctx context.Context) *exec.Cmd {
			return exec.CommandContext(ctx, pgbench, append([]string{"-i", "-q", "-s", strconv.Itoa(o.pgbenchScale)}, conn...)...)
		},
		run: func(ctx context.Context, d time.Duration) *exec.Cmd {
			return exec.CommandContext(ctx, pgbench, append([]string{"-c", strconv.Itoa(o.users), "-j", "2", "-M", "prepared",
				"-T", strconv.Itoa(int(d.Round(time.Second).Seconds()))}, conn...)...)
		}})

	if gotpc, err := find("GOTPC", "go-tpc"); err != nil {
		skipped = append(skipped, "go-tpc: "+err.Error())
	} else {
		common := []string{"tpcc", "-d", "postgres", "-H", "127.0.0.1", "-P", port, "-U", b.inst.User, "-D", "gotpc",
			"--conn-params", "sslmode=disable", "--warehouses", strconv.Itoa(o.warehouses)}
		ds = append(ds, driver{name: "go-tpc tpcc", kind: kindClient, db: "gotpc", orders: "orders",
			load: func(ctx context.Context) *exec.Cmd {
				return exec.CommandContext(ctx, gotpc, append(slices.Insert(slices.Clone(common), 1, "prepare"), "-T", "2")...)
			},
			run: func(ctx context.Context, d time.Duration) *exec.Cmd {
				return exec.CommandContext(ctx, gotpc, append(slices.Insert(slices.Clone(common), 1, "run"),
					"-T", strconv.Itoa(o.users), "--time", d.String())...)
			}})
	}

	if bb, err := benchbase(); err != nil {
		skipped = append(skipped, "BenchBase: "+err.Error())
	} else {
		cfg := func(d time.Duration) string {
			p := filepath.Join(b.dir, fmt.Sprintf("benchbase-%d.xml", int(d.Seconds())))
			os.WriteFile(p, []byte(fmt.Sprintf(benchbaseConfig, b.inst.Port, b.inst.User, o.warehouses, o.users, int(d.Round(time.Second).Seconds()))), 0o644)
			return p
		}
		java := func(ctx context.Context, c string, what ...string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, "java", append([]string{"-jar", filepath.Join(bb, "benchbase.jar"), "-b", "tpcc", "-c", c,
				"-d", filepath.Join(b.dir, "benchbase-results")}, what...)...)
			cmd.Dir = bb
			return cmd
		}
		ds = append(ds, driver{name: "BenchBase tpcc", kind: kindClient, db: "benchbase", orders: "oorder",
			load: func(ctx context.Context) *exec.Cmd {
				return java(ctx, cfg(time.Minute), "--create=true", "--load=true")
			},
			run: func(ctx context.Context, d time.Duration) *exec.Cmd { return java(ctx, cfg(d), "--execute=true") }})
	}
	if hdb, err := hammerdb(); err != nil {
		skipped = append(skipped, "HammerDB: "+err.Error())
	} else {
		hammer := func(ctx context.Context, name, body string) *exec.Cmd {
			path := filepath.Join(b.dir, name)
			os.WriteFile(path, []byte(fmt.Sprintf(hammerdbConnect, b.inst.Port, b.inst.User, o.warehouses)+body), 0o644)
			cmd := exec.CommandContext(ctx, "./hammerdbcli", "auto", path)
			cmd.Dir = hdb
			cmd.Env = append(os.Environ(), "TMP="+b.dir)
			return cmd
		}
		ds = append(ds, driver{name: "HammerDB tprocc", kind: kindProcedures, db: "hammerdb", orders: "orders", createsDB: true,
			load: func(ctx context.Context) *exec.Cmd {
				return hammer(ctx, "hammerdb-load.tcl", fmt.Sprintf(hammerdbLoad, min(o.warehouses, 2*runtime.NumCPU())))
			},
			run: func(ctx context.Context, d time.Duration) *exec.Cmd {
				// Its timed driver runs whole minutes; the window is read
				// from outside, as for every driver.
				return hammer(ctx, "hammerdb-run.tcl", fmt.Sprintf(hammerdbRun, int(math.Ceil(d.Minutes())), o.users))
			}})
	}
	return ds, skipped
}

// hammerdbConnect sets HammerDB's PostgreSQL TPROC-C: port, superuser,
// warehouses. Its schema goes to database hammerdb, owned by a user of
// its own (trust authentication on the managed server); stored
// procedures (PostgreSQL 11+ procedures), each virtual user on its own
// home warehouse, no keying and thinking, no time profile.
const hammerdbConnect = `dbset db pg
dbset bm TPC-C
diset connection pg_host 127.0.0.1
diset connection pg_port %d
diset connection pg_sslmode disable
diset tpcc pg_superuser %s
diset tpcc pg_superuserpass x
diset tpcc pg_defaultdbase postgres
diset tpcc pg_user hammerdb
diset tpcc pg_pass hammerdb
diset tpcc pg_dbase hammerdb
diset tpcc pg_count_ware %d
diset tpcc pg_storedprocs true
diset tpcc pg_partition false
diset tpcc pg_allwarehouse false
diset tpcc pg_keyandthink false
diset tpcc pg_timeprofile false
diset tpcc pg_vacuum false
`

// hammerdbLoad: build threads.
const hammerdbLoad = `diset tpcc pg_num_vu %d
buildschema
`

// hammerdbRun: minutes, virtual users (its timed driver adds a monitor).
const hammerdbRun = `diset tpcc pg_driver timed
diset tpcc pg_total_iterations 10000000
diset tpcc pg_rampup 0
diset tpcc pg_duration %d
loadscript
vuset logtotemp 0
vuset vu %d
vucreate
vurun
vudestroy
`

// hammerdb finds HammerDB 4.x: $HAMMERDB, the directory of hammerdbcli.
func hammerdb() (string, error) {
	dir := os.Getenv("HAMMERDB")
	if dir == "" {
		return "", errors.New("$HAMMERDB (the directory of hammerdbcli, 4.x on Tcl 8.6) not set")
	}
	if _, err := os.Stat(filepath.Join(dir, "hammerdbcli")); err != nil {
		return "", fmt.Errorf("$HAMMERDB: %v", err)
	}
	return dir, nil
}

// benchbaseConfig: port, user, warehouses, terminals, seconds. Read
// committed, as the other drivers run.
const benchbaseConfig = `<?xml version="1.0"?>
<parameters>
    <type>POSTGRES</type>
    <driver>org.postgresql.Driver</driver>
    <url>jdbc:postgresql://127.0.0.1:%d/benchbase?sslmode=disable&amp;ApplicationName=tpcc&amp;reWriteBatchedInserts=true</url>
    <username>%s</username>
    <password></password>
    <reconnectOnConnectionFailure>true</reconnectOnConnectionFailure>
    <isolation>TRANSACTION_READ_COMMITTED</isolation>
    <batchsize>128</batchsize>
    <scalefactor>%d</scalefactor>
    <terminals>%d</terminals>
    <works>
        <work>
            <time>%d</time>
            <rate>unlimited</rate>
            <weights>45,43,4,4,4</weights>
        </work>
    </works>
    <transactiontypes>
        <transactiontype><name>NewOrder</name></transactiontype>
        <transactiontype><name>Payment</name></transactiontype>
        <transactiontype><name>OrderStatus</name></transactiontype>
        <transactiontype><name>Delivery</name></transactiontype>
        <transactiontype><name>StockLevel</name></transactiontype>
    </transactiontypes>
</parameters>
`

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

func benchbase() (string, error) {
	dir := os.Getenv("BENCHBASE")
	if dir == "" {
		return "", errors.New("$BENCHBASE (the directory of benchbase.jar, built with -P postgres) not set")
	}
	if _, err := os.Stat(filepath.Join(dir, "benchbase.jar")); err != nil {
		return "", fmt.Errorf("$BENCHBASE: %v", err)
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
	xacts     int64 // the database's commits and rollbacks
	orders    int64 // rows of the driver's orders table: New-Orders committed
}

// sample is a run's window: the difference of two points.
type sample struct{ a, b point }

// txs is the driver's transactions in the window: for a TPC-C-like
// driver its committed New-Orders (rows of its orders table) over their
// share of the mix, 45% less the 1% rolled back; for pgbench the server's
// transactions. A driver may make more server transactions than its own
// (go-tpc on PostgreSQL makes two): newOrderShare shows it.
func (s sample) txs() float64 {
	if n := s.b.orders - s.a.orders; n > 0 {
		return float64(n) / newOrderShare
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
func (s sample) writesPerTx() float64 { return float64(s.b.writes-s.a.writes) / s.txs() }

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
	var orders *pgx.Conn
	if d.orders != "" {
		c, err := pgx.Connect(ctx, b.url(d.db))
		if err != nil {
			cmd.Process.Kill()
			<-done
			return sample{}, err
		}
		defer c.Close(ctx)
		orders = c
	}
	// The product's own readers of a process tree's CPU: the server's,
	// and the client's (its threads and any child process).
	server, err := ostat.New(ostat.Options{ServerPID: b.inst.PID})
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
		p := point{at: time.Now(), writes: procWrites(pid)}
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
		err := b.admin.QueryRow(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1", d.db).Scan(&p.xacts)
		if err == nil && orders != nil {
			err = orders.QueryRow(ctx, "SELECT count(*) FROM "+d.orders).Scan(&p.orders)
		}
		return p, err
	}
	var s sample
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
