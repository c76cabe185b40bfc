package slob

import (
	"math"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
)

func TestUpdatePctIsSpreadEvenly(t *testing.T) {
	for _, pct := range []int{0, 1, 25, 50, 99, 100} {
		s := &Slob{Schemas: 2, Scale: 1000, WorkUnit: 10, UpdatePct: pct}
		w := s.NewWorker(0, 1, engine.Postgres).(*worker)
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
	w := s.NewWorker(3, 7, engine.Postgres).(*worker)
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
		if w := s.NewWorker(id, 1, engine.Postgres).(*worker); w.own.read[len("SELECT sum(n) FROM "):len("SELECT sum(n) FROM ")+6] != want {
			t.Errorf("session %d reads %q", id, w.own.read)
		}
	}
}

func valid() Slob {
	return Slob{Schemas: 1, Scale: 10, WorkUnit: 10, UpdatePct: 100, ThreadsPerSchema: 1, RedoStress: "lite", ThinkEvery: 1}
}

func TestValidate(t *testing.T) {
	bad := []func(*Slob){
		func(s *Slob) { s.Schemas = 0 },
		func(s *Slob) { s.Scale = 0 },
		func(s *Slob) { s.WorkUnit = 11 },
		func(s *Slob) { s.WorkUnit = 0 },
		func(s *Slob) { s.UpdatePct = 101 },
		func(s *Slob) { s.ThreadsPerSchema = 0 },
		func(s *Slob) { s.HotSchema = -1 },
		func(s *Slob) { s.RedoStress = "medium" },
		func(s *Slob) { s.ThinkEvery = 0 },
		func(s *Slob) { s.ThinkTime = "5" },
		func(s *Slob) { s.ThinkTime = "10ms:5ms" },
		func(s *Slob) { s.ThinkTime = "-1ms" },
	}
	for i, f := range bad {
		s := valid()
		f(&s)
		if s.Validate() == nil {
			t.Errorf("case %d: %+v accepted", i, s)
		}
	}
	s := valid()
	s.ThinkTime = "1ms:3ms"
	if err := s.Validate(); err != nil || s.ThinkMin != time.Millisecond || s.ThinkMax != 3*time.Millisecond {
		t.Errorf("valid parameters: %v, think %v-%v", err, s.ThinkMin, s.ThinkMax)
	}
}

// The load's permutation is a bijection, and neighbouring keys land far
// apart: WORK_UNIT consecutive keys are random blocks.
func TestPermutationScattersKeys(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 17, 1000, 65537} {
		p := newPermutation(n, 42)
		pos := make([]uint64, n) // position of each id
		seen := make([]bool, n)
		for x := range n {
			id := p.at(x)
			if id >= n || seen[id] {
				t.Fatalf("n=%d: position %d maps to %d (out of range or twice)", n, x, id)
			}
			seen[id], pos[id] = true, x
		}
		if n < 1000 {
			continue
		}
		// Adjacent ids: mean distance of their positions is about n/3 for
		// a random layout, 1 for a sequential one.
		var sum float64
		for id := uint64(1); id < n; id++ {
			sum += math.Abs(float64(pos[id]) - float64(pos[id-1]))
		}
		if mean := sum / float64(n-1); mean < float64(n)/4 || mean > float64(n)*0.42 {
			t.Errorf("n=%d: adjacent keys are %.0f positions apart on average, want about %d", n, mean, n/3)
		}
	}
}

func TestHotSchema(t *testing.T) {
	s := valid()
	s.Schemas, s.Scale, s.WorkUnit, s.HotSchema = 4, 1000, 1, 4
	w := s.NewWorker(2, 1, engine.Postgres).(*worker) // slob_3
	hot := 0
	for range 1000 {
		w.Next()
		if w.onHot {
			hot++
		}
	}
	if hot != 250 {
		t.Errorf("HOT_SCHEMA_FREQUENCY 4: %d of 1000 operations went to slob_1, want 250", hot)
	}
	if w.hot.read == w.own.read || w.hot.read[len("SELECT sum(n) FROM "):][:7] != "slob_1 " {
		t.Errorf("hot statement %q, own %q", w.hot.read, w.own.read)
	}
}

func TestThinkTime(t *testing.T) {
	s := valid()
	s.ThinkTime, s.ThinkEvery = "2ms:4ms", 3
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	w := s.NewWorker(0, 1, engine.Postgres).(*worker)
	var thinks int
	var total time.Duration
	for range 3000 {
		w.Next()
		if d := w.Think(); d != 0 {
			if d < 2*time.Millisecond || d > 4*time.Millisecond {
				t.Fatalf("think %v outside [2ms, 4ms]", d)
			}
			thinks++
			total += d
		}
	}
	if thinks != 1000 {
		t.Errorf("THINK_TM_FREQUENCY 3: thought %d times in 3000 operations", thinks)
	}
	if mean := total / time.Duration(thinks); mean < 2900*time.Microsecond || mean > 3100*time.Microsecond {
		t.Errorf("mean think %v, want about 3ms", mean)
	}
}

// REDO_STRESS=heavy rewrites the row with contents that differ at both
// ends from one update to the next.
func TestHeavyRedoRowsDiffer(t *testing.T) {
	s := valid()
	s.RedoStress = "heavy"
	w := s.NewWorker(0, 1, engine.Postgres).(*worker)
	if n := engine.Postgres.BlockTable(table(1)).Pad; len(w.pads) != 2*n || w.padLen != n {
		t.Fatalf("pads %d bytes, rows %d", len(w.pads), w.padLen)
	}
	if light := valid(); light.NewWorker(0, 1, engine.Postgres).(*worker).pads != "" {
		t.Error("lite redo rewrites rows")
	}
}
