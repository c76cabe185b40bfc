package replay

import (
	"context"
	"sort"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
)

// DDL is a synchronisation point in every mode, --sync none included: a
// statement that ran after another session's DDL in the capture (a table
// created, a column added) runs after it in the replay, and a session
// whose database a statement of the capture creates connects once that
// statement is done (a log without connections opens every session at
// its first statement, and one opened earlier than its database was made
// would fall back to the target's database and fail throughout).

// ddlEvents marks, per session, the statements after which its DDL is
// done for the others: a DDL statement outside a transaction block (and
// every DDL on MySQL, which commits an open transaction first), or the
// statement that ends a block holding DDL (PostgreSQL's DDL inside a
// block shows to the others once the block commits); the DDL statements
// themselves of a block the session never ended.
func ddlEvents(c *capture.Capture, t texts) [][]bool {
	mysql := c.Engine == capture.EngineMySQL
	out := make([][]bool, len(c.Sessions))
	for s, ss := range c.Sessions {
		out[s] = make([]bool, len(ss.Statements))
		tx := txState{mysql: mysql}
		var held []int // DDL of the open block
		for i, st := range ss.Statements {
			wasIn := tx.inBlock
			tx.step(t.kind[st.Text], errState(st.Error), "")
			switch {
			case t.ddl[st.Text] && (mysql || (!wasIn && !tx.inBlock)):
				out[s][i] = true
			case t.ddl[st.Text]:
				held = append(held, i)
			}
			if wasIn && !tx.inBlock && len(held) > 0 {
				out[s][i], held = true, held[:0]
			}
		}
		for _, i := range held {
			out[s][i] = true
		}
	}
	return out
}

// ddlPrefix returns, for a statement, how many events (in end order:
// pos) it needs complete for the DDL (ddlEvents) captured before it:
// one past the latest place of such a DDL, 0 for none. "Before" is what the log
// proves: in a log written as statements arrive, a DDL whose session's
// next statement arrived before this one did (it had ended by then); in
// a log written as they end, one logged before this one ended (a DDL
// that waited for this statement's transaction ended after it); without
// the log's order, one that ended by this one's start.
//
// A statement outside a transaction block (free) of a log written as
// statements arrive waits for every DDL that arrived before it: its
// session holds no lock then that the DDL could have waited for, so
// waiting cannot close a circle, and the DDL's session may send its next
// statement long after (an application that creates a table, then lets
// other sessions fill it: they failed on a table not yet made when the
// CREATE TABLE took 55 ms on a busy host).
func ddlPrefix(c *capture.Capture, events [][]bool, pos [][]int) func(st capture.Statement, free bool) int {
	type ddl struct {
		v     int64 // before a statement whose threshold exceeds it
		place int   // one past its place in end order
	}
	seq, start := sequenced(c), startLogged(c)
	var list, arrived []ddl
	for s, ss := range c.Sessions {
		for i, st := range ss.Statements {
			if !events[s][i] || pos[s][i] < 0 {
				continue
			}
			v := int64(st.Offset + st.Duration)
			switch {
			case seq && start:
				v = st.Seq + tieLines // its session's last: soon after, presumably
				if i+1 < len(ss.Statements) {
					v = ss.Statements[i+1].Seq
				}
				arrived = append(arrived, ddl{st.Seq, pos[s][i] + 1})
			case seq:
				v = st.Seq
			}
			list = append(list, ddl{v, pos[s][i] + 1})
		}
	}
	// prefix is the need of a statement of threshold th among ddls.
	prefix := func(ddls []ddl) func(th int64) int {
		sort.Slice(ddls, func(a, b int) bool { return ddls[a].v < ddls[b].v })
		// most[k] is the latest place among the first k+1.
		most := make([]int, len(ddls))
		for k, d := range ddls {
			most[k] = d.place
			if k > 0 {
				most[k] = max(most[k], most[k-1])
			}
		}
		return func(th int64) int {
			k := sort.Search(len(ddls), func(k int) bool { return ddls[k].v >= th })
			if k == 0 {
				return 0
			}
			return most[k-1]
		}
	}
	ended, began := prefix(list), prefix(arrived)
	return func(st capture.Statement, free bool) int {
		th := int64(st.Offset) + 1 // ended by its start
		if seq {
			th = st.Seq
		}
		n := ended(th)
		if free {
			n = max(n, began(th))
		}
		return n
	}
}

// connEvents returns, per session, the place in end order of the
// statement of another session that creates the session's database
// before the session's first statement in the capture, or -1. A session
// never waits to connect for a statement placed after its own first
// event: that statement may wait for the event (through the prefixes it
// needs, which lie before it), and the session could never send it.
func connEvents(c *capture.Capture, t texts, pos [][]int) []int {
	type creator struct {
		s, i int
	}
	by := map[string][]creator{}
	for s, ss := range c.Sessions {
		for i, st := range ss.Statements {
			if name := t.creates[st.Text]; name != "" && pos[s][i] >= 0 {
				by[name] = append(by[name], creator{s, i})
			}
		}
	}
	seq := sequenced(c)
	out := make([]int, len(c.Sessions))
	for s, ss := range c.Sessions {
		out[s] = -1
		cs := by[ss.Database]
		if len(cs) == 0 || len(ss.Statements) == 0 {
			continue
		}
		first := ss.Statements[0]
		var best *capture.Statement
		for _, cr := range cs {
			if cr.s == s {
				continue
			}
			st := &c.Sessions[cr.s].Statements[cr.i]
			before := st.Offset+st.Duration <= first.Offset
			if seq {
				before = st.Seq < first.Seq
			}
			if before && (best == nil || later(st, best, seq)) {
				best, out[s] = st, pos[cr.s][cr.i]
			}
		}
		for _, p := range pos[s] {
			if p >= 0 {
				if p < out[s] {
					out[s] = -1
				}
				break // the session's first event: the others come after it
			}
		}
	}
	return out
}

func later(a, b *capture.Statement, seq bool) bool {
	if seq {
		return a.Seq > b.Seq
	}
	return a.Offset+a.Duration > b.Offset+b.Duration
}

// waitConnect blocks until the statement that creates session s's
// database is complete (connEvt); false when ctx ends first.
func (y *syncer) waitConnect(ctx context.Context, s int) (time.Duration, bool) {
	evt := y.connEvt[s]
	if evt < 0 {
		return 0, ctx.Err() == nil
	}
	y.mu.Lock()
	if y.done[evt] {
		y.mu.Unlock()
		return 0, ctx.Err() == nil
	}
	w := &waiter{s: s, i: 0, evt: evt, since: time.Now(), ch: make(chan struct{})}
	y.waiters[w] = true
	y.mu.Unlock()
	return y.await(ctx, w)
}
