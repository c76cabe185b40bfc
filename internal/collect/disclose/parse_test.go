package disclose

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"", nil, false},
		{"0\n", []int{0}, false},
		{"0-3", []int{0, 1, 2, 3}, false},
		{"0-1,4,6-7", []int{0, 1, 4, 6, 7}, false},
		{"3-1", nil, true},
		{"a", nil, true},
		{"-1", nil, true},
		{"0-", nil, true},
		{"0,,1", nil, true},
		{"0-4294967295", nil, true},
	}
	for _, tt := range tests {
		got, err := parseCPUList(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestTopology(t *testing.T) {
	tests := []struct {
		name                   string
		procs                  []cpuProc
		sockets, cores, cps, t int
	}{
		{"empty", nil, 0, 0, 0, 0},
		{"one socket, SMT", []cpuProc{{0, 0}, {0, 0}, {0, 1}, {0, 1}}, 1, 2, 2, 2},
		{"core ids repeat across sockets", []cpuProc{{0, 0}, {1, 0}}, 2, 2, 1, 1},
		// A hybrid part: two SMT performance cores and two efficiency cores.
		{"hybrid cores", []cpuProc{{0, 0}, {0, 0}, {0, 4}, {0, 4}, {0, 8}, {0, 9}}, 1, 4, 4, 0},
		{"unequal sockets", []cpuProc{{0, 0}, {0, 1}, {1, 0}}, 2, 3, 0, 1},
		{"an id is missing", []cpuProc{{0, 0}, {-1, 1}}, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		s, c, cps, tpc := topology(tt.procs)
		if s != tt.sockets || c != tt.cores || cps != tt.cps || tpc != tt.t {
			t.Errorf("%s: got %d sockets, %d cores, %d per socket, %d threads per core; want %d, %d, %d, %d",
				tt.name, s, c, cps, tpc, tt.sockets, tt.cores, tt.cps, tt.t)
		}
	}
}

func TestParseCPUInfo(t *testing.T) {
	in := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n" +
		"cpu MHz\t\t: 2450.000\nphysical id\t: 0\ncore id\t\t: 3\nflags\t\t: fpu avx2 aes\n\n" +
		"processor\t: 1\nmodel name\t: other\ncpu MHz\t\t: 1.0\nphysical id\t: 0\ncore id\t\t: 5\nflags\t\t: fpu\n"
	ci := parseCPUInfo(strings.NewReader(in))
	if ci.model != "AMD EPYC 7B13 64-Core Processor" || ci.vendor != "AuthenticAMD" || ci.mhz != 2450 {
		t.Errorf("first processor: got %q %q %v", ci.model, ci.vendor, ci.mhz)
	}
	if !ci.flags["avx2"] || ci.flags["fpu"] != true || len(ci.flags) != 3 {
		t.Errorf("flags: got %v", ci.flags)
	}
	if want := []cpuProc{{0, 3}, {0, 5}}; !reflect.DeepEqual(ci.processors, want) {
		t.Errorf("processors: got %v, want %v", ci.processors, want)
	}
}

func TestParseMeminfo(t *testing.T) {
	in := "MemTotal:       24683656 kB\nHugePages_Total:      16\nHugepagesize:       2048 kB\nBad: x kB\nNoColon 5\n"
	want := map[string]int64{"MemTotal": 24683656 * 1024, "HugePages_Total": 16, "Hugepagesize": 2048 * 1024}
	if got := parseMeminfo(strings.NewReader(in)); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestParseOSRelease(t *testing.T) {
	in := "# comment\n\nNAME=Fedora\nPRETTY_NAME=\"Fedora Linux 40 (\\\"Server\\\" Edition)\"\nID='fedora'\nBAD LINE=1\nVERSION_ID=40\n"
	want := map[string]string{
		"NAME": "Fedora", "PRETTY_NAME": `Fedora Linux 40 ("Server" Edition)`, "ID": "fedora", "VERSION_ID": "40",
	}
	if got := parseOSRelease(strings.NewReader(in)); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestBracketed(t *testing.T) {
	tests := []struct{ in, want string }{
		{"always [madvise] never", "madvise"},
		{"[always] madvise never\n", "always"},
		{"always defer [defer+madvise] madvise never", "defer+madvise"},
		{"none [mq-deadline] kyber bfq", "mq-deadline"},
		{"none", "none"},
		{"", ""},
		{"always madvise never", ""},
		{"[unclosed", ""},
		{"[]", ""},
		{"[a b]", ""},
		{"x]", ""},
	}
	for _, tt := range tests {
		if got := bracketed(tt.in); got != tt.want {
			t.Errorf("bracketed(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseCPUMax(t *testing.T) {
	tests := []struct {
		in            string
		quota, period int64
		wantErr       bool
	}{
		{"150000 100000\n", 150000, 100000, false},
		{"max 100000", -1, 100000, false},
		{"max", -1, 100000, false},
		{"50000", 50000, 100000, false},
		{"", 0, 0, true},
		{"0 100000", 0, 0, true},
		{"-5 100000", 0, 0, true},
		{"100 0", 0, 0, true},
		{"100 x", 0, 0, true},
		{"1 2 3", 0, 0, true},
	}
	for _, tt := range tests {
		q, p, err := parseCPUMax(tt.in)
		if (err != nil) != tt.wantErr || q != tt.quota || p != tt.period {
			t.Errorf("parseCPUMax(%q) = %d, %d, %v; want %d, %d, error %v", tt.in, q, p, err, tt.quota, tt.period, tt.wantErr)
		}
	}
}

func TestParseMountLine(t *testing.T) {
	tests := []struct {
		in      string
		want    mount
		wantErr bool
	}{
		{
			in:   "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard",
			want: mount{major: 254, root: "/", point: "/", options: "rw,relatime", fsType: "ext4", source: "/dev/vda", super: "rw,discard"},
		},
		{
			in:   "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue",
			want: mount{major: 98, root: "/mnt1", point: "/mnt2", options: "rw,noatime", fsType: "ext3", source: "/dev/root", super: "rw,errors=continue"},
		},
		{
			in:   `40 1 0:50 / /a\040b\134c\011d rw - tmpfs my\040src rw`,
			want: mount{major: 0, minor: 50, root: "/", point: "/a b\\c\td", options: "rw", fsType: "tmpfs", source: "my src", super: "rw"},
		},
		{
			// A source of "-" would fool a parser that counts fields from the end.
			in:   "41 1 0:51 / /x rw - tmpfs - rw",
			want: mount{minor: 51, root: "/", point: "/x", options: "rw", fsType: "tmpfs", source: "-", super: "rw"},
		},
		{in: "27 1 254:0 / / rw,relatime ext4 /dev/vda rw", wantErr: true},
		{in: "27 1 254 / / rw - ext4 /dev/vda rw", wantErr: true},
		{in: "27 1 a:0 / / rw - ext4 /dev/vda rw", wantErr: true},
		{in: "27 1 1:0 / relative rw - ext4 /dev/vda rw", wantErr: true},
		{in: "27 1 1:0 / / rw - ext4", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseMountLine(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseMountLine(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestUnescapeOctal(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:     "plain",
		`a\040b`:    "a b",
		`\134`:      `\`,
		`\400`:      `\400`, // not a byte
		`\04`:       `\04`,
		`end\`:      `end\`,
		`\0401\011`: " 1\t",
	} {
		if got := unescapeOctal(in); got != want {
			t.Errorf("unescapeOctal(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMountFor(t *testing.T) {
	ms := []mount{{point: "/", fsType: "a"}, {point: "/data", fsType: "b"}, {point: "/data/pg", fsType: "c"}, {point: "/data", fsType: "d"}}
	for p, want := range map[string]string{
		"/": "a", "/etc": "a", "/data": "d", "/data/x": "d", "/data2": "a", "/data/pg": "c", "/data/pg/base": "c", "/data/pgx": "d",
	} {
		if m, ok := mountFor(ms, p); !ok || m.fsType != want {
			t.Errorf("mountFor(%q) = %q, want %q", p, m.fsType, want)
		}
	}
	if _, ok := mountFor(nil, "/"); ok {
		t.Error("mountFor with no mounts found one")
	}
}

func TestParseProcCgroup(t *testing.T) {
	in := "12:cpu,cpuacct:/docker/1\n1:name=systemd:/a:b\n0::/user.slice\nbad\nx:cpu:/\n3:cpu:relative\n"
	want := []cgroupLine{
		{12, []string{"cpu", "cpuacct"}, "/docker/1"},
		{1, []string{"name=systemd"}, "/a:b"},
		{0, nil, "/user.slice"},
	}
	if got := parseProcCgroup(strings.NewReader(in)); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestContainerMarkers(t *testing.T) {
	tests := []struct {
		path string
		want []string
	}{
		{"/", nil},
		{"/init.scope", nil},
		{"/system.slice/docker.service", nil}, // the daemon on a host, not a container
		{"/system.slice/containerd.service", nil},
		{"/docker/3f2a9c", []string{"docker"}},
		{"/system.slice/docker-3f2a9c.scope", []string{"docker"}},
		{"/kubepods.slice/kubepods-burstable.slice/cri-containerd-ab.scope", []string{"kubepods", "containerd"}},
		{"/kubepods/besteffort/pod1/crio-ab.scope", []string{"kubepods", "crio"}},
		{"/machine.slice/libpod-ab.scope/container", []string{"libpod"}},
		{"/lxc.payload.web", []string{"lxc"}},
	}
	for _, tt := range tests {
		if got := containerMarkers(tt.path); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("containerMarkers(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestHypervisorName(t *testing.T) {
	tests := []struct {
		name   string
		e      VirtEvidence
		kernel string
		want   string
	}{
		{"nothing", VirtEvidence{}, "", ""},
		{"flag only", VirtEvidence{HypervisorFlag: true}, "", "vm"},
		{"kvm by clocksource", VirtEvidence{HypervisorFlag: true, Clocksources: []string{"tsc", "kvm-clock"}}, "", "kvm"},
		{"qemu accelerated by kvm", VirtEvidence{HypervisorFlag: true, DMISysVendor: "QEMU", DMIProductName: "Standard PC (Q35 + ICH9, 2009)", Clocksources: []string{"kvm-clock"}}, "", "kvm"},
		{"qemu", VirtEvidence{HypervisorFlag: true, DMISysVendor: "QEMU", DMIProductName: "Standard PC (i440FX + PIIX, 1996)"}, "", "qemu"},
		{"kvm by product", VirtEvidence{HypervisorFlag: true, DMISysVendor: "Red Hat", DMIProductName: "KVM"}, "", "kvm"},
		{"vmware", VirtEvidence{HypervisorFlag: true, DMISysVendor: "VMware, Inc.", DMIProductName: "VMware7,1"}, "", "vmware"},
		{"hyper-v", VirtEvidence{HypervisorFlag: true, DMISysVendor: "Microsoft Corporation", DMIProductName: "Virtual Machine", Clocksources: []string{"hyperv_clocksource_tsc_page"}}, "", "microsoft"},
		{"surface is not a vm", VirtEvidence{DMISysVendor: "Microsoft Corporation", DMIProductName: "Surface Pro"}, "", ""},
		{"wsl2", VirtEvidence{HypervisorFlag: true}, "5.15.153.1-microsoft-standard-WSL2", "microsoft"},
		{"xen pv", VirtEvidence{HypervisorType: "xen"}, "", "xen"},
		{"aws nitro", VirtEvidence{HypervisorFlag: true, DMISysVendor: "Amazon EC2", DMIProductName: "m6i.large", Clocksources: []string{"kvm-clock", "tsc"}}, "", "amazon"},
		{"aws metal", VirtEvidence{DMISysVendor: "Amazon EC2", DMIProductName: "m6i.metal"}, "", ""},
		{"virtualbox", VirtEvidence{HypervisorFlag: true, DMISysVendor: "innotek GmbH", DMIProductName: "VirtualBox"}, "", "oracle"},
		{"arm64 kvm guest has no flag", VirtEvidence{DMISysVendor: "QEMU", DMIProductName: "KVM Virtual Machine"}, "", "kvm"},
		{"bare metal", VirtEvidence{DMISysVendor: "Dell Inc.", DMIProductName: "PowerEdge R750"}, "", ""},
	}
	for _, tt := range tests {
		if got := tt.e.hypervisor(tt.kernel); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	s := VirtEvidence{HypervisorFlag: true, ContainerHints: []string{"/.dockerenv"}}.summary("")
	if s != "vm+container" {
		t.Errorf("summary = %q, want vm+container", s)
	}
}
