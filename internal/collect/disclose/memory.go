package disclose

import (
	"io"
	"strconv"
	"strings"
)

// MemoryInfo is the machine's memory as /proc/meminfo states it. A
// container sees the host's total here; its own limit is in CgroupInfo.
type MemoryInfo struct {
	TotalBytes int64 `json:"total_bytes,omitempty"`
	// HugePagesTotal is the pre-allocated hugetlb pool (0 is a reading,
	// absent is not).
	HugePagesTotal    *int64 `json:"huge_pages_total,omitempty"`
	HugePageSizeBytes int64  `json:"huge_page_size_bytes,omitempty"`
}

func memoryFacts(o Options) MemoryInfo {
	var m MemoryInfo
	withFile(o.proc("meminfo"), func(r io.Reader) {
		mi := parseMeminfo(r)
		m.TotalBytes = mi["MemTotal"]
		if v, ok := mi["HugePages_Total"]; ok {
			m.HugePagesTotal = &v
		}
		m.HugePageSizeBytes = mi["Hugepagesize"]
	})
	return m
}

// parseMeminfo returns /proc/meminfo's values, in bytes where the line
// has a "kB" unit and as plain counts where it has none (HugePages_*).
func parseMeminfo(r io.Reader) map[string]int64 {
	m := map[string]int64{}
	eachLine(r, func(line string) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return
		}
		if len(f) == 2 && f[1] == "kB" {
			if n > (1<<63-1)/1024 {
				return
			}
			n *= 1024
		}
		m[strings.TrimSpace(k)] = n
	})
	return m
}
