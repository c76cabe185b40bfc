package metrics

// Interval is one sample of the per-interval series of a run: what the
// sessions completed between two ticks of the monitor. Counters are deltas
// over the interval, so a rate is Count/Seconds whatever the tick length was.
type Interval struct {
	At         float64 `json:"t"`     // seconds from the start of the run to the end of this interval
	Seconds    float64 `json:"s"`     // length of the interval
	Phase      string  `json:"phase"` // warmup, measure or cooldown
	Commits    int64   `json:"commits"`
	Rollbacks  int64   `json:"rollbacks"` // rollbacks the workload asked for (not errors)
	Errors     int64   `json:"errors"`
	Retries    int64   `json:"retries"`
	P50Micros  int64   `json:"p50_us"`
	P95Micros  int64   `json:"p95_us"`
	P99Micros  int64   `json:"p99_us"`
	ActiveSess int     `json:"sessions"`
	// LagMillis is, in an open-loop run, how far behind its schedule the
	// run was at the interval's end (0 when it kept up).
	LagMillis int64 `json:"lag_ms,omitempty"`
}

// TPS is the committed transactions per second of the interval.
func (iv Interval) TPS() float64 {
	if iv.Seconds <= 0 {
		return 0
	}
	return float64(iv.Commits) / iv.Seconds
}
