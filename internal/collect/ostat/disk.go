package ostat

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// sectorBytes is the unit of the sector fields of /proc/diskstats, which
// the kernel keeps in 512-byte units whatever the device's own sector size.
const sectorBytes = 512

// DiskCounters is one line of /proc/diskstats. Tick fields are in
// milliseconds.
type DiskCounters struct {
	Major         uint32 `json:"major"`
	Minor         uint32 `json:"minor"`
	ReadIOs       uint64 `json:"read_ios"`
	ReadMerges    uint64 `json:"read_merges"`
	ReadSectors   uint64 `json:"read_sectors"`
	ReadTicks     uint64 `json:"read_ticks_ms"`
	WriteIOs      uint64 `json:"write_ios"`
	WriteMerges   uint64 `json:"write_merges"`
	WriteSectors  uint64 `json:"write_sectors"`
	WriteTicks    uint64 `json:"write_ticks_ms"`
	InFlight      uint64 `json:"in_flight"`
	IOTicks       uint64 `json:"io_ticks_ms"`
	WeightedTicks uint64 `json:"weighted_ticks_ms"`
	// Discard fields exist from Linux 4.18, flush fields from 5.5;
	// Fields says how many counters the kernel printed (11, 15 or 17).
	DiscardIOs     uint64 `json:"discard_ios"`
	DiscardSectors uint64 `json:"discard_sectors"`
	DiscardTicks   uint64 `json:"discard_ticks_ms"`
	FlushIOs       uint64 `json:"flush_ios"`
	FlushTicks     uint64 `json:"flush_ticks_ms"`
	Fields         int    `json:"fields"`
}

func (r *Reader) readDisks(s *Snapshot) error {
	all, err := r.bfs.ProcDiskstats()
	if err != nil {
		return fmt.Errorf("read %s: %w", r.path("diskstats"), err)
	}
	names := make(map[string]bool, len(all))
	for _, d := range all {
		names[d.DeviceName] = true
	}
	s.Disks = make(map[string]DiskCounters, len(all))
	for _, d := range all {
		if !keepDisk(d.DeviceName, names) {
			continue
		}
		s.Disks[d.DeviceName] = DiskCounters{
			Major: d.MajorNumber, Minor: d.MinorNumber,
			ReadIOs: d.ReadIOs, ReadMerges: d.ReadMerges, ReadSectors: d.ReadSectors, ReadTicks: d.ReadTicks,
			WriteIOs: d.WriteIOs, WriteMerges: d.WriteMerges, WriteSectors: d.WriteSectors, WriteTicks: d.WriteTicks,
			InFlight: d.IOsInProgress, IOTicks: d.IOsTotalTicks, WeightedTicks: d.WeightedIOTicks,
			DiscardIOs: d.DiscardIOs, DiscardSectors: d.DiscardSectors, DiscardTicks: d.DiscardTicks,
			FlushIOs: d.FlushRequestsCompleted, FlushTicks: d.TimeSpentFlushing,
			Fields: d.IoStatsCount - 3, // the count includes major, minor and name
		}
	}
	return nil
}

// keepDisk says which devices of /proc/diskstats are reported: whole disks
// and stacked devices (device-mapper, md), not their partitions, whose IO
// is already counted in the disk they sit on, and not loop or ram devices,
// which are memory or files whose IO reaches a real disk anyway (zram is
// kept: swapping to it is memory pressure worth seeing).
//
// A partition is recognised by name alone, from the rule the block layer
// (add_partition in block/partitions/core.c) uses to name every partition
// whatever the driver: the disk's name plus
// the partition number, with a "p" between when the disk's name ends in a
// digit (sda → sda1, nvme0n1 → nvme0n1p1, mmcblk0 → mmcblk0p2, md127 →
// md127p1). So a name is a partition when cutting a trailing number (and
// that "p") leaves the name of another device in the same file. This
// needs no /sys, and it keeps dm-10 (dm-1 ends in a digit, so its
// partitions would be dm-1p…) and a Xen whole disk named xvda1 with no
// xvda beside it. Device-mapper partitions made by kpartx are dm-N devices
// of their own and are kept.
func keepDisk(name string, all map[string]bool) bool {
	if strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") {
		return false
	}
	return !isPartition(name, all)
}

func isPartition(name string, all map[string]bool) bool {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || i == 0 {
		return false
	}
	parent := name[:i] // ends in a non-digit, as all digits were cut
	if all[parent] {
		return true
	}
	// nvme0n1p1: the parent ends in a digit and the block layer put a "p"
	// in between.
	if parent[len(parent)-1] == 'p' && len(parent) >= 2 {
		p := parent[:len(parent)-1]
		if last := p[len(p)-1]; last >= '0' && last <= '9' {
			return all[p]
		}
	}
	return false
}

// DiskRates is one block device over an interval, with iostat -x's
// definitions. Latencies are 0 when no IO of the kind completed, as iostat
// prints them; read them next to the IO rates.
type DiskRates struct {
	Name            string  `json:"name"`
	ReadsPerS       float64 `json:"reads_per_s"`
	WritesPerS      float64 `json:"writes_per_s"`
	ReadMergesPerS  float64 `json:"read_merges_per_s"`
	WriteMergesPerS float64 `json:"write_merges_per_s"`
	ReadMBPerS      float64 `json:"read_mb_per_s"`
	WriteMBPerS     float64 `json:"write_mb_per_s"`
	// AwaitMs is the mean time a read or write spent from issue to
	// completion, queueing included.
	AwaitMs  float64 `json:"await_ms"`
	RAwaitMs float64 `json:"r_await_ms"`
	WAwaitMs float64 `json:"w_await_ms"`
	// AquSz is the mean number of requests in flight (iostat's aqu-sz).
	AquSz float64 `json:"aqu_sz"`
	// UtilPct is the share of the interval with at least one request in
	// flight. A device that serves requests in parallel (SSD, NVMe, RAID,
	// device-mapper) can be at 100% and still take more.
	UtilPct float64 `json:"util_pct"`
	// Discard and flush rates are nil on kernels that do not count them.
	DiscardsPerS  *float64 `json:"discards_per_s,omitempty"`
	DiscardMBPerS *float64 `json:"discard_mb_per_s,omitempty"`
	FlushesPerS   *float64 `json:"flushes_per_s,omitempty"`
}

// disksBetween skips a device missing from either snapshot, and one whose
// identity or 64-bit counters went backwards, which means it was removed
// and another was created under the same name (or the kernel's counters
// are 32-bit and wrapped, which an interval cannot tell apart).
func disksBetween(a, b map[string]DiskCounters, secs float64) []DiskRates {
	out := make([]DiskRates, 0, len(b))
	for name, db := range b {
		da, ok := a[name]
		if !ok || da.Major != db.Major || da.Minor != db.Minor {
			continue
		}
		rd, ok1 := counterDelta(da.ReadIOs, db.ReadIOs)
		wr, ok2 := counterDelta(da.WriteIOs, db.WriteIOs)
		rm, ok3 := counterDelta(da.ReadMerges, db.ReadMerges)
		wm, ok4 := counterDelta(da.WriteMerges, db.WriteMerges)
		rs, ok5 := counterDelta(da.ReadSectors, db.ReadSectors)
		ws, ok6 := counterDelta(da.WriteSectors, db.WriteSectors)
		if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
			continue
		}
		rt := tickDelta(da.ReadTicks, db.ReadTicks)
		wt := tickDelta(da.WriteTicks, db.WriteTicks)
		ms := secs * 1000
		d := DiskRates{
			Name:            name,
			ReadsPerS:       per(float64(rd), secs),
			WritesPerS:      per(float64(wr), secs),
			ReadMergesPerS:  per(float64(rm), secs),
			WriteMergesPerS: per(float64(wm), secs),
			ReadMBPerS:      per(float64(rs)*sectorBytes/mb, secs),
			WriteMBPerS:     per(float64(ws)*sectorBytes/mb, secs),
			AwaitMs:         per(float64(rt+wt), float64(rd+wr)),
			RAwaitMs:        per(float64(rt), float64(rd)),
			WAwaitMs:        per(float64(wt), float64(wr)),
			AquSz:           per(float64(tickDelta(da.WeightedTicks, db.WeightedTicks)), ms),
			// Capped because io_ticks advance in jiffies while the interval
			// is measured by our clock; past 100 is that skew, not load.
			UtilPct: min(100, per(float64(tickDelta(da.IOTicks, db.IOTicks)), ms)*100),
		}
		if da.Fields >= 15 && db.Fields >= 15 {
			dio, ok1 := counterDelta(da.DiscardIOs, db.DiscardIOs)
			dsec, ok2 := counterDelta(da.DiscardSectors, db.DiscardSectors)
			if ok1 && ok2 {
				ios, mbs := per(float64(dio), secs), per(float64(dsec)*sectorBytes/mb, secs)
				d.DiscardsPerS, d.DiscardMBPerS = &ios, &mbs
			}
		}
		if da.Fields >= 17 && db.Fields >= 17 {
			if fl, ok := counterDelta(da.FlushIOs, db.FlushIOs); ok {
				f := per(float64(fl), secs)
				d.FlushesPerS = &f
			}
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y DiskRates) int { return cmp.Compare(x.Name, y.Name) })
	return out
}

// KeepDisk is keepDisk for other sources of the same counters (a
// node_exporter's node_disk_*): name is kept among the device names all.
func KeepDisk(name string, all map[string]bool) bool { return keepDisk(name, all) }
