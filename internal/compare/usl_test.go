package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The fit recovers σ and κ within 5% from throughputs the law generates,
// exactly and with 1% of noise (seeded, three runs a step).
func TestFitUSLRecoversParameters(t *testing.T) {
	cases := []struct{ lambda, sigma, kappa float64 }{
		{1000, 0.05, 0.002}, // the knee at 21.8 sessions, inside 1..64
		{250, 0.10, 0.0005}, // a knee at 42
		{80, 0.02, 0.0001},  // the knee at 99, beyond the range: an extrapolation
	}
	steps := []float64{1, 2, 4, 8, 16, 32, 64}
	for _, c := range cases {
		truth := USL{Lambda: c.lambda, Sigma: c.sigma, Kappa: c.kappa}
		for _, noise := range []float64{0, 0.01} {
			g := rand.New(rand.NewPCG(5, uint64(1000*c.sigma)))
			var n, x []float64
			for _, s := range steps {
				for range 3 {
					n = append(n, s)
					x = append(x, truth.At(s)*(1+noise*g.NormFloat64()))
				}
			}
			u, err := FitUSL(n, x)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(u.Sigma/c.sigma-1) > 0.05 || math.Abs(u.Kappa/c.kappa-1) > 0.05 {
				t.Errorf("truth σ=%g κ=%g, noise %g: fit σ=%.4g κ=%.4g (R² %.4f)", c.sigma, c.kappa, noise, u.Sigma, u.Kappa, u.R2)
			}
			knee := math.Sqrt((1 - c.sigma) / c.kappa)
			if math.Abs(u.Knee/knee-1) > 0.05 {
				t.Errorf("knee %.2f, truth %.2f", u.Knee, knee)
			}
			if noise == 0 && u.R2 < 0.999999 {
				t.Errorf("R² %.6f on exact data", u.R2)
			}
			if (knee > 64) != strings.Contains(u.Note, "extrapolation") {
				t.Errorf("knee %.0f: note %q", knee, u.Note)
			}
		}
	}
}

// Linear scaling and scaling with contention only have no knee.
func TestFitUSLNoKnee(t *testing.T) {
	n := []float64{1, 2, 4, 8}
	for _, sigma := range []float64{0, 0.2} {
		truth := USL{Lambda: 100, Sigma: sigma}
		var x []float64
		for _, v := range n {
			x = append(x, truth.At(v))
		}
		u, err := FitUSL(n, x)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(u.Knee) || !strings.Contains(u.Note, "no knee in range") || math.Abs(u.Kappa) > 1e-9 {
			t.Errorf("σ=%g: κ=%g knee %g note %q", sigma, u.Kappa, u.Knee, u.Note)
		}
		if math.Abs(u.Sigma-sigma) > 1e-6 {
			t.Errorf("σ %g, want %g", u.Sigma, sigma)
		}
	}
	if _, err := FitUSL([]float64{1, 2, 2}, []float64{1, 2, 2}); err == nil || !strings.Contains(err.Error(), "three steps") {
		t.Errorf("two steps: %v", err)
	}
}

// A fit that explains little of the runs, or that is unphysical (κ < 0:
// a curve that turns up and runs off to infinity), is not read: Failed
// says why, and a sweep keeps no fit to draw, only the reason.
func TestFitUSLFailed(t *testing.T) {
	// Throughput that rises faster than linearly: κ < 0.
	up := []float64{100, 150, 200, 400}
	u, err := FitUSL([]float64{1, 2, 4, 8}, up)
	if err != nil {
		t.Fatal(err)
	}
	if !(u.Kappa < 0) || !strings.Contains(u.Failed(), "κ") {
		t.Errorf("superlinear runs: κ=%g, failed %q", u.Kappa, u.Failed())
	}
	// Runs whose spread within a step swamps the steps: R² low.
	n := []float64{1, 1, 2, 2, 4, 4}
	x := []float64{100, 300, 120, 290, 200, 180}
	u, err = FitUSL(n, x)
	if err != nil {
		t.Fatal(err)
	}
	if !(u.R2 < minR2) || !strings.Contains(u.Failed(), "R²") {
		t.Errorf("noisy runs: R² %.2f, failed %q", u.R2, u.Failed())
	}
	// A good fit is read.
	truth := USL{Lambda: 100, Sigma: 0.05, Kappa: 0.001}
	var good []float64
	for _, v := range []float64{1, 2, 4, 8} {
		good = append(good, truth.At(v))
	}
	if u, _ := FitUSL([]float64{1, 2, 4, 8}, good); u.Failed() != "" {
		t.Errorf("an exact fit failed: %q", u.Failed())
	}
}
