package compare

import (
	"math"
	"testing"
)

// Against published tables of Student's t (two-sided 95% critical values)
// and closed forms (df=1 is Cauchy, df=2 has an algebraic CDF).
func TestStudentT(t *testing.T) {
	for _, c := range []struct{ df, want float64 }{{1, 12.7062}, {2, 4.3027}, {4, 2.7764}, {9, 2.2622}, {30, 2.0423}, {1000, 1.9623}} {
		if got := tQuantile(0.975, c.df); math.Abs(got-c.want) > 5e-4 {
			t.Errorf("t(0.975, %g) = %.4f, want %.4f", c.df, got, c.want)
		}
	}
	for _, x := range []float64{-3, -0.5, 0, 0.7, 2.5} {
		if got, want := tCDF(x, 1), 0.5+math.Atan(x)/math.Pi; math.Abs(got-want) > 1e-12 {
			t.Errorf("Cauchy CDF(%g) = %.15f, want %.15f", x, got, want)
		}
		if got, want := tCDF(x, 2), 0.5+x/(2*math.Sqrt(2+x*x)); math.Abs(got-want) > 1e-12 {
			t.Errorf("t2 CDF(%g) = %.15f, want %.15f", x, got, want)
		}
	}
	if p := tTwoSided(4.3027, 2); math.Abs(p-0.05) > 1e-4 {
		t.Errorf("two-sided p at the 95%% critical value of t2: %g", p)
	}
}
