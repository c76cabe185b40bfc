package disclose

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestStorageFixtures(t *testing.T) {
	nvme := &BlockDevice{
		Name: "nvme0n1p2", Parent: "nvme0n1", Rotational: ptr(false), Scheduler: "none",
		LogicalBlockSize: 512, PhysicalBlockSize: 512, NrRequests: 1023, ReadAheadKB: ptr(int64(128)),
		Model: "Samsung SSD 980 PRO 1TB",
	}
	tests := []struct {
		fixture, path string
		want          StorageInfo // Dir, Path, FreeBytes and TotalBytes are not compared
	}{
		{"host1", "/tmp", StorageInfo{
			MountPoint: "/", FSType: "ext4", Source: "/dev/vda", MountOptions: "rw,relatime",
			SuperOptions: "rw,discard,resv_strict,resuid=65534,resgid=65534",
			Device: &BlockDevice{
				Name: "vda", Rotational: ptr(true), Scheduler: "mq-deadline",
				LogicalBlockSize: 512, PhysicalBlockSize: 4096, NrRequests: 256, ReadAheadKB: ptr(int64(8192)),
				Vendor: "0x1af4",
			},
		}},
		{"host2", "/home/db", StorageInfo{
			MountPoint: "/", FSType: "ext4", Source: "/dev/nvme0n1p2", MountOptions: "rw,relatime",
			SuperOptions: "rw,errors=remount-ro", Device: nvme,
		}},
		{"host2", "/var/lib/postgresql/16/main", StorageInfo{
			MountPoint: "/var/lib/postgresql", FSType: "xfs", Source: "/dev/mapper/vg0-pgdata", MountOptions: "rw,noatime",
			SuperOptions: "rw,attr2,inode64,logbufs=8,logbsize=32k,noquota",
			Device: &BlockDevice{
				Name: "dm-0", Slaves: []string{"nvme0n1p3"}, Rotational: ptr(false), Scheduler: "none",
				LogicalBlockSize: 4096, PhysicalBlockSize: 4096, NrRequests: 128, ReadAheadKB: ptr(int64(0)),
			},
		}},
		{"host2", "/var/lib/postgresql", StorageInfo{
			MountPoint: "/var/lib/postgresql", FSType: "xfs", Source: "/dev/mapper/vg0-pgdata", MountOptions: "rw,noatime",
			SuperOptions: "rw,attr2,inode64,logbufs=8,logbsize=32k,noquota",
			Device: &BlockDevice{
				Name: "dm-0", Slaves: []string{"nvme0n1p3"}, Rotational: ptr(false), Scheduler: "none",
				LogicalBlockSize: 4096, PhysicalBlockSize: 4096, NrRequests: 128, ReadAheadKB: ptr(int64(0)),
			},
		}},
		{"host2", "/var/lib/postgresqlx", StorageInfo{
			MountPoint: "/", FSType: "ext4", Source: "/dev/nvme0n1p2", MountOptions: "rw,relatime",
			SuperOptions: "rw,errors=remount-ro", Device: nvme,
		}},
		{"host2", "/tmp/pg", StorageInfo{ // the later of two stacked mounts wins
			MountPoint: "/tmp", FSType: "tmpfs", Source: "scratch", MountOptions: "rw,relatime", SuperOptions: "rw,size=1024k",
		}},
		{"host2", "/srv/pg", StorageInfo{ // btrfs: anonymous device number, found by source
			MountPoint: "/srv", FSType: "btrfs", Source: "/dev/sdb", MountOptions: "rw,relatime",
			SuperOptions: "rw,space_cache=v2,subvolid=5,subvol=/",
			Device: &BlockDevice{
				Name: "sdb", Rotational: ptr(true), Scheduler: "bfq",
				LogicalBlockSize: 512, PhysicalBlockSize: 4096, NrRequests: 64, ReadAheadKB: ptr(int64(4096)),
				Model: "ST4000NM0035-1V4", Vendor: "ATA",
			},
		}},
		{"host2", "/mnt/nfs/pg", StorageInfo{
			MountPoint: "/mnt/nfs", FSType: "nfs4", Source: "files.example:/export", MountOptions: "rw,relatime",
			SuperOptions: "rw,vers=4.2,rsize=1048576,wsize=1048576,hard,proto=tcp",
		}},
		{"host2", "/mnt/my data/pg", StorageInfo{
			MountPoint: "/mnt/my data", FSType: "tmpfs", Source: "my tmp", MountOptions: "rw,relatime", SuperOptions: "rw",
		}},
		{"host2", "/var/lib/docker/overlay2/x/merged/var/lib/postgresql", StorageInfo{
			MountPoint: "/var/lib/docker/overlay2/x/merged", FSType: "overlay", Source: "overlay", MountOptions: "rw,relatime",
			SuperOptions: "rw,lowerdir=/var/lib/docker/overlay2/l/A:/var/lib/docker/overlay2/l/B,upperdir=/var/lib/docker/overlay2/x/diff,workdir=/var/lib/docker/overlay2/x/work",
		}},
		{"container1", "/var/lib/postgresql/data", StorageInfo{ // no sysfs for the device in this container
			MountPoint: "/var/lib/postgresql/data", FSType: "ext4", Source: "/dev/nvme0n1p1", MountOptions: "rw,relatime", SuperOptions: "rw,discard",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+tt.path, func(t *testing.T) {
			s := &StorageInfo{Path: tt.path}
			describeMount(fixture(t, tt.fixture), s)
			s.Path = ""
			if !reflect.DeepEqual(*s, tt.want) {
				t.Errorf("got  %s\nwant %s", js(s), js(tt.want))
			}
		})
	}
}

func TestStorageResolve(t *testing.T) {
	if Storage(Options{}, "") != nil {
		t.Error(`Storage("") is not nil`)
	}
	dir := t.TempDir()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "data"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ dir, want string }{
		{filepath.Join(dir, "link"), filepath.Join(real, "data")},
		{filepath.Join(dir, "link", "not", "yet"), filepath.Join(real, "data", "not", "yet")},
		{filepath.Join(dir, "missing"), filepath.Join(real, "missing")},
	} {
		s := Storage(rootOptions(t.TempDir()), tt.dir)
		if s.Dir != tt.dir || s.Path != tt.want {
			t.Errorf("Storage(%q): dir %q path %q, want path %q", tt.dir, s.Dir, s.Path, tt.want)
		}
		if s.FSType != "" || s.Device != nil {
			t.Errorf("Storage(%q) without mountinfo reports a mount: %+v", tt.dir, s)
		}
	}
}
