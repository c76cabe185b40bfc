package testhost

import (
	"strconv"
	"strings"
	"testing"
)

// A driver host is a host of its own (its name, its interfaces) that
// reaches a test host across the links, and leaves nothing behind.
func TestDriverHost(t *testing.T) {
	t.Parallel()
	h := Start(t, Options{Settings: []string{"fsync=off"}})
	d := StartDriver(t, h)
	out, err := d.Command("", "sh", "-c", "hostname; cat /proc/net/dev").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] != d.Hostname {
		t.Errorf("host name %q, want %q", lines[0], d.Hostname)
	}
	var ifs []string
	for _, l := range lines[1:] {
		if name, _, ok := strings.Cut(l, ":"); ok && !strings.Contains(name, "|") {
			ifs = append(ifs, strings.TrimSpace(name))
		}
	}
	if strings.Join(ifs, ",") != "lo,eth0" && strings.Join(ifs, ",") != "eth0,lo" {
		t.Errorf("the driver host's interfaces %v, want lo and eth0", ifs)
	}
	// A TCP connection to the host's database port, from the driver
	// host, through the driver's namespace.
	probe := "exec 3<>/dev/tcp/" + h.Addr + "/" + strconv.Itoa(h.Port) + " && echo connected"
	if out, err := d.Command("", "bash", "-c", probe).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "connected" {
		t.Fatalf("%s from %s: %v: %s", h.Addr, d.Addr, err, out)
	}
	m := d.M
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{driverLinkPrefix + strconv.Itoa(m), driverPeerPrefix + strconv.Itoa(m)} {
		if linkExists(name) {
			t.Errorf("link %s left", name)
		}
	}
	if exists(driverStatePath(m)) {
		t.Errorf("record %s left", driverStatePath(m))
	}
}
