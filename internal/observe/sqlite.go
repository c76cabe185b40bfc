package observe

import (
	"context"
	"fmt"
	"time"

	"github.com/dbparity/dbparity/internal/collect/sqlitestat"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/result"
)

// sqlite observes an SQLite database: the engine's counters, which the
// target counts in this process (no connection, no round trip), its
// pragmas at the start, and its files' sizes.
type sqlite struct {
	ob       *Observer
	prev     map[string]float64 // at the last tick
	prevAt   time.Time
	winStart map[string]float64 // at the window's edges
	winEnd   map[string]float64
}

var sqliteFigures = figures{
	logicalRead: []string{"sqlite.cache_hit", "sqlite.cache_miss"},
	reads:       []string{"sqlite.cache_miss"},
	writes:      []string{"sqlite.cache_write"},
}

func newSQLite(ob *Observer) source { return &sqlite{ob: ob} }

// start describes the database on the run's context (it opens a file).
func (s *sqlite) start(ctx, _ context.Context) error {
	t := s.ob.t
	s.prev, s.prevAt = t.EngineCounters(), time.Now()
	c, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	s.ob.database, err = sqlitestat.Describe(ctx, c, t.Path)
	return err
}

func (s *sqlite) tick(_ context.Context, _ *moment) {
	eng := s.ob.t.EngineCounters()
	if eng == nil {
		return
	}
	now := time.Now()
	iv := dbInterval(sqliteFigures, deltas(s.prev, eng), s.prevAt, now, s.ob.start)
	wal := float64(sqlitestat.WALBytes(s.ob.t.Path))
	iv.WALFile = &wal
	s.ob.series.Add(iv)
	s.prev, s.prevAt = eng, now
	s.ob.record(result.JournalEntry{DB: &iv})
}

// mark takes the engine's counters at the window's edges: they cost
// nothing to read.
func (s *sqlite) mark(p int) {
	switch p {
	case driver.Measure:
		s.winStart = s.ob.t.EngineCounters()
	case driver.Drain:
		s.winEnd = s.ob.t.EngineCounters()
	}
}

func (s *sqlite) edge(context.Context, int, *moment) {}

// finish adds the window's counters, the load profile and the files' sizes.
func (s *sqlite) finish(r *result.Run) {
	if s.winStart == nil || s.winEnd == nil {
		return
	}
	sum := r.Summarize()
	secs := r.MeasureEnd.Sub(r.MeasureStart).Seconds()
	r.DBCounters = &result.Counters{Start: s.winStart, End: s.winEnd}
	d := deltas(s.winStart, s.winEnd)
	lp := sqlitestat.LoadProfile(s.ob.database.Version, d, secs, float64(sum.Commits+sum.Rollbacks), float64(sum.Rollbacks),
		float64(r.Statements), r.Driver.CPUUserS+r.Driver.CPUSysS)
	r.LoadProfile = &lp
	s.ob.database.DataBytes = sqlitestat.FileBytes(s.ob.t.Path)
	s.ob.database.Settings["wal_file_bytes"] = fmt.Sprint(sqlitestat.WALBytes(s.ob.t.Path))
}
