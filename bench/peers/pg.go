package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

// pgServer is a managed PostgreSQL: pgbench, go-tpc, BenchBase and
// HammerDB beside dbparity (issue 16).
type pgServer struct {
	b     *bench
	inst  *managed.Instance
	admin *pgx.Conn
	conns map[string]*pgx.Conn // by database, to count rows
}

func startPostgres(ctx context.Context, b *bench) (server, error) {
	inst, err := managed.Start(ctx, managed.Options{DataDir: filepath.Join(b.dir, "pg"), Log: os.Stderr, Loopback: true,
		Settings: []string{"max_wal_size=4GB", "autovacuum=off"}})
	if err != nil {
		return nil, err
	}
	p := &pgServer{b: b, inst: inst, conns: map[string]*pgx.Conn{}}
	if p.admin, err = pgx.Connect(ctx, p.url("postgres")); err != nil {
		inst.Stop()
		return nil, err
	}
	return p, nil
}

func (p *pgServer) name() string  { return "PostgreSQL " + p.inst.Version }
func (p *pgServer) pid() int      { return p.inst.PID }
func (p *pgServer) issue() string { return "issue 16" }

func (p *pgServer) stop() {
	for _, c := range p.conns {
		c.Close(context.Background())
	}
	p.admin.Close(context.Background())
	p.inst.Stop()
}

func (p *pgServer) createDB(ctx context.Context, db string) error {
	if _, err := p.admin.Exec(ctx, "CREATE DATABASE "+db); err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

func (p *pgServer) settle(ctx context.Context) error {
	_, err := p.admin.Exec(ctx, "CHECKPOINT")
	return err
}

func (p *pgServer) read(ctx context.Context, db string, pt *point) error {
	return p.admin.QueryRow(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1", db).Scan(&pt.xacts)
}

func (p *pgServer) rows(ctx context.Context, db, table string) (int64, error) {
	c := p.conns[db]
	if c == nil {
		var err error
		if c, err = pgx.Connect(ctx, p.url(db)); err != nil {
			return 0, err
		}
		p.conns[db] = c
	}
	var n int64
	err := c.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n)
	return n, err
}

func (p *pgServer) notes() []string {
	return []string{
		"writes: the client's write system calls per transaction, a round trip at least one; libpq sends with send(),",
		"which /proc/PID/io does not count (pgbench's tpcb-like script makes 7 round trips a transaction); dbparity's",
		"(counted): the round trips it counts at its sockets.",
		"transactions: a TPC-C-like driver's committed New-Orders (its orders table's new rows) / 44.55% (45% of the mix,",
		"1% rolled back); pgbench's from the server; server transactions/tx: how many the server counted for each",
	}
}

// url is the loopback URL of database db.
func (p *pgServer) url(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", p.inst.User, p.inst.Port, db)
}

func (p *pgServer) drivers(bin string) (ds []driver, skipped []string) {
	b, o := p.b, p.b.o
	port := strconv.Itoa(p.inst.Port)
	oe := p.url("orderentry")
	ds = append(ds, dbparityDrivers(b, bin, oe)...)

	pgbench, err := find("PGBENCH", "pgbench")
	if err != nil {
		pgbench = filepath.Join("/usr/lib/postgresql", p.inst.Version[:strings.IndexByte(p.inst.Version+".", '.')], "bin", "pgbench")
	}
	conn := []string{"-h", "127.0.0.1", "-p", port, "-U", p.inst.User, "pgbench"}
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
		common := []string{"tpcc", "-d", "postgres", "-H", "127.0.0.1", "-P", port, "-U", p.inst.User, "-D", "gotpc",
			"--conn-params", "sslmode=disable", "--warehouses", strconv.Itoa(o.warehouses)}
		ds = append(ds, goTPCDriver(gotpc, common, o.users))
	}

	if bb, err := benchbase("postgres", "postgresql-*.jar", "BENCHBASE"); err != nil {
		skipped = append(skipped, "BenchBase: "+err.Error())
	} else {
		ds = append(ds, benchbaseDriver(b, bb, func(d time.Duration) string {
			return fmt.Sprintf(benchbaseConfig, p.inst.Port, p.inst.User, o.warehouses, o.users, int(d.Round(time.Second).Seconds()))
		}))
	}
	if hdb, err := hammerdb(); err != nil {
		skipped = append(skipped, "HammerDB: "+err.Error())
	} else {
		ds = append(ds, hammerdbDriver(b, hdb, "pg", fmt.Sprintf(hammerdbConnect, p.inst.Port, p.inst.User, o.warehouses)))
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

// hammerdbDriver is HammerDB's TPROC-C in database hammerdb, from the
// installation in hdb, on the database whose settings' prefix is prefix
// ("pg", "maria"), connected and set by connect.
func hammerdbDriver(b *bench, hdb, prefix, connect string) driver {
	o := b.o
	hammer := func(ctx context.Context, name, body string) *exec.Cmd {
		path := filepath.Join(b.dir, name)
		os.WriteFile(path, []byte(connect+body), 0o644)
		cmd := exec.CommandContext(ctx, "./hammerdbcli", "auto", path)
		cmd.Dir = hdb
		cmd.Env = append(os.Environ(), "TMP="+b.dir)
		return cmd
	}
	return driver{name: "HammerDB tprocc", kind: kindProcedures, db: "hammerdb", orders: "orders", createsDB: true,
		load: func(ctx context.Context) *exec.Cmd {
			return hammer(ctx, "hammerdb-load.tcl", fmt.Sprintf(hammerdbLoad, prefix, min(o.warehouses, 2*runtime.NumCPU())))
		},
		run: func(ctx context.Context, d time.Duration) *exec.Cmd {
			// Its timed driver runs whole minutes; the window is read
			// from outside, as for every driver.
			return hammer(ctx, "hammerdb-run.tcl", fmt.Sprintf(hammerdbRun, prefix, int(math.Ceil(d.Minutes())), o.users))
		}}
}

// hammerdbLoad: the settings' prefix, build threads.
const hammerdbLoad = `diset tpcc %[1]s_num_vu %[2]d
buildschema
`

// hammerdbRun: the settings' prefix, minutes, virtual users (its timed
// driver adds a monitor).
const hammerdbRun = `diset tpcc %[1]s_driver timed
diset tpcc %[1]s_total_iterations 10000000
diset tpcc %[1]s_rampup 0
diset tpcc %[1]s_duration %[2]d
loadscript
vuset logtotemp 0
vuset vu %[3]d
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

// dbparityDrivers are order-entry in client mode, compact client mode
// and procedure mode on target URL oe, loaded by the first.
func dbparityDrivers(b *bench, bin, oe string) []driver {
	o := b.o
	dbp := func(mode string, extra ...string) driver {
		name := strings.Join(append([]string{"dbparity", mode}, extra...), " ")
		d := driver{name: name, db: "orderentry", orders: "orders", kind: kindClient,
			run: func(ctx context.Context, d time.Duration) *exec.Cmd {
				return exec.CommandContext(ctx, bin, append([]string{"run", "--target", oe, "--users", strconv.Itoa(o.users),
					"--duration", d.String(), "--warmup", "0s", "--mode", mode, "--no-collect", "--force",
					"--out", filepath.Join(b.dir, "run.json")}, extra...)...)
			}}
		d.trips = func() (float64, error) {
			r, err := result.Read(filepath.Join(b.dir, "run.json"))
			if err != nil {
				return 0, err
			}
			return r.Summarize().RoundTripsPerTx, nil
		}
		if mode == "procedures" {
			d.kind = kindProcedures
		} else if len(extra) == 0 {
			d.load = func(ctx context.Context) *exec.Cmd {
				return exec.CommandContext(ctx, bin, "load", "--target", oe, "--warehouses", strconv.Itoa(o.warehouses))
			}
		}
		return d
	}
	return []driver{dbp("client"), dbp("client", "--compact"), dbp("procedures")}
}

// goTPCDriver is go-tpc's TPC-C in database gotpc with arguments common
// ("tpcc" first), loaded with 2 threads (and arguments prepare), run with
// users.
func goTPCDriver(gotpc string, common []string, users int, prepare ...string) driver {
	return driver{name: "go-tpc tpcc", kind: kindClient, db: "gotpc", orders: "orders",
		load: func(ctx context.Context) *exec.Cmd {
			return exec.CommandContext(ctx, gotpc, append(append(slices.Insert(slices.Clone(common), 1, "prepare"), "-T", "2"), prepare...)...)
		},
		run: func(ctx context.Context, d time.Duration) *exec.Cmd {
			return exec.CommandContext(ctx, gotpc, append(slices.Insert(slices.Clone(common), 1, "run"),
				"-T", strconv.Itoa(users), "--time", d.String())...)
		}}
}

// benchbaseDriver is BenchBase's TPC-C in database benchbase, from the
// installation in bb, with the configuration config gives for a run of d.
func benchbaseDriver(b *bench, bb string, config func(d time.Duration) string) driver {
	cfg := func(d time.Duration) string {
		path := filepath.Join(b.dir, fmt.Sprintf("benchbase-%d.xml", int(d.Seconds())))
		os.WriteFile(path, []byte(config(d)), 0o644)
		return path
	}
	java := func(ctx context.Context, c string, what ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "java", append([]string{"-jar", filepath.Join(bb, "benchbase.jar"), "-b", "tpcc", "-c", c,
			"-d", filepath.Join(b.dir, "benchbase-results")}, what...)...)
		cmd.Dir = bb
		return cmd
	}
	return driver{name: "BenchBase tpcc", kind: kindClient, db: "benchbase", orders: "oorder",
		load: func(ctx context.Context) *exec.Cmd {
			return java(ctx, cfg(time.Minute), "--create=true", "--load=true")
		},
		run: func(ctx context.Context, d time.Duration) *exec.Cmd { return java(ctx, cfg(d), "--execute=true") }}
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
