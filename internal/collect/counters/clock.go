package counters

import (
	"sync"
	"time"
)

// Clock places a reading at the instant the server took it, on this
// host's clock. A reading is stamped by the server's own clock (the
// statement's start, read in the same query as the counters) less the
// server clock's offset from this host's. Each reading bounds that
// offset: the server's instant lies between the query's send and its
// answer. The offset taken is the one nearest zero within every bound
// seen so far (clocks kept in step, or one host's, need no correction,
// and a saturated host answers late on its client's side: the midpoint
// of a round trip would place a reading up to half of it late); bounds
// that no longer meet (a clock stepped) start afresh from the reading
// at hand. The instant is so always between the query's send and its
// answer.
//
// On a saturated host a query sent at the window's start can wait for a
// CPU before the server runs it, and the sessions' transactions of that
// time are not in a reading stamped at its send.
type Clock struct {
	mu     sync.Mutex
	lo, hi time.Duration // bounds of the server clock less this host's
	known  bool
}

// Place stamps a reading sent at sent, answered at answered, whose
// server clock said server: the server's instant on this host's clock.
func (c *Clock) Place(sent, answered, server time.Time) time.Time {
	if server.IsZero() || answered.Before(sent) {
		return sent
	}
	lo, hi := server.Sub(answered), server.Sub(sent)
	c.mu.Lock()
	if c.known && max(lo, c.lo) <= min(hi, c.hi) {
		lo, hi = max(lo, c.lo), min(hi, c.hi)
	}
	c.lo, c.hi, c.known = lo, hi, true
	c.mu.Unlock()
	return server.Add(-min(max(0, lo), hi))
}

// Epoch is the instant s seconds after the Unix epoch (a server's clock
// read as a number); zero for none.
func Epoch(s float64) time.Time {
	if s <= 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s*1e9))
}
