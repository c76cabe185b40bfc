package wire

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/net/bpf"
)

// tcp6 builds an IPv6 packet carrying a TCP segment.
func tcp6(src, dst netip.AddrPort, seq uint32, flags byte, payload []byte) []byte {
	seg := make([]byte, 20, 20+len(payload))
	binary.BigEndian.PutUint16(seg[0:], src.Port())
	binary.BigEndian.PutUint16(seg[2:], dst.Port())
	binary.BigEndian.PutUint32(seg[4:], seq)
	seg[12], seg[13] = 5<<4, flags
	seg = append(seg, payload...)
	ip := make([]byte, 40, 40+len(seg))
	ip[0], ip[6], ip[7] = 0x60, 6, 64
	binary.BigEndian.PutUint16(ip[4:], uint16(len(seg)))
	s, d := src.Addr().As16(), dst.Addr().As16()
	copy(ip[8:], s[:])
	copy(ip[24:], d[:])
	return append(ip, seg...)
}

// The kernel's filter keeps the port's segments that carry bytes or open
// or close a connection, both ways, over IPv4 (with options too) and
// IPv6, and leaves out pure ACKs, other ports, UDP, later IPv4
// fragments, other IPv6 next headers and packets too short to tell.
// (Run in x/net/bpf's machine; loopback's outgoing test uses an
// extension it lacks, exercised by TestRingLoopback.)
func TestPortFilter(t *testing.T) {
	raw, err := portFilter(5432, false)
	if err != nil {
		t.Fatal(err)
	}
	var prog []bpf.Instruction
	for _, r := range raw {
		prog = append(prog, r.Disassemble())
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	const syn, ack, fin, rst, psh = 0x02, 0x10, 0x01, 0x04, 0x08
	cl4, sv4 := netip.MustParseAddrPort("10.0.0.2:40000"), netip.MustParseAddrPort("10.0.0.1:5432")
	other4 := netip.MustParseAddrPort("10.0.0.1:5433")
	cl6, sv6 := netip.MustParseAddrPort("[fd00::2]:40000"), netip.MustParseAddrPort("[fd00::1]:5432")
	other6 := netip.MustParseAddrPort("[fd00::1]:6432")
	data := []byte("Q\x00\x00\x00\x0dSELECT 1\x00")

	withOptions := func(p []byte) []byte {
		q := append(append(append([]byte{}, p[:20]...), 1, 1, 1, 1), p[20:]...) // four NOPs
		q[0] = 0x46
		binary.BigEndian.PutUint16(q[2:], uint16(len(q)))
		return q
	}
	udp := tcp4(cl4, sv4, 1, psh|ack, data)
	udp[9] = 17
	laterFragment := tcp4(cl4, sv4, 1, psh|ack, data)
	binary.BigEndian.PutUint16(laterFragment[6:], 0x2000|185)
	notTCP6 := tcp6(cl6, sv6, 1, psh|ack, data)
	notTCP6[6] = 17
	bigTCP := tcp4(cl4, sv4, 1, ack, data)
	binary.BigEndian.PutUint16(bigTCP[2:], 0)

	for _, c := range []struct {
		name string
		p    []byte
		keep bool
	}{
		{"v4 to the port", tcp4(cl4, sv4, 1, psh|ack, data), true},
		{"v4 from the port", tcp4(sv4, cl4, 1, psh|ack, data), true},
		{"v4 with IP options", withOptions(tcp4(cl4, sv4, 1, psh|ack, data)), true},
		{"v4 SYN", tcp4(cl4, sv4, 1, syn, nil), true},
		{"v4 SYN-ACK", tcp4(sv4, cl4, 1, syn|ack, nil), true},
		{"v4 FIN", tcp4(cl4, sv4, 1, fin|ack, nil), true},
		{"v4 RST", tcp4(sv4, cl4, 1, rst, nil), true},
		{"v4 one byte", tcp4(cl4, sv4, 1, ack, []byte{0}), true},
		{"v4 total length 0 (BIG TCP)", bigTCP, true},
		{"v4 pure ACK", tcp4(cl4, sv4, 1, ack, nil), false},
		{"v4 pure ACK with IP options", withOptions(tcp4(cl4, sv4, 1, ack, nil)), false},
		{"v4 another port", tcp4(cl4, other4, 1, psh|ack, data), false},
		{"v4 UDP", udp, false},
		{"v4 later fragment", laterFragment, false},
		{"v4 cut short", tcp4(cl4, sv4, 1, psh|ack, data)[:22], false},
		{"v6 to the port", tcp6(cl6, sv6, 1, psh|ack, data), true},
		{"v6 from the port", tcp6(sv6, cl6, 1, psh|ack, data), true},
		{"v6 SYN", tcp6(cl6, sv6, 1, syn, nil), true},
		{"v6 pure ACK", tcp6(cl6, sv6, 1, ack, nil), false},
		{"v6 another port", tcp6(cl6, other6, 1, psh|ack, data), false},
		{"v6 not TCP first", notTCP6, false},
		{"neither v4 nor v6", append([]byte{0x50}, make([]byte, 60)...), false},
	} {
		n, err := vm.Run(c.p)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (n > 0) != c.keep {
			t.Errorf("%s: filter returned %d, want kept %v", c.name, n, c.keep)
		}
	}
	// On loopback the program begins by leaving out the outgoing copy.
	lo, err := portFilter(5432, true)
	if err != nil {
		t.Fatal(err)
	}
	if first := lo[0].Disassemble(); first != (bpf.LoadExtension{Num: bpf.ExtType}) || len(lo) != len(raw)+2 {
		t.Errorf("loopback's program begins with %v, %d instructions against %d", first, len(lo), len(raw))
	}
}

// A ring's sizes are checked in the flags' words; the summary states
// every drop count, 0 included.
func TestRingCheckAndSummary(t *testing.T) {
	for _, c := range []struct {
		r  Ring
		ok bool
	}{
		{Ring{}, true},
		{Ring{BlockSize: 4 << 20, Blocks: 64}, true},
		{Ring{BlockSize: 64 << 10}, false},
		{Ring{BlockSize: 1<<20 + 1}, false},
		{Ring{Blocks: 1}, false},
		{Ring{BlockSize: 64 << 20, Blocks: 64}, false},
	} {
		if err := c.r.Check(); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.r, err)
		}
	}
	s := SniffStats{Packets: 10, Ring: Ring{}}.Summary()
	want := "packets: 10 segments decoded; dropped by the kernel: 0 (ring of 32 × 1 MiB full 0 times); dropped by the decoder's queue: 0; connections lost: 0\n"
	if s != want {
		t.Errorf("summary %q\nwant    %q", s, want)
	}
}
