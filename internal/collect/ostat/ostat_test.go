package ostat

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// readFixture reads one recorded tree and gives it the time record.sh
// noted when it started copying.
func readFixture(t testing.TB, name string, serverPID int) *Snapshot {
	t.Helper()
	r, err := New(Options{ProcRoot: filepath.Join("testdata", name), ServerPID: serverPID})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", name+".time"))
	if err != nil {
		t.Fatal(err)
	}
	sec, frac, _ := strings.Cut(strings.TrimSpace(string(b)), ".")
	whole, err1 := strconv.ParseInt(sec, 10, 64)
	nanos, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || len(frac) != 9 {
		t.Fatalf("%s.time: %q is not seconds.nanoseconds", name, b)
	}
	s.At = time.Unix(whole, nanos)
	return s
}

// The recorded tree's "server" is the shell record.sh started, with two
// busy loops under it.
const fixtureServer = 6730

// TestFixture checks the derived figures against the raw numbers of the
// two recorded trees, worked out by hand from the files.
func TestFixture(t *testing.T) {
	a := readFixture(t, "proc-a", fixtureServer)
	b := readFixture(t, "proc-b", fixtureServer)
	r := Between(a, b)

	// proc-a.time 1795422095.775279864, proc-b.time 1795422096.870146115.
	const dt = 1.094866251
	// "cpu" lines, in ticks of 10 ms:
	//   a: 131618 0 36461 550179 10878 0 3014 1114
	//   b: 131672 0 36574 550179 10878 0 3018 1166
	// user +54, system +113, softirq +4, steal +52: 223 ticks, no idle
	// (both CPUs were kept busy).
	const cpuTicks = 54 + 113 + 4 + 52
	// vda in diskstats:
	//   a: 240759 43834 8682330 69765 2427131 92192 82614592 1540520 0 157632 1706457 183486 93 27944040 21576 466043 74595
	//   b: 253585 43834 8784938 70600 2430848 92192 83090368 1541155 1 158472 1707927 183486 93 27944040 21576 466043 74595
	// The tree (utime stime cutime cstime of /proc/PID/stat):
	//   6730 sh   a: 0 0 0 0     b: 0 0 0 0
	//   6735 yes  a: 4 20 0 0    b: 16 57 0 0
	//   6736 yes  a: 6 20 0 0    b: 22 51 0 0
	// so +96 ticks. Self (6728) used none of its own: 0 0 in both.
	const serverTicks = (16 + 57 + 22 + 51) - (4 + 20 + 6 + 20)

	tests := []struct {
		name      string
		got, want float64
	}{
		{"interval_s", r.IntervalS, dt},
		{"cpu_user_pct", r.CPUUserPct, 54.0 / cpuTicks * 100},
		{"cpu_system_pct", r.CPUSystemPct, 113.0 / cpuTicks * 100},
		{"cpu_softirq_pct", r.CPUSoftIRQPct, 4.0 / cpuTicks * 100},
		{"cpu_steal_pct", r.CPUStealPct, 52.0 / cpuTicks * 100},
		{"cpu_idle_pct", r.CPUIdlePct, 0},
		{"cpu_iowait_pct", r.CPUIowaitPct, 0},
		{"cpu_busy_pct", r.CPUBusyPct, (54.0 + 113 + 4) / cpuTicks * 100},
		{"interrupts_per_s", r.InterruptsPerS, (10109096 - 10092055) / dt},
		{"context_switches_per_s", r.ContextSwitchesPerS, (28148024 - 28116791) / dt},
		{"procs_running", float64(r.ProcsRunning), 7},
		{"procs_blocked", float64(r.ProcsBlocked), 0},
		{"load1", r.Load1, 0.81},
		{"load15", r.Load15, 0.89},
		// /proc/pressure/io some total 97869248 → 98356227 µs.
		{"io some_pct", r.IOPressure.SomePct, (98356227 - 97869248) / (dt * 1e6) * 100},
		{"io some_avg10_pct", r.IOPressure.SomeAvg10Pct, 11.13},
		{"io full_pct", *r.IOPressure.FullPct, (76231825 - 76231675) / (dt * 1e6) * 100},
		{"cpu some_pct", r.CPUPressure.SomePct, (337601585 - 336815053) / (dt * 1e6) * 100},
		{"server_cpu_cores", *r.ServerCPUCores, serverTicks / 100.0 / dt},
		{"server_cpu_pct", *r.ServerCPUPct, float64(serverTicks) / cpuTicks * 100},
		{"self_cpu_cores", r.SelfCPUCores, 0},
		{"other_cpu_cores", r.OtherCPUCores, (54 + 113 + 4 - serverTicks) / 100.0 / dt},
		// meminfo of b, kB: total 24683656, free 23545212, buffers 21408,
		// cached 823528, sreclaimable 189944.
		{"mem_total_mb", r.MemTotalMB, 24683656.0 / 1024},
		{"mem_used_mb", r.MemUsedMB, (24683656.0 - 23545212 - 21408 - 823528 - 189944) / 1024},
		{"mem_cached_mb", r.MemCachedMB, 823528.0 / 1024},
		{"mem_dirty_mb", r.MemDirtyMB, 62876.0 / 1024},
		{"mem_available_mb", r.MemAvailableMB, 24274720.0 / 1024},
	}
	for _, tc := range tests {
		if math.Abs(tc.got-tc.want) > 1e-9 {
			t.Errorf("%s = %.12g, want %.12g", tc.name, tc.got, tc.want)
		}
	}
	if r.MemoryPressure == nil || r.MemoryPressure.SomePct != 0 {
		t.Errorf("memory pressure %+v, want present and 0", r.MemoryPressure)
	}
	if r.CPUPressure.FullPct != nil {
		t.Errorf("cpu full pressure %v, want none", *r.CPUPressure.FullPct)
	}
	if b.ServerProcs != 3 {
		t.Errorf("server procs %d, want 3 (sh and two yes)", b.ServerProcs)
	}

	if names := diskNames(r.Disks); !reflect.DeepEqual(names, []string{"vda", "zram0"}) {
		t.Fatalf("disks %v, want vda and zram0 (loop0-7 dropped)", names)
	}
	vda := r.Disks[0]
	disk := []struct {
		name      string
		got, want float64
	}{
		{"reads_per_s", vda.ReadsPerS, (253585 - 240759) / dt},
		{"writes_per_s", vda.WritesPerS, (2430848 - 2427131) / dt},
		{"read_merges_per_s", vda.ReadMergesPerS, 0},
		{"read_mb_per_s", vda.ReadMBPerS, (8784938 - 8682330) * 512.0 / (1 << 20) / dt},
		{"write_mb_per_s", vda.WriteMBPerS, (83090368 - 82614592) * 512.0 / (1 << 20) / dt},
		{"r_await_ms", vda.RAwaitMs, (70600.0 - 69765) / (253585 - 240759)},
		{"w_await_ms", vda.WAwaitMs, (1541155.0 - 1540520) / (2430848 - 2427131)},
		{"await_ms", vda.AwaitMs, (70600.0 - 69765 + 1541155 - 1540520) / (253585 - 240759 + 2430848 - 2427131)},
		{"aqu_sz", vda.AquSz, (1707927 - 1706457) / (dt * 1000)},
		{"util_pct", vda.UtilPct, (158472 - 157632) / (dt * 1000) * 100},
		{"discards_per_s", *vda.DiscardsPerS, 0},
		{"flushes_per_s", *vda.FlushesPerS, 0},
	}
	for _, tc := range disk {
		if math.Abs(tc.got-tc.want) > 1e-9 {
			t.Errorf("vda %s = %.12g, want %.12g", tc.name, tc.got, tc.want)
		}
	}

	if names := netNames(r.Nets); !reflect.DeepEqual(names, []string{"eth0", "ifb0", "ifb1", "lo"}) {
		t.Fatalf("nets %v", names)
	}
	lo := r.Nets[3]
	// lo: 170145 bytes 360 packets → 176145 bytes 480 packets, both ways.
	if want := 120 / dt; math.Abs(lo.RxPacketsPerS-want) > 1e-9 || math.Abs(lo.TxPacketsPerS-want) > 1e-9 {
		t.Errorf("lo packets/s %g/%g, want %g", lo.RxPacketsPerS, lo.TxPacketsPerS, want)
	}
	if want := 6000.0 / (1 << 20) / dt; math.Abs(lo.RxMBPerS-want) > 1e-9 {
		t.Errorf("lo rx MB/s %g, want %g", lo.RxMBPerS, want)
	}
	checkRates(t, r)
}

func diskNames(ds []DiskRates) []string {
	var n []string
	for _, d := range ds {
		n = append(n, d.Name)
	}
	return n
}

func netNames(ns []NetRates) []string {
	var n []string
	for _, d := range ns {
		n = append(n, d.Name)
	}
	return n
}

// checkRates fails on any figure that is negative, infinite or NaN, and
// on CPU shares that do not add up.
func checkRates(t testing.TB, r Rates) {
	t.Helper()
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Float64:
			if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
				t.Errorf("%s = %v", path, f)
			}
		case reflect.Pointer:
			if !v.IsNil() {
				walk(path, v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(path+"["+strconv.Itoa(i)+"]", v.Index(i))
			}
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[time.Time]() {
				return
			}
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		}
	}
	walk("rates", reflect.ValueOf(r))
	sum := r.CPUUserPct + r.CPUNicePct + r.CPUSystemPct + r.CPUIowaitPct + r.CPUIRQPct +
		r.CPUSoftIRQPct + r.CPUStealPct + r.CPUIdlePct
	if sum != 0 && math.Abs(sum-100) > 1e-6 {
		t.Errorf("cpu shares add up to %v", sum)
	}
	for _, p := range []float64{r.CPUBusyPct, r.OtherCPUPct} {
		if p > 100+1e-6 {
			t.Errorf("a share of the host of %v%%", p)
		}
	}
	for _, d := range r.Disks {
		if d.UtilPct > 100 {
			t.Errorf("%s util %v", d.Name, d.UtilPct)
		}
	}
	if _, err := json.Marshal(r); err != nil {
		t.Errorf("rates do not encode: %v", err)
	}
}

func TestKeepDisk(t *testing.T) {
	all := map[string]bool{}
	for _, n := range strings.Fields(`sda sda1 sda15 sdaa sdaa1 nvme0n1 nvme0n1p1 nvme0n1p12 mmcblk0 mmcblk0p2
		md127 md127p1 dm-0 dm-1 dm-10 loop0 loop10 ram0 zram0 xvda1 vda vdb1 sr0 nbd1 nbd10 nbd1p1`) {
		all[n] = true
	}
	tests := []struct {
		name string
		keep bool
	}{
		{"sda", true}, {"sda1", false}, {"sda15", false}, {"sdaa", true}, {"sdaa1", false},
		{"nvme0n1", true}, {"nvme0n1p1", false}, {"nvme0n1p12", false},
		{"mmcblk0", true}, {"mmcblk0p2", false}, {"md127", true}, {"md127p1", false},
		{"dm-0", true}, {"dm-1", true}, {"dm-10", true}, // dm-1's partitions would be dm-1p…
		{"loop0", false}, {"loop10", false}, {"ram0", false}, {"zram0", true},
		{"xvda1", true}, // a Xen whole disk: no xvda beside it
		{"vda", true}, {"vdb1", true}, {"sr0", true},
		{"nbd1", true}, {"nbd10", true}, {"nbd1p1", false},
	}
	for _, tc := range tests {
		if got := keepDisk(tc.name, all); got != tc.keep {
			t.Errorf("keepDisk(%q) = %v, want %v", tc.name, got, tc.keep)
		}
	}
}

// TestReadOlderKernel reads a tree as an older kernel writes it: no
// /proc/pressure (before 4.20) and diskstats without discard and flush
// fields (before 4.18), with a partition to drop.
func TestReadOlderKernel(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"stat", "loadavg", "meminfo", "net/dev", "6728/stat"} {
		b, err := os.ReadFile(filepath.Join("testdata", "proc-a", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("6728", filepath.Join(root, "self")); err != nil {
		t.Fatal(err)
	}
	write := func(diskstats string) {
		if err := os.WriteFile(filepath.Join(root, "diskstats"), []byte(diskstats), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("   8       0 sda 100 0 800 10 50 0 400 20 0 30 30\n" +
		"   8       1 sda1 100 0 800 10 50 0 400 20 0 30 30\n")
	r, err := New(Options{ProcRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	write("   8       0 sda 200 0 1600 30 50 0 400 20 0 530 1030\n" +
		"   8       1 sda1 200 0 1600 30 50 0 400 20 0 530 1030\n")
	b, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if a.CPUPressure != nil || a.IOPressure != nil || a.MemoryPressure != nil {
		t.Errorf("pressure read where there is none: %+v %+v %+v", a.CPUPressure, a.IOPressure, a.MemoryPressure)
	}
	b.At = a.At.Add(time.Second)
	rates := Between(a, b)
	if rates.CPUPressure != nil || rates.IOPressure != nil || rates.MemoryPressure != nil {
		t.Errorf("pressure rates where there is none")
	}
	if len(rates.Disks) != 1 || rates.Disks[0].Name != "sda" {
		t.Fatalf("disks %+v, want sda only", rates.Disks)
	}
	d := rates.Disks[0]
	if d.ReadsPerS != 100 || d.RAwaitMs != 0.2 || d.UtilPct != 50 || d.AquSz != 1 || d.WAwaitMs != 0 {
		t.Errorf("sda %+v", d)
	}
	if d.DiscardsPerS != nil || d.FlushesPerS != nil {
		t.Errorf("discard or flush rates from a kernel that does not count them")
	}
	checkRates(t, rates)
}

// TestBetweenEdges covers what happens between two snapshots that a
// live system makes rare: devices that come and go, counters that wrap
// or reset, clocks that do not move.
func TestBetweenEdges(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	disk := func(reads, ticks, weighted uint64) DiskCounters {
		return DiskCounters{Major: 8, ReadIOs: reads, ReadTicks: ticks, IOTicks: ticks, WeightedTicks: weighted, Fields: 17}
	}
	snap := func(at time.Time, disks map[string]DiskCounters) *Snapshot {
		return &Snapshot{At: at, Disks: disks, CPU: CPUTimes{User: 10, Idle: 10}}
	}
	tests := []struct {
		name  string
		a, b  *Snapshot
		check func(t *testing.T, r Rates)
	}{
		{
			name: "device gone, device new",
			a:    snap(t0, map[string]DiskCounters{"sda": disk(1, 1, 1), "sdb": disk(1, 1, 1)}),
			b:    snap(t0.Add(time.Second), map[string]DiskCounters{"sda": disk(11, 2, 2), "sdc": disk(5, 1, 1)}),
			check: func(t *testing.T, r Rates) {
				if len(r.Disks) != 1 || r.Disks[0].Name != "sda" || r.Disks[0].ReadsPerS != 10 {
					t.Errorf("disks %+v, want sda at 10 reads/s only", r.Disks)
				}
			},
		},
		{
			name: "device replaced under its name",
			a:    snap(t0, map[string]DiskCounters{"dm-0": disk(1000, 1, 1)}),
			b:    snap(t0.Add(time.Second), map[string]DiskCounters{"dm-0": disk(3, 1, 1)}),
			check: func(t *testing.T, r Rates) {
				if len(r.Disks) != 0 {
					t.Errorf("disks %+v, want none", r.Disks)
				}
			},
		},
		{
			name: "device re-created with another minor",
			a:    snap(t0, map[string]DiskCounters{"dm-0": {Minor: 0, ReadIOs: 1}}),
			b:    snap(t0.Add(time.Second), map[string]DiskCounters{"dm-0": {Minor: 1, ReadIOs: 5}}),
			check: func(t *testing.T, r Rates) {
				if len(r.Disks) != 0 {
					t.Errorf("disks %+v, want none", r.Disks)
				}
			},
		},
		{
			name: "32-bit tick fields wrap",
			a:    snap(t0, map[string]DiskCounters{"sda": disk(0, math.MaxUint32-99, math.MaxUint32-499)}),
			b:    snap(t0.Add(time.Second), map[string]DiskCounters{"sda": disk(100, 400, 1500)}),
			check: func(t *testing.T, r Rates) {
				d := r.Disks[0]
				// 100 ms to the wrap and 400 after it; 500 + 1500 weighted.
				if d.UtilPct != 50 || d.RAwaitMs != 5 || d.AquSz != 2 {
					t.Errorf("util %v r_await %v aqu %v, want 50, 5, 2", d.UtilPct, d.RAwaitMs, d.AquSz)
				}
			},
		},
		{
			name: "no time passed",
			a:    snap(t0, map[string]DiskCounters{"sda": disk(1, 1, 1)}),
			b:    snap(t0, map[string]DiskCounters{"sda": disk(9, 9, 9)}),
			check: func(t *testing.T, r Rates) {
				if r.IntervalS != 0 || len(r.Disks) != 0 || r.CPUIdlePct != 0 {
					t.Errorf("rates from an empty interval: %+v", r)
				}
			},
		},
		{
			name: "snapshots swapped",
			a:    snap(t0.Add(time.Second), map[string]DiskCounters{"sda": disk(9, 9, 9)}),
			b:    snap(t0, map[string]DiskCounters{"sda": disk(1, 1, 1)}),
			check: func(t *testing.T, r Rates) {
				if r.IntervalS != 0 || len(r.Disks) != 0 {
					t.Errorf("rates from a backwards interval: %+v", r)
				}
			},
		},
		{
			name: "idle went backwards",
			a:    &Snapshot{At: t0, CPU: CPUTimes{User: 10, Idle: 50, Iowait: 5}},
			b:    &Snapshot{At: t0.Add(time.Second), CPU: CPUTimes{User: 11, Idle: 49.5, Iowait: 6}},
			check: func(t *testing.T, r Rates) {
				if r.CPUIdlePct != 0 || r.CPUUserPct != 50 || r.CPUIowaitPct != 50 {
					t.Errorf("user %v idle %v iowait %v, want 50 0 50", r.CPUUserPct, r.CPUIdlePct, r.CPUIowaitPct)
				}
			},
		},
		{
			name: "server appears, pressure disappears",
			a:    &Snapshot{At: t0, IOPressure: &Pressure{}},
			b:    &Snapshot{At: t0.Add(time.Second), ServerCPU: new(1.0)},
			check: func(t *testing.T, r Rates) {
				if r.ServerCPUCores != nil || r.IOPressure != nil {
					t.Errorf("server %v pressure %v from one side only", r.ServerCPUCores, r.IOPressure)
				}
			},
		},
		{
			name: "server lost a member",
			a:    &Snapshot{At: t0, ServerCPU: new(10.0), SelfCPU: 1, CPU: CPUTimes{User: 100}},
			b:    &Snapshot{At: t0.Add(time.Second), ServerCPU: new(9.0), SelfCPU: 1.5, CPU: CPUTimes{User: 102}},
			check: func(t *testing.T, r Rates) {
				if *r.ServerCPUCores != 0 || r.SelfCPUCores != 0.5 || r.OtherCPUCores != 1.5 {
					t.Errorf("server %v self %v other %v, want 0 0.5 1.5", *r.ServerCPUCores, r.SelfCPUCores, r.OtherCPUCores)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Between(tc.a, tc.b)
			tc.check(t, r)
			checkRates(t, r)
		})
	}
}

func liveReader(t testing.TB, o Options) *Reader {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLive(t *testing.T) {
	r := liveReader(t, Options{})
	a, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	// Burn 150 ms of CPU (not of wall time: on a busy machine the spinner
	// gets a fraction of a core) so that self has something to show.
	burn := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for from := burn(); burn()-from < 150*time.Millisecond; {
	}
	b, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	rates := Between(a, b)
	checkRates(t, rates)
	// The 150 ms of CPU may take a little less wall time: the runtime's
	// other threads (the collector) count in the process's CPU too
	// (seen: 0.1499 s).
	if s := rates.IntervalS; s < 0.1 || s > 30 {
		t.Errorf("interval %v s", s)
	}
	if rates.NumCPU < 1 || rates.NumCPU < runtime.NumCPU() {
		t.Errorf("/proc/stat has %d CPUs, Go can use %d", rates.NumCPU, runtime.NumCPU())
	}
	// /proc counts in clock ticks (10 ms): 150 ms burnt shows as at least 0.12 s.
	if cpu := rates.SelfCPUCores * rates.IntervalS; cpu < 0.12 || rates.SelfCPUCores > float64(rates.NumCPU)+0.2 {
		t.Errorf("self used %.3f cores (%.3f s of CPU) while burning 0.15 s of CPU", rates.SelfCPUCores, cpu)
	}
	if rates.ContextSwitchesPerS <= 0 || rates.InterruptsPerS <= 0 {
		t.Errorf("a live system with no interrupts (%v/s) or context switches (%v/s)", rates.InterruptsPerS, rates.ContextSwitchesPerS)
	}
	if rates.MemTotalMB <= 0 || rates.MemUsedMB > rates.MemTotalMB || rates.MemAvailableMB > rates.MemTotalMB {
		t.Errorf("memory total %v used %v available %v MB", rates.MemTotalMB, rates.MemUsedMB, rates.MemAvailableMB)
	}
	if len(rates.Nets) == 0 {
		t.Errorf("no network interface, not even lo")
	}
	if _, err := os.Stat("/proc/pressure/io"); err == nil && rates.IOPressure == nil {
		t.Errorf("/proc/pressure/io exists but no io pressure was read")
	}
	t.Logf("%d disks %v, %d interfaces, cpu busy %.1f%% steal %.1f%%, self %.2f cores, other %.2f cores",
		len(rates.Disks), diskNames(rates.Disks), len(rates.Nets), rates.CPUBusyPct, rates.CPUStealPct,
		rates.SelfCPUCores, rates.OtherCPUCores)
}

// TestLiveServerTree measures a process tree this test starts: a shell
// and two busy loops under it.
func TestLiveServerTree(t *testing.T) {
	if _, err := exec.LookPath("yes"); err != nil {
		t.Skip("no yes(1) to make load with")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	cmd := exec.Command("sh", "-c", "yes >/dev/null & yes >/dev/null & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		// The busy loops first, so that the shell reaps them and none is
		// left a zombie of init; then the group, whatever else remains.
		kids, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		for _, k := range strings.Fields(string(kids)) {
			if n, err := strconv.Atoi(k); err == nil {
				syscall.Kill(n, syscall.SIGKILL)
			}
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-pid, syscall.SIGKILL)
			<-done
		}
	})

	r := liveReader(t, Options{ServerPID: pid})
	// Wait for the shell to have started both loops.
	var a *Snapshot
	for deadline := time.Now().Add(5 * time.Second); ; {
		var err error
		if a, err = r.Read(); err != nil {
			t.Fatal(err)
		}
		if a.ServerProcs == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server tree has %d processes, want 3", a.ServerProcs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The truth: the tree's own clock ticks (utime and stime of the
	// shell and its loops), read straight from /proc beside the reader.
	treeTicks := func() (ticks float64, at time.Time) {
		at = time.Now()
		kids, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		for _, p := range append([]string{strconv.Itoa(pid)}, strings.Fields(string(kids))...) {
			st, err := os.ReadFile("/proc/" + p + "/stat")
			if err != nil {
				continue
			}
			f := strings.Fields(string(st)[strings.LastIndexByte(string(st), ')')+2:])
			u, _ := strconv.ParseFloat(f[11], 64)
			s, _ := strconv.ParseFloat(f[12], 64)
			ticks += u + s
		}
		return ticks, at
	}
	t0, at0 := treeTicks()
	time.Sleep(time.Second)
	b, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	t1, at1 := treeTicks()
	truth := (t1 - t0) / 100 / at1.Sub(at0).Seconds()
	rates := Between(a, b)
	checkRates(t, rates)
	if rates.ServerCPUCores == nil {
		t.Fatal("no server CPU")
	}
	cores := *rates.ServerCPUCores
	t.Logf("server %.2f cores (%.1f%% of the host), self %.2f, other %.2f, host busy %.1f%% steal %.1f%%",
		cores, *rates.ServerCPUPct, rates.SelfCPUCores, rates.OtherCPUCores, rates.CPUBusyPct, rates.CPUStealPct)
	// Two busy loops want two cores and can have no more than exist; what
	// they get depends on the host's other work (0.02 cores in all with
	// the suite and CPU hogs beside), so the reader's figure is held to
	// the tree's own ticks over the same second: 10% and two ticks each
	// side, for the instants the two reads differ by.
	if high := min(2, float64(rates.NumCPU)) + 0.2; cores > high || math.Abs(cores-truth) > 0.1*truth+0.04 {
		t.Errorf("server used %.2f cores, the tree's own ticks %.2f (at most %.1f)", cores, truth, high)
	}
	if rates.OtherCPUCores > float64(rates.NumCPU) {
		t.Errorf("other %v cores", rates.OtherCPUCores)
	}

	// When a member exits, its time must move into its parent's cutime,
	// not vanish: kill one loop, let the shell reap it, and the tree's
	// total must not drop.
	kids, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		t.Skipf("cannot list the shell's children: %v", err)
	}
	yes, err := strconv.Atoi(strings.Fields(string(kids))[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(yes, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var c *Snapshot
	for deadline := time.Now().Add(5 * time.Second); ; {
		if c, err = r.Read(); err != nil {
			t.Fatal(err)
		}
		if c.ServerProcs == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server tree has %d processes after a kill, want 2", c.ServerProcs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if *c.ServerCPU < *b.ServerCPU {
		t.Errorf("server CPU fell from %.2f s to %.2f s when a reaped child left the tree", *b.ServerCPU, *c.ServerCPU)
	}
}

// TestReadMalformed feeds Read files it cannot parse: it must fail with
// an error naming the file, never panic.
func TestReadMalformed(t *testing.T) {
	tests := []struct{ file, content, want string }{
		{"net/dev", "Inter-|\n face |\n    lo: 1 2 3\n", "/net/dev: malformed"}, // procfs indexes 16 fields
		{"diskstats", "   8 0 sda x y z\n", "/diskstats: expected integer"},
		{"stat", "cpu  a b c\n", "/stat: error parsing file"},
		{"loadavg", "0.1\n", "/loadavg: error parsing file"},
		{"6728/stat", "6728 (sh)", "/*/stat: malformed"}, // cut after the command name
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range []string{"stat", "diskstats", "loadavg", "meminfo", "net/dev", "6728/stat"} {
				b, err := os.ReadFile(filepath.Join("testdata", "proc-a", f))
				if err != nil {
					t.Fatal(err)
				}
				if f == tc.file {
					b = []byte(tc.content)
				}
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink("6728", filepath.Join(root, "self")); err != nil {
				t.Fatal(err)
			}
			r, err := New(Options{ProcRoot: root})
			if err != nil {
				t.Fatal(err)
			}
			s, err := r.Read()
			if err == nil || s != nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read = %v, %v; want an error about %s", s, err, tc.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(Options{ProcRoot: filepath.Join(t.TempDir(), "absent")}); err == nil {
		t.Error("New on a missing proc root succeeded")
	}
	if _, err := New(Options{ProcRoot: filepath.Join("testdata", "proc-a"), ServerPID: 999999}); err == nil ||
		!strings.Contains(err.Error(), "server pid 999999") {
		t.Errorf("New with a server that does not exist: %v", err)
	}
	if _, err := New(Options{ProcRoot: filepath.Join("testdata", "proc-a"), ServerPID: 6728}); err == nil ||
		!strings.Contains(err.Error(), "is this process") {
		t.Errorf("New with the server being self: %v", err)
	}
}

// FuzzBetween feeds Between arbitrary counters: whatever they are, no
// figure may be negative, infinite or NaN, and nothing may panic.
func FuzzBetween(f *testing.F) {
	f.Add(int64(1e9), uint64(100), uint64(200), uint64(5), uint64(math.MaxUint32-1), uint64(7), uint64(1<<40), 2.5, 1.0, 17)
	f.Add(int64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), 0.0, 0.0, 11)
	f.Add(int64(-5), uint64(math.MaxUint64), uint64(0), uint64(math.MaxUint64), uint64(1), uint64(math.MaxUint64), uint64(3), -1.0, math.MaxFloat64, 15)
	f.Fuzz(func(t *testing.T, ns int64, x, y, z, w, u, v uint64, fa, fb float64, fields int) {
		t0 := time.Unix(1_700_000_000, 0)
		mk := func(at time.Time, p, q, r, s uint64, g float64) *Snapshot {
			cpu := float64(p) / 100
			return &Snapshot{
				At: at,
				CPU: CPUTimes{User: cpu, Nice: float64(q) / 100, System: float64(r) / 100, Idle: float64(s) / 100,
					Iowait: cpu, IRQ: float64(q) / 100, SoftIRQ: float64(r) / 100, Steal: float64(s) / 100},
				Interrupts: p, ContextSwitches: q, ProcsRunning: r,
				Load1:          g,
				IOPressure:     &Pressure{Some: PressureLine{Avg10: g, Total: p}, Full: &PressureLine{Total: q}},
				MemoryPressure: &Pressure{Some: PressureLine{Total: s}},
				Disks: map[string]DiskCounters{"sda": {
					ReadIOs: p, ReadSectors: q, ReadTicks: r, WriteIOs: s, WriteTicks: p, IOTicks: q,
					WeightedTicks: r, DiscardIOs: s, FlushIOs: p, Fields: fields,
				}},
				Nets:      map[string]NetCounters{"lo": {RxBytes: p, RxPackets: q, TxBytes: r, TxDropped: s}},
				Memory:    Memory{Total: p, Free: q, Buffers: r, Cached: s, SReclaimable: p},
				SelfCPU:   g,
				ServerCPU: &g,
			}
		}
		a := mk(t0, x, y, z, w, fa)
		b := mk(t0.Add(time.Duration(ns)), u, v, x, y, fb)
		checkRates(t, Between(a, b))
		checkRates(t, Between(b, a))
	})
}

// FuzzKeepDisk checks the partition rule on any name: no panic, and a
// name is never its own parent.
func FuzzKeepDisk(f *testing.F) {
	for _, s := range []string{"sda1", "nvme0n1p1", "dm-10", "p1", "1", "", "loop", "xp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if isPartition(name, map[string]bool{}) {
			t.Errorf("%q is a partition of nothing", name)
		}
		keepDisk(name, map[string]bool{name: true, name + "1": true, name + "p1": true})
		if name == "" {
			return
		}
		// The block layer's own naming must always be recognised.
		part := name + "7"
		if last := name[len(name)-1]; last >= '0' && last <= '9' {
			part = name + "p7"
		}
		if !isPartition(part, map[string]bool{name: true}) {
			t.Errorf("%q not seen as a partition of %q", part, name)
		}
	})
}

func BenchmarkRead(b *testing.B) {
	for _, bc := range []struct {
		name string
		o    Options
	}{
		{"host", Options{}},
		// The whole userland as the "server": the walk reads every
		// /proc/PID/stat, the same cost as a real server tree.
		{"server=init", Options{ServerPID: 1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := liveReader(b, bc.o)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A child that exits and is reaped while /proc is read, after its
// parent's line, is in neither line: the reading is taken again, and the
// parent's cutime then holds the child's time. Without that, the tree's
// CPU fell by the child's time (a window edge taken as sessions
// disconnected lost whole seconds of DB CPU).
func TestServerCPUChildExitsMidReading(t *testing.T) {
	dir := t.TempDir()
	stat := func(pid, ppid int, utime, cutime int) {
		t.Helper()
		d := filepath.Join(dir, strconv.Itoa(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
		// majflt cmajflt utime stime cutime cstime, then the rest.
		line := fmt.Sprintf("%d (p) S %d %d 1 0 -1 0 0 0 0 0 %d 0 %d 0 20 0 1 0 100 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			pid, ppid, pid, utime, cutime)
		if err := os.WriteFile(filepath.Join(d, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stat(10, 1, 100, 0)  // the server
	stat(11, 10, 50, 0)  // a backend that stays
	stat(12, 10, 300, 0) // a backend about to disconnect: 3 s of CPU
	fs, err := procfs.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &Reader{opts: Options{ProcRoot: dir, ServerPID: 10}, fs: fs}
	exited := false
	r.beforeStat = func(pid int) {
		if pid == 12 && !exited {
			// Exits and is reaped now: its time moves to the server's cutime,
			// whose line was read already.
			exited = true
			os.RemoveAll(filepath.Join(dir, "12"))
			stat(10, 1, 100, 300)
		}
	}
	cpu, tree, err := r.serverCPU(-1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(cpu-4.5) > 1e-9 || len(tree) != 2 {
		t.Errorf("server CPU %.2f s over %v, want 4.50 s over the server and the backend left", cpu, tree)
	}
}
