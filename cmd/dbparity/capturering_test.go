package main

import (
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The packet capture's ring flags: sizes checked in their own words, only
// with --listen-on; and the capture's drops stated even when nothing was
// captured (0 included).
func TestCaptureRingFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"capture", "--proxy", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "--out", "x.capture", "--ring-blocks", "8"}, "go with --listen-on"},
		{[]string{"capture", "--from", "pg.csv", "--out", "x.capture", "--ring-block-size", "4MiB"}, "go with --listen-on"},
		{[]string{"capture", "--listen-on", "lo", "--port", "5432", "--out", "x.capture", "--ring-block-size", "64KiB"}, "--ring-block-size 65536: give at least 128 KiB"},
		{[]string{"capture", "--listen-on", "lo", "--port", "5432", "--out", "x.capture", "--ring-block-size", "lots"}, "--ring-block-size lots: give a size"},
		{[]string{"capture", "--listen-on", "lo", "--port", "5432", "--out", "x.capture", "--ring-blocks", "1"}, "--ring-blocks 1: give 2 or more"},
		{[]string{"capture", "--listen-on", "lo", "--port", "5432", "--out", "x.capture", "--ring-block-size", "64MiB", "--ring-blocks", "64"}, "a ring of at most"},
	} {
		code, _, stderr := dbparity(t, dir, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	for _, size := range []string{"1MiB", "512KiB", "256K", "2M", "262144"} {
		if r, err := ringFlags(size, 4); err != nil || r.BlockSize%(128<<10) != 0 {
			t.Errorf("--ring-block-size %s: %+v, %v", size, r, err)
		}
	}

	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, 0)
	if err != nil {
		t.Logf("the rest needs CAP_NET_RAW: %v", err)
		return
	}
	syscall.Close(fd)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	code, _, stderr := dbparity(t, dir, "capture", "--listen-on", "lo", "--port", port, "--out", "quiet.capture", "--duration", "500ms",
		"--ring-block-size", "256KiB", "--ring-blocks", "4")
	if code == 0 || !strings.Contains(stderr, "dropped by the kernel: 0 (ring of 4 × 256 KiB full 0 times); dropped by the decoder's queue: 0") ||
		!strings.Contains(stderr, "no statement passed port "+port) {
		t.Errorf("a capture that saw nothing: exit %d\n%s", code, stderr)
	}
}
