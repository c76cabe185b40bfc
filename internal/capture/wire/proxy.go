package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
)

// ProxyOptions say how the proxy answers a client that asks for TLS.
type ProxyOptions struct {
	// TLS, when set, accepts a client's TLS: the proxy ends it and
	// records the traffic inside. Unset, a client that asks is told the
	// server has none (as a server without ssl answers), so that libpq's
	// default (sslmode=prefer) goes on in the clear; one that requires
	// TLS gives up, and Notify says so.
	TLS *tls.Config
	// Notify, if set, receives one line the first time a client is
	// refused TLS, and the first time the upstream server cannot be
	// reached (the capture's summary counts them all).
	Notify func(string)
}

// Serve relays the clients that connect to ln to the server at upstream
// (HOST:PORT, or the path of its unix socket file), talking to the server
// in the clear, and records what they exchange in rec, until ctx ends:
// then it stops listening and closes the connections it relays. It
// returns once every connection is closed and decoded.
//
// What the relays read is written on before it is decoded
// (proxy_queue.go).
func Serve(ctx context.Context, ln net.Listener, upstream string, rec *Recorder, o ProxyOptions) error {
	// The kernel's receive timestamps, which stamp what is relayed, are
	// on from the start: the first socket that asks turns them on a
	// moment later.
	stampFrom(ln)
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	track := func(c net.Conn, on bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if on && ctx.Err() != nil {
			return false
		}
		if on {
			open[c] = true
		} else {
			delete(open, c)
		}
		return true
	}
	for {
		client, err := ln.Accept()
		if err != nil {
			wg.Wait()
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		network := "tcp"
		if strings.HasPrefix(upstream, "/") {
			network = "unix" // the server's socket file
		}
		server, err := net.DialTimeout(network, upstream, 10*time.Second)
		if err != nil {
			// The client sees its connection closed, as the server's
			// refusal; the capture says why, once, and counts them.
			client.Close()
			o.counted(rec, capture.Dropped, reasonUpstream, upstream,
				fmt.Sprintf("cannot reach the server at --upstream %s (%v): clients are turned away until it answers", upstream, err))
			continue
		}
		if !track(client, true) || !track(server, true) {
			client.Close()
			server.Close()
			continue
		}
		q := newConnQueue(rec.Open(client.RemoteAddr().String()), queueLimit)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { track(client, false); track(server, false) }()
			if rec.MySQL {
				myRelay(client, server, q, o, func(addr string) {
					o.counted(rec, capture.Flagged, reasonTLSGaveUp, addr,
						fmt.Sprintf("client %s closed its connection when offered no TLS: it requires TLS (give --tls-cert and --tls-key to accept it; the summary counts them)", addr))
				})
				return
			}
			c, first, err := negotiate(client, o, func(addr string) {
				o.counted(rec, capture.Flagged, reasonTLSRefused, addr,
					fmt.Sprintf("client %s asked for TLS: answered that there is none (give --tls-cert and --tls-key to accept it); a client that requires TLS gives up (the summary counts them)", addr))
			})
			if err != nil {
				client.Close()
				server.Close()
				q.put(fromClient, first, time.Now()) // a part of a message: counted unread
				q.end(time.Now())
				return
			}
			if c != client {
				track(c, true)
				defer track(c, false)
			}
			q.put(fromClient, first, time.Now())
			if _, err := server.Write(first); err != nil {
				c.Close()
				server.Close()
				q.end(time.Now())
				return
			}
			relay(c, server, q)
		}()
	}
}

// counted counts a client under reason in the capture's summary and, the
// first time, tells Notify line.
func (o ProxyOptions) counted(rec *Recorder, effect capture.SkipEffect, reason, first, line string) {
	rec.mu.Lock()
	once := rec.skipped[reason] == nil
	rec.skip(effect, reason, first)
	rec.mu.Unlock()
	if once && o.Notify != nil {
		o.Notify(line)
	}
}

// negotiate answers the client's requests for encryption itself, before
// the startup message: TLS accepted with o.TLS, else refused, GSS
// encryption refused. It returns the connection to relay (a TLS one when
// accepted) and the first bytes of what the client sent next (its startup
// message, or a cancel request), to pass on.
func negotiate(client net.Conn, o ProxyOptions, refused func(addr string)) (net.Conn, []byte, error) {
	client.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer client.SetReadDeadline(time.Time{})
	for range 3 {
		head := make([]byte, 8)
		if n, err := io.ReadFull(client, head); err != nil {
			return nil, head[:n], err // the bytes it read, for the capture to count
		}
		code := binary.BigEndian.Uint32(head[4:])
		switch {
		case binary.BigEndian.Uint32(head) != 8 || (code != sslRequest && code != gssRequest):
			return client, head, nil
		case code == sslRequest && o.TLS != nil:
			if _, err := client.Write([]byte("S")); err != nil {
				return nil, nil, err
			}
			tc := tls.Server(client, o.TLS)
			if err := tc.Handshake(); err != nil {
				return nil, nil, err
			}
			client = tc
		default:
			if code == sslRequest {
				refused(client.RemoteAddr().String())
			}
			if _, err := client.Write([]byte("N")); err != nil {
				return nil, nil, err
			}
		}
	}
	return nil, nil, errors.New("too many encryption requests")
}

// greetingSSL sets (on) or clears the TLS capability in a MySQL
// server's greeting, so that a client is offered the proxy's TLS or
// none; false when b does not hold the whole greeting's capabilities.
func greetingSSL(b []byte, on bool) bool {
	if len(b) < 5 || b[4] != 10 { // protocol 10
		return false
	}
	i := 5
	for i < len(b) && b[i] != 0 { // server version
		i++
	}
	i += 1 + 4 + 8 + 1 // its end, thread id, salt, filler
	if i+2 > len(b) {
		return false
	}
	caps := binary.LittleEndian.Uint16(b[i:]) &^ uint16(mySSL)
	if on {
		caps |= mySSL
	}
	binary.LittleEndian.PutUint16(b[i:], caps)
	return true
}

// myPacket reads one MySQL packet whole: its 4-byte header (length,
// sequence number) and its payload.
func myPacket(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	p := make([]byte, 4+int(h[0])|int(h[1])<<8|int(h[2])<<16)
	copy(p, h[:])
	_, err := io.ReadFull(r, p[4:])
	return p, err
}

// myRelay relays a MySQL client. The server's greeting offers the
// proxy's TLS (o.TLS) or none. A client that takes TLS sends a short TLS
// request, then its handshake response inside TLS: the proxy ends TLS,
// passes the response on in the clear and, until the server's OK or error
// ends the authentication, renumbers the packets each way (the client
// counted the TLS request, the server never saw it). Offered none, a
// client that closes before answering the greeting required TLS: gaveUp
// is told.
func myRelay(client, server net.Conn, q *connQueue, o ProxyOptions, gaveUp func(addr string)) {
	fail := func() { client.Close(); server.Close(); q.end(time.Now()) }
	server.SetReadDeadline(time.Now().Add(30 * time.Second))
	g, err := myPacket(server)
	server.SetReadDeadline(time.Time{})
	if err != nil {
		fail()
		return
	}
	greetingSSL(g, false)
	q.put(fromServer, g, time.Now()) // a copy: g is changed next
	greetingSSL(g, o.TLS != nil)
	if _, err := client.Write(g); err != nil {
		fail()
		return
	}
	client.SetReadDeadline(time.Now().Add(30 * time.Second))
	p, err := myPacket(client)
	if err != nil {
		if o.TLS == nil && len(p) == 0 {
			gaveUp(client.RemoteAddr().String())
		}
		fail()
		return
	}
	var c net.Conn = client
	tlsRequest := len(p) == 4+32 && binary.LittleEndian.Uint32(p[4:])&mySSL != 0
	if tlsRequest && o.TLS != nil {
		tc := tls.Server(client, o.TLS)
		if err := tc.Handshake(); err != nil {
			fail()
			return
		}
		c = tc
		if p, err = myPacket(tc); err != nil || len(p) < 8 {
			fail()
			return
		}
		p[3]--
		binary.LittleEndian.PutUint32(p[4:], binary.LittleEndian.Uint32(p[4:])&^mySSL)
	}
	client.SetReadDeadline(time.Time{})
	q.put(fromClient, p, time.Now())
	if _, err := server.Write(p); err != nil {
		fail()
		return
	}
	if c == client {
		relay(client, server, q)
		return
	}
	// Authentication inside TLS: packet by packet, renumbered, until the
	// server's OK or error; then relayed as it comes.
	var authed atomic.Bool
	cr, sr := bufio.NewReader(c), bufio.NewReader(server)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the client's side
		defer wg.Done()
		for !authed.Load() {
			p, err := myPacket(cr)
			if err != nil {
				c.Close()
				server.Close()
				return
			}
			if !authed.Load() {
				p[3]--
			}
			q.put(fromClient, p, time.Now())
			if _, err := server.Write(p); err != nil {
				c.Close()
				server.Close()
				return
			}
		}
		pipe(server, cr, q, fromClient, c, server)
	}()
	go func() { // the server's side
		defer wg.Done()
		for {
			p, err := myPacket(sr)
			if err != nil {
				c.Close()
				server.Close()
				return
			}
			q.put(fromServer, p, time.Now())
			p[3]++
			end := len(p) > 4 && (p[4] == 0x00 || p[4] == 0xff)
			if end {
				authed.Store(true)
			}
			if _, err := c.Write(p); err != nil {
				c.Close()
				server.Close()
				return
			}
			if end {
				break
			}
		}
		pipe(c, sr, q, fromServer, c, server)
	}()
	wg.Wait()
	q.end(time.Now())
}

// relay copies both ways until either side closes, decoding what passes
// through q.
func relay(client, server net.Conn, q *connQueue) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pipe(server, client, q, fromClient, client, server) }()
	go func() { defer wg.Done(); pipe(client, server, q, fromServer, client, server) }()
	wg.Wait()
	q.end(time.Now())
}

// relayBuffers are the relays' read buffers, 64 KiB: one read takes what
// a burst of messages holds, and one write passes it on.
var relayBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// pipe copies src to dst, one write for what each read gave, until
// either fails; then it closes both connections. Each chunk is queued
// before it is passed on (the other side's answer cannot be queued
// before the request), and decoded after; it is stamped with the time
// it reached this host (stampedReader), not the time it was read.
func pipe(dst io.Writer, src io.Reader, q *connQueue, kind uint8, a, b net.Conn) {
	bp := relayBuffers.Get().(*[]byte)
	defer relayBuffers.Put(bp)
	buf := *bp
	read := stampedReader(src)
	for {
		n, at, err := read(buf)
		if n > 0 {
			q.put(kind, buf[:n], at)
			_, werr := dst.Write(buf[:n])
			q.drain()
			if werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	a.Close()
	b.Close()
}
