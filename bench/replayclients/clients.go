package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dbparity/dbparity/internal/engine/managed"
)

// skip is the row of a client that cannot run here.
func skip(name, reason string) *row {
	logf("%s: skipped: %s", name, reason)
	return &row{skipped: reason, statements: -1}
}

// pgbench: -i -s 1, then clients sessions for d, no rate limit (every
// transaction updates the one branch row).
func (b *bench) pgbench(name, mode string, clients int, d time.Duration) *row {
	pgbench, err := program("pgbench")
	if err != nil {
		return skip(name, err.Error())
	}
	env := []string{"PGAPPNAME="}
	c := pgClient{
		setup: func(ctx context.Context, inst *managed.Instance, dir string) error {
			args := append(pgArgs(inst), "-i", "-q", "-s", "1", inst.Database)
			return b.command(10*time.Minute, filepath.Join(dir, "client.log"), dir, env, pgbench, args...)
		},
		run: func(ctx context.Context, inst *managed.Instance, dir string) error {
			args := append(pgArgs(inst), "-n", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(2, clients)), "-T", seconds(d), "-M", mode, inst.Database)
			return b.command(b.clientLimit(d), filepath.Join(dir, "client.log"), dir, env, pgbench, args...)
		},
	}
	if clients > 100 {
		c.settings = []string{"max_connections=250"}
	}
	return b.recordPG(name, c)
}

// seconds is d in whole seconds, at least 1.
func seconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))
}

const psycopgSchema = `
CREATE TABLE accounts(id int PRIMARY KEY, owner text NOT NULL, balance numeric(14,2) NOT NULL, active bool NOT NULL,
	opened timestamptz NOT NULL, touched timestamp);
INSERT INTO accounts SELECT g, 'owner ' || g, 1000, true, timestamptz '2024-01-01 00:00+00' + g * interval '1 hour', NULL
	FROM generate_series(1, 1000) g;
CREATE TABLE transfers(id bigserial PRIMARY KEY, src int NOT NULL, dst int, amount numeric(14,2) NOT NULL, note text,
	at timestamptz NOT NULL, ok bool NOT NULL);
CREATE TABLE counter(id int PRIMARY KEY, n bigint NOT NULL, last timestamptz);
INSERT INTO counter VALUES (1, 0, NULL);
CREATE TABLE events(thread int NOT NULL, seq int NOT NULL, kind text NOT NULL, at timestamptz NOT NULL, payload text);`

// psycopg: psycopg_app.py, 4 threads of a psycopg 3 application.
func (b *bench) psycopg(name string) *row {
	py, err := program("python3")
	if err == nil {
		if out, ierr := exec.Command(py, "-c", "import psycopg").CombinedOutput(); ierr != nil {
			err = fmt.Errorf("python3 cannot import psycopg (pip install \"psycopg[binary]\"): %s", tail(out, 1))
		}
	}
	if err != nil {
		return skip(name, err.Error())
	}
	return b.recordPG(name, pgClient{
		setup: func(ctx context.Context, inst *managed.Instance, dir string) error {
			return execPG(ctx, inst, psycopgSchema)
		},
		run: func(ctx context.Context, inst *managed.Instance, dir string) error {
			script, err := writeTo(dir, "psycopg_app.py", psycopgApp)
			if err != nil {
				return err
			}
			return b.command(b.clientLimit(b.o.duration), filepath.Join(dir, "client.log"), dir, nil,
				py, script, libpqDSN(inst), seconds(b.o.duration))
		},
	})
}

// sysbenchPG: sysbench oltp_read_write through its pgsql driver.
func (b *bench) sysbenchPG(name string) *row {
	sysbench, err := program("sysbench")
	if err != nil {
		return skip(name, err.Error())
	}
	args := func(inst *managed.Instance, more ...string) []string {
		return append([]string{"oltp_read_write", "--db-driver=pgsql", "--pgsql-host=" + inst.SocketDir,
			"--pgsql-port=" + strconv.Itoa(inst.Port), "--pgsql-user=" + inst.User, "--pgsql-db=" + inst.Database,
			"--tables=2", "--table-size=10000", "--rand-seed=7"}, more...)
	}
	return b.recordPG(name, pgClient{
		setup: func(ctx context.Context, inst *managed.Instance, dir string) error {
			return b.command(10*time.Minute, filepath.Join(dir, "client.log"), dir, nil, sysbench, args(inst, "prepare")...)
		},
		run: func(ctx context.Context, inst *managed.Instance, dir string) error {
			return b.command(b.clientLimit(b.o.duration), filepath.Join(dir, "client.log"), dir, nil, sysbench,
				args(inst, "--threads=4", "--time="+seconds(b.o.duration), "--report-interval=0", "run")...)
		},
	})
}

// orderEntry: dbparity's own order-entry workload as the client.
func (b *bench) orderEntry(name string) *row {
	return b.recordPG(name, pgClient{
		setup: func(ctx context.Context, inst *managed.Instance, dir string) error {
			return b.command(30*time.Minute, filepath.Join(dir, "client.log"), dir, nil, b.bin,
				"load", "--target", inst.URL(), "--warehouses", "2")
		},
		run: func(ctx context.Context, inst *managed.Instance, dir string) error {
			return b.command(b.clientLimit(b.o.duration), filepath.Join(dir, "client.log"), dir, nil, b.bin,
				"run", "--target", inst.URL(), "--users", "4", "--duration", b.o.duration.String(), "--warmup", "0s",
				"--no-collect", "--label", "order-entry", "--out", filepath.Join(dir, "run.json"), "--force")
		},
	})
}

// jdbcSchema makes the tables JdbcApp.java works on.
//
//go:embed jdbc_schema.sql
var jdbcSchema string

// The pgJDBC driver, fetched once with Maven into the cache.
const (
	pgjdbcArtifact = "org.postgresql:postgresql:42.7.4"
	pgjdbcJar      = "postgresql-42.7.4.jar"
)

// pgjdbc: JdbcApp.java on the PostgreSQL JDBC driver, over TCP to
// 127.0.0.1 (pgJDBC has no unix sockets of its own): the managed server
// also listens there (Options.Loopback).
func (b *bench) pgjdbc(name string) *row {
	java, err := program("java")
	if err != nil {
		return skip(name, err.Error())
	}
	jar, err := b.jdbcJar()
	if err != nil {
		return skip(name, err.Error())
	}
	return b.recordPG(name, pgClient{
		loopback: true,
		setup: func(ctx context.Context, inst *managed.Instance, dir string) error {
			return execPG(ctx, inst, jdbcSchema)
		},
		run: func(ctx context.Context, inst *managed.Instance, dir string) error {
			src, err := writeTo(dir, "JdbcApp.java", jdbcApp)
			if err != nil {
				return err
			}
			dsn := fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/%s?user=%s&ApplicationName=jdbcapp", inst.Port, inst.Database, inst.User)
			return b.command(b.clientLimit(b.o.duration), filepath.Join(dir, "client.log"), dir, nil,
				java, "-cp", jar, src, dsn, seconds(b.o.duration))
		},
	})
}

// jdbcJar is the driver jar in the cache, fetched with mvn when missing.
func (b *bench) jdbcJar() (string, error) {
	cache := filepath.Join(os.Getenv("HOME"), ".cache", "dbparity-bench")
	if d, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(d, "dbparity-bench")
	}
	jar := filepath.Join(cache, pgjdbcJar)
	if _, err := os.Stat(jar); err == nil {
		return jar, nil
	}
	mvn, err := program("mvn")
	if err != nil {
		return "", fmt.Errorf("no %s in %s and no mvn to fetch it", pgjdbcJar, cache)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	logf("fetching %s with mvn into %s", pgjdbcArtifact, cache)
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, mvn, "-q", "dependency:copy", "-Dartifact="+pgjdbcArtifact, "-DoutputDirectory="+cache).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("mvn dependency:copy %s failed: %v: %s", pgjdbcArtifact, err, firstLine(tail(out, 5)))
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("mvn dependency:copy left no %s in %s", pgjdbcJar, cache)
	}
	return jar, nil
}
