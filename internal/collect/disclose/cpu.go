package disclose

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// CPUInfo describes the processors as the kernel sees them.
type CPUInfo struct {
	Model  string `json:"model,omitempty"`
	Vendor string `json:"vendor,omitempty"`
	// Topology of the online CPUs. Sockets and Cores are totals.
	// CoresPerSocket and ThreadsPerCore are set only when every socket
	// and every core have the same count: on hybrid designs (performance
	// and efficiency cores) there is no single true value to print.
	Sockets        int `json:"sockets,omitempty"`
	Cores          int `json:"cores,omitempty"`
	CoresPerSocket int `json:"cores_per_socket,omitempty"`
	ThreadsPerCore int `json:"threads_per_core,omitempty"`
	Online         int `json:"online,omitempty"` // logical CPUs online
	// MHz is the first CPU's current clock as /proc/cpuinfo sampled it;
	// MaxMHz is cpufreq's hardware maximum where a driver exposes it.
	MHz        float64 `json:"mhz,omitempty"`
	MaxMHz     float64 `json:"max_mhz,omitempty"`
	Governor   string  `json:"governor,omitempty"`    // cpu0 scaling_governor
	FreqDriver string  `json:"freq_driver,omitempty"` // cpu0 scaling_driver
	// Flags lists only the flags that change database performance or
	// reveal a hypervisor, in a fixed order, so that two hosts diff cleanly.
	Flags []string `json:"flags,omitempty"`
}

// flagsOfInterest are reported when present; the full list is hundreds of
// entries that differ between microcode versions and would drown the diff.
var flagsOfInterest = []string{"hypervisor", "avx2", "avx512f", "aes"}

// cpuinfo is what /proc/cpuinfo says, before sysfs is consulted.
type cpuinfo struct {
	model, vendor string
	mhz           float64
	flags         map[string]bool
	processors    []cpuProc
}

// cpuProc is one "processor" block; ids are -1 where the block has none
// (most non-x86 kernels print no physical id or core id).
type cpuProc struct {
	physical, core int
}

// parseCPUInfo reads /proc/cpuinfo. The first processor's model, vendor,
// clock and flags stand for all: mixed-model sockets are not a platform
// anyone benchmarks a database on.
func parseCPUInfo(r io.Reader) cpuinfo {
	var ci cpuinfo
	cur := -1
	eachLine(r, func(line string) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "processor" {
			ci.processors = append(ci.processors, cpuProc{physical: -1, core: -1})
			cur = len(ci.processors) - 1
			return
		}
		first := cur <= 0
		switch k {
		case "model name":
			if first && ci.model == "" {
				ci.model = v
			}
		case "vendor_id":
			if first && ci.vendor == "" {
				ci.vendor = v
			}
		case "cpu MHz":
			if f, err := strconv.ParseFloat(v, 64); err == nil && first && ci.mhz == 0 {
				ci.mhz = f
			}
		case "flags", "Features": // x86, arm64
			if first && ci.flags == nil {
				ci.flags = map[string]bool{}
				for _, f := range strings.Fields(v) {
					ci.flags[f] = true
				}
			}
		case "physical id":
			if n, err := strconv.Atoi(v); err == nil && cur >= 0 {
				ci.processors[cur].physical = n
			}
		case "core id":
			if n, err := strconv.Atoi(v); err == nil && cur >= 0 {
				ci.processors[cur].core = n
			}
		}
	})
	return ci
}

// maxCPUs bounds a CPU list: the kernel's NR_CPUS is at most 8192 today, and
// a corrupt "0-4294967295" must not allocate gigabytes.
const maxCPUs = 1 << 16

// parseCPUList parses the kernel's CPU list format ("0-3,8,10-11").
func parseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: bad cpu %q", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		if b >= maxCPUs || len(cpus)+(b-a+1) > maxCPUs {
			return nil, errors.New("cpu list: too many cpus")
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// cpuFacts combines cpuinfo with sysfs. Topology comes from sysfs when every
// online CPU has its topology files, because cpuinfo's ids are absent on
// many architectures and in some VMs; cpuinfo's ids are the fallback.
func cpuFacts(o Options, ci cpuinfo) CPUInfo {
	c := CPUInfo{Model: ci.model, Vendor: ci.vendor, MHz: ci.mhz}
	for _, f := range flagsOfInterest {
		if ci.flags[f] {
			c.Flags = append(c.Flags, f)
		}
	}
	online, err := parseCPUList(readString(o.sys("devices", "system", "cpu", "online")))
	if err != nil {
		online = nil
	}
	var procs []cpuProc
	if len(online) > 0 {
		c.Online = len(online)
		for _, n := range online {
			dir := o.sys("devices", "system", "cpu", "cpu"+strconv.Itoa(n), "topology")
			pkg, ok1 := readInt(dir + "/physical_package_id")
			core, ok2 := readInt(dir + "/core_id")
			if !ok1 || !ok2 {
				procs = nil
				break
			}
			procs = append(procs, cpuProc{physical: int(pkg), core: int(core)})
		}
	} else {
		c.Online = len(ci.processors)
	}
	if procs == nil {
		procs = ci.processors
	}
	c.Sockets, c.Cores, c.CoresPerSocket, c.ThreadsPerCore = topology(procs)

	freq := o.sys("devices", "system", "cpu", "cpu0", "cpufreq")
	if khz, ok := readInt(freq + "/cpuinfo_max_freq"); ok && khz > 0 {
		c.MaxMHz = float64(khz) / 1000
	}
	c.Governor = readString(freq + "/scaling_governor")
	c.FreqDriver = readString(freq + "/scaling_driver")
	return c
}

// topology counts sockets and cores; it returns zeros when any CPU lacks
// an id, since a partial count would be a guess.
func topology(procs []cpuProc) (sockets, cores, coresPerSocket, threadsPerCore int) {
	if len(procs) == 0 {
		return 0, 0, 0, 0
	}
	type coreKey struct{ pkg, core int }
	threads := map[coreKey]int{}
	perSocket := map[int]map[int]bool{}
	for _, p := range procs {
		if p.physical < 0 || p.core < 0 {
			return 0, 0, 0, 0
		}
		// core_id repeats across sockets, so a core is a (socket, core) pair.
		threads[coreKey{p.physical, p.core}]++
		if perSocket[p.physical] == nil {
			perSocket[p.physical] = map[int]bool{}
		}
		perSocket[p.physical][p.core] = true
	}
	sockets, cores = len(perSocket), len(threads)
	var coreCounts, threadCounts []int
	for _, s := range perSocket {
		coreCounts = append(coreCounts, len(s))
	}
	for _, t := range threads {
		threadCounts = append(threadCounts, t)
	}
	return sockets, cores, uniform(coreCounts), uniform(threadCounts)
}

// uniform returns the value all counts share, or 0 if they differ.
func uniform(counts []int) int {
	for _, n := range counts[1:] {
		if n != counts[0] {
			return 0
		}
	}
	return counts[0]
}
