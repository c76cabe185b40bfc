package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakePostgres answers a PostgreSQL client on each connection ln
// accepts: authentication ok, then "SELECT 1" and ready for each simple
// query, until the client leaves.
func fakePostgres(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			var n [4]byte
			if _, err := io.ReadFull(r, n[:]); err != nil {
				return
			}
			if _, err := io.CopyN(io.Discard, r, int64(binary.BigEndian.Uint32(n[:]))-4); err != nil {
				return
			}
			c.Write(wire(nil).msg('R', u32(0)).msg('Z', []byte("I")))
			done := wire(nil).msg('C', str("SELECT 1")).msg('Z', []byte("I"))
			for {
				typ, err := r.ReadByte()
				if err != nil {
					return
				}
				if _, err := io.ReadFull(r, n[:]); err != nil {
					return
				}
				if _, err := io.CopyN(io.Discard, r, int64(binary.BigEndian.Uint32(n[:]))-4); err != nil || typ == 'X' {
					return
				}
				if _, err := c.Write(done); err != nil {
					return
				}
			}
		}()
	}
}

// bulk streams bytes over loopback between two sockets of its own until
// ctx ends: the unrelated traffic of a busy host.
func bulk(ctx context.Context, t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := ln.Accept()
		ln.Close()
		if err == nil {
			go func() { <-ctx.Done(); c.Close() }()
			io.Copy(io.Discard, c)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	go func() { <-ctx.Done(); c.Close() }()
	buf := make([]byte, 1<<20)
	go func() {
		for ctx.Err() == nil {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
}

// The packets of sessions on loopback, read through the ring while a
// bulk transfer on another port fills the interface: every statement is
// captured, nothing is dropped, and the only segments that reached user
// space are the port's, once each (the kernel's filter left out the bulk
// transfer, pure ACKs and loopback's outgoing copies).
func TestRingLoopback(t *testing.T) {
	if fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, 0); err != nil {
		t.Skipf("reading packets needs CAP_NET_RAW (run the tests as root): %v", err)
	} else {
		syscall.Close(fd)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go fakePostgres(ln)
	port := ln.Addr().(*net.TCPAddr).Port
	// A small ring: the bulk transfer would fill it at once if the
	// filter let it in.
	pk, err := ListenPacketsRing("lo", port, Ring{BlockSize: 256 << 10, Blocks: 8})
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder("test ring")
	ctx, stop := context.WithCancel(context.Background())
	type result struct {
		st  SniffStats
		err error
	}
	got := make(chan result, 1)
	go func() {
		st, err := pk.Run(ctx, rec)
		got <- result{st, err}
	}()
	bctx, stopBulk := context.WithCancel(context.Background())
	bulk(bctx, t)
	const clients, queries = 4, 500
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			r := bufio.NewReader(c)
			ready := func() error { // read up to ReadyForQuery
				for {
					typ, err := r.ReadByte()
					if err != nil {
						return err
					}
					var n [4]byte
					if _, err := io.ReadFull(r, n[:]); err != nil {
						return err
					}
					if _, err := io.CopyN(io.Discard, r, int64(binary.BigEndian.Uint32(n[:]))-4); err != nil {
						return err
					}
					if typ == 'Z' {
						return nil
					}
				}
			}
			c.Write(startup(protocol3, "user", "u", "database", "d"))
			if err := ready(); err != nil {
				errs <- err
				return
			}
			for q := 0; q < queries; q++ {
				c.Write(wire(nil).msg('Q', str(fmt.Sprintf("SELECT %d", q))))
				if err := ready(); err != nil {
					errs <- err
					return
				}
			}
			c.Write(wire(nil).msg('X'))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	stopBulk()
	stop()
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	st := r.st
	t.Logf("%s(%d segments from the ring)", st.Summary(), st.ringed)
	if st.Lost() || st.KernelDrops != 0 || st.RingFull != 0 {
		t.Errorf("segments lost: %s", st.Summary())
	}
	if st.ringed != st.Packets {
		t.Errorf("%d segments came out of the ring, %d of them the port's", st.ringed, st.Packets)
	}
	c := rec.Capture()
	if c.Statements() != clients*queries || len(c.Sessions) != clients {
		t.Errorf("%d sessions, %d statements captured; want %d and %d\n%s", len(c.Sessions), c.Statements(), clients, clients*queries, c.Summary())
	}
	// Each query, its answer, the startup and its answer, the handshake
	// and the two FINs: pure ACKs and outgoing copies would add more.
	if want := int64(clients * (2*queries + 2 + 1 + 2 + 2)); st.Packets > want+int64(clients)*4 {
		t.Errorf("%d segments decoded for %d expected", st.Packets, want)
	}
}
