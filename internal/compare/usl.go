package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// USL is a fit of Gunther's Universal Scalability Law to throughput X
// measured at concurrency (or CPUs) N:
//
//	X(N) = λN / (1 + σ(N−1) + κN(N−1))
//
// σ is contention (the share of the work that serialises), κ coherency
// (the cost of keeping shared data consistent, which grows with the
// pairs of workers). With κ > 0 throughput peaks at the knee
// N* = sqrt((1−σ)/κ) and falls after it.
type USL struct {
	Lambda float64 `json:"lambda"` // throughput of one
	Sigma  float64 `json:"sigma"`
	Kappa  float64 `json:"kappa"`
	// Knee is N*, NaN when there is none (κ ≤ 0: no retrograde
	// throughput in what was measured). Peak is X(N*).
	Knee float64 `json:"knee"`
	Peak float64 `json:"peak"`
	R2   float64 `json:"r2"`     // goodness of fit
	N    int     `json:"points"` // runs fitted
	// Note says how to read the knee: none in range, beyond the range
	// measured (an extrapolation), or within it.
	Note string `json:"note"`

	maxN float64 // the largest step fitted
}

// At is the fitted throughput at n.
func (u USL) At(n float64) float64 {
	return u.Lambda * n / (1 + u.Sigma*(n-1) + u.Kappa*n*(n-1))
}

// FitUSL fits the law to the points (n[i], x[i]) by least squares
// (Levenberg–Marquardt, started from the law's linear form). It needs
// three distinct n.
func FitUSL(n, x []float64) (USL, error) {
	if len(n) != len(x) {
		return USL{}, fmt.Errorf("usl: %d n for %d throughputs", len(n), len(x))
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(n)))
	if len(distinct) < 3 {
		return USL{}, fmt.Errorf("the Universal Scalability Law has three parameters: it needs three steps or more, not %d", len(distinct))
	}
	for i := range n {
		if !(n[i] > 0) || !(x[i] > 0) {
			return USL{}, fmt.Errorf("usl: step %g has throughput %g: every point must be positive", n[i], x[i])
		}
	}
	p := uslStart(n, x)
	sse := func(p [3]float64) float64 {
		var s float64
		for i := range n {
			d := x[i] - uslAt(p, n[i])
			s += d * d
		}
		return s
	}
	cur := sse(p)
	mu := 1e-3
	for iter := 0; iter < 500; iter++ {
		var jtj [3][3]float64
		var jtr [3]float64
		for i := range n {
			j := uslGrad(p, n[i])
			r := x[i] - uslAt(p, n[i])
			for a := range 3 {
				jtr[a] += j[a] * r
				for b := range 3 {
					jtj[a][b] += j[a] * j[b]
				}
			}
		}
		improved := false
		for range 30 {
			m := jtj
			for a := range 3 {
				m[a][a] += mu * max(jtj[a][a], 1e-300)
			}
			d, ok := solve3(m, jtr)
			if !ok {
				mu *= 10
				continue
			}
			q := [3]float64{p[0] + d[0], p[1] + d[1], p[2] + d[2]}
			if s := sse(q); s < cur {
				rel := (cur - s) / max(cur, 1e-300)
				p, cur, improved = q, s, true
				mu = max(mu/10, 1e-12)
				if rel < 1e-14 {
					iter = 500
				}
				break
			}
			mu *= 10
		}
		if !improved {
			break
		}
	}
	u := USL{Lambda: p[0], Sigma: p[1], Kappa: p[2], N: len(n), Knee: math.NaN(), Peak: math.NaN(), maxN: distinct[len(distinct)-1]}
	var mean, sst float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		sst += (v - mean) * (v - mean)
	}
	u.R2 = math.NaN()
	if sst > 0 {
		u.R2 = 1 - cur/sst
	}
	hi := distinct[len(distinct)-1]
	knee := math.Sqrt((1 - u.Sigma) / u.Kappa)
	switch {
	case u.Kappa <= 0 || u.Sigma >= 1:
		u.Note = "no knee in range: throughput does not turn down (κ ≤ 0)"
	case knee > 10*hi:
		// κ is then a rounding away from 0: nothing measured speaks of it.
		u.Note = fmt.Sprintf("no knee in range: κ ≈ 0, throughput does not turn down within 10× the %g measured", hi)
	default:
		u.Knee, u.Peak = knee, u.At(knee)
		if knee > hi {
			u.Note = fmt.Sprintf("knee at N≈%.0f, beyond the %g measured: an extrapolation", knee, hi)
		} else {
			u.Note = fmt.Sprintf("knee at N≈%.1f: more than that lowers throughput", knee)
		}
	}
	if u.Sigma < 0 {
		// Gunther reads σ < 0 as superlinear scaling: more than N times
		// one's throughput at N, as when caches warm with the load.
		u.Note += "; σ < 0: superlinear at the first steps"
	}
	return u, nil
}

// minR2 is the least share of the runs' variation a fit must explain to
// be read: below it σ, κ and the knee say more of the noise than of the
// platform.
const minR2 = 0.8

// Failed says why the fit is not to be read or drawn, "" when it may
// be: it explains too little of the runs (R² below minR2), or it is
// unphysical: κ < 0 that matters within ten times the largest step (the
// law's denominator then falls, and the curve turns up and runs off to
// infinity: no contention model gives that), or σ ≥ 1 (each worker
// added would take away more than it brings from the first step).
func (u USL) Failed() string {
	var why []string
	if !(u.R2 >= minR2) {
		why = append(why, fmt.Sprintf("R² %.2f, below the %.2f a fit must explain to be read", u.R2, minR2))
	}
	if hi := u.maxN; u.Kappa < 0 && -u.Kappa*hi*(hi-1) > 0.01*(1+u.Sigma*(hi-1)) {
		why = append(why, fmt.Sprintf("κ %.3g < 0: throughput would rise faster than linearly and run off to infinity, which no contention gives", u.Kappa))
	}
	if u.Sigma >= 1 {
		why = append(why, fmt.Sprintf("σ %.3g ≥ 1: unphysical", u.Sigma))
	}
	return strings.Join(why, "; ")
}

func uslAt(p [3]float64, n float64) float64 {
	return p[0] * n / (1 + p[1]*(n-1) + p[2]*n*(n-1))
}

// uslGrad is the gradient of X(n) in λ, σ, κ.
func uslGrad(p [3]float64, n float64) [3]float64 {
	d := 1 + p[1]*(n-1) + p[2]*n*(n-1)
	return [3]float64{n / d, -p[0] * n * (n - 1) / (d * d), -p[0] * n * n * (n - 1) / (d * d)}
}

// uslStart guesses λ from the smallest step (contention barely shows
// there) and σ, κ from the law's linear form n·λ/X − 1 = σ(n−1) + κn(n−1).
func uslStart(n, x []float64) [3]float64 {
	lo := slices.Min(n)
	var lambda float64
	k := 0
	for i := range n {
		if n[i] == lo {
			lambda += x[i] / n[i]
			k++
		}
	}
	lambda /= float64(k)
	var a11, a12, a22, b1, b2 float64
	for i := range n {
		y := n[i]*lambda/x[i] - 1
		u, v := n[i]-1, n[i]*(n[i]-1)
		a11, a12, a22 = a11+u*u, a12+u*v, a22+v*v
		b1, b2 = b1+u*y, b2+v*y
	}
	det := a11*a22 - a12*a12
	if det == 0 {
		return [3]float64{lambda, 0, 0}
	}
	return [3]float64{lambda, (b1*a22 - b2*a12) / det, (a11*b2 - a12*b1) / det}
}

// solve3 solves m·d = b by Gaussian elimination with partial pivoting.
func solve3(m [3][3]float64, b [3]float64) ([3]float64, bool) {
	for c := range 3 {
		piv := c
		for r := c + 1; r < 3; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[piv][c]) {
				piv = r
			}
		}
		if m[piv][c] == 0 || math.IsNaN(m[piv][c]) {
			return [3]float64{}, false
		}
		m[c], m[piv] = m[piv], m[c]
		b[c], b[piv] = b[piv], b[c]
		for r := c + 1; r < 3; r++ {
			f := m[r][c] / m[c][c]
			for k := c; k < 3; k++ {
				m[r][k] -= f * m[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	var d [3]float64
	for r := 2; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < 3; k++ {
			s -= m[r][k] * d[k]
		}
		d[r] = s / m[r][r]
	}
	return d, true
}
