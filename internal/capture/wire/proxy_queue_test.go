package wire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeServer answers PostgreSQL's protocol as far as the tests need: the
// startup with AuthenticationOk and ReadyForQuery; each simple query with
// "SELECT n" (n the query's length) and ReadyForQuery; Parse, Bind,
// Execute with their completions and "INSERT 0 1" up to the Sync's
// ReadyForQuery.
func fakeServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var n [4]byte
				if _, err := io.ReadFull(c, n[:]); err != nil {
					return
				}
				if _, err := io.ReadFull(c, make([]byte, int(u32be(n[:]))-4)); err != nil {
					return
				}
				c.Write(wire(nil).msg('R', u32(0)).msg('Z', []byte("I")))
				for {
					var h [5]byte
					if _, err := io.ReadFull(c, h[:]); err != nil {
						return
					}
					body := make([]byte, int(u32be(h[1:]))-4)
					if _, err := io.ReadFull(c, body); err != nil {
						return
					}
					var out wire
					switch h[0] {
					case 'Q':
						out = out.msg('C', str("SELECT "+strconv.Itoa(len(body)-1))).msg('Z', []byte("I"))
					case 'P':
						out = out.msg('1')
					case 'B':
						out = out.msg('2')
					case 'E':
						out = out.msg('C', str("INSERT 0 1"))
					case 'S':
						out = out.msg('Z', []byte("I"))
					case 'X':
						return
					}
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func u32be(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// Clients through the proxy get the server's answers byte for byte, and
// the capture holds every statement each sent, in its order, with the
// rows the server's answers gave: simple queries one at a time, and
// extended pipelines of several executions sent in one write, while the
// decoder runs behind the relays.
func TestProxyRecordsWhatPassed(t *testing.T) {
	upstream := fakeServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder("test")
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, upstream, rec, ProxyOptions{}) }()

	const clients, rounds = 6, 150
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for k := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					return err
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(60 * time.Second))
				if _, err := c.Write(startup(protocol3, "user", "u"+strconv.Itoa(k), "database", "d")); err != nil {
					return err
				}
				expect := func(want wire) error {
					got := make([]byte, len(want))
					if _, err := io.ReadFull(c, got); err != nil {
						return err
					}
					if !bytes.Equal(got, want) {
						return fmt.Errorf("client %d got %q, want %q", k, got, want)
					}
					return nil
				}
				if err := expect(wire(nil).msg('R', u32(0)).msg('Z', []byte("I"))); err != nil {
					return err
				}
				for i := range rounds {
					q := fmt.Sprintf("SELECT %d FROM client_%d", i, k)
					if _, err := c.Write(wire(nil).msg('Q', str(q))); err != nil {
						return err
					}
					if err := expect(wire(nil).msg('C', str("SELECT "+strconv.Itoa(len(q)))).msg('Z', []byte("I"))); err != nil {
						return err
					}
					// A pipeline: one Parse, two executions, one Sync, in one write.
					p := wire(nil).msg('P', str("s"), str("INSERT INTO t VALUES ($1)"), u16(0)).
						msg('B', str(""), str("s"), u16(0), u16(1), u32(len(strconv.Itoa(i))), []byte(strconv.Itoa(i))).msg('E', str(""), u32(0)).
						msg('B', str(""), str("s"), u16(0), u16(1), u32(1), []byte("x")).msg('E', str(""), u32(0)).
						msg('S')
					if _, err := c.Write(p); err != nil {
						return err
					}
					if err := expect(wire(nil).msg('1').msg('2').msg('C', str("INSERT 0 1")).msg('2').msg('C', str("INSERT 0 1")).msg('Z', []byte("I"))); err != nil {
						return err
					}
				}
				_, err = c.Write(wire(nil).msg('X'))
				return err
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	c := rec.Capture()
	if len(c.Sessions) != clients {
		t.Fatalf("%d sessions, want %d", len(c.Sessions), clients)
	}
	for _, s := range c.Sessions {
		k, _ := strconv.Atoi(s.User[1:])
		if len(s.Statements) != 3*rounds {
			t.Fatalf("session %s (%s): %d statements, want %d", s.ID, s.User, len(s.Statements), 3*rounds)
		}
		for i := range rounds {
			sel, ins1, ins2 := s.Statements[3*i], s.Statements[3*i+1], s.Statements[3*i+2]
			q := fmt.Sprintf("SELECT %d FROM client_%d", i, k)
			if c.Texts[sel.Text] != q || sel.Rows == nil || *sel.Rows != int64(len(q)) {
				t.Fatalf("%s statement %d: %q rows %v, want %q rows %d", s.User, 3*i, c.Texts[sel.Text], sel.Rows, q, len(q))
			}
			for j, st := range []struct {
				text string
				p    string
			}{{c.Texts[ins1.Text], param(ins1.Params)}, {c.Texts[ins2.Text], param(ins2.Params)}} {
				want := []string{strconv.Itoa(i), "x"}[j]
				if st.text != "INSERT INTO t VALUES ($1)" || st.p != want {
					t.Fatalf("%s statement %d: %q with %q, want the INSERT with %q", s.User, 3*i+1+j, st.text, st.p, want)
				}
			}
		}
	}
}

func param(ps []*string) string {
	if len(ps) != 1 || ps[0] == nil {
		return fmt.Sprint(ps)
	}
	return *ps[0]
}

// A connection's queue full while the other relay drains makes the relay
// that puts wait, and loses nothing: with the decoder held up, what is
// queued never passes the queue's limit by more than a piece, and once
// it goes on, every statement is decoded, in order, from pieces that
// split messages anywhere.
func TestConnQueueFullWaits(t *testing.T) {
	rec := NewRecorder("test")
	x := rec.Open("10.0.0.1:5000")
	const limit, queries = 64, 200
	q := newConnQueue(x, limit)
	at := time.Now()
	q.put(fromClient, startup(protocol3, "user", "u", "database", "d"), at)
	x.s.mu.Lock() // the decoder waits for the session
	go q.drain()
	queued := func() (bool, int) {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.draining, len(q.cur.data)
	}
	for d, _ := queued(); !d; d, _ = queued() {
		runtime.Gosched()
	}
	const piece = 13
	most := make(chan int, 1)
	go func() {
		m := 0
		put := func(kind uint8, b []byte) {
			for len(b) > 0 {
				n := min(len(b), 1+len(b)%piece)
				q.put(kind, b[:n], at)
				b = b[n:]
				_, l := queued()
				m = max(m, l)
			}
			q.drain()
		}
		put(fromServer, wire(nil).msg('R', u32(0)).msg('Z', []byte("I")))
		for i := range queries {
			put(fromClient, wire(nil).msg('Q', str(fmt.Sprintf("SELECT %d", i))))
			put(fromServer, wire(nil).msg('C', str("SELECT "+strconv.Itoa(i))).msg('Z', []byte("I")))
		}
		most <- m
	}()
	for _, l := queued(); l+piece <= limit; _, l = queued() {
		runtime.Gosched() // until the queue is full
	}
	x.s.mu.Unlock()
	if m := <-most; m > limit+piece {
		t.Errorf("the queue held %d bytes, past its limit of %d", m, limit)
	}
	q.end(at)
	c := rec.Capture()
	if len(c.Skipped) != 0 {
		t.Errorf("skipped %+v", c.Skipped)
	}
	if len(c.Sessions) != 1 || len(c.Sessions[0].Statements) != queries {
		t.Fatalf("sessions %+v, want one of %d statements", c.Sessions, queries)
	}
	for i, st := range c.Sessions[0].Statements {
		if want := fmt.Sprintf("SELECT %d", i); c.Texts[st.Text] != want || st.Rows == nil || *st.Rows != int64(i) {
			t.Fatalf("statement %d: %q rows %v, want %q rows %d", i, c.Texts[st.Text], st.Rows, want, i)
		}
	}
}
