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
	// mysqlslap takes a number of queries, not a time: its 8 clients made
	// about 2,400 a second between them here (61,004 statements in 25 s
	// at load average 20), so a capture of about the duration asked on a
	// loaded host, shorter on a quiet one.
	queries := strconv.Itoa(max(1000, int(b.o.duration/time.Second)*2400))
	recs, err := b.loggedMariaDB(dir, m, "slap", "mysqlslap", r, func() error {
		return b.command(b.clientLimit(b.o.duration), filepath.Join(dir, "client.log"), dir, nil, slap,
			"-uslap", "-pslap", "-h127.0.0.1", "-P"+strconv.Itoa(m.inst.Port), "--concurrency=8", "--iterations=1",
			"--number-of-queries="+queries, "--auto-generate-sql", "--auto-generate-sql-load-type=mixed",
			"--auto-generate-sql-add-autoincrement", "--auto-generate-sql-write-number=1000", "--no-drop", "--create-schema=slap")
	})
	if err != nil {
		r.failed = firstLine(err.Error())
		logf("%s: recording failed: %v", name, err)
		return r
	}
	b.replayMariaDB(name, r, recs, func() error { return m.exec(b.ctx, "DROP DATABASE IF EXISTS slap") },
		m.url("dbparity"), "--map-user", "slap=root")
	return r
}
