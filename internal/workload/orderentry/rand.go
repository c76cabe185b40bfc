package orderentry

import (
	"math/rand/v2"
	"strings"
)

// rng is the workload's random source: PCG seeded from the run's seed and a
// stream number, so every session and every load unit has its own
// reproducible sequence.
type rng struct{ r *rand.Rand }

func newRNG(seed, stream uint64) *rng {
	return &rng{rand.New(rand.NewPCG(seed, stream))}
}

// between returns a uniform integer in [lo, hi].
func (g *rng) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// nurand is TPC-C's non-uniform random function NURand(A, x, y) (clause
// 2.1.6) with run-time constant c.
func (g *rng) nurand(a, x, y, c int) int {
	return ((g.between(0, a)|g.between(x, y))+c)%(y-x+1) + x
}

// money returns a uniform amount in [lo, hi] with two decimals.
func (g *rng) money(lo, hi float64) float64 {
	cents := g.between(int(lo*100+0.5), int(hi*100+0.5))
	return float64(cents) / 100
}

// fraction returns a uniform value in [0, max] with four decimals (tax, discount).
func (g *rng) fraction(maxTenThousandths int) float64 {
	return float64(g.between(0, maxTenThousandths)) / 10000
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// astring is a random alphanumeric string of length [lo, hi] (clause 4.3.2.2).
func (g *rng) astring(lo, hi int) string {
	b := make([]byte, g.between(lo, hi))
	for i := range b {
		b[i] = alnum[g.r.IntN(len(alnum))]
	}
	return string(b)
}

// nstring is a random numeric string of length [lo, hi].
func (g *rng) nstring(lo, hi int) string {
	b := make([]byte, g.between(lo, hi))
	for i := range b {
		b[i] = byte('0' + g.r.IntN(10))
	}
	return string(b)
}

// data is I_DATA / S_DATA: in 10% of rows "ORIGINAL" is put at a random
// position (clause 4.3.3.1).
func (g *rng) data() string {
	s := g.astring(26, 50)
	if g.r.IntN(10) == 0 {
		p := g.r.IntN(len(s) - 8)
		s = s[:p] + "ORIGINAL" + s[p+8:]
	}
	return s
}

func (g *rng) zip() string { return g.nstring(4, 4) + "11111" }

func (g *rng) state() string {
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	return string([]byte{letters[g.r.IntN(26)], letters[g.r.IntN(26)]})
}

var syllables = [10]string{"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}

// lastName builds C_LAST from a number in [0, 999] (clause 4.3.2.3).
func lastName(n int) string {
	var b strings.Builder
	b.WriteString(syllables[n/100])
	b.WriteString(syllables[n/10%10])
	b.WriteString(syllables[n%10])
	return b.String()
}

// constants are NURand's run-time constants C (clause 2.1.6.1).
type constants struct {
	cLast, cID, olIID int
}

// loadConstants draws the constants used to generate the initial data.
func loadConstants(seed uint64) constants {
	g := newRNG(seed, 0xC0)
	return constants{cLast: g.between(0, 255), cID: g.between(0, 1023), olIID: g.between(0, 8191)}
}

// runConstants draws the constants of a run: C for C_LAST must differ from
// the load's by a delta in [65, 119], neither 96 nor 112 (clause 2.1.6.1),
// so that the run's last names are not the ones the load favoured.
func runConstants(seed uint64, load constants) constants {
	g := newRNG(seed, 0xC1)
	c := constants{cID: g.between(0, 1023), olIID: g.between(0, 8191)}
	for {
		c.cLast = g.between(0, 255)
		d := c.cLast - load.cLast
		if d < 0 {
			d = -d
		}
		if d >= 65 && d <= 119 && d != 96 && d != 112 {
			return c
		}
	}
}
