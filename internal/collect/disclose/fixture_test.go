package disclose

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

var fixtures struct {
	sync.Mutex
	dir   string             // made by TestMain, removed after the tests
	built map[string]Options // by fixture name
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "disclose-fixtures-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtures.dir, fixtures.built = dir, map[string]Options{}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixture returns options for testdata/<name>, copied once per test binary
// to a temporary root with the links of testdata/<name>.links created.
// Tests only read it. Copying once matters on a busy disk: tests share
// the machine with other builds.
func fixture(t *testing.T, name string) Options {
	t.Helper()
	fixtures.Lock()
	defer fixtures.Unlock()
	if o, ok := fixtures.built[name]; ok {
		return o
	}
	root := filepath.Join(fixtures.dir, name)
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatalf("copy fixture %s: %v", name, err)
	}
	if f, err := os.Open(filepath.Join("testdata", name+".links")); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' {
				continue
			}
			link, target, ok := strings.Cut(line, " -> ")
			if !ok {
				t.Fatalf("%s.links: bad line %q", name, line)
			}
			p := filepath.Join(root, link)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatalf("%s.links: %v", name, err)
			}
		}
	}
	o := rootOptions(root)
	fixtures.built[name] = o
	return o
}

func rootOptions(root string) Options {
	return Options{
		ProcRoot: filepath.Join(root, "proc"),
		SysRoot:  filepath.Join(root, "sys"),
		EtcRoot:  filepath.Join(root, "etc"),
		Root:     root,
	}
}

// writeTree writes files (path relative to a new root -> content) and
// returns options for that root.
func writeTree(t *testing.T, files map[string]string) Options {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return rootOptions(root)
}

func ptr[T any](v T) *T { return &v }

type check struct {
	name string
	got  func(HostInfo) any
	want any
}

func TestHostFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		checks  []check
	}{
		{"host1", []check{
			{"hostname", func(h HostInfo) any { return h.Hostname }, "vm"},
			{"kernel", func(h HostInfo) any { return h.Kernel }, "6.18.44-fc-v782"},
			{"kernel version", func(h HostInfo) any { return h.KernelVersion }, "#1 SMP PREEMPT_DYNAMIC @0"},
			{"os", func(h HostInfo) any { return h.OS }, "Debian GNU/Linux 12 (bookworm)"},
			{"cpu", func(h HostInfo) any { return h.CPU }, CPUInfo{
				Model: "AMD EPYC", Vendor: "AuthenticAMD",
				Sockets: 1, Cores: 2, CoresPerSocket: 2, ThreadsPerCore: 1, Online: 2,
				MHz: 2245.78, Flags: []string{"hypervisor", "avx2", "aes"},
			}},
			{"memory", func(h HostInfo) any { return h.Memory }, MemoryInfo{
				TotalBytes: 24683656 * 1024, HugePagesTotal: ptr(int64(0)), HugePageSizeBytes: 2 << 20,
			}},
			{"virtualization", func(h HostInfo) any { return h.Virtualization }, "kvm+container"},
			{"evidence", func(h HostInfo) any { return h.Evidence }, VirtEvidence{
				HypervisorFlag: true,
				Clocksources:   []string{"tsc", "kvm-clock"},
				ContainerHints: []string{"/.dockerenv"},
			}},
			{"cgroup", func(h HostInfo) any { return h.Cgroup }, CgroupInfo{
				Mode:          "hybrid",
				CPUController: "v1", CPUPath: "/", CPULimitRaw: "-1 100000",
				MemoryController: "v1", MemoryPath: "/process_api/09f09ea5c158d88504bec1fce8725d97",
				MemoryLimitRaw: "9223372036854771712",
				CPUsAllowed:    2, CPUsAllowedList: "0-1",
			}},
			{"thp enabled", func(h HostInfo) any { return h.THPEnabled }, "madvise"},
			{"thp defrag", func(h HostInfo) any { return h.THPDefrag }, "madvise"},
			{"clocksource", func(h HostInfo) any { return h.Clocksource }, "tsc"},
			{"sysctls", func(h HostInfo) any { return h.Sysctls }, map[string]string{
				"kernel.numa_balancing":               "0",
				"kernel.sched_autogroup_enabled":      "1",
				"kernel.sched_cfs_bandwidth_slice_us": "5000",
				"kernel.sched_deadline_period_max_us": "4194304",
				"kernel.sched_deadline_period_min_us": "100",
				"kernel.sched_rr_timeslice_ms":        "100",
				"kernel.sched_rt_period_us":           "1000000",
				"kernel.sched_rt_runtime_us":          "950000",
				"vm.dirty_background_bytes":           "0",
				"vm.dirty_background_ratio":           "10",
				"vm.dirty_bytes":                      "0",
				"vm.dirty_expire_centisecs":           "3000",
				"vm.dirty_ratio":                      "20",
				"vm.dirty_writeback_centisecs":        "500",
				"vm.nr_hugepages":                     "0",
				"vm.overcommit_memory":                "0",
				"vm.swappiness":                       "60",
			}},
		}},
		{"host2", []check{
			{"kernel", func(h HostInfo) any { return h.Kernel }, "6.8.0-45-generic"},
			{"os from /usr/lib", func(h HostInfo) any { return h.OS }, "Ubuntu 24.04.1 LTS"},
			{"cpu from cpuinfo ids", func(h HostInfo) any { return h.CPU }, CPUInfo{
				Model:   "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
				Vendor:  "GenuineIntel",
				Sockets: 2, Cores: 4, CoresPerSocket: 2, ThreadsPerCore: 2, Online: 8,
				MHz: 2000, MaxMHz: 3200, Governor: "performance", FreqDriver: "intel_pstate",
				Flags: []string{"hypervisor", "avx2", "avx512f", "aes"},
			}},
			{"memory", func(h HostInfo) any { return h.Memory }, MemoryInfo{
				TotalBytes: 65536000 * 1024, HugePagesTotal: ptr(int64(512)), HugePageSizeBytes: 2 << 20,
			}},
			{"virtualization", func(h HostInfo) any { return h.Virtualization }, "vmware"},
			{"dmi", func(h HostInfo) any { return h.Evidence.DMISysVendor + "/" + h.Evidence.DMIProductName }, "VMware, Inc./VMware Virtual Platform"},
			{"cgroup v2", func(h HostInfo) any { return h.Cgroup }, CgroupInfo{
				Mode:          "v2",
				CPUController: "v2", CPUPath: "/system.slice/dbparity.service",
				CPULimit: ptr(1.5), CPULimitRaw: "150000 100000",
				MemoryController: "v2", MemoryPath: "/system.slice/dbparity.service",
				MemoryLimitBytes: ptr(int64(1073741824)), MemoryLimitRaw: "1073741824",
				CPUsAllowed: 6, CPUsAllowedList: "0-3,6-7",
			}},
			{"thp enabled", func(h HostInfo) any { return h.THPEnabled }, "always"},
			{"thp defrag", func(h HostInfo) any { return h.THPDefrag }, "defer+madvise"},
			{"sysctls: missing omitted, directories skipped", func(h HostInfo) any { return h.Sysctls }, map[string]string{
				"kernel.numa_balancing":          "1",
				"kernel.sched_autogroup_enabled": "0",
				"vm.dirty_background_bytes":      "268435456",
				"vm.dirty_ratio":                 "40",
				"vm.nr_hugepages":                "512",
				"vm.overcommit_memory":           "2",
				"vm.swappiness":                  "1",
			}},
		}},
		{"container1", []check{
			{"os", func(h HostInfo) any { return h.OS }, "Debian GNU/Linux 12 (bookworm)"},
			{"cpu without ids or model", func(h HostInfo) any { return h.CPU }, CPUInfo{
				Online: 4, Flags: []string{"aes"},
			}},
			{"virtualization", func(h HostInfo) any { return h.Virtualization }, "container"},
			{"hints", func(h HostInfo) any { return h.Evidence.ContainerHints }, []string{
				"/.dockerenv", "/proc/1/cgroup:docker", "/proc/self/cgroup:docker",
			}},
			{"cgroup v1 under a mount root", func(h HostInfo) any { return h.Cgroup }, CgroupInfo{
				Mode:          "v1",
				CPUController: "v1", CPUPath: "/docker/3f2a9c",
				CPULimit: ptr(2.0), CPULimitRaw: "200000 100000",
				MemoryController: "v1", MemoryPath: "/docker/3f2a9c",
				MemoryLimitBytes: ptr(int64(512 << 20)), MemoryLimitRaw: "536870912",
			}},
			{"memory total is the host's", func(h HostInfo) any { return h.Memory.TotalBytes }, int64(8000000 * 1024)},
			{"no huge page line, no reading", func(h HostInfo) any { return h.Memory.HugePagesTotal }, (*int64)(nil)},
			{"no sysctls", func(h HostInfo) any { return h.Sysctls }, map[string]string(nil)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			h := Host(fixture(t, tt.fixture))
			for _, c := range tt.checks {
				if got := c.got(h); !reflect.DeepEqual(got, c.want) {
					t.Errorf("%s:\n got %s\nwant %s", c.name, js(got), js(c.want))
				}
			}
			b, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "SECRET") {
				t.Errorf("disclosure holds a secret from the fixture: %s", b)
			}
		})
	}
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// TestHostNothingReadable checks that a root with nothing in it yields
// empty facts, not errors or guesses.
func TestHostNothingReadable(t *testing.T) {
	h := Host(rootOptions(t.TempDir()))
	want := HostInfo{Arch: h.Arch, Virtualization: "none detected"}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("got %s\nwant %s", js(h), js(want))
	}
}

// TestCgroupLimits covers what the fixtures do not: limits set on an
// ancestor, and a hybrid system whose v2 hierarchy holds no controllers.
func TestCgroupLimits(t *testing.T) {
	const unlimitedV1 = "9223372036854771712"
	tests := []struct {
		name  string
		files map[string]string
		want  CgroupInfo
	}{
		{
			name: "v1 parent binds, no mountinfo",
			files: map[string]string{
				"proc/self/cgroup": "3:cpu,cpuacct:/a/b\n2:memory:/a/b\n",
				"sys/fs/cgroup/cpu,cpuacct/a/b/cpu.cfs_quota_us":  "-1\n",
				"sys/fs/cgroup/cpu,cpuacct/a/b/cpu.cfs_period_us": "100000\n",
				"sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_quota_us":    "50000\n",
				"sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_period_us":   "100000\n",
				"sys/fs/cgroup/memory/a/b/memory.limit_in_bytes":  unlimitedV1 + "\n",
				"sys/fs/cgroup/memory/a/memory.limit_in_bytes":    "2147483648\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes":      unlimitedV1 + "\n",
			},
			want: CgroupInfo{
				Mode:          "v1",
				CPUController: "v1", CPUPath: "/a/b", CPULimit: ptr(0.5), CPULimitRaw: "50000 100000", CPULimitFrom: "/a",
				MemoryController: "v1", MemoryPath: "/a/b",
				MemoryLimitBytes: ptr(int64(2 << 30)), MemoryLimitRaw: "2147483648", MemoryLimitFrom: "/a",
			},
		},
		{
			name: "v2 parent binds cpu, memory unlimited throughout",
			files: map[string]string{
				"proc/self/cgroup":                   "0::/x/y\n",
				"sys/fs/cgroup/cgroup.controllers":   "cpu memory\n",
				"sys/fs/cgroup/x/y/cpu.max":          "max 100000\n",
				"sys/fs/cgroup/x/cpu.max":            "400000 100000\n",
				"sys/fs/cgroup/x/y/memory.max":       "max\n",
				"sys/fs/cgroup/x/memory.max":         "max\n",
				"sys/fs/cgroup/x/y/cgroup.procs":     "1\n",
				"sys/fs/cgroup/x/cgroup.controllers": "cpu memory\n",
			},
			want: CgroupInfo{
				Mode:          "v2",
				CPUController: "v2", CPUPath: "/x/y", CPULimit: ptr(4.0), CPULimitRaw: "400000 100000", CPULimitFrom: "/x",
				MemoryController: "v2", MemoryPath: "/x/y", MemoryLimitRaw: "max",
			},
		},
		{
			name: "hybrid: v2 without the cpu controller is not read as unlimited",
			files: map[string]string{
				"proc/self/cgroup":                           "4:memory:/\n0::/user.slice\n",
				"proc/self/mountinfo":                        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n",
				"sys/fs/cgroup/unified/cgroup.controllers":   "\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824\n",
			},
			want: CgroupInfo{
				Mode:             "hybrid",
				MemoryController: "v1", MemoryPath: "/",
				MemoryLimitBytes: ptr(int64(1 << 30)), MemoryLimitRaw: "1073741824",
			},
		},
		{
			name: "v1 cgroup outside the mounted part is not read",
			files: map[string]string{
				"proc/self/cgroup":                           "2:memory:/elsewhere\n",
				"proc/self/mountinfo":                        "35 31 0:32 /docker/1 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824\n",
			},
			want: CgroupInfo{Mode: "v1"},
		},
		{
			name: "v1 hierarchy mounted outside /sys",
			files: map[string]string{
				"proc/self/cgroup":                    "2:memory:/\n",
				"proc/self/mountinfo":                 "35 31 0:32 / /cgroup/memory rw - cgroup cgroup rw,memory\n",
				"cgroup/memory/memory.limit_in_bytes": "4096\n",
			},
			want: CgroupInfo{Mode: "v1", MemoryController: "v1", MemoryPath: "/", MemoryLimitBytes: ptr(int64(4096)), MemoryLimitRaw: "4096"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cgroupFacts(writeTree(t, tt.files))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %s\nwant %s", js(got), js(tt.want))
			}
		})
	}
}
