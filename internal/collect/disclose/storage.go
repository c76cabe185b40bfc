package disclose

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StorageInfo describes the file system and device holding a directory,
// normally the database's data directory.
type StorageInfo struct {
	Dir          string `json:"dir"`            // as given
	Path         string `json:"path,omitempty"` // absolute, symlinks resolved
	MountPoint   string `json:"mount_point,omitempty"`
	FSType       string `json:"fs_type,omitempty"`
	Source       string `json:"source,omitempty"`
	MountOptions string `json:"mount_options,omitempty"` // per mount: rw,noatime
	SuperOptions string `json:"super_options,omitempty"` // per file system: discard, data=ordered
	// FreeBytes is what an unprivileged user may still write (statfs
	// f_bavail, as df prints it); both are 0 when statfs failed.
	FreeBytes  int64 `json:"free_bytes"`
	TotalBytes int64 `json:"total_bytes"`
	// Device is set for file systems on a local block device, and nil for
	// overlay, tmpfs and network file systems.
	Device *BlockDevice `json:"device,omitempty"`
}

// BlockDevice is the block device under a file system and its queue
// settings, which are the disk's (a partition has no queue of its own).
type BlockDevice struct {
	Name   string `json:"name"`                  // e.g. "nvme0n1p2", "dm-0", "vda"
	Parent string `json:"parent_disk,omitempty"` // the disk, when Name is a partition
	// Slaves are the devices under a device-mapper or md device.
	Slaves            []string `json:"slaves,omitempty"`
	Rotational        *bool    `json:"rotational,omitempty"`
	Scheduler         string   `json:"scheduler,omitempty"`
	LogicalBlockSize  int64    `json:"logical_block_size,omitempty"`
	PhysicalBlockSize int64    `json:"physical_block_size,omitempty"`
	NrRequests        int64    `json:"nr_requests,omitempty"`
	ReadAheadKB       *int64   `json:"read_ahead_kb,omitempty"`
	Model             string   `json:"model,omitempty"`
	Vendor            string   `json:"vendor,omitempty"`
}

// Storage describes the file system and device holding dir, or returns
// nil when dir is "". A dir that does not exist yet is described by its
// nearest existing parent, where it will be created.
func Storage(o Options, dir string) *StorageInfo {
	if dir == "" {
		return nil
	}
	o = o.withDefaults()
	s := &StorageInfo{Dir: dir}
	if o.Foreign {
		s.Path = filepath.Clean(dir)
		describeMount(o, s)
		return s
	}
	p, err := resolve(dir)
	if err != nil {
		return s
	}
	s.Path = p
	describeMount(o, s)
	s.FreeBytes, s.TotalBytes = statfs(p)
	return s
}

// resolve makes dir absolute and follows symlinks, climbing to the nearest
// parent that exists.
func resolve(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if p == filepath.Dir(p) {
			return "", err
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

// describeMount fills in the mount holding s.Path and its device.
func describeMount(o Options, s *StorageInfo) {
	var mounts []mount
	withFile(o.proc("self", "mountinfo"), func(r io.Reader) { mounts = parseMountinfo(r) })
	m, ok := mountFor(mounts, s.Path)
	if !ok {
		return
	}
	s.MountPoint, s.FSType, s.Source = m.point, m.fsType, m.source
	s.MountOptions, s.SuperOptions = m.options, m.super
	s.Device = blockDevice(o, m)
}

// blockDevice finds the sysfs directory of the mount's device. The device
// number is the reliable key (a source of /dev/root or /dev/mapper/x says
// little); file systems with anonymous device numbers (btrfs, and every
// virtual file system) fall back to the source's name when it is a /dev
// path, and otherwise have no block device.
func blockDevice(o Options, m mount) *BlockDevice {
	var candidates []string
	if m.major != 0 {
		candidates = append(candidates, o.sys("dev", "block", strconv.Itoa(m.major)+":"+strconv.Itoa(m.minor)))
	}
	if name, ok := strings.CutPrefix(m.source, "/dev/"); ok && name != "" && !strings.Contains(name, "/") {
		candidates = append(candidates, o.sys("class", "block", name))
	}
	var dir string
	for _, c := range candidates {
		if r, err := filepath.EvalSymlinks(c); err == nil {
			dir = r
			break
		}
	}
	if dir == "" {
		return nil
	}
	d := &BlockDevice{Name: filepath.Base(dir)}
	disk := dir
	if exists(filepath.Join(dir, "partition")) {
		disk = filepath.Dir(dir)
		d.Parent = filepath.Base(disk)
	}
	if es, err := os.ReadDir(filepath.Join(disk, "slaves")); err == nil {
		for _, e := range es {
			d.Slaves = append(d.Slaves, e.Name())
		}
	}
	q := filepath.Join(disk, "queue")
	if v, ok := readInt(filepath.Join(q, "rotational")); ok {
		rot := v != 0
		d.Rotational = &rot
	}
	d.Scheduler = bracketed(readString(filepath.Join(q, "scheduler")))
	d.LogicalBlockSize, _ = readInt(filepath.Join(q, "logical_block_size"))
	d.PhysicalBlockSize, _ = readInt(filepath.Join(q, "physical_block_size"))
	d.NrRequests, _ = readInt(filepath.Join(q, "nr_requests"))
	if v, ok := readInt(filepath.Join(q, "read_ahead_kb")); ok {
		d.ReadAheadKB = &v
	}
	d.Model = readString(filepath.Join(disk, "device", "model"))
	d.Vendor = readString(filepath.Join(disk, "device", "vendor"))
	return d
}
