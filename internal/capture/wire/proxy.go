package wire

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
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
// returns once every connection is closed.
func Serve(ctx context.Context, ln net.Listener, upstream string, rec *Recorder, o ProxyOptions) error {
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
			rec.mu.Lock()
			first := rec.skipped[reasonUpstream] == nil
			rec.skip(capture.Dropped, reasonUpstream, upstream)
			rec.mu.Unlock()
			if first && o.Notify != nil {
				o.Notify(fmt.Sprintf("cannot reach the server at --upstream %s (%v): clients are turned away until it answers", upstream, err))
			}
			continue
		}
		if !track(client, true) || !track(server, true) {
			client.Close()
			server.Close()
			continue
		}
		s := rec.Open(client.RemoteAddr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { track(client, false); track(server, false) }()
			if rec.MySQL {
				relay(client, server, s, stripSSL)
				return
			}
			c, first, err := negotiate(client, o, func(addr string) {
				rec.mu.Lock()
				first := rec.skipped[reasonTLSRefused] == nil
				rec.skip(capture.Flagged, reasonTLSRefused, addr)
				rec.mu.Unlock()
				if first && o.Notify != nil {
					o.Notify(fmt.Sprintf("client %s asked for TLS: answered that there is none (give --tls-cert and --tls-key to accept it); a client that requires TLS gives up (the summary counts them)", addr))
				}
			})
			if err != nil {
				client.Close()
				server.Close()
				s.Close(time.Now())
				return
			}
			if c != client {
				track(c, true)
				defer track(c, false)
			}
			s.FromClient(first, time.Now())
			if _, err := server.Write(first); err != nil {
				c.Close()
				server.Close()
				s.Close(time.Now())
				return
			}
			relay(c, server, s, nil)
		}()
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
		if _, err := io.ReadFull(client, head); err != nil {
			return nil, nil, err
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

// stripSSL takes TLS out of a MySQL server's greeting, so that a client
// that prefers TLS goes on in the clear and is captured (one that
// requires it gives up); false when the chunk does not hold the whole
// greeting's capabilities.
func stripSSL(b []byte) bool {
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
	caps := binary.LittleEndian.Uint16(b[i:])
	binary.LittleEndian.PutUint16(b[i:], caps&^uint16(mySSL))
	return true
}

// relay copies both ways until either side closes, feeding s; patch, if
// set, may change the server's first chunk before it is passed on and
// decoded.
func relay(client, server net.Conn, s *Session, patch func([]byte) bool) {
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn, feed func([]byte, time.Time), patch func([]byte) bool) {
		defer wg.Done()
		b := make([]byte, 64<<10)
		for {
			n, err := src.Read(b)
			if n > 0 && patch != nil {
				patch(b[:n])
				patch = nil
			}
			if n > 0 {
				// Decoded before it is passed on: the other side's answer
				// cannot come before the request is seen.
				feed(b[:n], time.Now())
				if _, werr := dst.Write(b[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		client.Close()
		server.Close()
	}
	go pipe(server, client, s.FromClient, nil)
	go pipe(client, server, s.FromServer, patch)
	wg.Wait()
	s.Close(time.Now())
}
