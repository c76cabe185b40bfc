package main

import (
	"path/filepath"
	"strconv"
	"time"
)

// mysqlslapMariaDB: MariaDB's own load client, mysqlslap, on a managed
// MariaDB over TCP: 8 concurrent clients on a table it creates in a
// schema it creates (its auto-generated SQL with an AUTO_INCREMENT key),
// a mix of INSERTs and key lookups, captured from the general log, the
// slow log and the wire of one run as sysbench-mariadb is. It sends each
// CREATE with its C string's NUL byte, and its INSERTs take their keys
// from AUTO_INCREMENT.
func (b *bench) mysqlslapMariaDB(name string) *row {
	slap, err := program("mysqlslap")
	if err != nil {
		return skip(name, err.Error())
	}
	r := &row{statements: -1}
	m, dir, stop := b.startMariaDB(name, r)
	if m == nil {
		return r
	}
	defer stop()
	if err := m.exec(b.ctx, "DROP DATABASE IF EXISTS slap", "CREATE USER IF NOT EXISTS 'slap'@'127.0.0.1' IDENTIFIED BY 'slap'",
		"GRANT ALL ON *.* TO 'slap'@'127.0.0.1'"); err != nil {
		r.failed = firstLine(err.Error())
		return r
	}
	// mysqlslap takes a number of queries, not a time, and its rate moves
	// fivefold with the host's load (2,400 a second at load average 20,
	// 12,300 on a quiet host): a first run, not captured, measures it, so
	// that the captured one lasts about the duration asked.
	run := func(queries int) error {
		return b.command(b.clientLimit(b.o.duration), filepath.Join(dir, "client.log"), dir, nil, slap,
			"-uslap", "-pslap", "-h127.0.0.1", "-P"+strconv.Itoa(m.inst.Port), "--concurrency=8", "--iterations=1",
			"--number-of-queries="+strconv.Itoa(queries), "--auto-generate-sql", "--auto-generate-sql-load-type=mixed",
			"--auto-generate-sql-add-autoincrement", "--auto-generate-sql-write-number=1000", "--no-drop", "--create-schema=slap")
	}
	const probe = 5000
	t0 := time.Now()
	if err := run(probe); err != nil {
		r.failed = firstLine(err.Error())
		return r
	}
	rate := probe / time.Since(t0).Seconds()
	if err := m.exec(b.ctx, "DROP DATABASE IF EXISTS slap"); err != nil {
		r.failed = firstLine(err.Error())
		return r
	}
	queries := max(1000, int(rate*b.o.duration.Seconds()))
	logf("%s: %.0f queries a second in a first run of %d: %d for %s", name, rate, probe, queries, b.o.duration)
	recs, err := b.loggedMariaDB(dir, m, "slap", "mysqlslap", r, func() error { return run(queries) })
	if err != nil {
		r.failed = firstLine(err.Error())
		logf("%s: recording failed: %v", name, err)
		return r
	}
	b.replayMariaDB(name, r, recs, func() error { return m.exec(b.ctx, "DROP DATABASE IF EXISTS slap") },
		m.url("dbparity"), "--map-user", "slap=root")
	return r
}
