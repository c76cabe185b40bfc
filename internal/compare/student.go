package compare

import "math"

// Student's t distribution, for intervals and tests on the logs of a few
// runs' ratios (see docs/statistics.md for why t and not ranks).

// tCDF is P(T <= t) for Student's t with df degrees of freedom (df may be
// fractional: Welch's). It is the regularized incomplete beta function
// I_x(df/2, 1/2) at x = df/(df+t²).
func tCDF(t, df float64) float64 {
	if math.IsNaN(t) || df <= 0 {
		return math.NaN()
	}
	if math.IsInf(t, 0) {
		if t > 0 {
			return 1
		}
		return 0
	}
	tail := 0.5 * betaInc(df/2, 0.5, df/(df+t*t))
	if t > 0 {
		return 1 - tail
	}
	return tail
}

// tTwoSided is the two-sided p-value of t with df degrees of freedom.
func tTwoSided(t, df float64) float64 {
	return math.Min(1, 2*tCDF(-math.Abs(t), df))
}

// tQuantile is the q quantile of t with df degrees of freedom, by
// bisection on tCDF (60 halvings: far below any printed digit).
func tQuantile(q, df float64) float64 {
	if q == 0.5 {
		return 0
	}
	if q < 0.5 {
		return -tQuantile(1-q, df)
	}
	lo, hi := 0.0, 1.0
	for tCDF(hi, df) < q {
		hi *= 2
		if hi > 1e12 {
			return math.Inf(1)
		}
	}
	for range 60 {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// betaInc is the regularized incomplete beta function I_x(a, b), by its
// continued fraction (Lentz's method), on the side where it converges.
func betaInc(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		for _, num := range [2]float64{
			fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)),
			-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1)),
		} {
			d = 1 + num*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + num/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			h *= d * c
		}
		if math.Abs(d*c-1) < 1e-15 {
			break
		}
	}
	return h
}
