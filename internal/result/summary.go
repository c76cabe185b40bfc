package result

import (
	"fmt"
	"math"
)

// Summary holds the headline figures of a run, derived from the result
// file in one place so every report agrees. Rates are over the measured
// window only. A figure the run does not have (a recovered run's driver
// CPU, the percentiles of an empty histogram) is nil, never zero.
type Summary struct {
	Label         string           `json:"label"`
	Workload      string           `json:"workload"`
	Target        string           `json:"target"`
	Users         int              `json:"users"`
	DurationS     float64          `json:"duration_s"` // measured window (a sliced run's own slices in it)
	TPS           float64          `json:"tps"`        // committed transactions per second
	TPM           float64          `json:"tpm"`        // committed transactions per minute
	NOPM          float64          `json:"nopm"`       // committed New-Orders per minute (order-entry)
	Commits       int64            `json:"commits"`
	Rollbacks     int64            `json:"rollbacks"` // asked for by the workload
	Errors        int64            `json:"errors"`
	ErrorsByClass map[string]int64 `json:"errors_by_class"`
	Retries       int64            `json:"retries"`
	Partial       bool             `json:"partial"`
	PartialReason string           `json:"partial_reason,omitempty"`
	DriverCPUS    *float64         `json:"driver_cpu_s"`
	// Driver CPU per committed transaction and per statement, microseconds.
	DriverCPUPerTxUs   *float64 `json:"driver_cpu_per_tx_us"`
	DriverCPUPerStmtUs *float64 `json:"driver_cpu_per_stmt_us"`
	Statements         int64    `json:"statements"`
	RoundTrips         int64    `json:"round_trips,omitempty"`
	// RoundTripsPerTx is the round trips a completed transaction took;
	// absent (0) in a recovered run, whose statement counts stop at its
	// last checkpoint while its transactions run on to its last interval.
	RoundTripsPerTx float64 `json:"round_trips_per_tx,omitempty"`
	// RoundTripMs is the least round trip measured before the run (an
	// empty query); RoundTripShare the share of a mean transaction's time
	// its round trips took at least: round trips per transaction × that
	// least, over the mean latency of every transaction. Absent when not
	// measured.
	RoundTripMs    float64              `json:"round_trip_ms,omitempty"`
	RoundTripShare float64              `json:"round_trip_share,omitempty"`
	Transactions   map[string]TxSummary `json:"transactions"`
	Commit         TxSummary            `json:"commit"`
	Disclaimer     string               `json:"disclaimer,omitempty"`
}

// TxSummary is one transaction type. Count is every completed execution
// (committed, or rolled back by design); errors are not in it. The
// percentiles are nil when its latency histogram is empty (a recovered
// run whose last checkpoint came before the measured window).
type TxSummary struct {
	Count     int64    `json:"count"`
	Committed int64    `json:"committed"`
	Errors    int64    `json:"errors"`
	P50Ms     *float64 `json:"p50_ms"`
	P95Ms     *float64 `json:"p95_ms"`
	P99Ms     *float64 `json:"p99_ms"`
}

// Value is *v, or NaN when v is nil (a figure the run does not have), for
// arithmetic that must not take an absent figure for zero.
func Value(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// txSummary summarises h; the counts are the caller's.
func txSummary(h Histogram) TxSummary {
	var s TxSummary
	if h.Count > 0 {
		s.P50Ms, s.P95Ms, s.P99Ms = &h.P50Ms, &h.P95Ms, &h.P99Ms
	}
	return s
}

// DriverCPU is the driver's CPU (user+sys) over the measured window;
// false when the result does not have it: a recovered run's journal holds
// no CPU readings (nor does a merged run with a recovered part).
func (r *Run) DriverCPU() (float64, bool) {
	if r.Recovered {
		return 0, false
	}
	return r.Driver.CPUUserS + r.Driver.CPUSysS, true
}

// Summarize derives the summary of r.
func (r *Run) Summarize() Summary {
	s := Summary{
		Label: r.Label, Workload: r.Workload.Name, Target: r.Target.URL, Users: r.Driver.Users,
		DurationS: r.MeasureEnd.Sub(r.MeasureStart).Seconds(), Partial: r.Partial, PartialReason: r.PartialReason,
		ErrorsByClass: r.Errors, Statements: r.Statements, RoundTrips: r.RoundTrips,
		Transactions: map[string]TxSummary{}, Disclaimer: r.Workload.Disclaimer,
		Commit: txSummary(r.Commit),
	}
	s.Commit.Count = r.Commit.Count
	if sl := r.Driver.Slicing; sl != nil && sl.ActiveS > 0 {
		s.DurationS = sl.ActiveS // the window's other slices were the other side's
	}
	if s.ErrorsByClass == nil {
		s.ErrorsByClass = map[string]int64{}
	}
	var newOrders int64
	for _, t := range r.Transactions {
		s.Commits += t.Committed
		s.Rollbacks += t.Rollbacks
		s.Errors += t.Errors
		s.Retries += t.Retries
		if t.Name == "new_order" {
			newOrders = t.Committed
		}
		ts := txSummary(t.Latency)
		// The completed executions: the latency histogram's count, but
		// in a recovered run, whose histograms stop at its last
		// checkpoint.
		ts.Count, ts.Committed, ts.Errors = t.Committed+t.Rollbacks, t.Committed, t.Errors
		s.Transactions[t.Name] = ts
	}
	if s.DurationS > 0 {
		s.TPS = float64(s.Commits) / s.DurationS
		s.TPM = s.TPS * 60
		s.NOPM = float64(newOrders) / s.DurationS * 60
	}
	if cpu, ok := r.DriverCPU(); ok {
		s.DriverCPUS = &cpu
		if s.Commits > 0 {
			v := cpu * 1e6 / float64(s.Commits)
			s.DriverCPUPerTxUs = &v
		}
		if s.Statements > 0 {
			v := cpu * 1e6 / float64(s.Statements)
			s.DriverCPUPerStmtUs = &v
		}
	}
	if done := s.Commits + s.Rollbacks + s.Errors; done > 0 && s.RoundTrips > 0 && !r.Recovered {
		s.RoundTripsPerTx = float64(s.RoundTrips) / float64(done)
	}
	if s.RoundTripMs = r.Driver.RoundTripMs; s.RoundTripMs > 0 && s.RoundTripsPerTx > 0 {
		var n int64
		var sum float64
		for _, t := range r.Transactions {
			n += t.Latency.Count
			sum += float64(t.Latency.Count) * t.Latency.MeanMs
		}
		if n > 0 && sum > 0 {
			s.RoundTripShare = min(1, s.RoundTripsPerTx*s.RoundTripMs/(sum/float64(n)))
		}
	}
	return s
}

// DefaultMaxErrorPct is --max-error-pct's default: a run in which more of
// the measured window's transactions failed is failed.
const DefaultMaxErrorPct = 1.0

// minNeverCompleted is how many times a transaction type must fail, with
// none completed, for Judge to take it as one that never completes: a
// type run once or twice in the window (order-entry's delivery is 4% of
// the mix), and failed in an outage, says nothing of the type; the share
// of failed transactions judges it with the others.
const minNeverCompleted = 3

// Judge marks r failed when its measured window does not describe the
// workload: more than maxErrorPct percent of its transactions failed, or
// a transaction type that was run never completed (every one failed, at
// least minNeverCompleted times), or nothing completed at all. A failure
// already marked stands.
func (r *Run) Judge(maxErrorPct float64) {
	if r.Failed {
		return
	}
	var done, failed int64
	for _, t := range r.Transactions {
		done += t.Committed + t.Rollbacks
		failed += t.Errors
	}
	fail := func(format string, a ...any) { r.Failed, r.FailedReason = true, fmt.Sprintf(format, a...) }
	for _, t := range r.Transactions {
		if t.Errors >= minNeverCompleted && t.Committed+t.Rollbacks == 0 {
			fail("every %s failed (%d), none completed: %s", t.Name, t.Errors, firstErrorOf(r))
			return
		}
	}
	switch {
	case done+failed == 0:
		fail("no transaction completed in the measured window")
	case 100*float64(failed)/float64(done+failed) > maxErrorPct:
		fail("%d of %d transactions failed (%.2f%%), above --max-error-pct %g%%: %s", failed, done+failed,
			100*float64(failed)/float64(done+failed), maxErrorPct, firstErrorOf(r))
	}
}

// firstErrorOf names the most frequent error class and its first message.
func firstErrorOf(r *Run) string {
	best, n := "", int64(-1)
	for k, v := range r.Errors {
		if v > n || (v == n && k < best) {
			best, n = k, v
		}
	}
	if best == "" {
		return "no error recorded"
	}
	if msg := r.ErrorSamples[best]; msg != "" {
		return best + ": " + msg
	}
	return best
}

// CPUUse is a run's CPU utilisation on the database host over the
// measured window: the figure a sweep stops on (--until-cpu) and runs are
// compared at (throughput at equal CPU utilisation).
type CPUUse struct {
	Pct  float64 // in % of CPUs
	CPUs float64 // the CPUs it is a share of (a cgroup quota may be a fraction)
	// Server says Pct is the database server's own processes (DB CPU) on
	// the CPUs it could use; otherwise it is the database host's busy
	// time, whatever ran there.
	Server bool
}

// Cores is the CPU used, in cores (CPU-seconds per second).
func (u CPUUse) Cores() float64 { return u.Pct / 100 * u.CPUs }

// Basis names what Pct is a share of, for tables.
func (u CPUUse) Basis() string {
	if u.Server {
		return fmt.Sprintf("the server's processes on the %g CPU(s) they may use", u.CPUs)
	}
	return fmt.Sprintf("the database host's busy time on %g CPU(s)", u.CPUs)
}

// CPU returns the run's CPU utilisation; false when the collectors did
// not see the database host. The server's own CPU is preferred: on a
// host the driver shares, the host's busy time counts the driver too.
func (r *Run) CPU() (CPUUse, bool) {
	if !r.OS.HasWindow() {
		return CPUUse{}, false
	}
	w := r.OS.Window
	cpus := float64(w.NumCPU)
	if n := len(r.Target.CPUs); n > 0 {
		cpus = float64(n)
	}
	if cpus <= 0 {
		return CPUUse{}, false
	}
	if w.ServerCPUCores != nil {
		// The CPUs the server may use: those dbparity gave a managed
		// server, or as its cgroup quota and allowed CPUs (taskset,
		// cpuset) limit it.
		if d := r.Disclosure; d != nil {
			if n := d.Host.Cgroup.ServerCPUs(); n > 0 && n < cpus {
				cpus = n
			}
		}
		return CPUUse{Pct: 100 * *w.ServerCPUCores / cpus, CPUs: cpus, Server: true}, true
	}
	return CPUUse{Pct: w.CPUBusyPct, CPUs: float64(w.NumCPU)}, true
}
