package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// setConn answers a read of a global with 100 and fails the SETs from
// the failAt-th on (1: the first).
type setConn struct {
	Conn
	sets   []string
	failAt int
}

type intRow int64

func (r intRow) Scan(dest ...any) error {
	*dest[0].(*int64) = int64(r)
	return nil
}

func (c *setConn) QueryRow(ctx context.Context, q string, args ...any) Row { return intRow(100) }

func (c *setConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	c.sets = append(c.sets, q)
	if c.failAt > 0 && len(c.sets) >= c.failAt {
		return 0, errors.New("connection lost")
	}
	return 0, nil
}

// InnoDB's fill factor is set for the key builds and put back after; a
// put-back that fails is an error naming the statement to run, not
// silence.
func TestPrepareKeysRestore(t *testing.T) {
	t.Parallel()
	b := MySQL.BlockTable("slob_1")
	c := &setConn{}
	restore, err := b.PrepareKeys(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"SET GLOBAL innodb_fill_factor = 10", "SET GLOBAL innodb_fill_factor = 100"}; strings.Join(c.sets, ";") != strings.Join(want, ";") {
		t.Errorf("statements %q, want %q", c.sets, want)
	}

	c = &setConn{failAt: 2}
	restore, err = b.PrepareKeys(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	err = restore()
	if err == nil || !strings.Contains(err.Error(), "innodb_fill_factor is still 10") || !strings.Contains(err.Error(), "SET GLOBAL innodb_fill_factor = 100") {
		t.Errorf("a failed put-back: %v", err)
	}

	restore, err = Postgres.BlockTable("slob_1").PrepareKeys(context.Background(), nil)
	if err != nil || restore() != nil {
		t.Errorf("PostgreSQL's layout needs no setting: %v", err)
	}
}
