// Package disclose describes the platform a run ran on — kernel, CPU,
// memory, virtualisation, cgroup limits, kernel tunables and the storage
// under the data directory — so that two platforms can be compared fact by
// fact. It reads /proc, /sys and /etc only, never writes, and never reads
// credentials or secrets (no environment of other processes, no DMI serial
// numbers or UUIDs). A fact that cannot be read is left empty, never
// guessed: a disclosure that is silently wrong is worse than one with a gap.
package disclose

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// Options says where the platform's files are. Tests point the roots at
// fixture trees under testdata/; empty fields take the live defaults.
type Options struct {
	ProcRoot string // default "/proc"
	SysRoot  string // default "/sys"
	EtcRoot  string // default "/etc"
	// Root is the file system root, for the few facts that live outside
	// /proc, /sys and /etc: container marker files (/.dockerenv,
	// /run/.containerenv), /usr/lib/os-release and cgroup hierarchies
	// mounted outside /sys. Default "/".
	Root string
	// Foreign says the roots hold a copy of another host's files (see
	// package hostfs): a directory is then taken as given, since its
	// symlinks cannot be followed there, and its free space is unknown.
	Foreign bool
	// PID is the process whose cgroup and allowed CPUs are disclosed (the
	// database server's main process); 0 is "self": this process, or in a
	// foreign copy the server's backend that read it.
	PID int
	// Server says that process is the database server's (see
	// CgroupInfo.Of).
	Server bool
}

func (o Options) withDefaults() Options {
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.SysRoot == "" {
		o.SysRoot = "/sys"
	}
	if o.EtcRoot == "" {
		o.EtcRoot = "/etc"
	}
	if o.Root == "" {
		o.Root = "/"
	}
	return o
}

func (o Options) proc(p ...string) string {
	return filepath.Join(append([]string{o.ProcRoot}, p...)...)
}
func (o Options) sys(p ...string) string  { return filepath.Join(append([]string{o.SysRoot}, p...)...) }
func (o Options) root(p ...string) string { return filepath.Join(append([]string{o.Root}, p...)...) }

// HostInfo is the host part of a run's disclosure. Numbers are 0 and
// strings empty when they could not be read; where 0 or false is itself a
// real reading, the field is a pointer so that "not read" stays distinct.
type HostInfo struct {
	Hostname      string `json:"hostname,omitempty"`
	Kernel        string `json:"kernel,omitempty"`         // release, e.g. "6.1.0-18-amd64"
	KernelVersion string `json:"kernel_version,omitempty"` // build string, e.g. "#1 SMP PREEMPT_DYNAMIC ..."
	OS            string `json:"os,omitempty"`             // os-release PRETTY_NAME
	Arch          string `json:"arch"`                     // GOARCH of this binary

	CPU    CPUInfo    `json:"cpu"`
	Memory MemoryInfo `json:"memory"`

	// Virtualization sums up Evidence: a hypervisor name ("kvm", "vmware",
	// "xen", "microsoft", ...; "vm" when a hypervisor is present but does
	// not name itself), "container", both joined by "+" (a container in a
	// VM), or "none detected".
	Virtualization string       `json:"virtualization"`
	Evidence       VirtEvidence `json:"virtualization_evidence"`

	Cgroup CgroupInfo `json:"cgroup"`

	THPEnabled  string `json:"thp_enabled,omitempty"` // transparent huge pages: always, madvise, never
	THPDefrag   string `json:"thp_defrag,omitempty"`
	Clocksource string `json:"clocksource,omitempty"`

	// Sysctls holds the tunables that change database performance, by
	// sysctl name (vm.swappiness); ones that could not be read are absent.
	Sysctls map[string]string `json:"sysctls,omitempty"`
}

// Host describes the machine this process runs on. It never fails: each
// fact is read on its own and left empty when it cannot be.
func Host(o Options) HostInfo {
	o = o.withDefaults()
	h := HostInfo{
		Hostname:      readString(o.proc("sys", "kernel", "hostname")),
		Kernel:        readString(o.proc("sys", "kernel", "osrelease")),
		KernelVersion: readString(o.proc("sys", "kernel", "version")),
		OS:            osName(o),
		Arch:          runtime.GOARCH,
	}
	ci := cpuinfo{}
	withFile(o.proc("cpuinfo"), func(r io.Reader) { ci = parseCPUInfo(r) })
	h.CPU = cpuFacts(o, ci)
	h.Memory = memoryFacts(o)
	h.Evidence = virtEvidence(o, ci, h.Kernel)
	h.Virtualization = h.Evidence.summary(h.Kernel)
	h.Cgroup = cgroupFacts(o)
	h.THPEnabled = bracketed(readString(o.sys("kernel", "mm", "transparent_hugepage", "enabled")))
	h.THPDefrag = bracketed(readString(o.sys("kernel", "mm", "transparent_hugepage", "defrag")))
	h.Clocksource = readString(o.sys("devices", "system", "clocksource", "clocksource0", "current_clocksource"))
	h.Sysctls = sysctls(o)
	return h
}

// maxRead bounds what is read from one small file: sysfs attributes are a
// page at most, and a fixture or a broken file must not exhaust memory.
const maxRead = 1 << 20

// readString returns a file's content trimmed of surrounding space, or ""
// when it cannot be read.
func readString(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRead))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readInt returns a file's content as an integer; ok is false when the file
// is missing or does not hold exactly one integer.
func readInt(path string) (int64, bool) {
	s := readString(path)
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// withFile calls fn with the open file, and does nothing when the file
// cannot be opened: every caller treats a missing source as an empty fact.
func withFile(path string, fn func(io.Reader)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	fn(f)
}

// eachLine calls fn for each line of r without its newline. Unlike
// bufio.Scanner it has no line length limit: a mountinfo line of an overlay
// with many layers can exceed any fixed buffer.
func eachLine(r io.Reader, fn func(string)) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			fn(strings.TrimSuffix(line, "\n"))
		}
		if err != nil {
			return
		}
	}
}

// sysctls reads the tunables named in the design plus every readable
// kernel.sched_* file, whose set changes from kernel to kernel.
func sysctls(o Options) map[string]string {
	names := []string{
		"vm.swappiness", "vm.dirty_ratio", "vm.dirty_background_ratio",
		"vm.dirty_bytes", "vm.dirty_background_bytes",
		"vm.dirty_expire_centisecs", "vm.dirty_writeback_centisecs",
		"vm.nr_hugepages", "vm.overcommit_memory", "kernel.numa_balancing",
	}
	sched, _ := filepath.Glob(o.proc("sys", "kernel", "sched_*"))
	sort.Strings(sched)
	for _, p := range sched {
		names = append(names, "kernel."+filepath.Base(p))
	}
	m := map[string]string{}
	for _, n := range names {
		p := o.proc(append([]string{"sys"}, strings.Split(n, ".")...)...)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue // sched_domain is a directory on some kernels
		}
		f, err := os.Open(p)
		if err != nil {
			continue // write-only or root-only on this kernel
		}
		b, err := io.ReadAll(io.LimitReader(f, maxRead))
		f.Close()
		if err != nil {
			continue
		}
		// Multi-value sysctls separate values by tabs; one space reads the
		// same and diffs cleanly.
		m[n] = strings.Join(strings.Fields(string(b)), " ")
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
