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
