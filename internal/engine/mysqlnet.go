package engine

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// netCounts counts a connection's round trips at the socket: a write that
// follows a read (or comes first) starts one. It also keeps its reader's
// state: answering is set once the answer to the last request began to
// arrive, got counts that answer's bytes so far, and expect, when above
// 0, is the least the answer will have (its sender's estimate).
type netCounts struct {
	trips     atomic.Int64
	writing   atomic.Bool
	answering atomic.Bool
	got       atomic.Int64
	expect    atomic.Int64
	// tcp: SO_RCVLOWAT holds the poller's wake-up back (not on a unix
	// socket, whose poll ignores it); lowat is the socket's, dog lowers it
	// to one byte expectWait into a wait for expected bytes.
	tcp   bool
	lowat atomic.Int32
	dog   *time.Timer
	// poll: the reader never waits in its thread for the rest of an
	// answer; the poller does (a replay's sessions).
	poll bool
	// cc is the socket as the driver writes and reads it (myWire); its
	// Conn's deadline ends a command (watch).
	cc countedConn
}

type netCountsKey struct{}

type countedConn struct {
	net.Conn
	n   *netCounts
	raw syscall.RawConn // nil: reads go through net.Conn
}

// Write sends b with send(2) and MSG_DONTWAIT, through the runtime's
// raw system call: a send that cannot block needs no hand-off of the
// session's processor. Through Go's usual path, a loopback send, which
// runs the receiver's side of the delivery in the sender's call and
// wakes the server, often lasts long enough for the runtime to hand the
// processor to another thread, which costs a thread's wake-up per
// request. Measured with Read's receives and marks raw as well (order-
// entry over loopback TCP, 8 sessions, 20 s, 2 interleaved rounds, the
// commands' contexts watched in both): 221-268 against 339-374 µs of
// client CPU per transaction. A full socket buffer leaves the wait to
// the poller, which keeps deadlines.
func (c countedConn) Write(b []byte) (int, error) {
	c.n.answering.Store(false)
	if !c.n.writing.Swap(true) {
		c.n.trips.Add(1)
		c.n.got.Store(0)
	}
	if c.raw == nil {
		return c.Conn.Write(b)
	}
	return rawSend(c.Conn, c.raw, b)
}

// rawSend sends b on conn with send(2) and MSG_DONTWAIT through the
// runtime's raw system call, leaving to the poller only a send the
// socket's buffer cannot take (which keeps the deadlines).
func rawSend(conn net.Conn, raw syscall.RawConn, b []byte) (int, error) {
	var n int
	var err error
	werr := raw.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
			switch e {
			case 0:
				n += int(r)
				b = b[r:]
				continue
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			}
			err = e
			return true
		}
		return true
	})
	switch {
	case werr != nil:
		return n, werr
	case err != nil:
		return n, &net.OpError{Op: "write", Net: conn.LocalAddr().Network(), Source: conn.LocalAddr(), Addr: conn.RemoteAddr(), Err: os.NewSyscallError("write", err)}
	}
	return n, nil
}

// watch ends a command of the connection when its context ends, by
// setting the socket's deadline. database/sql and go-sql-driver/mysql
// watch a context themselves, at a cost per command: a goroutine for
// every query's rows, two hand-offs over channels to the driver's
// watcher (each a wake-up of another goroutine); handed a context that
// is never done, they do neither. A session's context lives as long as
// the session, so watch registers once for it (context.AfterFunc).
// Measured (order-entry over loopback TCP, 8 sessions, 20 s, 2
// interleaved rounds): 293-312 against 371-392 µs of client CPU per
// transaction, 1,565-1,673 against 1,435-1,503 transactions/s.
type watch struct {
	n     *netCounts
	ctx   context.Context // the context watched
	quiet context.Context // ctx without its end, for the driver
	stop  func() bool
	mu    sync.Mutex
	cur   context.Context // the context of the command running (nil: none, or one that never ends)
	cut   bool            // the socket's deadline was set
}

// begin starts a command under ctx: it returns the context to hand the
// driver, or ctx's error when ctx has already ended (nothing is sent).
func (w *watch) begin(ctx context.Context) (context.Context, error) {
	if ctx.Done() == nil {
		w.enter(nil)
		return ctx, nil
	}
	if ctx != w.ctx {
		if w.stop != nil {
			w.stop()
		}
		w.ctx, w.quiet = ctx, context.WithoutCancel(ctx)
		w.stop = context.AfterFunc(ctx, func() { w.expire(ctx) })
	}
	w.enter(ctx)
	if err := ctx.Err(); err != nil {
		w.end()
		return nil, err
	}
	return w.quiet, nil
}

// enter marks a command under ctx running (nil: one that no end of a
// context stops).
func (w *watch) enter(ctx context.Context) {
	w.mu.Lock()
	if w.cut && w.n.cc.Conn != nil {
		// The context of an earlier command ended as it finished: this
		// command has its own.
		w.n.cc.Conn.SetDeadline(time.Time{})
		w.cut = false
	}
	w.cur = ctx
	w.mu.Unlock()
}

// end ends the command begun.
func (w *watch) end() {
	w.mu.Lock()
	w.cur = nil
	w.mu.Unlock()
}

// expire runs when ctx ends (in a goroutine of its own): a command
// running under it then stops at its socket's next wait, the driver
// closing the connection. A command under a later context is not its.
func (w *watch) expire(ctx context.Context) {
	w.mu.Lock()
	if w.cur == ctx && w.n.cc.Conn != nil {
		w.n.cc.Conn.SetDeadline(time.Unix(1, 0))
		w.cut = true
	}
	w.mu.Unlock()
}

// close stops watching.
func (w *watch) close() {
	if w.stop != nil {
		w.stop()
	}
}

// setLowat sets fd's SO_RCVLOWAT without entering the runtime's system
// call path: the call does not block.
func setLowat(fd uintptr, v int32) error {
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_RCVLOWAT, uintptr(unsafe.Pointer(&v)), 4, 0)
	if e != 0 {
		return e
	}
	return nil
}

// answerWait is how long a session's reader waits in its thread for the
// rest of an answer that began to arrive, before it leaves the wait to
// Go's network poller.
const answerWait = time.Millisecond

// expectWait is how long the poller waits for an answer's expected
// bytes before it wakes the reader at the first one: an answer shorter
// than its estimate, or one still being made, is then read as it comes.
// A variable for the tests.
var expectWait = 2 * time.Millisecond

// Read reads what the server sent. MySQL and MariaDB send each result
// set and each statement's OK of a batch as soon as it is made, so one
// answer arrives in many pieces, tens of microseconds apart; through Go's
// network poller each piece costs the session a park and a wake-up, and
// the runtime another processor spinning for work (two thirds of the
// client's CPU in a profile of order-entry).
//
// When the sender knows how many bytes the answer will at least have (a
// batch: the least its text's answers had), a TCP socket's SO_RCVLOWAT
// holds the poller's wake-up until they are there, so the session wakes
// once for most of the answer; expectWait into the wait the mark drops to
// one byte. Otherwise, once an answer began to arrive, the reader waits
// for its next piece in its own thread, as a C client does: the socket is
// a blocking one whose reads give up after answerWait (SO_RCVTIMEO), so
// one read(2) both waits and reads (writes do not block: Write). The
// wait for an answer's first byte (the server's work, a lock) is a read
// that does not block (MSG_DONTWAIT) and then the poller, as is any wait
// past answerWait: the poller keeps deadlines and Close.
//
// Measured on order-entry over loopback TCP (8 sessions, MariaDB 10.11,
// four interleaved rounds of 20 s): the expected bytes 377-452 µs of
// client CPU per transaction at 1,282-1,489 transactions/s (New-Order p99
// 20-24 ms), against 461-600 µs at 1,005-1,104 (28-41 ms) with the
// blocking read alone; that against waiting with ppoll(2) and then
// reading, on a unix socket, 433-464 against 577-584 µs.
func (c countedConn) Read(b []byte) (int, error) {
	c.n.writing.Store(false)
	if c.raw == nil {
		return c.Conn.Read(b)
	}
	var n int
	var err error
	answering := c.n.answering.Load()
	want := int32(1)
	if e := c.n.expect.Load(); e > 0 && c.n.tcp {
		// At most 64 KB: a larger mark would also grow the socket's
		// receive buffer.
		want = int32(min(max(e-c.n.got.Load(), 1), int64(len(b)), 1<<16))
	}
	expecting, armed, first := want > 1, false, true
	rerr := c.raw.Read(func(fd uintptr) bool {
		for {
			if first {
				// Once a Read: when the poller wakes the reader again
				// after the dog lowered the mark, it stays lowered.
				first = false
				if c.n.lowat.Load() != want && setLowat(fd, want) == nil {
					c.n.lowat.Store(want)
				}
			}
			if answering && !expecting && !c.n.poll {
				// The socket blocks, at most answerWait (SO_RCVTIMEO).
				n, err = unix.Read(int(fd), b)
			} else {
				// recvfrom(2) itself: unix.Recvfrom would also decode the
				// peer's address (a unix socket's path) on every read. It
				// takes what is there, SO_RCVLOWAT or not, and does not
				// block: a raw system call, as Write's.
				r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), unix.MSG_DONTWAIT, 0, 0)
				n, err = int(r), nil
				if e != 0 {
					n, err = 0, e
				}
			}
			switch err {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				if expecting && !armed {
					armed = true
					c.n.dog.Reset(expectWait)
				}
				return false // the poller waits
			}
			return true
		}
	})
	if armed {
		c.n.dog.Stop()
	}
	switch {
	case rerr != nil:
		return 0, rerr
	case err != nil:
		return 0, &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", err)}
	case n == 0 && len(b) > 0:
		return 0, io.EOF
	}
	c.n.answering.Store(true)
	c.n.got.Add(int64(n))
	return n, nil
}

func dialCounted(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if n, ok := ctx.Value(netCountsKey{}).(*netCounts); ok {
		cc := countedConn{Conn: c, n: n}
		if sc, ok := c.(syscall.Conn); ok {
			cc.raw, _ = sc.SyscallConn()
		}
		if cc.raw != nil {
			var serr error
			cerr := cc.raw.Control(func(fd uintptr) {
				tv := unix.NsecToTimeval(int64(answerWait))
				if serr = unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); serr == nil {
					serr = unix.SetNonblock(int(fd), false)
				}
			})
			if cerr != nil || serr != nil {
				cc.raw = nil
			}
		}
		if cc.raw != nil && strings.HasPrefix(network, "tcp") {
			// The dog holds the connection's descriptor through Control:
			// once it is closed, the call does nothing.
			n.tcp = true
			n.lowat.Store(1) // the socket's default
			raw := cc.raw
			n.dog = time.AfterFunc(time.Hour, func() {
				// The mark's record first, then the mark: the reader, which
				// may run now (this call wakes it), sets the mark and then
				// its record, so the record is never below the socket's mark
				// (a mark left above it would hold the next answer back).
				n.lowat.Store(1)
				raw.Control(func(fd uintptr) { setLowat(fd, 1) })
			})
			n.dog.Stop()
		}
		n.cc = cc
		return cc, nil
	}
	return c, nil
}
