package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine/managed"
)

// postgres starts a managed PostgreSQL cluster for the test, or skips
// (fails under CI=true) when the server binaries are missing.
func postgres(t *testing.T) *managed.Instance {
	t.Helper()
	dir, err := os.MkdirTemp("", "dbparity-pg-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	inst, err := managed.Start(context.Background(), managed.Options{DataDir: filepath.Join(dir, "data"), Settings: []string{"fsync=off"}})
	if err != nil {
		os.RemoveAll(dir)
		if strings.Contains(err.Error(), "no PostgreSQL server binaries") && os.Getenv("CI") != "true" {
			t.Skipf("PostgreSQL cannot be tested: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		inst.Stop()
		os.RemoveAll(dir)
	})
	return inst
}

// pgConnect connects to a managed PostgreSQL started for the test; both
// close when it ends.
func pgConnect(t *testing.T) Conn {
	t.Helper()
	return openSession(t, postgres(t).URL())
}

// TestPostgresBatchTypes sends every argument and result type the batch
// path encodes itself, and some it leaves to pgx's type map, and checks
// what the server stored and what came back.
func TestPostgresBatchTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgConnect(t)
	if _, err := c.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY, small smallint, big bigint, f float8, r real,
		amount numeric(12,2), name varchar(20), flag bool, at timestamp, atz timestamptz, n int, ids int[])`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 24, 17, 30, 1, 123456000, time.UTC)
	ins := "INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
	var b Batch
	b.Begin(ReadWrite)
	b.Exec(ins, 1, int32(-7), int64(1)<<40, 2.5, 1.5, "12.34", "één", true, at, at, nil, []int32{3, 1, 2})
	b.Exec(ins, 2, 300, 5, 7, 0.25, 99, "x", false, at.Add(time.Hour), at.Add(time.Hour), 4, nil)
	if err := c.SendBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if b.Item(1).Affected != 1 || b.Item(2).Affected != 1 {
		t.Errorf("affected %d %d", b.Item(1).Affected, b.Item(2).Affected)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	var small, big int64
	var id int
	var f, r, amount float64
	var name string
	var flag bool
	var gotAt, gotAtz time.Time
	var n *int64
	var ids []int32
	row := []any{&id, &small, &big, &f, &r, &amount, &name, &flag, &gotAt, &gotAtz, &n, &ids}
	var seen []int64
	b.Reset()
	b.Begin(ReadOnly)
	first := b.QueryRow("SELECT * FROM t WHERE id = $1", row, 1)
	none := b.QueryRow("SELECT * FROM t WHERE id = $1", make([]any, 12), 3)
	b.Query("SELECT n FROM t ORDER BY id", func(rs Rows) error {
		var v *int64
		if err := rs.Scan(&v); err != nil {
			return err
		}
		if v == nil {
			seen = append(seen, -1)
		} else {
			seen = append(seen, *v)
		}
		return nil
	})
	if err := c.SendBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if b.Item(first).NoRows || !b.Item(none).NoRows {
		t.Errorf("NoRows: first %v, none %v", b.Item(first).NoRows, b.Item(none).NoRows)
	}
	if id != 1 || small != -7 || big != 1<<40 || f != 2.5 || r != 1.5 || amount != 12.34 || name != "één" || !flag ||
		!gotAt.Equal(at) || !gotAtz.Equal(at) || n != nil || len(ids) != 3 || ids[0] != 3 {
		t.Errorf("row 1 read back as %v %v %v %v %v %v %q %v %v %v %v %v", id, small, big, f, r, amount, name, flag, gotAt, gotAtz, n, ids)
	}
	if len(seen) != 2 || seen[0] != -1 || seen[1] != 4 {
		t.Errorf("Query's rows: %v", seen)
	}
	c.Rollback(ctx)

	// The server's own reading of what was sent, as text.
	var text string
	if err := c.QueryRow(ctx, "SELECT concat_ws('|', small, big, f, r, amount, flag, at, atz AT TIME ZONE 'UTC', n, ids) FROM t WHERE id = 2").Scan(&text); err != nil {
		t.Fatal(err)
	}
	if want := "300|5|7|0.25|99.00|f|2026-11-24 18:30:01.123456|2026-11-24 18:30:01.123456|4"; text != want {
		t.Errorf("row 2 stored as %q, want %q", text, want)
	}
	if got, want := c.Statements(), int64(3+1+4+1+1+1); got != want {
		t.Errorf("statements %d, want %d", got, want)
	}
}

// TestPostgresBatchErrors: an argument the statement cannot take is
// refused before anything is sent, a failing statement is reported with
// its SQLSTATE, and the connection goes on in both cases.
func TestPostgresBatchErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgConnect(t)
	if _, err := c.Exec(ctx, "CREATE TABLE k (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Begin(ReadWrite)
	b.Exec("INSERT INTO k VALUES ($1)", 1<<40)
	trips := c.RoundTrips()
	if err := c.SendBatch(ctx, &b); err == nil || !strings.Contains(err.Error(), "argument 1") {
		t.Errorf("an int4 argument out of range: %v", err)
	}
	b.Reset()
	b.Exec("INSERT INTO k VALUES ($1)", 1, 2)
	if err := c.SendBatch(ctx, &b); err == nil || !strings.Contains(err.Error(), "takes 1 arguments, not 2") {
		t.Errorf("two arguments for one parameter: %v", err)
	}
	if c.RoundTrips() != trips+2 { // the two statements' prepares only
		t.Errorf("round trips %d after refused batches, want %d", c.RoundTrips(), trips+2)
	}
	if c.Lost() {
		t.Fatal("a refused argument lost the connection")
	}

	b.Reset()
	b.Begin(ReadWrite)
	b.Exec("INSERT INTO k VALUES ($1)", 1)
	b.Exec("INSERT INTO k VALUES ($1)", 1)
	var count int64 = -1
	b.QueryRow("SELECT count(*) FROM k", []any{&count})
	err := c.SendBatch(ctx, &b)
	if SQLState(err) != "23505" {
		t.Errorf("duplicate key: %v", err)
	}
	if count != -1 {
		t.Error("the statement after the failed one was read")
	}
	if err := c.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM k").Scan(&n); err != nil || n != 0 {
		t.Errorf("after the rollback: %d rows, %v", n, err)
	}

	// A cancelled context ends the batch with the context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	b.Reset()
	b.Exec("SELECT 1")
	if err := c.SendBatch(cctx, &b); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}
