package testhost

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Relay is the delaying relay: a TCP listener that forwards each
// connection to one address, every chunk it reads held a time (one way)
// before it is written on, in both directions and in order. It stands
// for the round trip a LAN adds (twice the one way) where the kernel has
// no netem.
type Relay struct {
	oneWay atomic.Int64 // ns
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	// Bytes relayed from the clients to the server and back: payload
	// only (no TCP/IP headers).
	up, down atomic.Uint64
}

// NewRelay listens on listen ("198.18.1.2:5432", "127.0.0.1:0") and
// forwards every connection to target, oneWay late each way.
func NewRelay(listen, target string, oneWay time.Duration) (*Relay, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	r := &Relay{ln: ln, conns: map[net.Conn]bool{}}
	r.oneWay.Store(int64(oneWay))
	r.wg.Add(1)
	go r.serve(target)
	return r, nil
}

// SetOneWay changes the time each chunk is held, from the next chunk
// read on.
func (r *Relay) SetOneWay(d time.Duration) { r.oneWay.Store(int64(d)) }

// OneWay is the time each chunk is held.
func (r *Relay) OneWay() time.Duration { return time.Duration(r.oneWay.Load()) }

// Addr is the address the relay listens on.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// Bytes are the payload bytes relayed so far: up from the clients to the
// server, down from the server to the clients.
func (r *Relay) Bytes() (up, down uint64) { return r.up.Load(), r.down.Load() }

// Close stops listening, closes every relayed connection and waits for
// the relay's goroutines.
func (r *Relay) Close() error {
	err := r.ln.Close()
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

func (r *Relay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	for _, c := range cs {
		r.conns[c] = true
	}
	return true
}

func (r *Relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		delete(r.conns, c)
	}
}

func (r *Relay) serve(target string) {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		if !r.track(c, s) {
			c.Close()
			s.Close()
			return
		}
		r.wg.Add(2)
		var done sync.WaitGroup
		done.Add(2)
		go func() { defer r.wg.Done(); defer done.Done(); delayCopy(s, c, r.OneWay, &r.up) }()
		go func() { defer r.wg.Done(); defer done.Done(); delayCopy(c, s, r.OneWay, &r.down) }()
		go func() { done.Wait(); r.untrack(c, s) }()
	}
}

// DelayCopy copies from src to dst, each chunk written oneWay after it
// was read (0: at once), and adds the bytes written to count when it is
// not nil; it closes both when either side ends.
//
// The wait is a nanosleep of the goroutine's own thread with a timer
// slack of 1 µs: Go's timers wake a sleeper that waits below a
// millisecond on the next millisecond when the process is otherwise
// idle (the network poller's timeout is in milliseconds), which would
// make a 0.25 ms delay about 1 ms.
func DelayCopy(dst, src net.Conn, oneWay time.Duration, count *atomic.Uint64) {
	delayCopy(dst, src, func() time.Duration { return oneWay }, count)
}

func delayCopy(dst, src net.Conn, oneWay func() time.Duration, count *atomic.Uint64) {
	type chunk struct {
		at time.Time
		b  []byte
	}
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{time.Now().Add(oneWay()), b[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	locked := false
	for c := range q {
		if d := time.Until(c.at); d > 0 {
			if !locked {
				// The thread sleeps in the kernel for the rest of the
				// copy: it is this goroutine's alone, its slack set once.
				lockThread()
				defer unlockThread()
				locked = true
			}
			sleep(d)
		}
		n, err := dst.Write(c.b)
		if count != nil {
			count.Add(uint64(n))
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	for range q { // let the reader end
	}
}

// lockThread keeps the calling goroutine on its thread, which then
// sleeps with a timer slack of 1 µs, until unlockThread.
func lockThread() {
	runtime.LockOSThread()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
}

// unlockThread gives the thread its default slack back and lets it
// serve other goroutines. (It is not left to end with the goroutine: a
// process started from a thread with Pdeathsig, as a test host's PID 1
// is, would be killed when that thread ends.)
func unlockThread() {
	unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0)
	runtime.UnlockOSThread()
}

// sleep waits d in the kernel (nanosleep), on the calling thread.
func sleep(d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	for {
		var rem unix.Timespec
		if err := unix.Nanosleep(&ts, &rem); err != unix.EINTR {
			return
		}
		ts = rem
	}
}
