package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// autoincSessions insert at once into the AUTO_INCREMENT tables of
// autoincMariaDB.
const autoincSessions = 8

// autoincSchema is what the client makes first, as its own sessions'
// statements: the capture holds them, and each replay starts without the
// database.
var autoincSchema = []string{"CREATE DATABASE autoinc",
	"CREATE TABLE autoinc.orders (id bigint AUTO_INCREMENT PRIMARY KEY, session int NOT NULL, n int NOT NULL, note varchar(20) NOT NULL)",
	"CREATE TABLE autoinc.order_lines (id int AUTO_INCREMENT PRIMARY KEY, order_id bigint NOT NULL, k int NOT NULL)"}

// autoincMariaDB: a client of eight sessions inserting at once into
// AUTO_INCREMENT tables of a schema it creates itself, on a managed
// MariaDB over TCP, captured from the general log, the slow log and the
// wire (--listen-on lo) of one run (issue 49). Concurrent replay sessions
// draw AUTO_INCREMENT values in another order than the capture did: the
// wire's capture knows each INSERT's value and the replay gives it again;
// the logs do not, and the end state names the tables that differ so.
func (b *bench) autoincMariaDB(name string) *row {
	r := &row{statements: -1}
	m, dir, stop := b.startMariaDB(name, r)
	if m == nil {
		return r
	}
	defer stop()
	logf("setup")
	if err := m.exec(b.ctx, "DROP DATABASE IF EXISTS autoinc", "CREATE USER IF NOT EXISTS 'ai'@'127.0.0.1' IDENTIFIED BY 'ai'",
		"GRANT ALL ON *.* TO 'ai'@'127.0.0.1'"); err != nil {
		r.failed = firstLine(err.Error())
		return r
	}
	var statements int64
	recs, err := b.loggedMariaDB(dir, m, "autoinc", "the AUTO_INCREMENT client", r, func() error {
		n, err := autoincClient(b.ctx, "127.0.0.1:"+strconv.Itoa(m.inst.Port), b.o.duration)
		statements = n
		return err
	})
	if err != nil {
		r.failed = firstLine(err.Error())
		logf("%s: recording failed: %v", name, err)
		return r
	}
	logf("the client sent %d statements", statements)
	b.replayMariaDB(name, r, recs, func() error { return m.exec(b.ctx, "DROP DATABASE IF EXISTS autoinc") },
		m.url("dbparity"), "--map-user", "ai=root")
	return r
}

// autoincClient makes the schema, then runs eight sessions for d, each
// as fast as it can, in turn: an order and its two lines in a
// transaction (the lines take the order's id from LAST_INSERT_ID()), an
// order through a prepared statement, two orders in one INSERT, and a
// read of its last order. It returns the statements it sent.
func autoincClient(ctx context.Context, addr string, d time.Duration) (int64, error) {
	open := func(db string) (*sql.DB, error) {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = "ai", "ai", "tcp", addr, db
		c, err := sql.Open("mysql", cfg.FormatDSN())
		if err == nil {
			c.SetMaxOpenConns(1)
		}
		return c, err
	}
	setup, err := open("")
	if err != nil {
		return 0, err
	}
	for _, q := range autoincSchema {
		if _, err := setup.ExecContext(ctx, q); err != nil {
			setup.Close()
			return 0, fmt.Errorf("%s: %w", q, err)
		}
	}
	setup.Close()
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	sent := make([]int64, autoincSessions)
	errs := make([]error, autoincSessions)
	for s := range autoincSessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[s] = autoincSession(ctx, open, s, deadline, &sent[s])
		}()
	}
	wg.Wait()
	var n int64
	for _, k := range sent {
		n += k
	}
	return n + int64(len(autoincSchema)), errors.Join(errs...)
}

// autoincSession is one of autoincClient's sessions.
func autoincSession(ctx context.Context, open func(string) (*sql.DB, error), s int, deadline time.Time, sent *int64) error {
	db, err := open("autoinc")
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	for n := 0; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
		type step struct {
			sql  string
			args []any
		}
		var steps []step
		switch n % 4 {
		case 0:
			steps = []step{{"BEGIN", nil}, {fmt.Sprintf("INSERT INTO orders (session, n, note) VALUES (%d, %d, 'tx')", s, n), nil},
				{"INSERT INTO order_lines (order_id, k) VALUES (LAST_INSERT_ID(), 1), (LAST_INSERT_ID(), 2)", nil}, {"COMMIT", nil}}
		case 1:
			steps = []step{{"INSERT INTO orders (session, n, note) VALUES (?, ?, ?)", []any{s, n, "prepared"}}}
		case 2:
			steps = []step{{fmt.Sprintf("INSERT INTO orders (session, n, note) VALUES (%d, %d, 'a'), (%d, %d, 'b')", s, n, s, n), nil}}
		case 3:
			q := "SELECT id, note FROM orders WHERE session = ? ORDER BY id DESC LIMIT 1"
			var id int64
			var note string
			if err := c.QueryRowContext(ctx, q, s).Scan(&id, &note); err != nil {
				return fmt.Errorf("session %d: %s: %w", s, q, err)
			}
			*sent++
		}
		for _, st := range steps {
			if _, err := c.ExecContext(ctx, st.sql, st.args...); err != nil {
				return fmt.Errorf("session %d: %s: %w", s, st.sql, err)
			}
			*sent++
		}
	}
	return nil
}
