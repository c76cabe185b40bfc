package wire

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// tcp4 builds an IPv4 packet carrying a TCP segment.
func tcp4(src, dst netip.AddrPort, seq uint32, flags byte, payload []byte) []byte {
	seg := make([]byte, 20, 20+len(payload))
	binary.BigEndian.PutUint16(seg[0:], src.Port())
	binary.BigEndian.PutUint16(seg[2:], dst.Port())
	binary.BigEndian.PutUint32(seg[4:], seq)
	seg[12], seg[13] = 5<<4, flags
	seg = append(seg, payload...)
	ip := make([]byte, 20, 20+len(seg))
	ip[0], ip[9] = 0x45, 6
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(seg)))
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(ip[12:], s4[:])
	copy(ip[16:], d4[:])
	return append(ip, seg...)
}

// Segments out of order, a retransmission overlapping new bytes, and a
// message split across segments come out as the streams were sent; a
// connection seen mid-stream is picked up at a client segment that starts
// whole messages, and flagged.
func TestReassembly(t *testing.T) {
	rec := NewRecorder("test")
	var st SniffStats
	sn := &sniffer{rec: rec, port: 5432, flows: map[netip.AddrPort]*flow{}, stats: &st}
	cl, sv := netip.MustParseAddrPort("10.0.0.2:40000"), netip.MustParseAddrPort("10.0.0.1:5432")
	at := time.Now()
	const syn, ack, fin = 0x02, 0x10, 0x01
	sn.packet(tcp4(cl, sv, 999, syn, nil), at)
	sn.packet(tcp4(sv, cl, 4999, syn|ack, nil), at)
	c := uint32(1000)
	send := func(b []byte) { sn.packet(tcp4(cl, sv, c, ack, b), at); c += uint32(len(b)) }
	s := uint32(5000)
	reply := func(b []byte) { sn.packet(tcp4(sv, cl, s, ack, b), at); s += uint32(len(b)) }

	send(startup(protocol3, "user", "u", "database", "d"))
	reply(wire(nil).msg('R', u32(0)).msg('Z', []byte("I")))
	q1 := wire(nil).msg('Q', str("SELECT 1"))
	q2 := wire(nil).msg('Q', str("SELECT 2"))
	// q1 split in two, sent in the wrong order; then q1's tail again with
	// q2's head (a retransmission overlapping new bytes).
	sn.packet(tcp4(cl, sv, c+4, ack, q1[4:]), at)
	sn.packet(tcp4(cl, sv, c, ack, q1[:4]), at)
	c += uint32(len(q1))
	reply(wire(nil).msg('C', str("SELECT 1")).msg('Z', []byte("I")))
	sn.packet(tcp4(cl, sv, c-3, ack, append(append([]byte{}, q1[len(q1)-3:]...), q2...)), at)
	c += uint32(len(q2))
	reply(wire(nil).msg('C', str("SELECT 1")).msg('Z', []byte("I")))
	sn.packet(tcp4(cl, sv, c, fin|ack, nil), at)

	// Mid-stream: a segment in the middle of a message is passed over,
	// one that starts a query is where decoding begins.
	other := netip.MustParseAddrPort("10.0.0.3:40001")
	sn.packet(tcp4(other, sv, 77, ack, []byte("tail of something")), at)
	q3 := wire(nil).msg('Q', str("UPDATE t SET a = 1"))
	sn.packet(tcp4(other, sv, 94, ack, q3), at)
	sn.packet(tcp4(sv, other, 300, ack, wire(nil).msg('C', str("UPDATE 2")).msg('Z', []byte("I"))), at)

	cp := rec.Capture()
	if len(cp.Sessions) != 2 {
		t.Fatalf("%d sessions", len(cp.Sessions))
	}
	var texts []string
	for _, ss := range cp.Sessions {
		for _, x := range ss.Statements {
			texts = append(texts, cp.Texts[x.Text])
		}
	}
	if len(texts) != 3 || texts[0] != "SELECT 1" || texts[1] != "SELECT 2" || texts[2] != "UPDATE t SET a = 1" {
		t.Errorf("statements %q", texts)
	}
	if !cp.Sessions[1].StartedBeforeLog || cp.Sessions[0].StartedBeforeLog || cp.Sessions[0].User != "u" {
		t.Errorf("sessions %+v", cp.Sessions)
	}
	if st.Packets != 13 {
		t.Errorf("%d segments counted", st.Packets)
	}
}

// A segment that never comes ends the decoding of its connection: the
// statements after the gap are not guessed at, the connection is counted
// as lost and the capture names it, whether the gap is still open at the
// connection's FIN or when the capture ends.
func TestGapNamesSession(t *testing.T) {
	for _, atFIN := range []bool{true, false} {
		rec := NewRecorder("test")
		var st SniffStats
		sn := &sniffer{rec: rec, port: 5432, flows: map[netip.AddrPort]*flow{}, stats: &st}
		cl, sv := netip.MustParseAddrPort("10.0.0.2:40000"), netip.MustParseAddrPort("10.0.0.1:5432")
		at := time.Now()
		const syn, ack, fin = 0x02, 0x10, 0x01
		sn.packet(tcp4(cl, sv, 999, syn, nil), at)
		sn.packet(tcp4(sv, cl, 4999, syn|ack, nil), at)
		c, s := uint32(1000), uint32(5000)
		send := func(b []byte) { sn.packet(tcp4(cl, sv, c, ack, b), at); c += uint32(len(b)) }
		reply := func(b []byte) { sn.packet(tcp4(sv, cl, s, ack, b), at); s += uint32(len(b)) }
		send(startup(protocol3, "user", "u", "database", "d"))
		reply(wire(nil).msg('R', u32(0)).msg('Z', []byte("I")))
		send(wire(nil).msg('Q', str("SELECT 1")))
		reply(wire(nil).msg('C', str("SELECT 1")).msg('Z', []byte("I")))
		c += uint32(len(wire(nil).msg('Q', str("UPDATE t SET a = 2")))) // dropped
		send(wire(nil).msg('Q', str("SELECT 3")))
		if atFIN {
			sn.packet(tcp4(cl, sv, c, fin|ack, nil), at)
		} else {
			for _, f := range sn.flows {
				sn.close(f, at)
			}
		}
		if st.LostFlows != 1 {
			t.Errorf("FIN %v: %d connections counted as lost, want 1", atFIN, st.LostFlows)
		}
		cp := rec.Capture()
		var texts []string
		for _, ss := range cp.Sessions {
			for _, x := range ss.Statements {
				texts = append(texts, cp.Texts[x.Text])
			}
		}
		if len(texts) != 1 || texts[0] != "SELECT 1" {
			t.Errorf("FIN %v: statements %q, want only the one before the gap", atFIN, texts)
		}
		named := false
		for _, k := range cp.Skipped {
			if strings.Contains(k.First, "segments lost") && strings.Contains(k.First, cl.String()) {
				named = true
			}
		}
		if !named {
			t.Errorf("FIN %v: the capture does not name the connection the gap hit: %+v", atFIN, cp.Skipped)
		}
	}
}

// The decoder's cost per statement: one connection's extended-protocol
// executions (Bind, Execute, Sync; the answer with ten rows of 100
// bytes), segments as the ring hands them over.
func BenchmarkSniffExtended(b *testing.B) {
	rec := NewRecorder("bench")
	var st SniffStats
	sn := &sniffer{rec: rec, port: 5432, flows: map[netip.AddrPort]*flow{}, stats: &st}
	cl, sv := netip.MustParseAddrPort("10.0.0.2:40000"), netip.MustParseAddrPort("10.0.0.1:5432")
	at := time.Now()
	const syn, ack = 0x02, 0x10
	sn.packet(tcp4(cl, sv, 999, syn, nil), at)
	sn.packet(tcp4(sv, cl, 4999, syn|ack, nil), at)
	c, s := uint32(1000), uint32(5000)
	send := func(p []byte) { sn.packet(tcp4(cl, sv, c, ack, p), at); c += uint32(len(p)) }
	reply := func(p []byte) { sn.packet(tcp4(sv, cl, s, ack, p), at); s += uint32(len(p)) }
	send(startup(protocol3, "user", "u", "database", "d"))
	reply(wire(nil).msg('R', u32(0)).msg('Z', []byte("I")))
	send(wire(nil).msg('P', str("s1"), str("SELECT a, b FROM t WHERE k = $1 AND w = $2"), u16(2), u32(23), u32(23)).msg('S'))
	reply(wire(nil).msg('1').msg('Z', []byte("I")))
	param := func(v string) []byte { return append(u32(len(v)), v...) }
	exec := wire(nil).msg('B', str(""), str("s1"), u16(0), u16(2), param("42"), param("7"), u16(0)).msg('E', str(""), u32(0)).msg('S')
	answer := wire(nil).msg('2')
	for range 10 {
		answer = answer.msg('D', u16(1), param(strings.Repeat("x", 100)))
	}
	answer = answer.msg('C', str("SELECT 10")).msg('Z', []byte("I"))
	// The segments built once, their sequence numbers set each time.
	out, back := tcp4(cl, sv, 0, ack, exec), tcp4(sv, cl, 0, ack, answer)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		binary.BigEndian.PutUint32(out[24:], c)
		sn.packet(out, at)
		c += uint32(len(exec))
		binary.BigEndian.PutUint32(back[24:], s)
		sn.packet(back, at)
		s += uint32(len(answer))
	}
	b.StopTimer()
	if _, n := rec.Counts(); n != b.N {
		b.Fatalf("%d statements recorded of %d", n, b.N)
	}
}
