package slob

import (
	"testing"

	"github.com/dbparity/dbparity/internal/target"
)

func TestUpdatePctIsSpreadEvenly(t *testing.T) {
	for _, pct := range []int{0, 1, 25, 50, 99, 100} {
		s := &Slob{Schemas: 2, Scale: 1000, WorkUnit: 10, UpdatePct: pct}
		w := s.NewWorker(0, 1, target.Postgres).(*worker)
		for deck := 0; deck < 20; deck++ {
			updates := 0
			for range 100 {
				if w.Next() == opUpdate {
					updates++
				}
				if w.key < s.WorkUnit || w.key > s.Scale {
					t.Fatalf("key %d outside [%d, %d]", w.key, s.WorkUnit, s.Scale)
				}
			}
			if updates != pct {
				t.Fatalf("UPDATE_PCT %d: %d updates in 100 operations", pct, updates)
			}
		}
	}
}

// Keys are uniform over the table: every tenth of it gets about a tenth.
func TestKeysAreUniform(t *testing.T) {
	s := &Slob{Schemas: 1, Scale: 100000, WorkUnit: 1, UpdatePct: 0}
	w := s.NewWorker(3, 7, target.Postgres).(*worker)
	var tenths [10]int
	const n = 200000
	for range n {
		w.Next()
		tenths[(w.key-1)*10/s.Scale]++
	}
	for i, c := range tenths {
		if c < n/10*95/100 || c > n/10*105/100 {
			t.Errorf("tenth %d drawn %d times of %d", i, c, n)
		}
	}
}

func TestSessionsSpreadOverSchemas(t *testing.T) {
	s := &Slob{Schemas: 3, Scale: 100, WorkUnit: 1}
	for id, want := range []string{"slob_1", "slob_2", "slob_3", "slob_1"} {
		if w := s.NewWorker(id, 1, target.Postgres).(*worker); w.read[len("SELECT sum(n) FROM "):len("SELECT sum(n) FROM ")+6] != want {
			t.Errorf("session %d reads %q", id, w.read)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, s := range []Slob{{0, 10, 1, 0}, {1, 0, 1, 0}, {1, 10, 11, 0}, {1, 10, 1, 101}, {1, 10, 0, 5}} {
		if s.Validate() == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if (&Slob{1, 10, 10, 100}).Validate() != nil {
		t.Error("valid parameters refused")
	}
}
