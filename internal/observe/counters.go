package observe

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/collect/counters"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/collect/pgstat"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/result"
)

// statsReader reads an engine's cumulative counters (pgstat, mystat).
type statsReader interface {
	Read(ctx context.Context) (*counters.Snapshot, error)
	// Reads is how many readings were taken.
	Reads() int64
}

// serverCounters is the part of a source that a server's cumulative
// counters share, whatever the engine (PostgreSQL's, MySQL's): read on a
// collector connection every interval for the series and at the window's
// edges, with session states sampled on another. The window's deltas are
// summed reading by reading, so that a server restart (its counters
// reset) costs the interval it fell in, not the window. The engine's
// source embeds it, opens its reader and sampler (then calls begin), and
// turns the window's deltas into its profiles (finishWindow).
type serverCounters struct {
	ob  *Observer
	fig figures

	// mu guards the statistics connection and what follows.
	mu      sync.Mutex
	stats   statsReader
	sampler *counters.Sampler
	// commitKey is the commit counter, from which the collectors' own
	// transactions are taken ("" when the engine does not count them).
	commitKey string
	prev      *pgstat.Snapshot // the series' last reading
	ownPrev   int64
	winStart  *pgstat.Snapshot
	winEnd    *pgstat.Snapshot
	// The window's deltas: win is the sum so far, winFrom the reading it
	// reaches, and winLost the seconds of the window left out.
	winOpen  time.Time // when the window opened
	win      map[string]float64
	winFrom  *pgstat.Snapshot
	winOwn   int64
	winLost  float64
	restarts int
	// The database host's OS snapshots taken with the readings the
	// window's deltas start and end at, so that the load profile's OS
	// figures cover the same time as the database's counters.
	winStartOS, winFromOS *ostat.Snapshot

	// settle, when set (PostgreSQL 15+), has the sessions publish their
	// counts before each reading (settle.go); a settled reading is
	// stamped with the instant its epoch began. The window's deltas run
	// from the reading taken at once at its start (winStart); settledStart
	// is the reading taken once the sessions published, and startAdj what
	// lies between the two, which the window leaves out when its last
	// reading was settled too (winFromSettled). When it was not (the
	// server stopped answering before the sessions published), the start
	// stays the one taken at once, so that both edges lag alike.
	settle         *Settler
	settledStart   *pgstat.Snapshot
	startAdj       map[string]float64
	winFromSettled bool
	settleNotes    []string
}

// begin takes the first reading, once the engine set stats and sampler.
func (sc *serverCounters) begin(ctx context.Context) error {
	var err error
	if sc.prev, err = sc.stats.Read(ctx); err != nil {
		return err
	}
	sc.ownPrev = sc.own()
	return nil
}

// own counts the collectors' transactions so far; call with mu held.
func (sc *serverCounters) own() int64 {
	n := sc.stats.Reads()
	if sc.sampler != nil {
		n += sc.sampler.Transactions()
	}
	n += sc.ob.host.statements() // one transaction each
	n += sc.settle.flushes()     // the sessions' flushes before the readings
	return n
}

// run samples the sessions' states until the collectors stop.
func (sc *serverCounters) run(ctx context.Context) {
	if sc.sampler != nil {
		sc.sampler.Run(ctx)
	}
}

// tick reads the counters for the series and the window; m.os is the
// database host's reading of the same tick.
func (sc *serverCounters) tick(ctx context.Context, m *moment) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	settled := sc.waitSettle(ctx, m.epoch, m.at.Add(settleWait), "")
	s, err := sc.read(ctx, m, settled)
	if err != nil {
		if ctx.Err() == nil {
			sc.ob.fail("database", err)
		}
		return
	}
	own := sc.own()
	if sc.prev != nil && !resetBetween(sc.fig, sc.prev, s) {
		d := pgstat.Delta(sc.prev, s)
		// The database counted the collectors' readings and samples as
		// transactions; they are not the workload's. A backend publishes
		// its counts up to a second late, so an interval may not hold the
		// collectors' yet: never below zero.
		if sc.commitKey != "" {
			d[sc.commitKey] = max(d[sc.commitKey]-float64(own-sc.ownPrev), 0)
		}
		iv := dbInterval(sc.fig, d, sc.prev.At, s.At, sc.ob.start)
		sc.ob.series.Add(iv)
		sc.ob.record(result.JournalEntry{DB: &iv})
	}
	sc.prev, sc.ownPrev = s, own
	sc.advance(s, own, m.os, settled)
}

// read reads the counters; a settled reading is stamped with the instant
// its epoch began, which is what the sessions' counts in it reach.
func (sc *serverCounters) read(ctx context.Context, m *moment, settled bool) (*pgstat.Snapshot, error) {
	s, err := sc.stats.Read(ctx)
	if err == nil && settled && !m.at.IsZero() {
		s.At = m.at
	}
	return s, err
}

// resetBetween tells whether the server's counters went back between two
// readings: it restarted after a crash (or someone reset them).
func resetBetween(fig figures, a, b *pgstat.Snapshot) bool {
	for _, k := range fig.monotonic {
		x, okA := a.Counters[k]
		y, okB := b.Counters[k]
		if okA && okB && y < x {
			return true
		}
	}
	return false
}

// advance adds the reading s to the window's deltas when the window is
// open; os is the database host's reading taken with it, and settled
// says the sessions published their counts for it. Call with mu held.
func (sc *serverCounters) advance(s *pgstat.Snapshot, own int64, os *ostat.Snapshot, settled bool) {
	switch {
	case sc.winOpen.IsZero() || sc.winEnd != nil:
		return
	case sc.winFrom == nil:
		// The server did not answer at the window's start.
		sc.winFrom, sc.winOwn, sc.winLost = s, own, s.At.Sub(sc.winOpen).Seconds()
		sc.winStartOS, sc.winFromOS = os, os
		return
	case resetBetween(sc.fig, sc.winFrom, s):
		// What happened between the last reading and the restart is lost
		// with the old counters.
		sc.winLost += s.At.Sub(sc.winFrom.At).Seconds()
		sc.restarts++
	default:
		for k, v := range pgstat.Delta(sc.winFrom, s) {
			sc.win[k] += v
		}
		if sc.commitKey != "" {
			sc.win[sc.commitKey] -= float64(own - sc.winOwn)
		}
	}
	sc.winFrom, sc.winOwn, sc.winFromOS, sc.winFromSettled = s, own, os, settled
}

// mark starts and stops the sampler's count at the window's edges.
func (sc *serverCounters) mark(p int) {
	if sc.sampler == nil {
		return
	}
	switch p {
	case driver.Measure:
		sc.sampler.Count(true)
	case driver.Drain:
		sc.sampler.Count(false)
	}
}

// edge reads the counters at an edge of the window, after the database
// host (m.os), as the database may be slow to answer. With a Settler, the
// start is read twice, at once and once the sessions published their
// counts, and the end once they did (the sessions stop after it: the
// wait is longer).
func (sc *serverCounters) edge(ctx context.Context, p int, m *moment) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	defer sc.settle.edgeRead(m.epoch)
	switch p {
	case driver.Measure:
		// The window opened at the driver's instant, not when this reading
		// began: on a saturated host the reading starts and is answered
		// hundreds of milliseconds late, and the transactions of that time
		// are not in the counters' deltas (MariaDB's profile counted 8-11%
		// fewer transactions than the driver with two suites beside it).
		// That time is left out of the window's rates like any other time
		// the counters do not cover; a settled start is stamped with the
		// window's instant and leaves none out.
		sc.winOpen, sc.win = cmp.Or(m.at, time.Now()), map[string]float64{}
		s, err := sc.stats.Read(ctx)
		if err != nil {
			sc.ob.fail("database (window start)", err)
			return
		}
		own := sc.own()
		sc.winLost = max(s.At.Sub(sc.winOpen).Seconds(), 0)
		sc.winStart, sc.winFrom, sc.winOwn = s, s, own
		sc.winStartOS, sc.winFromOS = m.os, m.os
		sc.settleStart(ctx, m, s, own)
	case driver.Drain:
		settled := sc.waitSettle(ctx, m.epoch, m.at.Add(settleEnd), "end")
		s, err := sc.read(ctx, m, settled)
		if err != nil {
			sc.ob.fail("database (window end)", err)
		} else {
			sc.advance(s, sc.own(), m.os, settled)
		}
		// The window's counters end at its last reading; when that is not
		// the edge (the server did not answer), the rest of the window is
		// left out (finish counts it from the window's end: the time this
		// reading waited past the end is no part of the window).
		sc.winEnd = sc.winFrom
	}
}

// settleStart reads the counters again once the sessions published what
// they did before the window's start (s and own are the reading taken at
// once); call with mu held.
func (sc *serverCounters) settleStart(ctx context.Context, m *moment, s *pgstat.Snapshot, own int64) {
	if !sc.waitSettle(ctx, m.epoch, m.at.Add(settleWait), "start") {
		return
	}
	s2, err := sc.read(ctx, m, true)
	if err != nil || resetBetween(sc.fig, s, s2) {
		return
	}
	adj := pgstat.Delta(s, s2)
	if sc.commitKey != "" {
		adj[sc.commitKey] -= float64(sc.own() - own)
	}
	sc.settledStart, sc.startAdj = s2, adj
	sc.winLost = 0
}

// waitSettle waits for the sessions to publish their counts for epoch,
// at most until deadline; it tells whether the reading can be taken as
// settled (a Settler wraps the sessions), noting the sessions that were
// late at the window's edge (its "start" or "end"; "" for a tick). Call
// with mu held.
func (sc *serverCounters) waitSettle(ctx context.Context, epoch int, deadline time.Time, edge string) bool {
	if sc.settle == nil || epoch == 0 {
		return false
	}
	late, of, ok := sc.settle.wait(ctx, epoch, deadline)
	if ok && late > 0 && edge != "" {
		sc.settleNotes = append(sc.settleNotes, lateNote(edge, late, of))
	}
	return ok
}

// settled tells whether the window's deltas run between readings taken
// once the sessions had published their counts, at both ends.
func (sc *serverCounters) settled() bool { return sc.winFromSettled && sc.startAdj != nil }

// profiler turns the window's deltas d, over covered seconds, into an
// engine's load and IO profiles and its own sections of r; lag, when not
// empty, is a note on how late the engine publishes its counters.
type profiler func(r *result.Run, d map[string]float64, covered float64) (lp, io result.Profile, lag string)

// finishWindow adds the window's counters, profiles and waits to r.
func (sc *serverCounters) finishWindow(r *result.Run, profiles profiler) {
	secs := r.MeasureEnd.Sub(r.MeasureStart).Seconds()
	switch {
	case sc.winEnd != nil:
		start := sc.winStart
		if start == nil {
			start = &pgstat.Snapshot{}
		}
		d := maps.Clone(sc.win)
		if sc.settled() {
			// Both edges settled: the window starts at the reading taken
			// once the sessions had published what came before it.
			start = sc.settledStart
			for k, v := range sc.startAdj {
				if _, ok := d[k]; ok {
					d[k] -= v
				}
			}
			r.Warnings = append(r.Warnings, sc.settleNotes...)
		}
		r.DBCounters = &result.Counters{Start: start.Counters, End: sc.winEnd.Counters}
		if v, ok := d[sc.commitKey]; ok && sc.commitKey != "" && v < 0 {
			// The collectors' own commits outnumber what the server has
			// counted: backends report their counts up to a second late,
			// and a short window ends before they do. Unknown, not negative.
			delete(d, sc.commitKey)
			r.Warnings = append(r.Warnings, fmt.Sprintf("the server had not yet counted the window's transactions when it ended "+
				"(it counts them up to a second late): the load profile's transactions are n/a for this %.1f s window", secs))
		}
		// The database's counters cover the window from its first reading
		// to its last: the time it did not answer at either end, or lost
		// to a restart, is left out, and every figure of the profile is
		// taken over the same time, so that no rate is inflated.
		// A reading late at the start by a fraction of a second (a
		// saturated server answers it late) is taken out too: the rates
		// are over the time the readings span, and only a loss above 5%
		// is said.
		lost := sc.winLost + max(r.MeasureEnd.Sub(sc.winEnd.At).Seconds(), 0)
		covered := max(secs-lost, 0)
		said := lost > 0.05*secs || sc.restarts > 0
		osd := osWindow(r)
		switch {
		case covered == secs:
			maps.Copy(d, osd)
		case sc.restarts == 0 && sc.winStartOS != nil && sc.winFromOS != nil && r.OS != nil:
			// The database host read with the database's first and last
			// readings.
			maps.Copy(d, osTotals(ostat.Between(sc.winStartOS, sc.winFromOS), r.OS.DataDevice))
		default:
			// The OS window's average rates over the covered time.
			for k, v := range osd {
				d[k] = v * covered / secs
			}
		}
		if covered == secs {
			// The driver's statements are counted over the window; over
			// part of it they are unknown.
			d[pgstat.ExtraClientStmt] = float64(r.Statements)
		}
		if sc.sampler != nil {
			d[pgstat.ExtraASHDBTime], d[pgstat.ExtraASHCPU] = sc.sampler.DBTime(covered)
		}
		if said {
			what := "the database did not answer for part of the window"
			if sc.restarts > 0 {
				what = fmt.Sprintf("the server restarted %d time(s) during the window and its counters were reset", sc.restarts)
			}
			r.Warnings = append(r.Warnings, fmt.Sprintf(
				"%s: the database profiles cover %.1f s of the %.1f s window (the time the server was up and answering)", what, covered, secs))
		}
		lp, io, lag := profiles(r, d, covered)
		if said {
			lp.Note = fmt.Sprintf("covers %.1f s of the %.1f s window", covered, secs)
			io.Note = lp.Note
		}
		if lag != "" {
			lp.Note = strings.TrimPrefix(lp.Note+"; "+lag, "; ")
			io.Note = lp.Note
		}
		r.LoadProfile, r.IOProfile = &lp, &io
	case sc.stats != nil:
		r.Warnings = append(r.Warnings, "the database did not answer during the measured window: no load or IO profile")
	}
	if sc.sampler != nil {
		w, err := sc.sampler.Result()
		r.Waits = w
		if err != nil {
			sc.ob.fail("waits", err)
		}
		if n := sc.sampler.Missed(); n > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf(
				"%d wait samples of the window failed (the database did not answer): the waits describe the rest", n))
		}
	}
}
