package metrics

// DefaultSeriesPoints is the default bound of a series. The step doubles
// whenever the bound is reached, so a long series holds between half the
// bound and the bound: a 24-hour run at one point a second ends with 1,350
// points of 64 s. At the sizes measured on order-entry (about 170 bytes of
// JSON per driver point, 300 per database point, 1,600 per OS point with
// one busy disk) the three series of a day take about 2.8 MB of the result
// file.
const DefaultSeriesPoints = 1440

// Bounded is a time series that keeps at most about Max points however
// long the run: when it is full it merges adjacent pairs, so its step
// (raw points per stored point) doubles and the points stay evenly spaced.
// Points that arrive after a doubling are merged into a pending point
// until it covers a whole step. Merging is the caller's function, which
// must preserve what the points count (sums of counts, seconds-weighted
// means of rates), so that totals over the series stay exact.
//
// Join, when set, says whether two adjacent points may merge; points it
// keeps apart (a phase change: warm-up, measured window, drain) stay
// apart for ever, so a series holds at most Max points plus one per such
// edge. The full-resolution series is the journal's; this one is for the
// result file and its charts.
//
// It is not safe for concurrent use: its owner holds its own lock.
type Bounded[T any] struct {
	max   int
	merge func(earlier, later T) T
	join  func(earlier, later T) bool

	pts   []T
	edges int // adjacent pairs of pts that Join keeps apart
	step  int // raw points per stored point
	pend  T   // the point being filled up to a whole step
	pendN int // raw points in pend (0: none)
	added int64
}

// NewBounded returns an empty series of at most max points (at least 2;
// 0 or less means DefaultSeriesPoints). merge combines two adjacent
// points, the earlier first; join may be nil (every pair may merge).
func NewBounded[T any](max int, merge func(earlier, later T) T, join func(earlier, later T) bool) *Bounded[T] {
	switch {
	case max <= 0:
		max = DefaultSeriesPoints
	case max < 2:
		max = 2
	}
	return &Bounded[T]{max: max, merge: merge, join: join, step: 1, pts: make([]T, 0, max)}
}

func (b *Bounded[T]) joins(x, y T) bool { return b.join == nil || b.join(x, y) }

// Add appends one raw point.
func (b *Bounded[T]) Add(p T) {
	b.added++
	if b.pendN > 0 && !b.joins(b.pend, p) {
		// An edge: the pending point ends short of its step, never
		// merged with what follows.
		b.push(false)
	}
	if b.pendN == 0 {
		b.pend, b.pendN = p, 1
	} else {
		b.pend, b.pendN = b.merge(b.pend, p), b.pendN+1
	}
	if b.pendN >= b.step {
		b.push(true)
	}
}

// push moves the pending point into the stored points, halving them when
// the bound is reached; whole says it covers a whole step.
func (b *Bounded[T]) push(whole bool) {
	if n := len(b.pts); n > 0 && !b.joins(b.pts[n-1], b.pend) {
		b.edges++
	}
	b.pts = append(b.pts, b.pend)
	var zero T
	b.pend, b.pendN = zero, 0
	if len(b.pts) >= b.max+b.edges {
		b.halve(whole)
	}
}

// halve merges adjacent pairs of stored points that may merge and doubles
// the step. The bound counts the edges on top of max, so a series cut by
// many edges halves what it can and never loops on what it cannot. Pairs
// start at each phase's first point, so a phase's points stay aligned;
// when the last point (a whole step, of the phase still going on: lastWhole)
// has no partner, it goes back to pending and waits for the points that
// will complete the new step.
func (b *Bounded[T]) halve(lastWhole bool) {
	n := len(b.pts)
	out := b.pts[:0]
	var zero T
	for i := 0; i < n; {
		if i+1 < n && b.joins(b.pts[i], b.pts[i+1]) {
			out = append(out, b.merge(b.pts[i], b.pts[i+1]))
			i += 2
			continue
		}
		if i == n-1 && lastWhole && b.pendN == 0 {
			b.pend, b.pendN = b.pts[i], b.step
			i++
			continue
		}
		out = append(out, b.pts[i])
		i++
	}
	for i := len(out); i < n; i++ {
		b.pts[i] = zero // let go of what the points held
	}
	b.pts = out
	b.step *= 2
	b.edges = 0
	for i := 1; i < len(out); i++ {
		if !b.joins(out[i-1], out[i]) {
			b.edges++
		}
	}
}

// Points returns a copy of the series: the stored points and the pending
// one, so that the series reaches the last point added.
func (b *Bounded[T]) Points() []T {
	out := make([]T, len(b.pts), len(b.pts)+1)
	copy(out, b.pts)
	if b.pendN > 0 {
		out = append(out, b.pend)
	}
	return out
}

// Len is how many points Points would return.
func (b *Bounded[T]) Len() int {
	if b.pendN > 0 {
		return len(b.pts) + 1
	}
	return len(b.pts)
}

// Added is how many raw points were added.
func (b *Bounded[T]) Added() int64 { return b.added }

// Step is how many raw points each stored point now stands for (1, 2, 4,
// ...); points next to an edge may stand for fewer.
func (b *Bounded[T]) Step() int { return b.step }

// Series is the driver's bounded series of intervals.
type Series = Bounded[Interval]

// NewSeries returns a bounded series of intervals (max 0: the default)
// that merges with MergeIntervals and keeps phase changes.
func NewSeries(max int) *Series {
	return NewBounded(max, MergeIntervals, SamePhase)
}

// SamePhase tells whether two intervals belong to the same phase: only
// those merge.
func SamePhase(a, b Interval) bool { return a.Phase == b.Phase }

// MergeIntervals combines two adjacent intervals, a before b, into one
// covering both: counts and seconds add up, time, sessions and lag are
// b's.
// The merged percentiles are the larger of the two: an upper bound, since
// percentiles do not combine; the exact ones are in the histograms.
func MergeIntervals(a, b Interval) Interval {
	return Interval{
		At:         b.At,
		Seconds:    a.Seconds + b.Seconds,
		Phase:      b.Phase,
		Commits:    a.Commits + b.Commits,
		Rollbacks:  a.Rollbacks + b.Rollbacks,
		Errors:     a.Errors + b.Errors,
		Retries:    a.Retries + b.Retries,
		P50Micros:  max(a.P50Micros, b.P50Micros),
		P95Micros:  max(a.P95Micros, b.P95Micros),
		P99Micros:  max(a.P99Micros, b.P99Micros),
		ActiveSess: b.ActiveSess,
		LagMillis:  b.LagMillis,
	}
}
