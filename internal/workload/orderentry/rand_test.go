package orderentry

import (
	"math"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/engine"
)

func TestNURandRange(t *testing.T) {
	g := newRNG(7, 1)
	for _, tc := range []struct{ a, x, y int }{{255, 0, 999}, {1023, 1, 3000}, {8191, 1, 100000}} {
		lo, hi := tc.y, tc.x
		for range 200000 {
			v := g.nurand(tc.a, tc.x, tc.y, 123)
			if v < tc.x || v > tc.y {
				t.Fatalf("NURand(%d,%d,%d) = %d out of range", tc.a, tc.x, tc.y, v)
			}
			lo, hi = min(lo, v), max(hi, v)
		}
		// The whole range is reachable: 200000 draws come within 0.1% of both ends.
		if slack := (tc.y - tc.x) / 1000; lo > tc.x+slack || hi < tc.y-slack {
			t.Errorf("NURand(%d,%d,%d) drew only [%d, %d]", tc.a, tc.x, tc.y, lo, hi)
		}
	}
}

// NURand is non-uniform: with A much smaller than the range, some values
// are drawn far more often than a uniform draw would.
func TestNURandIsSkewed(t *testing.T) {
	g := newRNG(3, 9)
	counts := make([]int, 1000)
	const n = 500000
	for range n {
		counts[g.nurand(255, 0, 999, 42)]++
	}
	most := 0
	for _, c := range counts {
		most = max(most, c)
	}
	if uniform := n / 1000; most < 2*uniform {
		t.Errorf("most frequent last name drawn %d times; a uniform draw gives about %d: not skewed", most, uniform)
	}
}

func TestRunConstantsDelta(t *testing.T) {
	for seed := uint64(0); seed < 500; seed++ {
		l := loadConstants(seed)
		r := runConstants(seed+1000, l)
		d := int(math.Abs(float64(r.cLast - l.cLast)))
		if d < 65 || d > 119 || d == 96 || d == 112 {
			t.Fatalf("seed %d: C_LAST delta %d (load %d, run %d) breaks clause 2.1.6.1", seed, d, l.cLast, r.cLast)
		}
		if r.cLast < 0 || r.cLast > 255 {
			t.Fatalf("C_LAST %d out of [0,255]", r.cLast)
		}
	}
}

func TestLastName(t *testing.T) {
	for n, want := range map[int]string{0: "BARBARBAR", 371: "PRICALLYOUGHT", 999: "EINGEINGEING", 40: "BARPRESBAR"} {
		if got := lastName(n); got != want {
			t.Errorf("lastName(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMixOverManyDraws(t *testing.T) {
	o := &OrderEntry{Warehouses: 4, HomeWarehouse: "fixed"}
	w := newWorker(o, 3, 11, engine.Postgres)
	var counts [numTxTypes]int
	const n = 100000
	for i := range n {
		counts[w.Next()]++
		// Every complete deck holds the exact mix.
		if (i+1)%100 == 0 {
			for typ, c := range counts {
				if c*100 != mix[typ]*(i+1) {
					t.Fatalf("after %d draws %s drawn %d times, want %d", i+1, txNames[typ], c, mix[typ]*(i+1)/100)
				}
			}
		}
	}
}

func TestNewOrderInputs(t *testing.T) {
	o := &OrderEntry{Warehouses: 5, HomeWarehouse: "fixed"}
	w := newWorker(o, 2, 5, engine.Postgres)
	var orders, rollbacks, lines, remote int
	for range 200000 {
		if w.Next() != txNewOrder {
			continue
		}
		orders++
		if w.w != 3 {
			t.Fatalf("session 2 of 5 warehouses has home %d, want 3", w.w)
		}
		if w.nlines < 5 || w.nlines > 15 {
			t.Fatalf("%d order lines, want 5..15", w.nlines)
		}
		for k := 1; k < w.nlines-1; k++ {
			if w.lines[w.order[k]].before(w.lines[w.order[k-1]]) {
				t.Fatalf("lines not in lock order: %v", w.order[:w.nlines])
			}
		}
		if w.rollback {
			rollbacks++
			if last := w.lines[w.order[w.nlines-1]]; last.item != numItems+1 {
				t.Fatalf("rollback order's last processed item is %d, want the unused %d", last.item, numItems+1)
			}
		}
		for _, l := range w.lines[:w.nlines] {
			lines++
			if l.supplyW != w.w {
				remote++
			}
			if l.qty < 1 || l.qty > 10 {
				t.Fatalf("quantity %d, want 1..10", l.qty)
			}
		}
	}
	if p := float64(rollbacks) / float64(orders); p < 0.007 || p > 0.013 {
		t.Errorf("rollback share %.4f, want about 0.01", p)
	}
	if p := float64(remote) / float64(lines); p < 0.007 || p > 0.013 {
		t.Errorf("remote supply share %.4f, want about 0.01", p)
	}
}

func TestWorkersAreReproducible(t *testing.T) {
	o := &OrderEntry{Warehouses: 2, HomeWarehouse: "random"}
	a, b := newWorker(o, 1, 99, engine.SQLite), newWorker(o, 1, 99, engine.SQLite)
	for i := range 1000 {
		if ta, tb := a.Next(), b.Next(); ta != tb || a.w != b.w || a.d != b.d || a.c != b.c {
			t.Fatalf("draw %d differs between two workers with the same seed and id", i)
		}
	}
}

func TestColumnNames(t *testing.T) {
	got := columnNames(tables[tableWarehouse].columns)
	want := []string{"w_id", "w_name", "w_street_1", "w_street_2", "w_city", "w_state", "w_zip", "w_tax", "w_ytd"}
	if len(got) != len(want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("columns %v, want %v", got, want)
		}
	}
	if n := len(columnNames(tables[tableStock].columns)); n != 17 {
		t.Errorf("stock has %d columns, want 17", n)
	}
}

// Load units generate their rows from the seed alone: the same seed gives
// the same data whichever worker runs the unit, another seed other data.
func TestLoadRowsAreSeeded(t *testing.T) {
	a := itemRows(newRNG(1, stream(0, 1, 3)), 1, 100)
	b := itemRows(newRNG(1, stream(0, 1, 3)), 1, 100)
	c := itemRows(newRNG(2, stream(0, 1, 3)), 1, 100)
	same, differ := true, false
	for i := range a {
		for j := range a[i] {
			same = same && a[i][j] == b[i][j]
			differ = differ || a[i][j] != c[i][j]
		}
	}
	if !same || !differ {
		t.Errorf("same seed equal: %v; other seed differs: %v", same, differ)
	}
	original := 0
	for _, r := range itemRows(newRNG(9, 1), 1, 20000) {
		if s := r[4].(string); len(s) < 26 || len(s) > 50 {
			t.Fatalf("I_DATA length %d", len(s))
		} else if strings.Contains(s, "ORIGINAL") {
			original++
		}
	}
	if original < 1700 || original > 2300 {
		t.Errorf("%d of 20000 items say ORIGINAL, want about 10%%", original)
	}
}
