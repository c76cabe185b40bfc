package wire

import (
	"sync"
	"time"
)

// connQueue takes a connection's decoding out of its round trips: each
// relay copies what it read into the queue, with the time it passed,
// writes it on, and only then decodes what the queue holds (drain). A
// request is passed on before it is decoded, and an answer that arrives
// meanwhile is queued and passed on by the other relay without waiting:
// whichever relay drains decodes for both, in the queue's order, while
// the other goes on relaying.
//
// The order is each side's as it passed: a relay queues what it read
// before it writes it on, so the answer to a request is queued after
// the request. No goroutine of its own, so no wake-up per message (a
// decoder goroutine woken by the relays cost more CPU than the decoding
// it moved). Nothing is dropped: when the queue holds limit bytes while
// the other relay drains, the relay waits for it (memory stays bounded
// at about twice limit a connection).
type connQueue struct {
	s        *Session
	mu       sync.Mutex
	room     sync.Cond // the drainer took what was queued
	cur      chunks    // being filled
	spare    chunks    // the drainer's, reused
	draining bool
	limit    int
}

// chunks are queued bytes, one record per chunk, in order.
type chunks struct {
	data []byte
	recs []chunk
}

type chunk struct {
	kind uint8
	n    int
	at   time.Time
}

// What a chunk is.
const (
	fromClient uint8 = iota
	fromServer
	closed // the connection ended at; no bytes
)

// queueLimit is what a connection's queue holds before a relay waits.
const queueLimit = 1 << 20

func newConnQueue(s *Session, limit int) *connQueue {
	q := &connQueue{s: s, limit: limit}
	q.room.L = &q.mu
	return q
}

// put queues a copy of b, what kind of side sent at; it waits while the
// queue is full and being drained.
func (q *connQueue) put(kind uint8, b []byte, at time.Time) {
	q.mu.Lock()
	for q.draining && len(q.cur.data) > 0 && len(q.cur.data)+len(b) > q.limit {
		q.room.Wait()
	}
	q.cur.data = append(q.cur.data, b...)
	q.cur.recs = append(q.cur.recs, chunk{kind: kind, n: len(b), at: at})
	q.mu.Unlock()
}

// drain decodes what is queued, unless another relay is at it (it
// decodes what this one queued too, before it stops).
func (q *connQueue) drain() {
	q.mu.Lock()
	if q.draining {
		q.mu.Unlock()
		return
	}
	q.draining = true
	for len(q.cur.recs) > 0 {
		q.cur, q.spare = q.spare, q.cur
		q.room.Broadcast()
		q.mu.Unlock()
		b := &q.spare
		off := 0
		for _, c := range b.recs {
			p := b.data[off : off+c.n : off+c.n]
			off += c.n
			switch c.kind {
			case fromClient:
				q.s.FromClient(p, c.at)
			case fromServer:
				q.s.FromServer(p, c.at)
			case closed:
				q.s.Close(c.at)
			}
		}
		b.data, b.recs = b.data[:0], b.recs[:0]
		q.mu.Lock()
	}
	q.draining = false
	q.mu.Unlock()
}

// end queues the connection's end, at, and decodes what is left: call it
// once both relays are done.
func (q *connQueue) end(at time.Time) {
	q.put(closed, nil, at)
	q.drain()
}
