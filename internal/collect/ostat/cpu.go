package ostat

import "fmt"

// CPUTimes is the "cpu" line of /proc/stat: seconds summed over all CPUs
// since boot. Guest time is left out because the kernel already counts it
// in User.
type CPUTimes struct {
	User    float64 `json:"user_s"`
	Nice    float64 `json:"nice_s"`
	System  float64 `json:"system_s"`
	Idle    float64 `json:"idle_s"`
	Iowait  float64 `json:"iowait_s"`
	IRQ     float64 `json:"irq_s"`
	SoftIRQ float64 `json:"softirq_s"`
	Steal   float64 `json:"steal_s"`
}

func (r *Reader) readStat(s *Snapshot) error {
	st, err := r.fs.Stat()
	if err != nil {
		return fmt.Errorf("read %s: %w", r.path("stat"), err)
	}
	c := st.CPUTotal
	s.CPU = CPUTimes{User: c.User, Nice: c.Nice, System: c.System, Idle: c.Idle,
		Iowait: c.Iowait, IRQ: c.IRQ, SoftIRQ: c.SoftIRQ, Steal: c.Steal}
	s.NumCPU = len(st.CPU)
	s.Interrupts = st.IRQTotal
	s.ContextSwitches = st.ContextSwitches
	s.ProcsRunning = st.ProcessesRunning
	s.ProcsBlocked = st.ProcessesBlocked
	return nil
}

// cpuDelta is the CPU time spent in [a, b], each state floored at zero:
// idle and iowait are known to step backwards on tickless kernels, and a
// negative share of the machine is never a reading.
func cpuDelta(a, b CPUTimes) CPUTimes {
	return CPUTimes{
		User:    secondsDelta(a.User, b.User),
		Nice:    secondsDelta(a.Nice, b.Nice),
		System:  secondsDelta(a.System, b.System),
		Idle:    secondsDelta(a.Idle, b.Idle),
		Iowait:  secondsDelta(a.Iowait, b.Iowait),
		IRQ:     secondsDelta(a.IRQ, b.IRQ),
		SoftIRQ: secondsDelta(a.SoftIRQ, b.SoftIRQ),
		Steal:   secondsDelta(a.Steal, b.Steal),
	}
}

func (c CPUTimes) total() float64 {
	return c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal
}

// busy is the CPU time something on this host ran. Iowait is idle time
// with IO outstanding and steal is time the hypervisor gave to someone
// else, so neither is CPU any process here used.
func (c CPUTimes) busy() float64 {
	return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ
}
