package ostat

import (
	"cmp"
	"slices"
)

// MergeRates combines two adjacent intervals, a before b, into the rates
// over both, so that a long run's OS series can be kept at a coarser step
// (see metrics.Bounded). Rates and shares are per-second averages, so the
// merged one is their mean weighted by seconds and every total (rate ×
// seconds) is kept; the instantaneous fields (load averages, memory,
// running and blocked processes, the kernel's pressure averages, NumCPU)
// are b's, the reading at the end. A pointer is nil when it is nil on
// either side: a mean over part of the time would not be one.
//
// A device or interface present on one side only counts as idle on the
// other: the series leaves out idle rows (runner's busyOnly), and a row
// that appeared or was reset has no traffic to add on the side without it.
// Device latencies (await) are means per IO, so they are weighted by the
// IOs of each side, not by seconds.
func MergeRates(a, b Rates) Rates {
	sa, sb := a.IntervalS, b.IntervalS
	w := func(x, y float64) float64 { return wmean(x, sa, y, sb) }
	r := b // the instantaneous fields, and the names of everything
	r.From, r.To, r.IntervalS = a.From, b.To, sa+sb
	if a.From.IsZero() {
		r.From = b.From
	}
	r.CPUUserPct = w(a.CPUUserPct, b.CPUUserPct)
	r.CPUNicePct = w(a.CPUNicePct, b.CPUNicePct)
	r.CPUSystemPct = w(a.CPUSystemPct, b.CPUSystemPct)
	r.CPUIowaitPct = w(a.CPUIowaitPct, b.CPUIowaitPct)
	r.CPUIRQPct = w(a.CPUIRQPct, b.CPUIRQPct)
	r.CPUSoftIRQPct = w(a.CPUSoftIRQPct, b.CPUSoftIRQPct)
	r.CPUStealPct = w(a.CPUStealPct, b.CPUStealPct)
	r.CPUIdlePct = w(a.CPUIdlePct, b.CPUIdlePct)
	r.CPUBusyPct = w(a.CPUBusyPct, b.CPUBusyPct)
	r.InterruptsPerS = w(a.InterruptsPerS, b.InterruptsPerS)
	r.ContextSwitchesPerS = w(a.ContextSwitchesPerS, b.ContextSwitchesPerS)
	r.MajorFaultsPerS = wmeanPtr(a.MajorFaultsPerS, sa, b.MajorFaultsPerS, sb)
	r.SwapInPagesPerS = wmeanPtr(a.SwapInPagesPerS, sa, b.SwapInPagesPerS, sb)
	r.SwapOutPagesPerS = wmeanPtr(a.SwapOutPagesPerS, sa, b.SwapOutPagesPerS, sb)
	r.RunDelayPerS = wmeanPtr(a.RunDelayPerS, sa, b.RunDelayPerS, sb)
	r.ServerRunDelayPerS = wmeanPtr(a.ServerRunDelayPerS, sa, b.ServerRunDelayPerS, sb)
	r.CPUPressure = mergePressure(a.CPUPressure, b.CPUPressure, sa, sb)
	r.IOPressure = mergePressure(a.IOPressure, b.IOPressure, sa, sb)
	r.MemoryPressure = mergePressure(a.MemoryPressure, b.MemoryPressure, sa, sb)
	r.Disks = mergeDisks(a.Disks, b.Disks, sa, sb)
	r.Nets = mergeNets(a.Nets, b.Nets, sa, sb)
	r.SelfCPUCores = w(a.SelfCPUCores, b.SelfCPUCores)
	r.SelfCPUPct = w(a.SelfCPUPct, b.SelfCPUPct)
	r.ServerCPUCores = wmeanPtr(a.ServerCPUCores, sa, b.ServerCPUCores, sb)
	r.ServerCPUPct = wmeanPtr(a.ServerCPUPct, sa, b.ServerCPUPct, sb)
	r.OtherCPUCores = w(a.OtherCPUCores, b.OtherCPUCores)
	r.OtherCPUPct = w(a.OtherCPUPct, b.OtherCPUPct)
	return r
}

// wmean is the mean of x over sx seconds and y over sy; y when neither
// has any seconds (two empty intervals: keep the latest reading).
func wmean(x, sx, y, sy float64) float64 {
	if !(sx+sy > 0) {
		return y
	}
	return (x*sx + y*sy) / (sx + sy)
}

func wmeanPtr(x *float64, sx float64, y *float64, sy float64) *float64 {
	if x == nil || y == nil {
		return nil
	}
	v := wmean(*x, sx, *y, sy)
	return &v
}

// later is b's value when both sides have one.
func later(x, y *float64) *float64 {
	if x == nil || y == nil {
		return nil
	}
	v := *y
	return &v
}

func mergePressure(a, b *PressureRates, sa, sb float64) *PressureRates {
	if a == nil || b == nil {
		return nil
	}
	return &PressureRates{
		SomeAvg10Pct: b.SomeAvg10Pct,
		SomePct:      wmean(a.SomePct, sa, b.SomePct, sb),
		FullAvg10Pct: later(a.FullAvg10Pct, b.FullAvg10Pct),
		FullPct:      wmeanPtr(a.FullPct, sa, b.FullPct, sb),
	}
}

// idleDisk is a device's row on a side where it was not listed: no
// traffic, with the optional counters present where the other side has
// them (a kernel counts discards and flushes for every interval or none).
func idleDisk(o DiskRates) DiskRates {
	d := DiskRates{Name: o.Name}
	zero := func(p *float64) *float64 {
		if p == nil {
			return nil
		}
		return new(float64)
	}
	d.DiscardsPerS, d.DiscardMBPerS, d.FlushesPerS = zero(o.DiscardsPerS), zero(o.DiscardMBPerS), zero(o.FlushesPerS)
	return d
}

func mergeDisks(a, b []DiskRates, sa, sb float64) []DiskRates {
	return mergeRows(a, b, func(d DiskRates) string { return d.Name }, idleDisk, func(x, y DiskRates) DiskRates {
		w := func(p, q float64) float64 { return wmean(p, sa, q, sb) }
		// IOs of each side, to weigh the per-IO latencies.
		xr, xw, yr, yw := x.ReadsPerS*sa, x.WritesPerS*sa, y.ReadsPerS*sb, y.WritesPerS*sb
		return DiskRates{
			Name:            y.Name,
			ReadsPerS:       w(x.ReadsPerS, y.ReadsPerS),
			WritesPerS:      w(x.WritesPerS, y.WritesPerS),
			ReadMergesPerS:  w(x.ReadMergesPerS, y.ReadMergesPerS),
			WriteMergesPerS: w(x.WriteMergesPerS, y.WriteMergesPerS),
			ReadMBPerS:      w(x.ReadMBPerS, y.ReadMBPerS),
			WriteMBPerS:     w(x.WriteMBPerS, y.WriteMBPerS),
			AwaitMs:         wmean(x.AwaitMs, xr+xw, y.AwaitMs, yr+yw),
			RAwaitMs:        wmean(x.RAwaitMs, xr, y.RAwaitMs, yr),
			WAwaitMs:        wmean(x.WAwaitMs, xw, y.WAwaitMs, yw),
			AquSz:           w(x.AquSz, y.AquSz),
			UtilPct:         w(x.UtilPct, y.UtilPct),
			DiscardsPerS:    wmeanPtr(x.DiscardsPerS, sa, y.DiscardsPerS, sb),
			DiscardMBPerS:   wmeanPtr(x.DiscardMBPerS, sa, y.DiscardMBPerS, sb),
			FlushesPerS:     wmeanPtr(x.FlushesPerS, sa, y.FlushesPerS, sb),
		}
	})
}

func mergeNets(a, b []NetRates, sa, sb float64) []NetRates {
	return mergeRows(a, b, func(n NetRates) string { return n.Name }, func(o NetRates) NetRates { return NetRates{Name: o.Name} },
		func(x, y NetRates) NetRates {
			w := func(p, q float64) float64 { return wmean(p, sa, q, sb) }
			return NetRates{
				Name:          y.Name,
				RxPacketsPerS: w(x.RxPacketsPerS, y.RxPacketsPerS),
				TxPacketsPerS: w(x.TxPacketsPerS, y.TxPacketsPerS),
				RxMBPerS:      w(x.RxMBPerS, y.RxMBPerS),
				TxMBPerS:      w(x.TxMBPerS, y.TxMBPerS),
				RxErrorsPerS:  w(x.RxErrorsPerS, y.RxErrorsPerS),
				TxErrorsPerS:  w(x.TxErrorsPerS, y.TxErrorsPerS),
				RxDroppedPerS: w(x.RxDroppedPerS, y.RxDroppedPerS),
				TxDroppedPerS: w(x.TxDroppedPerS, y.TxDroppedPerS),
			}
		})
}

// mergeRows merges rows by name, a row missing on one side standing as
// idle(the other side's row) there; the result is sorted by name, as
// Between sorts it.
func mergeRows[R any](a, b []R, name func(R) string, idle func(R) R, merge func(x, y R) R) []R {
	out := make([]R, 0, max(len(a), len(b)))
	inB := make(map[string]int, len(b))
	for i, y := range b {
		inB[name(y)] = i
	}
	seen := make(map[string]bool, len(a))
	for _, x := range a {
		seen[name(x)] = true
		if i, ok := inB[name(x)]; ok {
			out = append(out, merge(x, b[i]))
		} else {
			out = append(out, merge(x, idle(x)))
		}
	}
	for _, y := range b {
		if !seen[name(y)] {
			out = append(out, merge(idle(y), y))
		}
	}
	slices.SortFunc(out, func(x, y R) int { return cmp.Compare(name(x), name(y)) })
	return out
}
