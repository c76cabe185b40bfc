package ostat

import (
	"math"
	"time"
)

// mb is the unit of every MB figure: 2^20 bytes, as iostat -m and free -m.
const mb = 1 << 20

// Rates is what happened on the host over [From, To]. Rates and shares
// come from the counters' differences; the fields documented as
// instantaneous are the reading at To. The same function serves a
// one-second step of a time series and a whole measured window.
type Rates struct {
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	IntervalS float64   `json:"interval_s"`

	// Host CPU in % of all CPUs' time in the interval; the eight add up to
	// 100. Guest time is inside user.
	CPUUserPct    float64 `json:"cpu_user_pct"`
	CPUNicePct    float64 `json:"cpu_nice_pct"`
	CPUSystemPct  float64 `json:"cpu_system_pct"`
	CPUIowaitPct  float64 `json:"cpu_iowait_pct"`
	CPUIRQPct     float64 `json:"cpu_irq_pct"`
	CPUSoftIRQPct float64 `json:"cpu_softirq_pct"`
	CPUStealPct   float64 `json:"cpu_steal_pct"`
	CPUIdlePct    float64 `json:"cpu_idle_pct"`
	// CPUBusyPct is user+nice+system+irq+softirq: CPU something on this
	// host ran, which neither iowait (idle) nor steal (another guest) is.
	CPUBusyPct float64 `json:"cpu_busy_pct"`
	NumCPU     int     `json:"num_cpu"`

	InterruptsPerS      float64 `json:"interrupts_per_s"`
	ContextSwitchesPerS float64 `json:"context_switches_per_s"`
	ProcsRunning        uint64  `json:"procs_running"` // instantaneous
	ProcsBlocked        uint64  `json:"procs_blocked"` // instantaneous

	Load1  float64 `json:"load1"`  // instantaneous
	Load5  float64 `json:"load5"`  // instantaneous
	Load15 float64 `json:"load15"` // instantaneous

	// RunDelayPerS is the seconds runnable tasks waited for a CPU per
	// second, over all CPUs: the mean number of tasks kept waiting by the
	// scheduler (nil where the kernel does not keep /proc/schedstat).
	RunDelayPerS *float64 `json:"run_delay_s_per_s,omitempty"`

	// Pressure is nil where the kernel does not report it.
	CPUPressure    *PressureRates `json:"cpu_pressure,omitempty"`
	IOPressure     *PressureRates `json:"io_pressure,omitempty"`
	MemoryPressure *PressureRates `json:"memory_pressure,omitempty"`

	Disks []DiskRates `json:"disks"`
	Nets  []NetRates  `json:"nets"`

	// Memory, instantaneous. Used is as free(1) counts it; cached is the
	// page cache, which includes shared memory (Shmem), and so a
	// PostgreSQL server's shared_buffers.
	MemTotalMB     float64 `json:"mem_total_mb"`
	MemUsedMB      float64 `json:"mem_used_mb"`
	MemCachedMB    float64 `json:"mem_cached_mb"`
	MemShmemMB     float64 `json:"mem_shmem_mb"`
	MemDirtyMB     float64 `json:"mem_dirty_mb"`
	MemWritebackMB float64 `json:"mem_writeback_mb"`
	MemAvailableMB float64 `json:"mem_available_mb"`
	// Paging over the interval (/proc/vmstat): major faults and pages
	// swapped in and out per second; nil where the source has none.
	MajorFaultsPerS  *float64 `json:"major_faults_per_s,omitempty"`
	SwapInPagesPerS  *float64 `json:"swap_in_pages_per_s,omitempty"`
	SwapOutPagesPerS *float64 `json:"swap_out_pages_per_s,omitempty"`

	// Process CPU in cores (CPU-seconds per second) and in % of the
	// host's CPU time. Self is the process that read the snapshots, the
	// driver; server is the tree under Options.ServerPID, nil without one.
	SelfCPUCores   float64  `json:"self_cpu_cores"`
	SelfCPUPct     float64  `json:"self_cpu_pct"`
	ServerCPUCores *float64 `json:"server_cpu_cores,omitempty"`
	ServerCPUPct   *float64 `json:"server_cpu_pct,omitempty"`
	// ServerRunDelayPerS is the seconds the server's processes waited for
	// a CPU per second (their /proc/PID/schedstat run delay): the time the
	// platform's scheduler took from the database.
	ServerRunDelayPerS *float64 `json:"server_run_delay_s_per_s,omitempty"`
	// Other is the host's busy CPU used by neither: the noise a
	// comparison has to be read against. Floored at zero, since process
	// and host times are sampled in different ticks.
	OtherCPUCores float64 `json:"other_cpu_cores"`
	OtherCPUPct   float64 `json:"other_cpu_pct"`
}

// Between derives the rates over [a.At, b.At]. Devices and interfaces
// present in only one snapshot, or reset between them, are left out. An
// interval that is empty or runs backwards gives zero rates with b's
// instantaneous values. Every figure is finite and not negative.
func Between(a, b *Snapshot) Rates {
	secs := b.At.Sub(a.At).Seconds()
	if !(secs > 0) {
		secs = 0
	}
	r := Rates{
		From: a.At, To: b.At, IntervalS: secs,
		NumCPU:       b.NumCPU,
		ProcsRunning: b.ProcsRunning, ProcsBlocked: b.ProcsBlocked,
		Load1: nonNeg(b.Load1), Load5: nonNeg(b.Load5), Load15: nonNeg(b.Load15),
		MemTotalMB:     float64(b.Memory.Total) / mb,
		MemUsedMB:      float64(b.Memory.used()) / mb,
		MemCachedMB:    float64(b.Memory.Cached) / mb,
		MemShmemMB:     float64(b.Memory.Shmem) / mb,
		MemDirtyMB:     float64(b.Memory.Dirty) / mb,
		MemWritebackMB: float64(b.Memory.Writeback) / mb,
		MemAvailableMB: float64(b.Memory.Available) / mb,
	}
	// Pressure first: its kernel averages are instantaneous and belong in
	// the result even when the interval is empty.
	r.CPUPressure = pressureBetween(a.CPUPressure, b.CPUPressure, secs)
	r.IOPressure = pressureBetween(a.IOPressure, b.IOPressure, secs)
	r.MemoryPressure = pressureBetween(a.MemoryPressure, b.MemoryPressure, secs)
	if secs == 0 {
		r.Disks, r.Nets = []DiskRates{}, []NetRates{}
		return r
	}

	c := cpuDelta(a.CPU, b.CPU)
	total := c.total()
	pct := func(x float64) float64 { return per(x, total/100) }
	r.CPUUserPct, r.CPUNicePct, r.CPUSystemPct = pct(c.User), pct(c.Nice), pct(c.System)
	r.CPUIowaitPct, r.CPUIRQPct, r.CPUSoftIRQPct = pct(c.Iowait), pct(c.IRQ), pct(c.SoftIRQ)
	r.CPUStealPct, r.CPUIdlePct, r.CPUBusyPct = pct(c.Steal), pct(c.Idle), pct(c.busy())

	if d, ok := counterDelta(a.Interrupts, b.Interrupts); ok {
		r.InterruptsPerS = per(float64(d), secs)
	}
	if d, ok := counterDelta(a.ContextSwitches, b.ContextSwitches); ok {
		r.ContextSwitchesPerS = per(float64(d), secs)
	}

	if a.RunDelay != nil && b.RunDelay != nil {
		v := per(secondsDelta(*a.RunDelay, *b.RunDelay), secs)
		r.RunDelayPerS = &v
	}
	if d := serverRunDelay(a.ServerRunDelay, b.ServerRunDelay); d != nil {
		v := per(*d, secs)
		r.ServerRunDelayPerS = &v
	}

	vmBetween(&r, a.VM, b.VM, secs)
	r.Disks = disksBetween(a.Disks, b.Disks, secs)
	r.Nets = netsBetween(a.Nets, b.Nets, secs)

	self := secondsDelta(a.SelfCPU, b.SelfCPU)
	r.SelfCPUCores, r.SelfCPUPct = per(self, secs), pct(self)
	var server float64
	if a.ServerCPU != nil && b.ServerCPU != nil {
		server = secondsDelta(*a.ServerCPU, *b.ServerCPU)
		cores, share := per(server, secs), pct(server)
		r.ServerCPUCores, r.ServerCPUPct = &cores, &share
	}
	other := nonNeg(c.busy() - self - server)
	r.OtherCPUCores, r.OtherCPUPct = per(other, secs), pct(other)
	return r
}

// counterDelta is b - a for a counter the kernel keeps in 64 bits, which
// does not wrap in the life of a machine; ok is false when it went
// backwards, which means the thing counted was replaced.
func counterDelta(a, b uint64) (d uint64, ok bool) {
	if b < a {
		return 0, false
	}
	return b - a, true
}

// tickDelta is b - a for the millisecond fields /proc/diskstats prints as
// 32-bit unsigned ints, which wrap after 2^32 ms: 49.7 days of io_ticks,
// and sooner for the weighted ticks, which grow by the queue depth every
// millisecond (a day and a half at a depth of 32). A window longer than
// one wrap cannot be told from a shorter one; per-interval rates can.
// Values past 32 bits mean a kernel that prints 64 and does not wrap.
func tickDelta(a, b uint64) uint64 {
	switch {
	case b >= a:
		return b - a
	case a <= math.MaxUint32:
		return uint64(uint32(b) - uint32(a))
	default:
		return 0
	}
}

// secondsDelta floors at zero and drops what is not a number, for CPU
// times that can step backwards (see cpuDelta) or a process tree that lost
// a member (see serverCPU).
func secondsDelta(a, b float64) float64 {
	return nonNeg(b - a)
}

func nonNeg(x float64) float64 {
	if x > 0 && !math.IsInf(x, 1) {
		return x
	}
	return 0
}

// per is x / d, and zero when there is nothing to divide by, so that an
// idle device's latency or an empty interval is never NaN.
func per(x, d float64) float64 {
	if !(d > 0) {
		return 0
	}
	q := x / d
	if math.IsInf(q, 0) || math.IsNaN(q) {
		return 0
	}
	return q
}
