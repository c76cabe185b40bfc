package wire

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// A server the proxy cannot reach: each client's connection is closed at
// once, the first time says why (naming --upstream), and the capture
// counts every client turned away.
func TestUpstreamDown(t *testing.T) {
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream := down.Addr().String()
	down.Close() // nothing listens there now
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder("test")
	var lines []string
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ln, upstream, rec, ProxyOptions{Notify: func(l string) { lines = append(lines, l) }})
	}()
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Errorf("the client's connection stayed open: %d, %v", n, err)
		}
		c.Close()
	}
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "--upstream "+upstream) {
		t.Errorf("notices %q", lines)
	}
	c := rec.Capture()
	if len(c.Skipped) != 1 || c.Skipped[0].Count != 3 || !strings.Contains(c.Skipped[0].Reason, "upstream") {
		t.Errorf("skipped %+v", c.Skipped)
	}
}

// Connections the proxy relayed but could not read are counted in the
// capture's summary, as docs/capture.md says: one that ends inside a
// message (3 bytes of a startup's length), and one whose startup is no
// protocol's; a client that connects and says nothing is not a
// connection read wrongly.
func TestUnreadConnectionsCounted(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() { // a server that reads and closes
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { c.Read(make([]byte, 64)); time.Sleep(50 * time.Millisecond); c.Close() }()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder("test")
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, up.Addr().String(), rec, ProxyOptions{}) }()
	for _, send := range [][]byte{{0, 0, 0}, {0, 0, 0, 8, 0, 9, 9, 9}, nil} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(send)
		time.Sleep(100 * time.Millisecond)
		c.Close()
	}
	time.Sleep(200 * time.Millisecond)
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range rec.Capture().Skipped {
		if strings.Contains(s.Reason, "could not be decoded") {
			n += int(s.Count)
		}
	}
	if n != 2 {
		t.Errorf("%d unread connections counted, want 2: %+v", n, rec.Capture().Skipped)
	}
}
