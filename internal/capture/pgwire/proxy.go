package pgwire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// Proxy relays the clients that connect to listen to the server at
// upstream (HOST:PORT, or the path of its unix socket file), and records what they exchange in rec, until ctx ends: then it
// stops listening and closes the connections it relays. It returns once
// every connection is closed; an error only when it cannot listen.
func Proxy(ctx context.Context, listen, upstream string, rec *Recorder) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("capture --proxy %s: %w", listen, err)
	}
	return Serve(ctx, ln, upstream, rec)
}

// Serve is Proxy on a listener of the caller's.
func Serve(ctx context.Context, ln net.Listener, upstream string, rec *Recorder) error {
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
			client.Close()
			continue // the client sees its connection closed, as the server's refusal
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
			relay(client, server, s)
			track(client, false)
			track(server, false)
		}()
	}
}

// relay copies both ways until either side closes, feeding s.
func relay(client, server net.Conn, s *Session) {
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn, feed func([]byte, time.Time)) {
		defer wg.Done()
		b := make([]byte, 64<<10)
		for {
			n, err := src.Read(b)
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
	go pipe(server, client, s.FromClient)
	go pipe(client, server, s.FromServer)
	wg.Wait()
	s.Close(time.Now())
}
