// Package observe owns what a run sees beside its driver: the collectors.
// It chooses how the database host is observed, opens the collectors'
// own connections (which never hang and come back), starts and ticks one
// source per origin of figures (the database engine's counters, the
// database host's OS), keeps the measured window's edges across resets
// and outages (on PostgreSQL 15+ with the run's sessions publishing their
// statistics before each reading: settle.go, which the runner wraps the
// sessions with), and writes the result's sections: disclosure, database
// and OS counters, series, load and IO profiles, waits, and the
// collectors' warnings. It knows nothing of workloads or of how a run is
// orchestrated: the runner hands it the target and calls Start, Phase,
// Finish and Close.
package observe

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/collect/dbhost"
	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// Options set what is collected during a run.
type Options struct {
	Off          bool          // --no-collect: no collectors (to measure their overhead)
	Interval     time.Duration // --interval: counters and the OS every interval
	WaitInterval time.Duration // --wait-interval: session state sampling
	DBPID        int           // --db-pid: the server's main process, when it runs on this host
	// DBHost is --db-host: how the database host is observed ("" or
	// "auto", local, sql, node-exporter, none); DBHostMetrics is
	// --db-host-metrics, a node_exporter's URL on the database host.
	DBHost        string
	DBHostMetrics string
	// StatementTimeout is each collector statement's deadline (the run's
	// --statement-timeout).
	StatementTimeout time.Duration
	// SeriesPoints bounds each series (0: metrics.DefaultSeriesPoints).
	SeriesPoints int
}

// Target is the database a run observes, with what the runner knows of
// where it runs.
type Target struct {
	*engine.Target
	// Managed is true when dbparity started the server on this host; PID
	// is then its main process.
	Managed bool
	PID     int
	// DataDir is the database's data directory on this host ("" when
	// unknown or elsewhere).
	DataDir string
}

// UsageError is bad input the user can fix on the command line.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

func usage(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// A source is one origin of a run's figures: a database engine's
// counters (postgres.go, mysql.go, sqlite.go) or the database host's OS
// (host.go). A new engine is a new source, named in engines. The
// Observer starts the engine's source, then the host's (whose readings
// may go through a connection of the engine's server); it ticks them,
// takes the window's edges and finishes them host first, so that the
// engine's readings come with the host's reading of the same moment.
type source interface {
	// start discloses the source and takes its first reading; failing,
	// the run does not start. ctx is the run's; bg the collectors' own,
	// which outlives ctx by collectorStopGrace.
	start(ctx, bg context.Context) error
	// tick takes one interval's reading for the series. A reading that
	// fails leaves a gap; the next one tries again.
	tick(ctx context.Context, m *moment)
	// edge takes the reading of one edge of the measured window
	// (driver.Measure, driver.Drain).
	edge(ctx context.Context, p int, m *moment)
	// finish adds the source's sections to r once the collectors stopped.
	finish(r *result.Run)
}

// A marker notes an edge of the window at once, before any source reads
// at that edge: what costs no round trip.
type marker interface{ mark(p int) }

// A background source runs beside the run until the collectors stop (a
// sampler).
type background interface{ run(ctx context.Context) }

// moment is one tick's or edge's readings, handed from source to source:
// the host's source, first, leaves its reading for the engine's.
type moment struct {
	os    *ostat.Snapshot // the database host's reading; nil when none
	at    time.Time       // the tick's or the edge's instant (the driver's)
	epoch int             // the Settler's epoch it began (0 without one)
}

// edgeAt is an edge of the window due to be read: its phase, instant and
// epoch.
type edgeAt struct {
	p     int
	at    time.Time
	epoch int
}

// engines makes the source of each dialect's counters.
var engines = map[engine.Dialect]func(*Observer) source{
	engine.Postgres: newPostgres,
	engine.MySQL:    newMySQL,
	engine.SQLite:   newSQLite,
}

// Observer runs the collectors of one run beside the driver: database
// counters every interval and at the edges of the measured window, wait
// sampling, and the disclosure and preflight before the run. Collectors
// have their own connections, never the sessions', and every statement
// they send has the run's statement timeout, so a server that freezes
// costs them a gap, never the run its end. The window's edges are taken
// on a goroutine of their own: the driver's monitor, which ends the run,
// never waits for a database.
type Observer struct {
	t        Target
	opts     Options
	testsIO  bool // the workload tests IO: the result gets IO units
	interval time.Duration
	timeout  time.Duration // each collector statement's deadline
	start    time.Time     // the run's start, for the series' time axis
	journal  *result.Journal

	engine source      // nil with the collectors off
	host   *hostSource // nil with the collectors off
	// database is the engine's description, nil with the collectors off.
	database *result.Database
	// The database series, bounded (the journal has every point); the
	// engine's source adds to it.
	series *metrics.Bounded[result.DBInterval]

	errMu sync.Mutex
	errs  map[string]*collectorError

	conns     []*collectorConn
	cancel    context.CancelFunc
	unwatch   func() bool // ends the watch on the run's context (one per repetition otherwise)
	done      sync.WaitGroup
	edges     chan edgeAt // edges whose snapshots are due
	edgesDone chan struct{}
	// settler, when the engine has one, has the run's sessions publish
	// their counts at the window's edges (settle.go).
	settler    *Settler
	warnings   []string
	statements int64 // sent by the collectors' connections
}

// collectorError is one kind of collector failure: its first message and
// how often it happened, so that a frozen server's every tick makes one
// warning, not hundreds.
type collectorError struct {
	first string
	n     int
}

// collectorStopGrace is how long the collectors' last readings may take
// after the user interrupted the run.
const collectorStopGrace = 2 * time.Second

// collectorApp is the application_name of the collectors' connections.
const collectorApp = "dbparity-collector"

// Start starts the collectors of one run against t (none with o.Off):
// the engine's and the database host's sources take their first
// readings, then tick every o.Interval until Finish or Close. testsIO
// asks for the result's IO units; journal, when not nil, gets every
// point of the series.
func Start(ctx context.Context, t Target, o Options, testsIO bool, journal *result.Journal) (*Observer, error) {
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = 30 * time.Second
	}
	ob := &Observer{t: t, opts: o, testsIO: testsIO, interval: o.Interval, timeout: o.StatementTimeout, start: time.Now(),
		journal: journal, errs: map[string]*collectorError{}, series: result.NewDBSeries(o.SeriesPoints)}
	if o.Off {
		return ob, nil
	}
	// The collectors' statements end when the run ends, or shortly after
	// the user interrupts it: their last readings get a moment, no more.
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ob.cancel = cancel
	ob.unwatch = context.AfterFunc(ctx, func() { time.AfterFunc(collectorStopGrace, cancel) })
	ob.host = newHost(ob)
	if newEngine := engines[t.Dialect]; newEngine != nil {
		ob.engine = newEngine(ob)
		if err := ob.engine.start(ctx, bg); err != nil {
			ob.Close()
			return nil, err
		}
	}
	if err := ob.host.start(ctx, bg); err != nil {
		ob.Close()
		return nil, err
	}
	ob.run(bg)
	return ob, nil
}

// sources are the started sources in the order they tick, take edges and
// finish: the host's first.
func (ob *Observer) sources() []source {
	s := []source{ob.host}
	if ob.engine != nil {
		s = append(s, ob.engine)
	}
	return s
}

// dial opens a collector connection that Close closes.
func (ob *Observer) dial(ctx context.Context) (*collectorConn, error) {
	c, err := dialCollector(ctx, ob.t.Target, collectorApp, ob.timeout)
	if err != nil {
		return nil, err
	}
	ob.conns = append(ob.conns, c)
	return c, nil
}

// fail records a collector's failure under its kind.
func (ob *Observer) fail(kind string, err error) {
	ob.errMu.Lock()
	defer ob.errMu.Unlock()
	if e, ok := ob.errs[kind]; ok {
		e.n++
		return
	}
	ob.errs[kind] = &collectorError{first: err.Error(), n: 1}
}

// record journals a collector's point; the journal's error, if any, ends
// the run through the driver's next tick.
func (ob *Observer) record(e result.JournalEntry) {
	if ob.journal != nil {
		ob.journal.Append(e)
	}
}

// run starts what runs beside the run (the sampler), the interval ticker
// and the edge taker.
func (ob *Observer) run(ctx context.Context) {
	for _, s := range ob.sources() {
		if r, ok := s.(background); ok {
			ob.done.Add(1)
			go func() { defer ob.done.Done(); r.run(ctx) }()
		}
	}
	ob.done.Add(1)
	go func() { defer ob.done.Done(); ob.tick(ctx) }()
	ob.edges, ob.edgesDone = make(chan edgeAt, 2), make(chan struct{})
	go func() {
		defer close(ob.edgesDone)
		for e := range ob.edges {
			ob.edge(ctx, e.p, &moment{at: e.at, epoch: e.epoch})
		}
	}()
}

// Settler is what the runner wraps the sessions' connections and
// transactions with so that they publish their counts at the window's
// edges; nil when the engine needs none (or the collectors are off).
func (ob *Observer) Settler() *Settler { return ob.settler }

// tick reads the sources every interval for the series.
func (ob *Observer) tick(ctx context.Context) {
	t := time.NewTicker(ob.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m := &moment{at: time.Now()}
			m.epoch = ob.settler.beginTick()
			for _, s := range ob.sources() {
				s.tick(ctx, m)
			}
		}
	}
}

// Phase is the driver's call at the window's edges. It must not wait for
// a database, so the snapshots are taken on the edge goroutine, in order;
// but the sessions' cue to publish their counts is given here, at the
// edge itself. So is, at the window's end, the reading of this host's
// /proc when the database runs here and its sessions publish their
// counts (a Settler): on a saturated host the edge goroutine wakes late
// (0.1-0.2 s with a CPU hog per core), after the sessions that end the
// run have closed and taken their backends' run-queue waits with them.
// The read takes a few milliseconds, up to 0.7 s on a saturated host; the
// window's end is fixed already, but the sessions stop only after it:
// work the Settler keeps out of the window's counters, which the late
// reading of a server without one (MySQL, PostgreSQL before 15) would
// count. At the start it would lengthen the window.
func (ob *Observer) Phase(p int, at time.Time) {
	if ob.edges == nil {
		return
	}
	epoch := ob.settler.beginEdge()
	if p == driver.Drain && ob.settler != nil {
		ob.host.early(p)
	}
	select {
	case ob.edges <- edgeAt{p, at, epoch}:
	default: // only two edges ever come
	}
}

// edge takes the snapshots of one edge of the window: what costs nothing
// first, then the OS (unless Phase took it), then the database, which may
// be slow to answer.
func (ob *Observer) edge(ctx context.Context, p int, m *moment) {
	for _, s := range ob.sources() {
		if mk, ok := s.(marker); ok {
			mk.mark(p)
		}
	}
	for _, s := range ob.sources() {
		s.edge(ctx, p, m)
	}
}

// Finish stops the collectors and adds what they saw to r. The window's
// end snapshot gets the statement timeout from the window's end to
// arrive (an interrupted run's, interruptWait); a server that has not
// answered by then leaves the profile at its last reading.
func (ob *Observer) Finish(r *result.Run) error {
	wait := time.Until(r.MeasureEnd.Add(ob.timeout))
	if r.Partial && r.PartialReason == "interrupted" {
		wait = min(wait, interruptWait)
	}
	ob.stopEdges(wait)
	ob.Close()
	r.Disclosure = ob.disclosure()
	if ob.database == nil {
		return nil // collectors off
	}
	r.Warnings = append(r.Warnings, ob.warnings...)
	for _, s := range ob.sources() {
		s.finish(r)
	}
	r.DBSeries = ob.series.Points()
	// The sessions' flushes are the collectors' too: the server counts
	// them as transactions, which the collectors take out.
	r.CollectorStatements = ob.statements + ob.settler.flushes()
	if ob.testsIO {
		r.IO = r.ComputeIOUnits()
	}
	for _, kind := range slices.Sorted(maps.Keys(ob.errs)) {
		e := ob.errs[kind]
		times := ""
		if e.n > 1 {
			times = fmt.Sprintf(" (%d times)", e.n)
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("collector (%s): %s%s", kind, e.first, times))
	}
	return nil
}

// disclosure is the platform, in every result, collectors on or off:
// the database host as its source saw it and, when that is not this
// host, the driver's host.
func (ob *Observer) disclosure() *result.Disclosure {
	d := &result.Disclosure{Database: ob.database}
	switch {
	case ob.host != nil && ob.host.name != "":
		d.Host, d.HostSource, d.Storage = ob.host.info, ob.host.name, ob.host.storage
	case ob.t.OnThisHost() || ob.t.Managed:
		// Collectors off: this host's facts cost nothing.
		d.Host, d.HostSource = disclose.Host(disclose.Options{}), dbhost.Local
		d.Storage = disclose.Storage(disclose.Options{}, ob.t.DataDir)
	default:
		d.HostSource = dbhost.None
	}
	if d.HostSource != dbhost.Local {
		h := disclose.Host(disclose.Options{})
		d.DriverHost = &h
	}
	return d
}

// interruptWait bounds how long an interrupted run waits for its
// window's end snapshot: Ctrl-C on a frozen server would otherwise wait
// for a reading in flight until its statement timeout (a run so
// interrupted ended 2 s after Ctrl-C, 1.9 s of it this wait). Readings
// on a host saturated by CPU hogs and synchronous writers came back
// within 0.14 s.
const interruptWait = time.Second

// stopEdges waits for the window's edge snapshots, at most wait; then the
// collectors' statements are cancelled and the edges taken as they are.
func (ob *Observer) stopEdges(wait time.Duration) {
	if ob.edges == nil {
		return
	}
	close(ob.edges)
	ob.edges = nil
	select {
	case <-ob.edgesDone:
	case <-time.After(wait):
		ob.cancel()
		<-ob.edgesDone
	}
}

// Close stops the collectors and closes their connections; Finish calls
// it, and calling it again does nothing.
func (ob *Observer) Close() {
	ob.stopEdges(0)
	if ob.unwatch != nil {
		ob.unwatch()
	}
	if ob.cancel != nil {
		ob.cancel()
		ob.done.Wait()
		ob.cancel = nil
	}
	for _, c := range ob.conns {
		ob.statements += c.Statements()
		c.Close()
	}
	ob.conns = nil
	if ob.host != nil {
		ob.host.close()
	}
}
