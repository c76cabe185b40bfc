package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	maxPending = 4 << 20 // out-of-order bytes a direction may hold
	// ringRetire is how long the kernel fills a block before it hands
	// the block over anyway: the longest a quiet capture's last packets
	// wait in the ring, and at low rates the time one block covers.
	ringRetire = 50 * time.Millisecond
	// Offsets in the ring (linux/if_packet.h): a block's descriptor,
	// tpacket_hdr_v1 at 8; a packet's tpacket3_hdr, and the
	// sockaddr_ll after it.
	blockStatus, blockPackets, blockFirst, blockLen = 8, 12, 16, 20
	pktNext, pktSec, pktNsec, pktSnap, pktLen       = 0, 4, 8, 12, 16
	pktMac, pktNet                                  = 24, 26
	pktLLType                                       = unix.SizeofTpacket3Hdr + 10 // sll_pkttype
)

// Packets is a socket reading an interface's packets into a
// memory-mapped ring, bound: what passes from then on is read.
type Packets struct {
	fd       int
	iface    string
	port     uint16
	loopback bool
	ring     Ring
	mem      []byte // the ring, mapped
}

// ListenPackets opens a socket on the network interface iface (AF_PACKET:
// needs CAP_NET_RAW) for the TCP traffic to and from port, with the
// default ring. Run reads it.
func ListenPackets(iface string, port int) (*Packets, error) {
	return ListenPacketsRing(iface, port, Ring{})
}

// ListenPacketsRing is ListenPackets with a ring of the given size.
//
// The kernel runs a filter (portFilter) before a packet is copied into
// the ring, so only the port's segments reach user space. The socket
// takes no packet before it is bound, which comes last: nothing passes
// unfiltered, or before the ring.
func ListenPacketsRing(iface string, port int, ring Ring) (*Packets, error) {
	if err := ring.Check(); err != nil {
		return nil, err
	}
	ring = ring.withDefaults()
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("--listen-on %s: %v", iface, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("--listen-on %s: reading packets needs CAP_NET_RAW (run as root, or setcap cap_net_raw+ep on dbparity): %w", iface, err)
		}
		return nil, fmt.Errorf("--listen-on %s: %w", iface, err)
	}
	pk := &Packets{fd: fd, iface: iface, port: uint16(port), loopback: ifi.Flags&net.FlagLoopback != 0, ring: ring}
	fail := func(what string, err error) (*Packets, error) {
		pk.close()
		return nil, fmt.Errorf("--listen-on %s: %s: %w", iface, what, err)
	}
	prog, err := portFilter(pk.port, pk.loopback)
	if err != nil {
		return fail("the packet filter", err)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
		&unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}); err != nil {
		return fail("attaching the packet filter", err)
	}
	if pk.loopback {
		// Loopback passes each packet out and in: the kernel need not
		// copy out the outgoing one for this socket at all (Linux 4.20;
		// before, the filter leaves it out).
		unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fail("TPACKET_V3 (Linux 3.2 or later)", err)
	}
	const frame = 2048 // V3 packs packets as they come; the kernel checks only that frames tile the blocks
	req := unix.TpacketReq3{Block_size: uint32(ring.BlockSize), Block_nr: uint32(ring.Blocks), Frame_size: frame,
		Frame_nr: uint32(ring.BlockSize / frame * ring.Blocks), Retire_blk_tov: uint32(ringRetire / time.Millisecond)}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fail(fmt.Sprintf("a ring of %s (a smaller --ring-blocks or --ring-block-size may fit)", ring), err)
	}
	pk.mem, err = unix.Mmap(fd, 0, ring.BlockSize*ring.Blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		pk.mem = nil
		return fail("mapping the ring", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		return fail("binding", err)
	}
	return pk, nil
}

func (pk *Packets) close() {
	if pk.mem != nil {
		unix.Munmap(pk.mem)
		pk.mem = nil
	}
	unix.Close(pk.fd)
}

// batch is one ring block's segments, copied out: their network
// packets back to back in data, each one's place and kernel time.
type batch struct {
	data []byte
	pkts []framed
}

type framed struct {
	off, n int
	at     time.Time
}

// Run reassembles each connection's two streams from the packets and
// records the sessions in them (PostgreSQL's, or MySQL's with
// rec.MySQL), until ctx ends; then it reads what the kernel still holds
// and closes the socket. Connections open before it began are picked up
// at a client message that starts a segment, and flagged. Reassembly
// follows sequence numbers: retransmissions are dropped, segments out of
// order held until the gap fills; a gap that never fills ends that
// connection's decoding, counted.
//
// The ring's reader only copies each block's segments out and hands the
// block back; the decoding runs on another goroutine (this one), behind
// a queue bounded at the ring's size. When that queue is full the reader
// drops the block's segments and counts them, rather than hold the ring
// and make the kernel drop.
func (pk *Packets) Run(ctx context.Context, rec *Recorder) (SniffStats, error) {
	defer pk.close()
	st := SniffStats{Ring: pk.ring}
	queue := make(chan *batch, 4*pk.ring.Blocks)
	free := make(chan *batch, cap(queue))
	r := &ringReader{pk: pk, queue: queue, free: free, limit: int64(pk.ring.BlockSize) * int64(pk.ring.Blocks)}
	read := make(chan error, 1)
	go func() {
		err := r.run(ctx)
		close(queue)
		read <- err
	}()
	sn := &sniffer{rec: rec, port: pk.port, flows: map[netip.AddrPort]*flow{}, stats: &st}
	for b := range queue {
		for _, p := range b.pkts {
			sn.packet(b.data[p.off:p.off+p.n], p.at)
		}
		r.queued.Add(-int64(len(b.data)))
		b.data, b.pkts = b.data[:0], b.pkts[:0]
		select {
		case free <- b:
		default:
		}
	}
	err := <-read
	if ks, e := unix.GetsockoptTpacketStatsV3(pk.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); e == nil {
		st.KernelDrops, st.RingFull = int64(ks.Drops), int64(ks.Freeze_q_cnt)
	} else if err == nil {
		err = fmt.Errorf("--listen-on %s: reading the kernel's drop count: %w", pk.iface, e)
	}
	st.QueueDrops, st.Truncated, st.ringed = r.dropped, r.truncated, r.ringed
	for _, f := range sn.flows {
		sn.close(f, time.Now())
	}
	return st, err
}

// ringReader takes the blocks the kernel hands over, in order.
type ringReader struct {
	pk                 *Packets
	queue, free        chan *batch
	queued             atomic.Int64 // bytes in the queue
	limit              int64
	dropped, truncated int64
	ringed             int64 // segments in the blocks read
}

// run reads blocks until ctx ends, then for as long as the kernel may
// still hand over a block holding packets that came before.
func (r *ringReader) run(ctx context.Context) error {
	pk := r.pk
	fds := []unix.PollFd{{Fd: int32(pk.fd), Events: unix.POLLIN | unix.POLLERR}}
	var until time.Time // set once ctx ends
	for cur := 0; ; {
		if until.IsZero() && ctx.Err() != nil {
			until = time.Now().Add(2*ringRetire + 20*time.Millisecond)
		}
		blk := pk.mem[cur*pk.ring.BlockSize : (cur+1)*pk.ring.BlockSize]
		status := (*uint32)(unsafe.Pointer(&blk[blockStatus]))
		if atomic.LoadUint32(status)&unix.TP_STATUS_USER == 0 {
			wait := 100 * time.Millisecond
			if !until.IsZero() {
				if wait = time.Until(until); wait <= 0 {
					return nil
				}
			}
			if _, err := unix.Poll(fds, int(wait/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
				return fmt.Errorf("--listen-on %s: %w", pk.iface, err)
			}
			continue
		}
		r.block(blk)
		atomic.StoreUint32(status, unix.TP_STATUS_KERNEL)
		cur = (cur + 1) % pk.ring.Blocks
	}
}

// block copies a block's segments out and queues them, or counts them
// dropped when the queue is full.
func (r *ringReader) block(blk []byte) {
	ne := binary.NativeEndian
	n := int(ne.Uint32(blk[blockPackets:]))
	if n == 0 {
		return
	}
	r.ringed += int64(n)
	used := int(ne.Uint32(blk[blockLen:]))
	if used > len(blk) {
		used = len(blk)
	}
	if r.queued.Load()+int64(used) > r.limit || len(r.queue) == cap(r.queue) {
		r.dropped += int64(n)
		return
	}
	var b *batch
	select {
	case b = <-r.free:
	default:
		b = &batch{}
	}
	if cap(b.data) < used {
		b.data = make([]byte, 0, used)
	}
	now := time.Now()
	for off, i := int(ne.Uint32(blk[blockFirst:])), 0; i < n && off+pktLLType < len(blk); i++ {
		h := blk[off:]
		snap, whole := int(ne.Uint32(h[pktSnap:])), int(ne.Uint32(h[pktLen:]))
		start, end := int(ne.Uint16(h[pktNet:])), int(ne.Uint16(h[pktMac:]))+snap
		switch {
		case snap < whole:
			r.truncated++
		case r.pk.loopback && h[pktLLType] == syscall.PACKET_OUTGOING, start >= end, off+end > len(blk):
			// Loopback's outgoing copy (the filter keeps it out
			// already), or a frame the ring's header does not place.
		default:
			at := time.Unix(int64(ne.Uint32(h[pktSec:])), int64(ne.Uint32(h[pktNsec:])))
			if d := now.Sub(at); d < -time.Second || d > time.Hour {
				at = now // not the real-time clock's: the time it was read
			}
			b.pkts = append(b.pkts, framed{off: len(b.data), n: end - start, at: at})
			b.data = append(b.data, h[start:end]...)
		}
		next := int(ne.Uint32(h[pktNext:]))
		if next == 0 {
			break
		}
		off += next
	}
	if len(b.pkts) == 0 {
		return
	}
	r.queued.Add(int64(len(b.data)))
	r.queue <- b
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
