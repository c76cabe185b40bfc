package disclose

import (
	"io"
	"slices"
	"strings"
)

// VirtEvidence is what the machine says about virtualisation, raw, so that a
// reader can judge HostInfo.Virtualization rather than trust it.
type VirtEvidence struct {
	HypervisorFlag bool   `json:"hypervisor_flag"` // "hypervisor" in /proc/cpuinfo flags
	DMISysVendor   string `json:"dmi_sys_vendor,omitempty"`
	DMIProductName string `json:"dmi_product_name,omitempty"`
	HypervisorType string `json:"hypervisor_type,omitempty"` // /sys/hypervisor/type
	// Clocksources lists the available clocksources: paravirtual ones
	// (kvm-clock, hyperv_clocksource_*, xen) register only in a guest of
	// that hypervisor, which names it when DMI is absent (microVMs).
	Clocksources []string `json:"clocksources_available,omitempty"`
	// ContainerHints are marker files and cgroup paths of container
	// engines, e.g. "/.dockerenv" or "/proc/1/cgroup:docker".
	ContainerHints []string `json:"container_hints,omitempty"`
}

func virtEvidence(o Options, ci cpuinfo, kernel string) VirtEvidence {
	dmi := o.sys("class", "dmi", "id")
	e := VirtEvidence{
		HypervisorFlag: ci.flags["hypervisor"],
		// product_serial and product_uuid sit beside these and are
		// root-only for a reason; they are never read.
		DMISysVendor:   readString(dmi + "/sys_vendor"),
		DMIProductName: readString(dmi + "/product_name"),
		HypervisorType: readString(o.sys("hypervisor", "type")),
	}
	if cs := strings.Fields(readString(o.sys("devices", "system", "clocksource", "clocksource0", "available_clocksource"))); len(cs) > 0 {
		e.Clocksources = cs
	}
	for _, f := range []string{"/.dockerenv", "/run/.containerenv"} {
		if exists(o.root(f)) {
			e.ContainerHints = append(e.ContainerHints, f)
		}
	}
	for _, pid := range []string{"1", "self"} {
		withFile(o.proc(pid, "cgroup"), func(r io.Reader) {
			var found []string
			for _, l := range parseProcCgroup(r) {
				for _, m := range containerMarkers(l.path) {
					if !slices.Contains(found, m) {
						found = append(found, m)
					}
				}
			}
			for _, m := range found {
				e.ContainerHints = append(e.ContainerHints, "/proc/"+pid+"/cgroup:"+m)
			}
		})
	}
	return e
}

// containerMarkers names the container engines whose cgroup naming appears
// in a cgroup path. Segments are matched whole or by the engines' own
// prefixes, so that a host's docker.service or containerd.service (the
// daemons, not containers) is not mistaken for a container.
func containerMarkers(cgroupPath string) []string {
	var ms []string
	add := func(m string) {
		if !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	for _, s := range strings.Split(cgroupPath, "/") {
		switch {
		case s == "docker", strings.HasPrefix(s, "docker-") && strings.HasSuffix(s, ".scope"):
			add("docker")
		case strings.HasPrefix(s, "kubepods"):
			add("kubepods")
		case strings.HasPrefix(s, "libpod"):
			add("libpod")
		case s == "lxc", strings.HasPrefix(s, "lxc.payload"):
			add("lxc")
		case strings.HasPrefix(s, "crio-"):
			add("crio")
		case strings.HasPrefix(s, "cri-containerd-"):
			add("containerd")
		}
	}
	return ms
}

// dmiNames maps DMI strings to hypervisor names. Entries with needsFlag
// name clouds that also sell bare-metal machines under the same DMI
// vendor, so they count only beside the CPU's hypervisor flag.
var dmiNames = []struct {
	vendor, product string // case-insensitive substrings; "" matches all
	name            string
	needsFlag       bool
}{
	{"", "KVM", "kvm", false},
	{"QEMU", "", "qemu", false},
	{"VMware", "", "vmware", false},
	{"Microsoft Corporation", "Virtual Machine", "microsoft", false},
	{"Xen", "", "xen", false},
	{"innotek", "", "oracle", false},
	{"", "VirtualBox", "oracle", false},
	{"Parallels", "", "parallels", false},
	{"Bochs", "", "bochs", false},
	{"BHYVE", "", "bhyve", false},
	{"Amazon EC2", "", "amazon", true},
	{"Google", "", "google", true},
}

// clocksourceNames maps paravirtual clocksources to their hypervisor.
var clocksourceNames = map[string]string{
	"kvm-clock":                   "kvm",
	"hyperv_clocksource_tsc_page": "microsoft",
	"hyperv_clocksource_msr":      "microsoft",
	"xen":                         "xen",
}

// hypervisor names the hypervisor from the evidence, most specific source
// first; "vm" when only the CPU flag says there is one, "" when nothing does.
func (e VirtEvidence) hypervisor(kernel string) string {
	if e.HypervisorType != "" {
		return strings.ToLower(e.HypervisorType)
	}
	var clock string
	for _, c := range e.Clocksources {
		if n, ok := clocksourceNames[c]; ok {
			clock = n
			break
		}
	}
	vendor, product := strings.ToLower(e.DMISysVendor), strings.ToLower(e.DMIProductName)
	for _, d := range dmiNames {
		if (d.vendor == "" && d.product == "") || d.needsFlag && !e.HypervisorFlag {
			continue
		}
		if strings.Contains(vendor, strings.ToLower(d.vendor)) && strings.Contains(product, strings.ToLower(d.product)) {
			if d.name == "qemu" && clock == "kvm" {
				return "kvm" // QEMU's machine, accelerated by KVM
			}
			return d.name
		}
	}
	if clock != "" {
		return clock
	}
	// WSL2 runs in a Hyper-V VM without DMI and says so in its release.
	if e.HypervisorFlag && strings.Contains(strings.ToLower(kernel), "microsoft") {
		return "microsoft"
	}
	if e.HypervisorFlag {
		return "vm"
	}
	return ""
}

func (e VirtEvidence) summary(kernel string) string {
	var parts []string
	if h := e.hypervisor(kernel); h != "" {
		parts = append(parts, h)
	}
	if len(e.ContainerHints) > 0 {
		parts = append(parts, "container")
	}
	if len(parts) == 0 {
		return "none detected"
	}
	return strings.Join(parts, "+")
}
