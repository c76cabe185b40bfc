package result

import (
	"fmt"
	"strings"
)

// IOUnits are a run's IO in the units SLOB users read, per second of the
// measured window, and where the reads were served from. Figures a run
// could not see are nil. MB are 10^6 bytes.
type IOUnits struct {
	LogicalReads   *float64 `json:"logical_reads_per_s,omitempty"`   // blocks asked of the buffer cache
	PhysicalReads  *float64 `json:"physical_reads_per_s,omitempty"`  // blocks the engine read from the OS
	PhysicalWrites *float64 `json:"physical_writes_per_s,omitempty"` // blocks the engine wrote
	EngineReadMB   *float64 `json:"engine_read_mb_per_s,omitempty"`  // physical reads × block size
	RedoBytes      *float64 `json:"redo_bytes_per_s,omitempty"`      // WAL
	// ReadMs is the average time of one physical read as the engine timed
	// it (PostgreSQL with track_io_timing on).
	ReadMs *float64 `json:"read_ms,omitempty"`
	// The block device under the database's files (local databases only).
	ReadIOPS  *float64 `json:"read_iops,omitempty"`
	WriteIOPS *float64 `json:"write_iops,omitempty"`
	ReadMB    *float64 `json:"read_mb_per_s,omitempty"`
	WriteMB   *float64 `json:"write_mb_per_s,omitempty"`
	// CacheHitRatio is 1 - physical/logical reads: the buffer cache's.
	CacheHitRatio *float64 `json:"cache_hit_ratio,omitempty"`
	// DeviceShare is device read requests per engine physical read: near
	// 0 the OS page cache served the engine's reads, near 1 storage did.
	DeviceShare      *float64 `json:"device_share,omitempty"`
	DataBytes        int64    `json:"data_bytes"`
	BufferCacheBytes int64    `json:"buffer_cache_bytes"`
	MemoryBytes      int64    `json:"memory_bytes"` // of the database host, when known
	// ServedFrom is where the reads came from: "buffer cache", "os page
	// cache", "storage", "storage and os page cache" or "unknown".
	ServedFrom string `json:"served_from"`
	// Statement says it plainly, for the summary.
	Statement string `json:"statement"`
}

// Served-from values.
const (
	ServedBufferCache = "buffer cache"
	ServedPageCache   = "os page cache"
	ServedStorage     = "storage"
	ServedMixed       = "storage and os page cache"
	ServedUnknown     = "unknown"
)

// ComputeIOUnits derives r's IO units from its load profile, its database
// description and the OS window (device figures only when the database's
// files are on this host). It returns nil when the collectors did not run.
func (r *Run) ComputeIOUnits() *IOUnits {
	if r.LoadProfile == nil || r.Disclosure == nil || r.Disclosure.Database == nil {
		return nil
	}
	db := r.Disclosure.Database
	u := &IOUnits{DataBytes: db.DataBytes, BufferCacheBytes: db.BufferCacheBytes, MemoryBytes: r.Disclosure.Host.Memory.TotalBytes}
	if u.MemoryBytes == 0 && (r.Disclosure.HostSource == "" || r.Disclosure.HostSource == "local") {
		u.MemoryBytes = r.Host.MemoryBytes // the same host, in results before the database host's memory was read
	}
	per := func(name string) *float64 {
		if l := r.LoadProfile.Line(name); l != nil {
			return l.PerSecond
		}
		return nil
	}
	u.LogicalReads, u.PhysicalReads = per("Logical reads"), per("Physical reads")
	u.PhysicalWrites, u.RedoBytes = per("Physical writes"), per("WAL (redo) size")
	if u.PhysicalReads != nil && db.BlockSize > 0 {
		u.EngineReadMB = ptr(*u.PhysicalReads * float64(db.BlockSize) / 1e6)
	}
	if t, n := r.IOProfile.Line("Read I/O time"), r.LoadProfile.Line("Physical reads"); t != nil && n != nil &&
		t.Total != nil && n.Total != nil && *n.Total > 0 {
		u.ReadMs = ptr(*t.Total / *n.Total)
	}
	if u.LogicalReads != nil && u.PhysicalReads != nil && *u.LogicalReads > 0 {
		u.CacheHitRatio = ptr(1 - *u.PhysicalReads / *u.LogicalReads)
	}
	if r.Disclosure.Storage != nil && r.OS.HasWindow() {
		var rd, wr, rmb, wmb float64
		found := false
		for _, d := range r.OS.Window.Disks {
			if r.OS.DataDevice != "" && d.Name != r.OS.DataDevice {
				continue
			}
			if r.OS.DataDevice == "" && (strings.HasPrefix(d.Name, "dm-") || strings.HasPrefix(d.Name, "md")) {
				continue
			}
			found = true
			// The OS collector's MB are 2^20 bytes (iostat's); these are 10^6.
			rd, wr, rmb, wmb = rd+d.ReadsPerS, wr+d.WritesPerS, rmb+d.ReadMBPerS*mib, wmb+d.WriteMBPerS*mib
		}
		if found {
			u.ReadIOPS, u.WriteIOPS, u.ReadMB, u.WriteMB = &rd, &wr, &rmb, &wmb
		}
	}
	if u.ReadIOPS != nil && u.PhysicalReads != nil && *u.PhysicalReads > 0 {
		u.DeviceShare = ptr(*u.ReadIOPS / *u.PhysicalReads)
	}
	u.ServedFrom, u.Statement = u.served()
	return u
}

// served says where the reads came from, and why it is believed.
func (u *IOUnits) served() (string, string) {
	data := "The data set (" + mb(u.DataBytes) + ")"
	cache := "the database buffer cache (" + mb(u.BufferCacheBytes)
	if u.CacheHitRatio != nil {
		cache += fmt.Sprintf(", hit ratio %.1f%%", 100**u.CacheHitRatio)
	}
	cache += ")"
	physical := 0.0
	if u.PhysicalReads != nil {
		physical = *u.PhysicalReads
	}
	switch {
	case u.BufferCacheBytes > 0 && u.DataBytes > 0 && u.DataBytes <= u.BufferCacheBytes:
		return ServedBufferCache, data + " fits in " + cache + ": this run measured memory, not storage."
	case u.PhysicalReads != nil && physical < 1:
		return ServedBufferCache, data + " was read from " + cache + " alone (no physical reads): this run measured memory, not storage."
	case u.DeviceShare == nil:
		return ServedUnknown, fmt.Sprintf("%s exceeds %s; the database read %.0f blocks/s from the OS, but whether its page cache or storage served them is not visible without the database host's device counters (--db-host sql or --db-host-metrics): make the data set larger than the server's memory.",
			data, cache, physical)
	}
	share := fmt.Sprintf("the devices served %.1f%% of the database's %.0f physical reads/s", 100**u.DeviceShare, physical)
	switch s := *u.DeviceShare; {
	case s < 0.1:
		return ServedPageCache, fmt.Sprintf("%s exceeds %s, but %s: the OS page cache (host memory %s) served the rest. This run measured memory, not storage: use a data set larger than the memory.",
			data, cache, share, mb(u.MemoryBytes))
	case s < 0.9:
		return ServedMixed, fmt.Sprintf("%s exceeds %s; %s, the OS page cache the rest: this run measured storage and memory together.",
			data, cache, share)
	}
	return ServedStorage, fmt.Sprintf("%s exceeds %s and %s: this run measured storage.", data, cache, share)
}

func mb(b int64) string {
	if b >= 10<<30 {
		return fmt.Sprintf("%.0f GB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.0f MB", float64(b)/(1<<20))
}

func ptr(v float64) *float64 { return &v }

const mib = (1 << 20) / 1e6
