package wire

import (
	"io"
	"net"
	"testing"
	"time"
)

// A proxy's read is stamped with when the bytes reached the host, not
// with when its goroutine got to read them: on a busy host those are
// milliseconds apart, and two connections' messages would swap places.
func TestStampedReaderKernelTime(t *testing.T) {
	client, server := connected(t, "tcp", "127.0.0.1:0")
	read := stampedReader(server)
	buf := make([]byte, 64)
	// The kernel turns its receive timestamps on for the first socket
	// that asks a moment later (a deferred work item, late on a busy
	// host): until a read comes back stamped before it was made.
	for deadline := time.Now().Add(10 * time.Second); ; {
		client.Write([]byte("w"))
		time.Sleep(20 * time.Millisecond)
		asked := time.Now()
		if _, at, err := read(buf); err != nil {
			t.Fatal(err)
		} else if at.Before(asked) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no read came back with the kernel's receive timestamp in 10s")
		}
	}

	wrote := time.Now()
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	// The reader comes late, as a goroutine on a saturated host does.
	time.Sleep(300 * time.Millisecond)
	asked := time.Now()
	n, at, err := read(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	// Loopback delivers as the write is made: the stamp is the write's
	// time, give or take what a busy host delays a softirq by, and well
	// before the read.
	if at.Before(wrote.Add(-time.Millisecond)) || !at.Before(asked.Add(-150*time.Millisecond)) {
		t.Fatalf("stamped %s after the write, the read asked %s after it: the read's time, not the arrival's", at.Sub(wrote), asked.Sub(wrote))
	}

	// A second message is stamped anew, and the end is io.EOF.
	wrote = time.Now()
	client.Write([]byte("again"))
	client.Close()
	n, at, err = read(buf)
	if err != nil || string(buf[:n]) != "again" || at.Before(wrote.Add(-time.Millisecond)) {
		t.Fatalf("second read %q at %s after its write, %v", buf[:n], at.Sub(wrote), err)
	}
	if n, _, err = read(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the close: %d bytes, %v; want io.EOF", n, err)
	}
}

// A proxy relaying to the server's socket file stamps with the read's
// time (the kernel keeps no timestamps on a unix stream socket): never
// before the write, never after the read.
func TestStampedReaderUnixSocket(t *testing.T) {
	client, server := connected(t, "unix", t.TempDir()+"/s")
	read := stampedReader(server)
	wrote := time.Now()
	client.Write([]byte("hello"))
	time.Sleep(100 * time.Millisecond)
	buf := make([]byte, 64)
	asked := time.Now()
	n, at, err := read(buf)
	if err != nil || string(buf[:n]) != "hello" || at.Before(wrote.Add(-time.Millisecond)) || at.After(time.Now()) {
		t.Fatalf("read %q at %s after the write, %v", buf[:n], at.Sub(wrote), err)
	}
	if at.Before(asked) {
		t.Logf("the kernel stamped a unix socket's data: %s after the write, the read asked %s after it", at.Sub(wrote), asked.Sub(wrote))
	}
	client.Close()
	if n, _, err = read(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the close: %d bytes, %v; want io.EOF", n, err)
	}
}

// connected is a connection's two ends on network at address, closed
// when the test ends.
func connected(t *testing.T, network, address string) (client, server net.Conn) {
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if client, err = net.Dial(network, ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if server, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}
