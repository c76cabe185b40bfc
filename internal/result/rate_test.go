package result

import "testing"

// A run short of 98% of its rate by no more than a transaction a session
// kept up; one short by more, or ending behind schedule, did not.
func TestRateJudge(t *testing.T) {
	for _, c := range []struct {
		achieved, lagEnd float64
		sessions         int
		behind           bool
	}{
		{48.9, 0, 8, false}, // 148 of 151 arrivals in 3.03 s, measured on a loaded host
		{48.5, 0, 1, true},  // one session: 1.5 arrivals short of 98% is more than its one
		{45, 0, 8, true},
		{50, 1.5, 8, true},
	} {
		r := Rate{TargetTPS: 50, AchievedTPS: c.achieved, LagEndS: c.lagEnd}
		r.Judge(c.sessions, 3.03)
		if r.Behind != c.behind {
			t.Errorf("%.1f/s of 50, %d sessions, %.1f s behind at the end: behind %v (%s), want %v", c.achieved, c.sessions, c.lagEnd, r.Behind, r.BehindReason, c.behind)
		}
	}
}
