package ostat

import "fmt"

// readSchedstat reads the host's run-queue delay: the time runnable tasks
// waited for a CPU, summed over the CPUs of /proc/schedstat.
func (r *Reader) readSchedstat(s *Snapshot) error {
	if !r.schedstat {
		return nil
	}
	st, err := r.fs.Schedstat()
	if err != nil {
		return fmt.Errorf("read %s: %w", r.path("schedstat"), err)
	}
	var ns uint64
	for _, c := range st.CPUs {
		ns += c.WaitingNanoseconds
	}
	d := float64(ns) / 1e9
	s.RunDelay = &d
	return nil
}

// serverRunDelay is the server's run-queue delay within [a, b] in
// seconds: per process, so that a backend that exits costs only its own
// last interval, and a process that started within counts from its start
// (it began with none). Nil when either side has no reading.
func serverRunDelay(a, b map[int]float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	var sum float64
	for pid, y := range b {
		sum += secondsDelta(a[pid], y)
	}
	return &sum
}
