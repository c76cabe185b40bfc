package result

import "fmt"

// Rate is what an open-loop run (run --rate) asked for and got.
// Latencies of such a run count from each transaction's intended start;
// Queue is the part of them spent waiting for a free session.
type Rate struct {
	TargetTPS float64 `json:"target_tps"` // transactions per second asked for
	Arrival   string  `json:"arrival"`    // uniform or poisson
	// AchievedTPS is the transactions that started and completed in the
	// measured window (committed, rolled back by design, or failed) per
	// second: the arrivals served.
	AchievedTPS float64 `json:"achieved_tps"`
	// Queue is the time from intended start to start, measured window.
	Queue Histogram `json:"queue"`
	// LagEndS is how far behind schedule the run was at the window's end,
	// MaxLagS the most over the window's series (seconds).
	LagEndS float64 `json:"lag_end_s"`
	MaxLagS float64 `json:"max_lag_s"`
	// WarmupBacklog is the arrivals still waiting when the warm-up ended,
	// dropped so that the measured window starts on schedule.
	WarmupBacklog int64 `json:"warmup_backlog_dropped"`
	// Behind says the run could not keep up with the rate, and why.
	Behind       bool   `json:"behind"`
	BehindReason string `json:"behind_reason,omitempty"`
}

// Keeping up: a run is behind when it served less than KeepUpShare of
// the target rate, less one transaction a session (an arrival due at the
// window's end that a session started a moment late is no part of it),
// or ended its window more than MaxLagS behind schedule (a backlog that
// a closed loop would have hidden).
const (
	KeepUpShare = 0.98
	MaxLagS     = 1.0
)

// Judge sets Behind from the achieved rate and the lag of a window of
// windowS seconds served by sessions. (50/s over 8 sessions for 3 s,
// with no lag and a queue's p99 of 9 ms, served 148 of 151 arrivals on a
// loaded host: 97.8%, kept up all the same.)
func (r *Rate) Judge(sessions int, windowS float64) {
	edge := 0.0
	if windowS > 0 {
		edge = float64(sessions) / windowS
	}
	switch {
	case r.AchievedTPS < KeepUpShare*r.TargetTPS-edge:
		r.Behind = true
		r.BehindReason = fmt.Sprintf("served %.1f of the %.1f transactions/s asked for (%.1f%%); %.1f s behind schedule at the window's end",
			r.AchievedTPS, r.TargetTPS, 100*r.AchievedTPS/r.TargetTPS, r.LagEndS)
	case r.LagEndS > MaxLagS:
		r.Behind = true
		r.BehindReason = fmt.Sprintf("%.1f s behind schedule at the window's end: the sessions could not keep up with %.1f transactions/s",
			r.LagEndS, r.TargetTPS)
	default:
		r.Behind, r.BehindReason = false, ""
	}
}
