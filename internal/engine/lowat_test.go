package engine

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

// loopPair is a TCP connection on loopback: the client side dialled as a
// session's (countedConn, its counts), the server side plain.
func loopPair(t *testing.T) (countedConn, *netCounts, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n := &netCounts{}
	accepted := make(chan net.Conn, 1)
	go func() {
		s, _ := l.Accept()
		accepted <- s
	}()
	c, err := dialCounted(context.WithValue(context.Background(), netCountsKey{}, n), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("no connection accepted")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	cc, ok := c.(countedConn)
	if !ok || cc.raw == nil || !n.tcp {
		t.Fatalf("a session's TCP connection is not read through its socket: %T", c)
	}
	return cc, n, s
}

// request writes a request of the client's and returns the server's
// side after reading it.
func request(t *testing.T, c countedConn, s net.Conn) {
	t.Helper()
	if _, err := c.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(s, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
}

// An answer whose bytes are expected wakes its reader once they are all
// there, not at its first piece; an answer shorter than expected is read
// at most expectWait later; the next answer, with no expectation, at its
// first byte.
func TestExpectedAnswerWakesOnce(t *testing.T) {
	c, n, s := loopPair(t)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 4096)

	defer func(d time.Duration) { expectWait = d }(expectWait)
	expectWait = 10 * time.Second
	for try := 1; ; try++ {
		n.expect.Store(1000)
		request(t, c, s)
		sent := time.Now()
		go func() {
			time.Sleep(200 * time.Millisecond) // the reader waits first
			s.Write(make([]byte, 500))
			time.Sleep(100 * time.Millisecond)
			s.Write(make([]byte, 500))
		}()
		late := time.Since(sent) > 100*time.Millisecond // a machine too busy to test it
		k, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if k == 1000 {
			break
		}
		if !late || try == 3 {
			t.Fatalf("an answer of 1,000 expected bytes in two pieces 100 ms apart: the first read took %d bytes, want all 1,000", k)
		}
		if _, err := io.ReadFull(c, buf[:1000-k]); err != nil {
			t.Fatal(err)
		}
	}

	expectWait = 2 * time.Millisecond
	n.expect.Store(1000)
	request(t, c, s)
	go func() {
		time.Sleep(50 * time.Millisecond) // the reader waits first
		s.Write(make([]byte, 100))
	}()
	start := time.Now()
	if k, err := c.Read(buf); k != 100 || err != nil {
		t.Fatalf("an answer shorter than expected: %d bytes, %v", k, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("an answer shorter than expected (sent 50 ms in) was read after %v (expectWait 2 ms)", took)
	}

	n.expect.Store(0)
	request(t, c, s)
	go func() {
		time.Sleep(50 * time.Millisecond)
		s.Write(make([]byte, 11))
	}()
	start = time.Now()
	if k, err := c.Read(buf); k != 11 || err != nil {
		t.Fatalf("an answer with no expectation after one expected: %d bytes, %v", k, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("an answer with no expectation was read after %v: the socket's mark was left above it", took)
	}
}

// Answers in pieces around expectWait apart, expected or not, longer or
// shorter than expected: every one is read whole and none waits past its
// deadline (the dog lowering the mark while the reader raises it for the
// next answer never leaves the socket's mark above its record).
func TestExpectedAnswersNeverHang(t *testing.T) {
	c, n, s := loopPair(t)
	buf := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		size := 1 + r.IntN(2000)
		pieces := 1 + r.IntN(6)
		if r.IntN(4) == 0 {
			n.expect.Store(0)
		} else {
			n.expect.Store(int64(size/2 + r.IntN(size)))
		}
		request(t, c, s)
		gaps := make([]time.Duration, pieces)
		for k := range gaps {
			gaps[k] = time.Duration(r.IntN(4000)) * time.Microsecond
		}
		go func() {
			left := size
			for k, g := range gaps {
				time.Sleep(g)
				part := left / (pieces - k)
				s.Write(make([]byte, part))
				left -= part
			}
		}()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for got := 0; got < size; {
			k, err := c.Read(buf[:min(len(buf), size-got)])
			if err != nil {
				t.Fatalf("answer %d (%d bytes in %d pieces, %d expected): after %d bytes: %v", i, size, pieces, n.expect.Load(), got, err)
			}
			got += k
		}
	}
}

// A server that dies mid-answer while its reader waits for expected
// bytes wakes the reader at once (the poller reports the end of the
// stream whatever the mark): what came is read, then the end.
func TestExpectedAnswerServerGone(t *testing.T) {
	c, n, s := loopPair(t)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	defer func(d time.Duration) { expectWait = d }(expectWait)
	expectWait = 10 * time.Second // not the dog's doing
	n.expect.Store(1000)
	request(t, c, s)
	go func() {
		time.Sleep(100 * time.Millisecond) // the reader waits first
		s.Write(make([]byte, 100))
		s.Close()
	}()
	start := time.Now()
	buf := make([]byte, 4096)
	got := 0
	var err error
	for err == nil {
		var k int
		k, err = c.Read(buf)
		got += k
	}
	if got != 100 || err != io.EOF {
		t.Errorf("a server gone mid-answer: %d bytes, %v; want 100 and EOF", got, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a server gone mid-answer was seen after %v", took)
	}
}
