package dbhost

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/hostfs"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/collect/pgstat"
	"github.com/dbparity/dbparity/internal/engine"
)

// sqlSource reads the database host's /proc and /sys through the
// database's connection into a mirror, which ostat and disclose parse.
type sqlSource struct {
	files  *pgstat.HostFiles
	mirror *hostfs.Mirror
	reader *ostat.Reader
	pid    int   // the postmaster the reader walks from
	seen   []int // the server processes of the last reading
}

// counterFiles are the host's cumulative counters, read every interval.
var counterFiles = []string{
	"/proc/stat", "/proc/loadavg", "/proc/diskstats", "/proc/net/dev", "/proc/meminfo", "/proc/vmstat", "/proc/schedstat",
	"/proc/pressure/cpu", "/proc/pressure/io", "/proc/pressure/memory",
}

// NewSQL reads the database host through c, a PostgreSQL connection whose
// role may call pg_read_file on absolute paths (pgstat.HostAccess). The
// connection is the caller's to close.
func NewSQL(_ context.Context, c engine.Conn) (Source, error) {
	m, err := hostfs.New()
	if err != nil {
		return nil, err
	}
	return &sqlSource{files: pgstat.NewHostFiles(c), mirror: m}, nil
}

func (*sqlSource) Name() string { return SQL }

func (s *sqlSource) Close() error { return s.mirror.Close() }

// Read fetches the counters and the server processes' files in one
// statement, then parses the copy. The snapshot's time is the middle of
// the round trip, when the server read the files.
func (s *sqlSource) Read(ctx context.Context) (*ostat.Snapshot, error) {
	start := time.Now()
	files, postmaster, err := s.files.Read(ctx, counterFiles, true, s.seen...)
	at := start.Add(time.Since(start) / 2)
	if err != nil {
		return nil, err
	}
	if files["/proc/stat"] == nil {
		return nil, errors.New("the database server cannot read its host's /proc/stat (a container that hides it?)")
	}
	live := map[string]bool{}
	s.seen = s.seen[:0]
	for p := range files {
		if rest, ok := strings.CutPrefix(p, "/proc/"); ok {
			if pid, file, ok := strings.Cut(rest, "/"); ok {
				live[pid] = true
				if n, err := strconv.Atoi(pid); err == nil && file == "stat" {
					s.seen = append(s.seen, n)
				}
			}
		}
	}
	for _, p := range counterFiles {
		if _, ok := files[p]; !ok {
			files[p] = nil // gone there: gone here
		}
	}
	if err := s.mirror.Put(files); err != nil {
		return nil, fmt.Errorf("copy the database host's files: %w", err)
	}
	err = s.mirror.Retain("/proc", func(name string) bool {
		_, numeric := strconv.Atoi(name)
		return numeric != nil || live[name]
	})
	if err != nil {
		return nil, fmt.Errorf("copy the database host's files: %w", err)
	}
	if s.reader == nil || postmaster != s.pid {
		// A new postmaster (the server restarted) is a new tree.
		if s.reader, err = ostat.New(ostat.Options{ProcRoot: s.mirror.Path("/proc"), ServerPID: postmaster, Foreign: true}); err != nil {
			s.reader = nil
			return nil, fmt.Errorf("database host: %w", err)
		}
		s.pid = postmaster
	}
	snap, err := s.reader.Read()
	if err != nil {
		return nil, fmt.Errorf("database host: %w", err)
	}
	snap.At = at
	return snap, nil
}

// discloseFiles are the files disclose reads, fetched once.
var discloseFiles = []string{
	"/proc/sys/kernel/hostname", "/proc/sys/kernel/osrelease", "/proc/sys/kernel/version",
	"/proc/cpuinfo", "/proc/meminfo", "/proc/self/status", "/proc/self/cgroup", "/proc/self/mountinfo", "/proc/1/cgroup",
	"/etc/os-release", "/usr/lib/os-release", "/.dockerenv", "/run/.containerenv",
	"/sys/devices/system/cpu/online",
	"/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
	"/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver",
	"/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/transparent_hugepage/defrag",
	"/sys/devices/system/clocksource/clocksource0/current_clocksource",
	"/sys/devices/system/clocksource/clocksource0/available_clocksource",
	"/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name", "/sys/hypervisor/type",
	"/proc/sys/vm/swappiness", "/proc/sys/vm/dirty_ratio", "/proc/sys/vm/dirty_background_ratio",
	"/proc/sys/vm/dirty_bytes", "/proc/sys/vm/dirty_background_bytes", "/proc/sys/vm/dirty_expire_centisecs",
	"/proc/sys/vm/dirty_writeback_centisecs", "/proc/sys/vm/nr_hugepages", "/proc/sys/vm/overcommit_memory",
	"/proc/sys/kernel/numa_balancing",
}

// Disclose fetches what disclose reads, in three steps (the fixed files;
// then what they name: each CPU's topology, the server's cgroup and the
// device under the data directory; then the device's disk), and runs
// disclose on the copy. /proc/self is the backend serving the
// connection: a server process, as the disclosure wants.
func (s *sqlSource) Disclose(ctx context.Context, dataDir string) (disclose.HostInfo, *disclose.StorageInfo) {
	files, _, err := s.files.Read(ctx, discloseFiles, false)
	if err != nil {
		return disclose.HostInfo{}, nil
	}
	if names, err := s.files.List(ctx, "/proc/sys/kernel"); err == nil {
		var sched []string
		for _, n := range names {
			if strings.HasPrefix(n, "sched_") {
				sched = append(sched, "/proc/sys/kernel/"+n)
			}
		}
		s.fetch(ctx, files, sched)
	}
	mounts := parseMounts(string(files["/proc/self/mountinfo"]))
	var more []string
	for _, n := range cpuList(string(files["/sys/devices/system/cpu/online"])) {
		dir := "/sys/devices/system/cpu/cpu" + strconv.Itoa(n) + "/topology/"
		more = append(more, dir+"physical_package_id", dir+"core_id")
	}
	more = append(more, cgroupFiles(string(files["/proc/self/cgroup"]), mounts)...)
	data, dataOK := mountOf(mounts, dataDir)
	if dataOK && data.dev != "0:0" {
		more = append(more, "/sys/dev/block/"+data.dev+"/uevent", "/sys/dev/block/"+data.dev+"/partition")
	}
	s.fetch(ctx, files, more)
	if dataOK {
		s.device(ctx, files, data.dev)
	}
	if err := s.mirror.Put(files); err != nil {
		return disclose.HostInfo{}, nil
	}
	m := s.mirror
	// "self" there is the server's backend that read the files.
	o := disclose.Options{ProcRoot: m.Path("/proc"), SysRoot: m.Path("/sys"), EtcRoot: m.Path("/etc"), Root: m.Root(), Foreign: true, Server: true}
	h := disclose.Host(o)
	var st *disclose.StorageInfo
	if dataDir != "" {
		st = disclose.Storage(o, dataDir)
	}
	return h, st
}

// fetch adds the files among paths that exist to files.
func (s *sqlSource) fetch(ctx context.Context, files map[string][]byte, paths []string) {
	if len(paths) == 0 {
		return
	}
	got, _, err := s.files.Read(ctx, paths, false)
	if err != nil {
		return
	}
	for p, b := range got {
		files[p] = b
	}
}

// device lays out in the mirror the sysfs of the block device dev
// ("MAJ:MIN") as disclose walks it: the disk's directory with its queue
// and model, the partition's under it, and the links /sys/dev/block/dev
// and /sys/class/block/NAME. sysfs's own links cannot be read through
// pg_read_file, so the names come from the devices' uevent files.
func (s *sqlSource) device(ctx context.Context, files map[string][]byte, dev string) {
	ev := uevent(string(files["/sys/dev/block/"+dev+"/uevent"]))
	name := ev["DEVNAME"]
	if name == "" || strings.Contains(name, "/") {
		return
	}
	disk, part := name, ""
	if _, ok := files["/sys/dev/block/"+dev+"/partition"]; ok || ev["DEVTYPE"] == "partition" {
		disk, part = parentDisk(name), name
	}
	q := "/sys/block/" + disk + "/"
	var diskFiles []string
	for _, f := range []string{"queue/rotational", "queue/scheduler", "queue/logical_block_size", "queue/physical_block_size",
		"queue/nr_requests", "queue/read_ahead_kb", "device/model", "device/vendor"} {
		diskFiles = append(diskFiles, q+f)
	}
	got, _, err := s.files.Read(ctx, diskFiles, false)
	if err != nil {
		return
	}
	home := "/sys/devices/dbhost/" + disk
	for _, f := range diskFiles {
		if b, ok := got[f]; ok {
			files[home+"/"+strings.TrimPrefix(f, q)] = b
		}
	}
	if slaves, err := s.files.List(ctx, q+"slaves"); err == nil {
		for _, sl := range slaves {
			files[home+"/slaves/"+sl] = []byte{}
		}
	}
	target := home
	if part != "" {
		target = home + "/" + part
		files[target+"/partition"] = files["/sys/dev/block/"+dev+"/partition"]
		if files[target+"/partition"] == nil {
			files[target+"/partition"] = []byte("1\n")
		}
	}
	files[target+"/uevent"] = files["/sys/dev/block/"+dev+"/uevent"]
	delete(files, "/sys/dev/block/"+dev+"/uevent")
	delete(files, "/sys/dev/block/"+dev+"/partition")
	if err := s.mirror.Put(files); err != nil {
		return
	}
	s.mirror.Symlink("/sys/dev/block/"+dev, target)
	s.mirror.Symlink("/sys/class/block/"+name, target)
}

// parentDisk is the disk a partition's name belongs to, by the block
// layer's naming rule: the disk's name plus the number, with a "p" when
// the disk's name ends in a digit (sda1, nvme0n1p2, mmcblk0p1).
func parentDisk(part string) string {
	d := strings.TrimRight(part, "0123456789")
	if strings.HasSuffix(d, "p") && len(d) > 1 && d[len(d)-2] >= '0' && d[len(d)-2] <= '9' {
		d = d[:len(d)-1]
	}
	return d
}

func uevent(text string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
			m[k] = v
		}
	}
	return m
}

// cpuList parses a CPU list such as "0-3,8".
func cpuList(s string) []int {
	var out []int
	for _, r := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 4096 {
				continue
			}
		}
		for n := a; n <= b; n++ {
			out = append(out, n)
		}
	}
	return out
}

// mountLine is what this package needs of a mountinfo line; disclose
// parses the file in full from the copy.
type mountLine struct {
	dev, root, point, fsType string
}

func parseMounts(text string) []mountLine {
	var out []mountLine
	for _, l := range strings.Split(text, "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		out = append(out, mountLine{dev: f[2], root: unescape(f[3]), point: unescape(f[4]), fsType: g[0]})
	}
	return out
}

// unescape undoes mountinfo's octal escapes of space, tab, newline and
// backslash.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// mountOf is the mount holding dir: the longest mount point above it.
func mountOf(ms []mountLine, dir string) (mountLine, bool) {
	var best mountLine
	found := false
	if dir == "" {
		return best, false
	}
	for _, m := range ms {
		if (dir == m.point || strings.HasPrefix(dir, strings.TrimSuffix(m.point, "/")+"/")) && (!found || len(m.point) >= len(best.point)) {
			best, found = m, true
		}
	}
	return best, found
}

// cgroupFiles are the limit files of the backend's cgroups, from its own
// cgroup up to each hierarchy's mount, for disclose's cgroup facts.
func cgroupFiles(procCgroup string, mounts []mountLine) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(procCgroup), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		v2 := parts[0] == "0" && parts[1] == ""
		for _, m := range mounts {
			switch {
			case v2 && m.fsType != "cgroup2", !v2 && m.fsType != "cgroup":
				continue
			}
			rel := parts[2]
			if m.root != "/" {
				var ok bool
				if rel, ok = strings.CutPrefix(rel, m.root); !ok {
					continue
				}
			}
			out = append(out, path.Join(m.point, "cgroup.controllers"))
			for dir := path.Join(m.point, rel); ; dir = path.Dir(dir) {
				for _, f := range []string{"cpu.max", "memory.max", "cpu.cfs_quota_us", "cpu.cfs_period_us", "memory.limit_in_bytes"} {
					out = append(out, path.Join(dir, f))
				}
				if len(dir) <= len(m.point) || dir == "/" {
					break
				}
			}
		}
	}
	return out
}
