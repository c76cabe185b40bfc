package ostat

import "fmt"

// Memory is the part of /proc/meminfo the rates need, in bytes. All of it
// is instantaneous.
type Memory struct {
	Total        uint64 `json:"total_bytes"`
	Free         uint64 `json:"free_bytes"`
	Available    uint64 `json:"available_bytes"`
	Buffers      uint64 `json:"buffers_bytes"`
	Cached       uint64 `json:"cached_bytes"`
	SReclaimable uint64 `json:"sreclaimable_bytes"`
	Shmem        uint64 `json:"shmem_bytes"`
	Dirty        uint64 `json:"dirty_bytes"`
	Writeback    uint64 `json:"writeback_bytes"`
}

func (r *Reader) readMemory(s *Snapshot) error {
	m, err := r.fs.Meminfo()
	if err != nil {
		return fmt.Errorf("read %s: %w", r.path("meminfo"), err)
	}
	// A line this kernel does not print is left at zero; all of these are
	// older than any kernel a database runs on except MemAvailable (3.14).
	v := func(p *uint64) uint64 {
		if p == nil {
			return 0
		}
		return *p
	}
	s.Memory = Memory{
		Total: v(m.MemTotalBytes), Free: v(m.MemFreeBytes), Available: v(m.MemAvailableBytes),
		Buffers: v(m.BuffersBytes), Cached: v(m.CachedBytes), SReclaimable: v(m.SReclaimableBytes),
		Shmem: v(m.ShmemBytes), Dirty: v(m.DirtyBytes), Writeback: v(m.WritebackBytes),
	}
	return nil
}

// used is memory in use as free(1) counts it: neither free nor a cache
// the kernel can drop. When the caches read larger than what is not free
// (the fields are not read atomically), free falls back to total - free,
// and so does this.
func (m Memory) used() uint64 {
	if m.Free > m.Total {
		return 0
	}
	notFree := m.Total - m.Free
	if cache := m.Buffers + m.Cached + m.SReclaimable; cache <= notFree {
		return notFree - cache
	}
	return notFree
}
