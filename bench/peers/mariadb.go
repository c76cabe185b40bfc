package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dbparity/dbparity/internal/engine/managed"
)

// myServer is a managed MariaDB: sysbench, go-tpc, BenchBase, HammerDB and
// sysbench-tpcc beside dbparity (issue 33). Every driver connects over
// TCP as the user bench, made for them with every privilege; the server
// runs at its default isolation (REPEATABLE READ) for all of them.
type myServer struct {
	b     *bench
	inst  *managed.Instance
	admin *sql.DB // root, on the socket
}

// myUser and myPass are the drivers' user on 127.0.0.1.
const myUser, myPass = "bench", "bench"

func startMariaDB(ctx context.Context, b *bench) (server, error) {
	// A buffer pool that holds every driver's data, and a redo log of a
	// size that does not force checkpoints within a window (PostgreSQL's
	// max_wal_size=4GB).
	inst, err := managed.StartMariaDB(ctx, managed.Options{DataDir: filepath.Join(b.dir, "mariadb"), Log: os.Stderr, Loopback: true,
		Settings: []string{"innodb_buffer_pool_size=3G", "innodb_log_file_size=2G"}})
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(inst.URL())
	if err != nil {
		inst.Stop()
		return nil, err
	}
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr = inst.User, "unix", u.Query().Get("socket")
	m := &myServer{b: b, inst: inst}
	if m.admin, err = sql.Open("mysql", c.FormatDSN()); err == nil {
		m.admin.SetMaxOpenConns(1)
		for _, s := range []string{
			fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'127.0.0.1' IDENTIFIED BY '%s'", myUser, myPass),
			fmt.Sprintf("GRANT ALL ON *.* TO '%s'@'127.0.0.1' WITH GRANT OPTION", myUser),
		} {
			if _, err = m.admin.ExecContext(ctx, s); err != nil {
				err = fmt.Errorf("%s: %w", s, err)
				break
			}
		}
	}
	if err != nil {
		m.stop()
		return nil, err
	}
	return m, nil
}

func (m *myServer) name() string  { return "MariaDB " + m.inst.Version }
func (m *myServer) pid() int      { return m.inst.PID }
func (m *myServer) issue() string { return "issue 33" }

func (m *myServer) stop() {
	if m.admin != nil {
		m.admin.Close()
	}
	m.inst.Stop()
}

func (m *myServer) createDB(ctx context.Context, db string) error {
	_, err := m.admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+db)
	return err
}

// status reads global status variables.
func (m *myServer) status(ctx context.Context, names ...string) (map[string]int64, error) {
	rows, err := m.admin.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('"+strings.Join(names, "', '")+"')")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var n, v string
		if err := rows.Scan(&n, &v); err != nil {
			return nil, err
		}
		out[n], _ = strconv.ParseInt(v, 10, 64)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("no global status %s", n)
		}
	}
	return out, nil
}

// read: the server's commits and rollbacks (COMMIT and ROLLBACK
// statements, those inside stored procedures too; one driver runs at a
// time) and the requests clients sent (Questions: statements and
// prepared-statement executions, not those inside stored procedures).
func (m *myServer) read(ctx context.Context, _ string, p *point) error {
	s, err := m.status(ctx, "Com_commit", "Com_rollback", "Questions")
	if err != nil {
		return err
	}
	p.xacts, p.requests = s["Com_commit"]+s["Com_rollback"], s["Questions"]
	return nil
}

func (m *myServer) rows(ctx context.Context, db, table string) (int64, error) {
	var n int64
	err := m.admin.QueryRowContext(ctx, "SELECT count(*) FROM "+db+"."+table).Scan(&n)
	return n, err
}

// settle writes InnoDB's dirty pages (its checkpoint): the dirty-page
// limit at 0 until they are written (at most a minute), then back.
func (m *myServer) settle(ctx context.Context) error {
	var was string
	if err := m.admin.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct").Scan(&was); err != nil {
		return err
	}
	if _, err := m.admin.ExecContext(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = 0"); err != nil {
		return err
	}
	defer m.admin.ExecContext(context.WithoutCancel(ctx), "SET GLOBAL innodb_max_dirty_pages_pct = "+was)
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		s, err := m.status(ctx, "Innodb_buffer_pool_pages_dirty")
		if err != nil {
			return err
		}
		if s["Innodb_buffer_pool_pages_dirty"] < 100 {
			break
		}
	}
	return nil
}

func (m *myServer) notes() []string {
	return []string{
		"writes: the client's write system calls per transaction, a round trip at least one; libmariadb (sysbench, HammerDB)",
		"sends with send(), which /proc/PID/io does not count; dbparity's (counted): the round trips it counts at its sockets",
		"(it sends with send() too). statements: the server's Questions per transaction (statements",
		"and prepared-statement executions the clients sent; not those inside procedures, nor prepares and closes).",
		"transactions: a TPC-C-like driver's committed New-Orders (its orders table's new rows) / their share of its mix",
		"(44.55%: 45% less 1% rolled back; sysbench-tpcc's 43.0%: 10 of 23, less 1%); sysbench's from the server's",
		"Com_commit + Com_rollback; server transactions/tx: how many of those the server counted for each",
	}
}

func (m *myServer) drivers(bin string) (ds []driver, skipped []string) {
	b, o := m.b, m.b.o
	port := strconv.Itoa(m.inst.Port)
	oe := fmt.Sprintf("mariadb://%s:%s@127.0.0.1:%d/orderentry", myUser, myPass, m.inst.Port)
	ds = append(ds, dbparityDrivers(b, bin, oe)...)

	if sysbench, err := find("SYSBENCH", "sysbench"); err != nil {
		skipped = append(skipped, "sysbench: "+err.Error())
	} else {
		common := []string{"oltp_read_write", "--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=" + port,
			"--mysql-user=" + myUser, "--mysql-password=" + myPass, "--mysql-db=sbtest", "--tables=4",
			"--table-size=" + strconv.Itoa(o.sysbenchRows)}
		ds = append(ds, driver{name: "sysbench oltp_read_write", kind: kindFloor, db: "sbtest",
			load: func(ctx context.Context) *exec.Cmd {
				return exec.CommandContext(ctx, sysbench, append(slices.Clone(common), "--threads=4", "prepare")...)
			},
			run: func(ctx context.Context, d time.Duration) *exec.Cmd {
				return exec.CommandContext(ctx, sysbench, append(slices.Clone(common), "--threads="+strconv.Itoa(o.users),
					"--time="+strconv.Itoa(int(d.Round(time.Second).Seconds())), "--report-interval=0", "run")...)
			}})
	}

	if gotpc, err := find("GOTPC", "go-tpc"); err != nil {
		skipped = append(skipped, "go-tpc: "+err.Error())
	} else {
		common := []string{"tpcc", "-d", "mysql", "-H", "127.0.0.1", "-P", port, "-U", myUser, "-p", myPass, "-D", "gotpc",
			"--warehouses", strconv.Itoa(o.warehouses)}
		// Without the consistency check its prepare ends with: on MariaDB
		// its queries run for many minutes (on PostgreSQL, seconds).
		ds = append(ds, goTPCDriver(gotpc, common, o.users, "--no-check"))
	}

	if bb, err := benchbase("mariadb", "mariadb-java-client-*.jar", "BENCHBASE_MARIADB", "BENCHBASE"); err != nil {
		skipped = append(skipped, "BenchBase: "+err.Error())
	} else {
		ds = append(ds, benchbaseDriver(b, bb, func(d time.Duration) string {
			return fmt.Sprintf(benchbaseMariaDBConfig, m.inst.Port, myUser, myPass, o.warehouses, o.users, int(d.Round(time.Second).Seconds()))
		}))
	}

	if hdb, err := hammerdb(); err != nil {
		skipped = append(skipped, "HammerDB: "+err.Error())
	} else if l, _ := filepath.Glob(filepath.Join(hdb, "lib", "mariatcl*", "pkgIndex.tcl")); len(l) == 0 {
		skipped = append(skipped, "HammerDB: no mariatcl in $HAMMERDB/lib (the README says how to make one)")
	} else {
		ds = append(ds, hammerdbDriver(b, hdb, "maria", fmt.Sprintf(hammerdbMariaDBConnect, m.inst.Port, myUser, myPass, o.warehouses)))
	}

	if dir, err := sysbenchTPCC(); err != nil {
		skipped = append(skipped, "sysbench-tpcc: "+err.Error())
	} else if sysbench, err := find("SYSBENCH", "sysbench"); err != nil {
		skipped = append(skipped, "sysbench-tpcc: sysbench: "+err.Error())
	} else {
		sb := func(ctx context.Context, more ...string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, sysbench, append([]string{"./tpcc.lua", "--db-driver=mysql", "--mysql-host=127.0.0.1",
				"--mysql-port=" + port, "--mysql-user=" + myUser, "--mysql-password=" + myPass, "--mysql-db=sbtpcc",
				"--tables=1", "--scale=" + strconv.Itoa(o.warehouses)}, more...)...)
			cmd.Dir = dir // tpcc.lua requires its neighbours
			return cmd
		}
		// New-Order is 10 of its 23 transaction kinds, 1% of them rolled
		// back; its tables are numbered (orders1).
		ds = append(ds, driver{name: "sysbench-tpcc", kind: kindClient, db: "sbtpcc", orders: "orders1", share: 10.0 / 23 * 0.99,
			load: func(ctx context.Context) *exec.Cmd {
				return sb(ctx, "--threads="+strconv.Itoa(min(o.warehouses, 2*runtime.NumCPU())), "prepare")
			},
			run: func(ctx context.Context, d time.Duration) *exec.Cmd {
				return sb(ctx, "--threads="+strconv.Itoa(o.users), "--time="+strconv.Itoa(int(d.Round(time.Second).Seconds())),
					"--report-interval=0", "run")
			}})
	}
	return ds, skipped
}

// sysbenchTPCC finds Percona-Lab's sysbench-tpcc: $SYSBENCH_TPCC, the
// directory of its tpcc.lua.
func sysbenchTPCC() (string, error) {
	dir := os.Getenv("SYSBENCH_TPCC")
	if dir == "" {
		return "", errors.New("$SYSBENCH_TPCC (the directory of Percona-Lab's tpcc.lua) not set")
	}
	if _, err := os.Stat(filepath.Join(dir, "tpcc.lua")); err != nil {
		return "", fmt.Errorf("$SYSBENCH_TPCC: %v", err)
	}
	return dir, nil
}

// hammerdbMariaDBConnect sets HammerDB's MariaDB TPROC-C: port, user,
// password, warehouses. Over TCP (no socket), its schema in database
// hammerdb; stored procedures called through the text protocol (its
// default), each virtual user on its own home warehouse, no keying and
// thinking, no time profile.
const hammerdbMariaDBConnect = `dbset db maria
dbset bm TPC-C
diset connection maria_host 127.0.0.1
diset connection maria_port %d
diset connection maria_socket null
diset tpcc maria_user %s
diset tpcc maria_pass %s
diset tpcc maria_dbase hammerdb
diset tpcc maria_count_ware %d
diset tpcc maria_storage_engine innodb
diset tpcc maria_partition false
diset tpcc maria_history_pk false
diset tpcc maria_no_stored_procs false
diset tpcc maria_prepared false
diset tpcc maria_allwarehouse false
diset tpcc maria_keyandthink false
diset tpcc maria_timeprofile false
diset tpcc maria_purge false
`

// benchbaseMariaDBConfig: port, user, password, warehouses, terminals,
// seconds. Server-side prepared statements, repeatable read (the server's
// default, as the other drivers run).
const benchbaseMariaDBConfig = `<?xml version="1.0"?>
<parameters>
    <type>MARIADB</type>
    <driver>org.mariadb.jdbc.Driver</driver>
    <url>jdbc:mariadb://127.0.0.1:%d/benchbase?useServerPrepStmts</url>
    <username>%s</username>
    <password>%s</password>
    <reconnectOnConnectionFailure>true</reconnectOnConnectionFailure>
    <isolation>TRANSACTION_REPEATABLE_READ</isolation>
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
