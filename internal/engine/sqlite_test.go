package engine

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func openTemp(t *testing.T) *Target {
	t.Helper()
	tg, err := Open("sqlite://" + filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg
}

// Writers of one process queue on the target's mutex: a second write
// transaction begins only when the first has ended, by commit, rollback,
// a failed commit or the connection's close.
func TestSQLiteWritersQueue(t *testing.T) {
	t.Parallel()
	tg := openTemp(t)
	ctx := context.Background()
	a, _ := tg.Connect(ctx)
	b, _ := tg.Connect(ctx)
	defer b.Close()
	if _, err := a.Exec(ctx, "CREATE TABLE t (x int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	for _, end := range []string{"commit", "rollback", "close"} {
		if err := a.Begin(ctx, ReadWrite); err != nil {
			t.Fatal(err)
		}
		began := make(chan error, 1)
		go func() { began <- b.Begin(ctx, ReadWrite) }()
		select {
		case err := <-began:
			t.Fatalf("%s: second writer began while the first held the lock: %v", end, err)
		case <-time.After(100 * time.Millisecond):
		}
		switch end {
		case "commit":
			a.Commit(ctx)
		case "rollback":
			a.Rollback(ctx)
		case "close":
			a.Close()
		}
		select {
		case err := <-began:
			if err != nil {
				t.Fatalf("%s: %v", end, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: second writer still waits after the first ended", end)
		}
		b.Rollback(ctx)
	}
	// Readers do not queue behind a writer.
	c, _ := tg.Connect(ctx)
	defer c.Close()
	if err := b.Begin(ctx, ReadWrite); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Begin(ctx, ReadOnly) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Second):
		t.Fatal("a reader waited for the writer")
	}
	c.Rollback(ctx)
	b.Rollback(ctx)
}

// A COMMIT that fails (here: a deferred foreign key violated) leaves no
// transaction open and releases the write lock.
func TestSQLiteFailedCommitReleases(t *testing.T) {
	t.Parallel()
	tg := openTemp(t)
	ctx := context.Background()
	a, _ := tg.Connect(ctx)
	defer a.Close()
	for _, q := range []string{"PRAGMA foreign_keys = ON", "CREATE TABLE p (id int PRIMARY KEY)",
		"CREATE TABLE c (pid int REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED)"} {
		if _, err := a.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	a.Begin(ctx, ReadWrite)
	a.Exec(ctx, "INSERT INTO c VALUES (42)")
	if err := a.Commit(ctx); err == nil {
		t.Fatal("commit of a dangling reference succeeded")
	}
	b, _ := tg.Connect(ctx)
	defer b.Close()
	done := make(chan error, 1)
	go func() { done <- b.Begin(ctx, ReadWrite) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("write lock still held after a failed commit")
	}
	b.Rollback(ctx)
	var n int64
	a.QueryRow(ctx, "SELECT count(*) FROM c").Scan(&n)
	if n != 0 {
		t.Errorf("the failed transaction's row is visible: %d", n)
	}
}

// Page cache counters of every connection add up on the target.
func TestSQLiteEngineCounters(t *testing.T) {
	t.Parallel()
	tg := openTemp(t)
	ctx := context.Background()
	c, _ := tg.Connect(ctx)
	defer c.Close()
	c.Exec(ctx, "CREATE TABLE t (x int PRIMARY KEY, pad text)")
	c.Begin(ctx, ReadWrite)
	for i := range 2000 {
		c.Exec(ctx, "INSERT INTO t VALUES ($1, $2)", i, "padding padding padding padding padding")
	}
	c.Commit(ctx)
	before := tg.EngineCounters()
	c.Begin(ctx, ReadOnly)
	var n int64
	c.QueryRow(ctx, "SELECT count(*) FROM t WHERE pad <> ''").Scan(&n)
	c.Rollback(ctx)
	after := tg.EngineCounters()
	if before["sqlite.cache_write"] == 0 {
		t.Errorf("writing 2000 rows wrote no page: %v", before)
	}
	if after["sqlite.cache_hit"] <= before["sqlite.cache_hit"] {
		t.Errorf("a full scan hit no cached page: %v -> %v", before, after)
	}
	if tgp, _ := Open("postgres://u@h/db"); tgp.EngineCounters() != nil {
		t.Error("a server target reports engine counters")
	}
}
