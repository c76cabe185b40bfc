package driver

import (
	"sync"
	"sync/atomic"
	"time"
)

// outages tracks the open outage. Sessions take its lock only on a failure
// or a reconnect, and on a commit while one is open (open is read first,
// without the lock), so it costs the hot path one atomic load.
type outages struct {
	open   atomic.Bool
	mu     sync.Mutex
	cur    Event
	down   bool // the open event met an unreachable server
	events []Event
}

// lost records a failure that lost the connection; unreachable says the
// server could not be reached at all.
func (o *outages) lost(at time.Time, cause string, unreachable bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.open.Load() {
		o.cur, o.down = Event{Start: at, Cause: cause}, false
		o.open.Store(true)
	}
	o.cur.Failed++
	o.down = o.down || unreachable
}

// count adds failed transactions and reconnects to the open event, if any.
func (o *outages) count(failed, reconnects int64) {
	if !o.open.Load() {
		return
	}
	o.mu.Lock()
	if o.open.Load() {
		o.cur.Failed += failed
		o.cur.Reconnects += reconnects
	}
	o.mu.Unlock()
}

func (o *outages) committed(at time.Time) {
	if !o.open.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.open.Load() || at.Before(o.cur.Start) {
		return
	}
	o.cur.End = at
	o.close()
}

// close files the open event; call with mu held.
func (o *outages) close() {
	o.cur.Kind = "disconnect"
	if o.cur.End.IsZero() || o.down {
		o.cur.Kind = "outage"
	}
	o.events = append(o.events, o.cur)
	o.open.Store(false)
}

// snapshot returns the events so far, the open one (no end) last.
func (o *outages) snapshot() []Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	ev := append([]Event(nil), o.events...)
	if o.open.Load() {
		cur := o.cur
		cur.Kind = "outage"
		ev = append(ev, cur)
	}
	return ev
}

// all returns every event, the one still open last.
func (o *outages) all() []Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open.Load() {
		o.close()
	}
	return o.events
}
