package driver

import (
	"context"
	"sync"
	"time"
)

// Gate lets two runs driven at once take turns in short slices (dbparity
// ab --slice): a session starts a transaction only while its run's gate
// is open. Closing a gate waits until the transactions under way have
// ended, so that the two targets never work at the same time and each
// slice's time, commits and driver CPU belong to one side exactly.
type Gate struct {
	mu       sync.Mutex
	open     bool
	opened   chan struct{} // closed while the gate is open
	idle     *sync.Cond    // signalled when inflight drops to 0
	inflight int
	commits  int64 // of the slice under way
	cur      Span
	spans    []Span
}

// Span is one slice during which a gate was open: from its opening to the
// end of the last transaction started in it, what committed in it and the
// driver process's CPU over it.
type Span struct {
	Start, End time.Time
	Commits    int64
	CPU        CPU
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	g := &Gate{opened: make(chan struct{})}
	g.idle = sync.NewCond(&g.mu)
	return g
}

// Open opens the gate: waiting sessions start.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		return
	}
	g.open = true
	g.commits = 0
	g.cur = Span{Start: time.Now(), CPU: ProcessCPU()}
	close(g.opened)
}

// Close closes the gate and returns once the transactions started while
// it was open have ended (a session's statement timeout bounds that
// wait), or when ctx is done.
func (g *Gate) Close(ctx context.Context) {
	g.mu.Lock()
	if !g.open {
		g.mu.Unlock()
		return
	}
	g.open = false
	g.opened = make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		g.idle.Broadcast()
		g.mu.Unlock()
	})
	defer stop()
	for g.inflight > 0 && ctx.Err() == nil {
		g.idle.Wait()
	}
	g.cur.End, g.cur.Commits = time.Now(), g.commits
	g.cur.CPU = ProcessCPU().Sub(g.cur.CPU)
	g.spans = append(g.spans, g.cur)
	g.mu.Unlock()
}

// enter waits for the gate to open and counts the caller in; false when
// stop or done came first.
func (g *Gate) enter(stop <-chan struct{}, done <-chan struct{}) bool {
	for {
		g.mu.Lock()
		if g.open {
			g.inflight++
			g.mu.Unlock()
			return true
		}
		ch := g.opened
		g.mu.Unlock()
		select {
		case <-ch:
		case <-stop:
			return false
		case <-done:
			return false
		}
	}
}

// leave counts the caller out after its transaction, and its commit.
func (g *Gate) leave(committed bool) {
	g.mu.Lock()
	g.inflight--
	if committed {
		g.commits++
	}
	if g.inflight == 0 {
		g.idle.Broadcast()
	}
	g.mu.Unlock()
}

// Spans returns the slices the gate was open, the one under way (if any)
// ended now.
func (g *Gate) Spans() []Span {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := append([]Span(nil), g.spans...)
	if g.open {
		c := g.cur
		c.End, c.Commits, c.CPU = time.Now(), g.commits, ProcessCPU().Sub(c.CPU)
		out = append(out, c)
	}
	return out
}

// Within is what of spans falls in [from, to): the open time and the CPU,
// a span cut by an edge counted in proportion; and the spans that lie
// wholly inside.
func Within(spans []Span, from, to time.Time) (open time.Duration, cpu CPU, whole []Span) {
	for _, s := range spans {
		a, b := s.Start, s.End
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		if !b.After(a) {
			continue
		}
		d := b.Sub(a)
		open += d
		if full := s.End.Sub(s.Start); full > 0 {
			f := float64(d) / float64(full)
			cpu.User += time.Duration(f * float64(s.CPU.User))
			cpu.Sys += time.Duration(f * float64(s.CPU.Sys))
		}
		if d == s.End.Sub(s.Start) {
			whole = append(whole, s)
		}
	}
	return open, cpu, whole
}
