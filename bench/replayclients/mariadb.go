package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dbparity/dbparity/internal/engine/managed"
)

// sysbenchMariaDB: sysbench oltp_read_write on a managed MariaDB, captured
// from the general query log. The starting state is a copy of the
// prepared tables in database sbstart; each replay runs on database
// sbreplay, made anew from sbstart, with --map-db sbtest=sbreplay.
func (b *bench) sysbenchMariaDB(name string) *row {
	sysbench, err := program("sysbench")
	if err != nil {
		return skip(name, err.Error())
	}
	r := &row{statements: -1}
	m, dir, stop := b.startMariaDB(name, r)
	if m == nil {
		return r
	}
	defer stop()
	recs, err := b.captureMariaDB(dir, m, sysbench, r)
	if err != nil {
		r.failed = firstLine(err.Error())
		logf("%s: recording failed: %v", name, err)
		return r
	}
	b.replayMariaDB(name, r, recs, func() error { return m.copyDB("sbstart", "sbreplay") },
		m.url("sbreplay"), "--map-db", "sbtest=sbreplay", "--map-user", "sb=root")
	return r
}

// startMariaDB starts a managed MariaDB in client name's work directory,
// on the loopback too: the clients connect over TCP, so that their
// packets can be read off lo (the wire capture) as the logs are written.
// On failure it says why in r and returns no server.
func (b *bench) startMariaDB(name string, r *row) (m *my, dir string, stop func()) {
	if _, err := program("mariadbd"); err != nil {
		if _, serr := os.Stat("/usr/sbin/mariadbd"); serr != nil {
			r.skipped = "no MariaDB server (mariadbd)"
			logf("%s: skipped: %s", name, r.skipped)
			return nil, "", nil
		}
	}
	dir, err := b.clientDir(name)
	if err != nil {
		r.failed = err.Error()
		return nil, "", nil
	}
	logf("starting mariadb")
	inst, err := managed.StartMariaDB(b.ctx, managed.Options{DataDir: filepath.Join(dir, "mariadb"), Loopback: true})
	if err != nil {
		r.failed = firstLine(err.Error())
		logf("%s: %v", name, err)
		return nil, "", nil
	}
	if m, err = newMy(inst); err != nil {
		inst.Stop()
		r.failed = err.Error()
		return nil, "", nil
	}
	return m, dir, func() {
		m.db.Close()
		inst.Stop()
	}
}

// replayMariaDB replays each recording of one run at both speeds against
// url, each from the starting state prepare makes, with the replay's
// args: the general log is written as statements arrive, the slow log as
// they end, the wire capture reads the packets, and each has its row (r
// the first's, the others in r.extra).
func (b *bench) replayMariaDB(name string, r *row, recs []*recording, prepare func() error, url string, args ...string) {
	for k, rec := range recs {
		rr := r
		if k > 0 {
			rr = &row{client: name + " (" + rec.source + ")"}
			r.extra = append(r.extra, rr)
		} else {
			r.client = name + " (" + rec.source + ")"
		}
		rr.statements, rr.captureS = rec.statements, rec.captureS
		for _, speed := range []string{"1", "max"} {
			if b.ctx.Err() != nil {
				break
			}
			b.both(rr, func(bin string) *replayRow {
				if err := prepare(); err != nil {
					return &replayRow{speed: speed, failed: firstLine(err.Error())}
				}
				return b.replay(bin, rec, speed, url, args...)
			})
		}
	}
}

func (b *bench) captureMariaDB(dir string, m *my, sysbench string, r *row) ([]*recording, error) {
	ctx := b.ctx
	logFile := filepath.Join(dir, "client.log")
	port := strconv.Itoa(m.inst.Port)
	sb := func(limit time.Duration, more ...string) error {
		return b.command(limit, logFile, dir, nil, sysbench, append([]string{"oltp_read_write", "--db-driver=mysql",
			"--mysql-host=127.0.0.1", "--mysql-port=" + port, "--mysql-user=sb", "--mysql-password=sb", "--mysql-db=sbtest",
			"--tables=2", "--table-size=10000", "--rand-seed=7"}, more...)...)
	}
	logf("setup")
	if err := m.exec(ctx, "DROP DATABASE IF EXISTS sbtest", "CREATE DATABASE sbtest", "CREATE USER IF NOT EXISTS 'sb'@'127.0.0.1' IDENTIFIED BY 'sb'",
		"GRANT ALL ON *.* TO 'sb'@'127.0.0.1'"); err != nil {
		return nil, err
	}
	if err := sb(10*time.Minute, "prepare"); err != nil {
		return nil, err
	}
	if err := m.copyDB("sbtest", "sbstart"); err != nil {
		return nil, err
	}
	return b.loggedMariaDB(dir, m, "sbtest", "sysbench", r, func() error {
		return sb(b.clientLimit(b.o.duration), "--threads=4", "--time="+seconds(b.o.duration), "--report-interval=0", "run")
	})
}

// loggedMariaDB runs client (named what) with the general and slow logs
// on and the wire capture reading the loopback's packets, snapshots
// database db's end state and captures the logs: the recordings of the
// general log, the slow log and, where it could read the packets, the
// wire.
func (b *bench) loggedMariaDB(dir string, m *my, db, what string, r *row, client func() error) ([]*recording, error) {
	ctx := b.ctx
	port := strconv.Itoa(m.inst.Port)
	var dataDir string
	if err := m.db.QueryRowContext(ctx, "SELECT @@datadir").Scan(&dataDir); err != nil {
		return nil, err
	}
	general, slow := filepath.Join(dataDir, "general.log"), filepath.Join(dataDir, "slow.log")
	os.Remove(general)
	os.Remove(slow)
	logf("running %s with the general and slow logs on", what)
	if err := m.exec(ctx, "SET GLOBAL general_log_file = '"+general+"', GLOBAL slow_query_log_file = '"+slow+"', GLOBAL log_output = 'FILE', "+
		"GLOBAL long_query_time = 0, GLOBAL general_log = ON, GLOBAL slow_query_log = ON"); err != nil {
		return nil, err
	}
	// The wire capture reads the same run's packets (it needs
	// CAP_NET_RAW: without, its row says why).
	recWire := &recording{dir: dir, capture: filepath.Join(dir, "wire.capture"), source: "wire, --listen-on lo"}
	wireLog := filepath.Join(dir, "wire.log")
	wire := exec.CommandContext(ctx, b.bin, "capture", "--listen-on", "lo", "--port", port, "--protocol", "mysql",
		"--out", recWire.capture, "--force")
	wf, err := os.Create(wireLog)
	if err != nil {
		return nil, err
	}
	defer wf.Close()
	wire.Stdout, wire.Stderr, wire.Dir = wf, wf, dir
	if err := wire.Start(); err != nil {
		return nil, err
	}
	time.Sleep(500 * time.Millisecond) // its socket is bound
	t0 := time.Now()
	if err := client(); err != nil {
		logf("client: %v", err)
		r.notes = append(r.notes, "client: "+firstLine(err.Error()))
	}
	logf("client ran %s", time.Since(t0).Round(100*time.Millisecond))
	if err := m.exec(context.WithoutCancel(ctx), "SET GLOBAL general_log = OFF, GLOBAL slow_query_log = OFF"); err != nil {
		return nil, err
	}
	time.Sleep(200 * time.Millisecond) // the last packets are read
	wire.Process.Signal(os.Interrupt)
	wireErr := wire.Wait()
	rec := &recording{dir: dir, end: filepath.Join(dir, "end.snap"), capture: filepath.Join(dir, "client.capture"), source: "general log"}
	if err := b.command(10*time.Minute, filepath.Join(dir, "snapshot.log"), dir, nil, b.bin,
		"snapshot", "--target", m.url(db), "--out", rec.end, "--force"); err != nil {
		return nil, err
	}
	if err := b.captureLogs(rec, []string{general}); err != nil {
		return nil, err
	}
	recSlow := &recording{dir: dir, end: rec.end, capture: filepath.Join(dir, "slow.capture"), source: "slow log"}
	if err := b.captureLogs(recSlow, []string{slow}); err != nil {
		return nil, err
	}
	recs := []*recording{rec, recSlow}
	if wireErr != nil {
		r.notes = append(r.notes, "wire capture: "+firstLine(fileTail(wireLog, 3)))
		return recs, nil
	}
	recWire.end = rec.end
	out, _ := os.ReadFile(wireLog)
	recWire.statements, recWire.captureS = captured(out)
	logf("captured %d statements over %.1f s from the wire", recWire.statements, recWire.captureS)
	return append(recs, recWire), nil
}

// my is a connection pool to a managed MariaDB as root.
type my struct {
	inst   *managed.Instance
	socket string
	db     *sql.DB
}

func newMy(inst *managed.Instance) (*my, error) {
	u, err := url.Parse(inst.URL())
	if err != nil {
		return nil, err
	}
	m := &my{inst: inst, socket: u.Query().Get("socket")}
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr = inst.User, "unix", m.socket
	if m.db, err = sql.Open("mysql", c.FormatDSN()); err != nil {
		return nil, err
	}
	m.db.SetMaxOpenConns(1) // one session: the statements that follow see each other's effects
	return m, nil
}

// url is the dbparity URL of database db.
func (m *my) url(db string) string {
	u, _ := url.Parse(m.inst.URL())
	u.Path = "/" + db
	return u.String()
}

func (m *my) exec(ctx context.Context, stmts ...string) error {
	for _, s := range stmts {
		if _, err := m.db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// copyDB makes database to a copy of from's tables: rows and the next
// AUTO_INCREMENT value.
func (m *my) copyDB(from, to string) error {
	ctx := context.Background()
	if err := m.exec(ctx, "DROP DATABASE IF EXISTS "+to, "CREATE DATABASE "+to); err != nil {
		return err
	}
	rows, err := m.db.QueryContext(ctx, "SELECT TABLE_NAME, COALESCE(AUTO_INCREMENT, 0) FROM information_schema.TABLES"+
		" WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME", from)
	if err != nil {
		return err
	}
	type table struct {
		name string
		next int64
	}
	var tables []table
	for rows.Next() {
		var t table
		if err := rows.Scan(&t.name, &t.next); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	q := func(db, t string) string { return "`" + db + "`.`" + strings.ReplaceAll(t, "`", "``") + "`" }
	for _, t := range tables {
		stmts := []string{"CREATE TABLE " + q(to, t.name) + " LIKE " + q(from, t.name),
			"INSERT INTO " + q(to, t.name) + " SELECT * FROM " + q(from, t.name)}
		if t.next > 0 {
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s AUTO_INCREMENT = %d", q(to, t.name), t.next))
		}
		if err := m.exec(ctx, stmts...); err != nil {
			return err
		}
	}
	return nil
}
