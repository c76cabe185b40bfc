package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"
)

// SniffStats says what a passive capture saw and what it lost.
type SniffStats struct {
	Packets int64 // TCP segments to or from the port
	// KernelDrops are packets the kernel dropped because the capture
	// fell behind (PACKET_STATISTICS).
	KernelDrops int64
	// LostFlows are connections whose missing segments never came: the
	// rest of each was not decoded.
	LostFlows int64
}

// Linux's AF_PACKET constants that package syscall lacks.
const (
	packetOutgoing   = 4 // sll_pkttype of a packet this host sent
	solPacket        = 263
	packetStatistics = 6
	arphrdNone       = 0xfffe
	maxPending       = 4 << 20 // out-of-order bytes a direction may hold
)

// Packets is a socket reading an interface's packets, bound: what passes
// from then on is read.
type Packets struct {
	fd       int
	iface    string
	port     uint16
	loopback bool
}

// ListenPackets opens a socket on the network interface iface (AF_PACKET:
// needs CAP_NET_RAW) for the TCP traffic to and from port. Run reads it.
func ListenPackets(iface string, port int) (*Packets, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("--listen-on %s: %v", iface, err)
	}
	proto := int(htons(syscall.ETH_P_ALL))
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, proto)
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			return nil, fmt.Errorf("--listen-on %s: reading packets needs CAP_NET_RAW (run as root, or setcap cap_net_raw+ep on dbparity): %w", iface, err)
		}
		return nil, fmt.Errorf("--listen-on %s: %w", iface, err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("--listen-on %s: %w", iface, err)
	}
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 32<<20)
	tv := syscall.NsecToTimeval(int64(100 * time.Millisecond))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return &Packets{fd: fd, iface: iface, port: uint16(port), loopback: ifi.Flags&net.FlagLoopback != 0}, nil
}

// Run reassembles each connection's two streams from the packets and
// records the sessions in them (PostgreSQL's, or MySQL's with
// rec.MySQL), until ctx ends; then it closes the socket. Connections open
// before it began are picked up at a client message that starts a
// segment, and flagged. Reassembly follows sequence numbers:
// retransmissions are dropped, segments out of order held until the gap
// fills; a gap that never fills ends that connection's decoding, counted.
func (pk *Packets) Run(ctx context.Context, rec *Recorder) (SniffStats, error) {
	var st SniffStats
	fd := pk.fd
	defer syscall.Close(fd)
	sn := &sniffer{rec: rec, port: pk.port, flows: map[netip.AddrPort]*flow{}, stats: &st}
	buf := make([]byte, 1<<16)
	for ctx.Err() == nil {
		n, from, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
				continue
			}
			return st, fmt.Errorf("--listen-on %s: %w", pk.iface, err)
		}
		ll, ok := from.(*syscall.SockaddrLinklayer)
		if !ok || (pk.loopback && ll.Pkttype == packetOutgoing) {
			continue // on loopback each packet is seen going out and coming in
		}
		off := 14 // Ethernet, and loopback's header alike
		if ll.Hatype == arphrdNone {
			off = 0
		}
		if n <= off {
			continue
		}
		sn.packet(buf[off:n], time.Now())
	}
	var ts struct{ packets, drops uint32 }
	l := uint32(unsafe.Sizeof(ts))
	if _, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), solPacket, packetStatistics,
		uintptr(unsafe.Pointer(&ts)), uintptr(unsafe.Pointer(&l)), 0); e == 0 {
		st.KernelDrops = int64(ts.drops)
	}
	for _, f := range sn.flows {
		sn.close(f, time.Now())
	}
	return st, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

type sniffer struct {
	rec   *Recorder
	port  uint16
	flows map[netip.AddrPort]*flow // by the client's address
	stats *SniffStats
}

// flow is one TCP connection: its client-to-server and server-to-client
// streams.
type flow struct {
	s    *Session
	dir  [2]stream
	dead bool // a gap never filled: not decoded any more
}

type stream struct {
	next    uint32
	known   bool
	pending map[uint32][]byte
	held    int
}

// packet takes one IP packet.
func (sn *sniffer) packet(p []byte, at time.Time) {
	var src, dst netip.Addr
	var seg []byte
	switch p[0] >> 4 {
	case 4:
		if len(p) < 20 || p[9] != syscall.IPPROTO_TCP {
			return
		}
		ihl, total := int(p[0]&0xf)*4, int(binary.BigEndian.Uint16(p[2:4]))
		if ihl < 20 || total < ihl || total > len(p) {
			return
		}
		src, dst = netip.AddrFrom4([4]byte(p[12:16])), netip.AddrFrom4([4]byte(p[16:20]))
		seg = p[ihl:total]
	case 6:
		if len(p) < 40 || p[6] != syscall.IPPROTO_TCP {
			return
		}
		end := 40 + int(binary.BigEndian.Uint16(p[4:6]))
		if end > len(p) {
			return
		}
		src, dst = netip.AddrFrom16([16]byte(p[8:24])), netip.AddrFrom16([16]byte(p[24:40]))
		seg = p[40:end]
	default:
		return
	}
	if len(seg) < 20 {
		return
	}
	sport, dport := binary.BigEndian.Uint16(seg[0:2]), binary.BigEndian.Uint16(seg[2:4])
	seq := binary.BigEndian.Uint32(seg[4:8])
	hl, flags := int(seg[12]>>4)*4, seg[13]
	if hl < 20 || hl > len(seg) {
		return
	}
	payload := seg[hl:]
	var d int
	var client netip.AddrPort
	switch {
	case dport == sn.port:
		d, client = 0, netip.AddrPortFrom(src, sport)
	case sport == sn.port:
		d, client = 1, netip.AddrPortFrom(dst, dport)
	default:
		return
	}
	sn.stats.Packets++
	const fin, syn, rst, ack = 0x01, 0x02, 0x04, 0x10
	f := sn.flows[client]
	if flags&syn != 0 {
		if d == 0 && flags&ack == 0 {
			f = &flow{s: sn.rec.Open(client.String())}
			sn.flows[client] = f
		}
		if f != nil {
			f.dir[d] = stream{next: seq + 1, known: true}
		}
		return
	}
	if f == nil {
		starts := startsMessages
		if sn.rec.MySQL {
			starts = startsMyCommand
		}
		if d != 0 || !starts(payload) {
			return // a connection open before the capture, mid-message
		}
		f = &flow{s: sn.rec.openMidstream(client.String(), at)}
		f.dir[0] = stream{next: seq, known: true}
		sn.flows[client] = f
	}
	if !f.dead && len(payload) > 0 {
		sn.data(f, d, seq, payload, at)
	}
	if flags&(fin|rst) != 0 {
		sn.close(f, at)
		delete(sn.flows, client)
	}
}

// data passes a segment's payload on in sequence.
func (sn *sniffer) data(f *flow, d int, seq uint32, payload []byte, at time.Time) {
	s := &f.dir[d]
	if !s.known {
		// The server's side of a connection picked up mid-stream: its
		// next segment starts an answer.
		s.next, s.known = seq, true
	}
	feed := f.s.FromClient
	if d == 1 {
		feed = f.s.FromServer
	}
	diff := int32(seq - s.next)
	switch {
	case diff < 0: // a retransmission, perhaps with new bytes after it
		if int(-diff) >= len(payload) {
			return
		}
		payload, seq = payload[-diff:], s.next
	case diff > 0: // a gap: held until it fills
		if s.pending == nil {
			s.pending = map[uint32][]byte{}
		}
		if _, ok := s.pending[seq]; !ok {
			s.pending[seq] = append([]byte(nil), payload...)
			s.held += len(payload)
		}
		if s.held > maxPending {
			f.dead = true
			sn.stats.LostFlows++
			f.s.lost()
		}
		return
	}
	feed(payload, at)
	s.next = seq + uint32(len(payload))
	for len(s.pending) > 0 {
		progressed := false
		for k, b := range s.pending {
			if off := int32(s.next - k); off >= 0 {
				delete(s.pending, k)
				s.held -= len(b)
				if int(off) < len(b) {
					feed(b[off:], at)
					s.next = k + uint32(len(b))
				}
				progressed = true
			}
		}
		if !progressed {
			break
		}
	}
}

// close ends a connection's decoding: at its FIN or RST, or when the
// capture ends. Segments still held for a gap then never came: the
// connection is counted as lost, named in the capture.
func (sn *sniffer) close(f *flow, at time.Time) {
	if f.s == nil {
		return
	}
	if !f.dead && (len(f.dir[0].pending) > 0 || len(f.dir[1].pending) > 0) {
		f.dead = true
		sn.stats.LostFlows++
		f.s.lost()
	}
	f.s.Close(at)
}

// startsMessages tells a client segment that starts with whole frontend
// messages (a simple query, or an extended-protocol request), where a
// connection open before the capture can be picked up.
func startsMessages(b []byte) bool {
	if len(b) < 5 {
		return false
	}
	switch b[0] {
	case 'Q', 'P', 'B':
	default:
		return false
	}
	for len(b) > 0 {
		if len(b) < 5 {
			return false
		}
		switch b[0] {
		case 'Q', 'P', 'B', 'E', 'D', 'S', 'H', 'C', 'X':
		default:
			return false
		}
		n := int(binary.BigEndian.Uint32(b[1:5]))
		if n < 4 || 1+n > len(b) {
			return false
		}
		b = b[1+n:]
	}
	return true
}

// startsMyCommand tells a client segment that is one whole MySQL command
// packet (a query, a prepare, an execution, a change of database).
func startsMyCommand(b []byte) bool {
	if len(b) < 5 || b[3] != 0 {
		return false
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	switch b[4] {
	case comQuery, comStmtPrepare, comStmtExecute, comInitDB:
		return 4+n == len(b)
	}
	return false
}
