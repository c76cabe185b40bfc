package compare

import (
	"math"
	"testing"
)

// Reference values below were computed with SciPy 1.17 (mannwhitneyu,
// wilcoxon) for these textbook samples; the tests hold the code to them.

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestMannWhitneyExact(t *testing.T) {
	u, p := MannWhitney([]float64{19, 22, 16, 29, 24}, []float64{20, 11, 17, 12})
	if u != 17 || !near(p, 0.1111111111111111, 1e-12) {
		t.Errorf("U=%v p=%v, want 17, 0.1111", u, p)
	}
	// Completely separated groups of 4: the smallest p a 4+4 test can give.
	if _, p := MannWhitney([]float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}); !near(p, 2.0/70, 1e-12) {
		t.Errorf("separated 4+4: p=%v, want 2/70", p)
	}
}

func TestMannWhitneyTiesNormal(t *testing.T) {
	a := []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}
	b := []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}
	u, p := MannWhitney(a, b)
	if u != 58 || !near(p, 0.13291945818531892, 1e-9) {
		t.Errorf("U=%v p=%v, want 58, 0.13292", u, p)
	}
}

func TestWilcoxonExact(t *testing.T) {
	a := []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}
	b := []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	w, n, p := Wilcoxon(d)
	if w != 40 || n != 9 || !near(p, 0.0390625, 1e-12) {
		t.Errorf("W+=%v n=%d p=%v, want 40, 9, 0.0390625", w, n, p)
	}
}

func TestWilcoxonTiesAndZeros(t *testing.T) {
	d := []float64{15, -7, 5, 20, 0, -9, 17, -12, 5, -10}
	w, n, p := Wilcoxon(d)
	if w != 27 || n != 9 || !near(p, 0.6352893188352069, 1e-9) {
		t.Errorf("W+=%v n=%d p=%v, want 27, 9 (the zero dropped), 0.63529", w, n, p)
	}
}

func TestMedianAndCI(t *testing.T) {
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median %v", m)
	}
	if m := Median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median %v", m)
	}
	if _, _, ok := MedianCI([]float64{1, 2, 3, 4, 5}, 0.95); ok {
		t.Error("a 95% median interval from 5 values")
	}
	// n=10: P(B<=1) = 11/1024 <= 0.025 < P(B<=2): the interval is x(2)..x(9).
	lo, hi, ok := MedianCI([]float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, 0.95)
	if !ok || lo != 2 || hi != 9 {
		t.Errorf("interval [%v, %v] %v, want [2, 9]", lo, hi, ok)
	}
	if MinMedianCI(0.95) != 6 || MinPaired(0.05) != 6 || MinUnpaired(0.05) != 4 {
		t.Errorf("minimum sizes %d %d %d, want 6 6 4", MinMedianCI(0.95), MinPaired(0.05), MinUnpaired(0.05))
	}
}

func TestBootstrapRatio(t *testing.T) {
	a := []float64{100, 101, 99, 102, 98, 100, 101, 99}
	b := []float64{90, 91, 89, 92, 88, 90, 91, 89}
	lo, hi := BootstrapRatio(a, b, 0.95, 5000, 1)
	if lo > 0.9 || hi < 0.9 || lo < 0.86 || hi > 0.94 {
		t.Errorf("interval [%v, %v] should hold 0.90 and be narrow", lo, hi)
	}
	lo2, hi2 := BootstrapRatio(a, b, 0.95, 5000, 1)
	if lo2 != lo || hi2 != hi {
		t.Error("the same seed gave another interval")
	}
}

func TestHolm(t *testing.T) {
	got := Holm([]float64{0.01, 0.04, 0.03, 0.005})
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i := range want {
		if !near(got[i], want[i], 1e-12) {
			t.Errorf("Holm = %v, want %v", got, want)
			break
		}
	}
}
