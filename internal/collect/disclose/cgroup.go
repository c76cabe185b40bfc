package disclose

import (
	"fmt"
	"io"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CgroupInfo is the CPU and memory this process may use, as its cgroups
// limit them. A limit is the tightest one on the process's cgroup and its
// ancestors, because a parent's limit binds every child. A null limit
// means unlimited when the matching *_raw field is set, and not read when
// it is empty.
type CgroupInfo struct {
	// Mode is "v1", "v2", or "hybrid": v1 controllers beside a v2
	// hierarchy that only tracks processes (systemd's default for years).
	Mode string `json:"mode,omitempty"`

	CPUController string   `json:"cpu_controller,omitempty"` // "v1" or "v2": where the cpu controller is
	CPUPath       string   `json:"cpu_path,omitempty"`       // this process's cgroup there
	CPULimit      *float64 `json:"cpu_limit"`                // CPUs: quota / period
	CPULimitRaw   string   `json:"cpu_limit_raw,omitempty"`  // "quota period" as read, "max 100000" or "-1 100000" when unlimited
	CPULimitFrom  string   `json:"cpu_limit_from,omitempty"` // the cgroup that sets the limit, when it is an ancestor

	MemoryController string `json:"memory_controller,omitempty"`
	MemoryPath       string `json:"memory_path,omitempty"`
	MemoryLimitBytes *int64 `json:"memory_limit_bytes"`
	MemoryLimitRaw   string `json:"memory_limit_raw,omitempty"`
	MemoryLimitFrom  string `json:"memory_limit_from,omitempty"`

	// CPUsAllowed counts the CPUs this process may be scheduled on
	// (Cpus_allowed_list, CPUsAllowedList as written there): a cpuset or
	// taskset limits a run as surely as a quota.
	CPUsAllowed     int    `json:"cpus_allowed,omitempty"`
	CPUsAllowedList string `json:"cpus_allowed_list,omitempty"`
	// Of is "server" when these are the database server's process's
	// limits; "" when this process's (the server's were not seen).
	Of string `json:"of,omitempty"`
}

// ServerCPUs is how many CPUs the database server may use, as its cgroup
// quota and allowed CPUs limit it: 0 when unknown or not the server's.
func (c CgroupInfo) ServerCPUs() float64 {
	if c.Of != "server" {
		return 0
	}
	n := float64(c.CPUsAllowed)
	if c.CPULimit != nil && *c.CPULimit > 0 && (n == 0 || *c.CPULimit < n) {
		n = *c.CPULimit
	}
	return n
}

// cgroupLine is one line of /proc/<pid>/cgroup: "4:memory:/user.slice".
// A v2 line has id 0 and no controllers.
type cgroupLine struct {
	id          int
	controllers []string
	path        string
}

func (l cgroupLine) v2() bool { return l.id == 0 && len(l.controllers) == 0 }

// parseProcCgroup reads /proc/<pid>/cgroup, skipping malformed lines.
func parseProcCgroup(r io.Reader) []cgroupLine {
	var ls []cgroupLine
	eachLine(r, func(line string) {
		f := strings.SplitN(line, ":", 3) // the path may itself hold colons
		if len(f) != 3 || f[2] == "" || f[2][0] != '/' {
			return
		}
		id, err := strconv.Atoi(f[0])
		if err != nil || id < 0 {
			return
		}
		l := cgroupLine{id: id, path: f[2]}
		if f[1] != "" {
			l.controllers = strings.Split(f[1], ",")
		}
		ls = append(ls, l)
	})
	return ls
}

// parseCPUMax parses cgroup v2 cpu.max, "$MAX $PERIOD", where $MAX is
// "max" for no limit; quota is -1 then, as v1's cpu.cfs_quota_us says it.
func parseCPUMax(s string) (quota, period int64, err error) {
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > 2 {
		return 0, 0, fmt.Errorf("cpu.max %q: want \"quota period\"", s)
	}
	period = 100000 // the kernel's default, and what a one-field write keeps
	if len(f) == 2 {
		if period, err = strconv.ParseInt(f[1], 10, 64); err != nil || period <= 0 {
			return 0, 0, fmt.Errorf("cpu.max %q: bad period", s)
		}
	}
	if f[0] == "max" {
		return -1, period, nil
	}
	if quota, err = strconv.ParseInt(f[0], 10, 64); err != nil || quota <= 0 {
		return 0, 0, fmt.Errorf("cpu.max %q: bad quota", s)
	}
	return quota, period, nil
}

// v1Unlimited: cgroup v1 prints "no memory limit" as the largest page
// counter times the page size, LONG_MAX rounded down to a page. Anything
// from LONG_MAX rounded down to 1 MiB (larger than any page size) up is
// that sentinel, not a limit someone set.
const v1Unlimited = math.MaxInt64 &^ (1<<20 - 1)

// hierarchy is where one controller's cgroup files are for this process.
type hierarchy struct {
	version string // "v1" or "v2"
	cgroup  string // the process's cgroup path, as /proc/self/cgroup names it
	top     string // directory of the hierarchy's mount, under the option roots
	dir     string // directory of the process's cgroup
}

func cgroupFacts(o Options) CgroupInfo {
	var c CgroupInfo
	if o.Server {
		c.Of = "server"
	}
	pid := "self"
	if o.PID > 0 {
		pid = strconv.Itoa(o.PID)
	}
	withFile(o.proc(pid, "status"), func(r io.Reader) {
		eachLine(r, func(line string) {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				if cpus, err := parseCPUList(v); err == nil {
					c.CPUsAllowed, c.CPUsAllowedList = len(cpus), strings.TrimSpace(v)
				}
			}
		})
	})
	var lines []cgroupLine
	withFile(o.proc(pid, "cgroup"), func(r io.Reader) { lines = parseProcCgroup(r) })
	if len(lines) == 0 {
		return c
	}
	var v1, v2 bool
	for _, l := range lines {
		if l.v2() {
			v2 = true
		} else {
			v1 = true
		}
	}
	switch {
	case v1 && v2:
		c.Mode = "hybrid"
	case v1:
		c.Mode = "v1"
	default:
		c.Mode = "v2"
	}
	var mounts []mount
	withFile(o.proc(pid, "mountinfo"), func(r io.Reader) { mounts = parseMountinfo(r) })

	if h, ok := findHierarchy(o, lines, mounts, "cpu"); ok {
		c.CPUController, c.CPUPath = h.version, h.cgroup
		c.CPULimit, c.CPULimitRaw, c.CPULimitFrom = cpuLimit(h)
	}
	if h, ok := findHierarchy(o, lines, mounts, "memory"); ok {
		c.MemoryController, c.MemoryPath = h.version, h.cgroup
		c.MemoryLimitBytes, c.MemoryLimitRaw, c.MemoryLimitFrom = memoryLimit(h)
	}
	return c
}

// findHierarchy finds the directory of this process's cgroup for one
// controller: a v1 hierarchy that names it, else the v2 hierarchy if the
// controller is enabled there. Mount points come from mountinfo, because
// hybrid systems mount v2 at /sys/fs/cgroup/unified and v1 hierarchies
// may combine controllers ("cpu,cpuacct"); the usual paths are the
// fallback when mountinfo has no cgroup mount.
func findHierarchy(o Options, lines []cgroupLine, mounts []mount, ctrl string) (hierarchy, bool) {
	for _, l := range lines {
		if l.v2() || !slices.Contains(l.controllers, ctrl) {
			continue
		}
		mounted := false
		for _, m := range mounts {
			if m.fsType == "cgroup" && slices.Contains(strings.Split(m.super, ","), ctrl) {
				mounted = true
				if h, ok := place(o, "v1", m.point, m.root, l.path); ok {
					return h, true
				}
			}
		}
		if mounted {
			return hierarchy{}, false // mounted, but not the part holding this process
		}
		return place(o, "v1", "/sys/fs/cgroup/"+strings.Join(l.controllers, ","), "/", l.path)
	}
	for _, l := range lines {
		if !l.v2() {
			continue
		}
		var h hierarchy
		ok, mounted := false, false
		for _, m := range mounts {
			if m.fsType == "cgroup2" {
				mounted = true
				if h, ok = place(o, "v2", m.point, m.root, l.path); ok {
					break
				}
			}
		}
		if !ok && !mounted {
			h, ok = place(o, "v2", "/sys/fs/cgroup", "/", l.path)
		}
		if !ok {
			return hierarchy{}, false
		}
		// On hybrid systems the v2 hierarchy exists but holds no
		// controllers; its absent files must not read as "unlimited".
		if !slices.Contains(strings.Fields(readString(filepath.Join(h.top, "cgroup.controllers"))), ctrl) {
			return hierarchy{}, false
		}
		return h, true
	}
	return hierarchy{}, false
}

// place maps a cgroup path to a directory under the option roots. The
// mount's root is the part of the hierarchy visible at the mount point (a
// container without a cgroup namespace sees /docker/<id> mounted at
// /sys/fs/cgroup/cpu), so it is cut from the cgroup path.
func place(o Options, version, point, mountRoot, cgroup string) (hierarchy, bool) {
	cgroup, mountRoot = path.Clean(cgroup), path.Clean(mountRoot)
	if !under(cgroup, mountRoot) {
		return hierarchy{}, false
	}
	rel := strings.TrimPrefix(cgroup, mountRoot)
	if mountRoot == "/" {
		rel = cgroup
	}
	top := o.root(point)
	if under(point, "/sys") {
		top = o.sys(strings.TrimPrefix(point, "/sys"))
	}
	return hierarchy{version: version, cgroup: cgroup, top: top, dir: filepath.Join(top, rel)}, true
}

// walk calls fn for the process's cgroup directory and each ancestor up to
// the hierarchy's mount, innermost first.
func (h hierarchy) walk(fn func(dir, cgroup string)) {
	dir, cg := h.dir, h.cgroup
	for {
		fn(dir, cg)
		if dir == h.top || len(dir) <= len(h.top) || cg == "/" {
			return
		}
		dir, cg = filepath.Dir(dir), path.Dir(cg)
	}
}

func cpuLimit(h hierarchy) (limit *float64, raw, from string) {
	found := false
	h.walk(func(dir, cg string) {
		var quota, period int64
		var text string
		if h.version == "v2" {
			text = readString(filepath.Join(dir, "cpu.max"))
			var err error
			if quota, period, err = parseCPUMax(text); err != nil {
				return
			}
		} else {
			q, ok1 := readInt(filepath.Join(dir, "cpu.cfs_quota_us"))
			p, ok2 := readInt(filepath.Join(dir, "cpu.cfs_period_us"))
			if !ok1 || !ok2 || p <= 0 {
				return
			}
			quota, period, text = q, p, fmt.Sprintf("%d %d", q, p)
		}
		if !found {
			found, raw = true, text // the process's own setting, unless an ancestor's binds
		}
		if quota <= 0 {
			return
		}
		cpus := float64(quota) / float64(period)
		if limit == nil || cpus < *limit {
			limit, raw = &cpus, text
			from = cg
		}
	})
	if limit != nil && from == h.cgroup {
		from = ""
	}
	return limit, raw, from
}

func memoryLimit(h hierarchy) (limit *int64, raw, from string) {
	found := false
	file := "memory.limit_in_bytes"
	if h.version == "v2" {
		file = "memory.max"
	}
	h.walk(func(dir, cg string) {
		text := readString(filepath.Join(dir, file))
		if text == "" {
			return
		}
		var n int64
		unlimited := text == "max" && h.version == "v2"
		if !unlimited {
			var err error
			if n, err = strconv.ParseInt(text, 10, 64); err != nil || n < 0 {
				return
			}
			unlimited = h.version == "v1" && n >= v1Unlimited
		}
		if !found {
			found, raw = true, text
		}
		if unlimited {
			return
		}
		if limit == nil || n < *limit {
			limit, raw, from = &n, text, cg
		}
	})
	if limit != nil && from == h.cgroup {
		from = ""
	}
	return limit, raw, from
}
