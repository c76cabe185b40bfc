package ostat

import (
	"errors"
	"fmt"

	"github.com/prometheus/procfs"
)

// Pressure is one file of /proc/pressure: the share of time some (or all,
// "full") non-idle tasks were stalled on the resource.
type Pressure struct {
	Some PressureLine `json:"some"`
	// Full is nil for cpu: the kernel prints zeros there at system level,
	// where "all tasks stalled on CPU" has no meaning.
	Full *PressureLine `json:"full,omitempty"`
}

// PressureLine is one line of a pressure file.
type PressureLine struct {
	// Avg10 is the kernel's own running average over 10 s, in percent.
	Avg10 float64 `json:"avg10_pct"`
	// Total is the stall time since boot in microseconds.
	Total uint64 `json:"total_us"`
}

func (r *Reader) readPressure(s *Snapshot) error {
	if !r.psi {
		return nil
	}
	for _, res := range []struct {
		name string
		full bool
		dst  **Pressure
	}{
		{"cpu", false, &s.CPUPressure},
		{"io", true, &s.IOPressure},
		{"memory", true, &s.MemoryPressure},
	} {
		st, err := r.fs.PSIStatsForResource(res.name)
		if errors.Is(err, procfs.ErrFileRead) {
			// Pressure for one resource can be missing while another
			// exists (cgroup v1 hosts, psi disabled at run time); that is
			// "not available", not a failed snapshot.
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", r.path("pressure/"+res.name), err)
		}
		if st.Some == nil {
			continue
		}
		p := &Pressure{Some: PressureLine{Avg10: st.Some.Avg10, Total: st.Some.Total}}
		if res.full && st.Full != nil {
			p.Full = &PressureLine{Avg10: st.Full.Avg10, Total: st.Full.Total}
		}
		*res.dst = p
	}
	return nil
}

// PressureRates is one resource's stall over an interval.
type PressureRates struct {
	// SomeAvg10Pct is the kernel's 10 s average at the end of the interval.
	SomeAvg10Pct float64 `json:"some_avg10_pct"`
	// SomePct is the stall time within the interval as a share of it,
	// exact for any interval length unlike the kernel's fixed averages.
	SomePct      float64  `json:"some_pct"`
	FullAvg10Pct *float64 `json:"full_avg10_pct,omitempty"`
	FullPct      *float64 `json:"full_pct,omitempty"`
}

func pressureBetween(a, b *Pressure, secs float64) *PressureRates {
	if a == nil || b == nil {
		return nil
	}
	p := &PressureRates{
		SomeAvg10Pct: nonNeg(b.Some.Avg10),
		SomePct:      stallPct(a.Some.Total, b.Some.Total, secs),
	}
	if a.Full != nil && b.Full != nil {
		avg, pct := nonNeg(b.Full.Avg10), stallPct(a.Full.Total, b.Full.Total, secs)
		p.FullAvg10Pct, p.FullPct = &avg, &pct
	}
	return p
}

// stallPct caps at 100 because a stall cannot outlast the interval; any
// excess is the few microseconds between our clock and the kernel's.
func stallPct(a, b uint64, secs float64) float64 {
	d, ok := counterDelta(a, b)
	if !ok {
		return 0
	}
	return min(100, per(float64(d), secs*1e6)*100)
}
