package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/collect/counters"
	"github.com/dbparity/dbparity/internal/collect/dbhost"
	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/mystat"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/collect/pgstat"
	"github.com/dbparity/dbparity/internal/collect/sqlitestat"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/target"
)

// observer runs the collectors of one run beside the driver: database
// counters every interval and at the edges of the measured window, wait
// sampling, and the disclosure and preflight before the run. Collectors
// have their own connections, never the sessions', and every statement
// they send has the run's statement timeout, so a server that freezes
// costs them a gap, never the run its end. The window's edges are taken
// on a goroutine of their own: the driver's monitor, which ends the run,
// never waits for a database.
type observer struct {
	t        *opened
	testsIO  bool // the workload tests IO: the result gets IO units
	interval time.Duration
	timeout  time.Duration // each collector statement's deadline
	start    time.Time     // the run's start, for the series' time axis
	journal  *result.Journal

	// pgMu guards the statistics connection and what follows.
	pgMu  sync.Mutex
	stats statsReader
	// commitKey is the commit counter, from which the collectors' own
	// transactions are taken ("" when the engine does not count them).
	commitKey string
	prev      *pgstat.Snapshot // the series' last reading
	ownPrev   int64
	winStart  *pgstat.Snapshot
	winEnd    *pgstat.Snapshot
	// The window's deltas, summed reading by reading so that a server
	// restart (its counters reset) costs the interval it fell in, not the
	// window: win is the sum so far, winFrom the reading it reaches, and
	// winLost the seconds of the window left out.
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
	engStart              map[string]float64 // SQLite engine counters at the window's edges
	engEnd                map[string]float64
	engPrev               map[string]float64 // and at the last tick
	engPrevAt             time.Time
	// The series are bounded (the journal has every point).
	series *metrics.Bounded[result.DBInterval]

	// osMu guards the OS collectors: the database host's through its
	// source (host, nil when it cannot be seen), and this host's for the
	// driver's figures (drv) when that is another host.
	osMu           sync.Mutex
	host           dbhost.Source
	hostName       string // host's name, or "none"
	hostLocal      bool   // host is this host: no separate driver reading
	hostConn       *collectorConn
	osPrev         *ostat.Snapshot
	osRunStart     *ostat.Snapshot
	osStart, osEnd *ostat.Snapshot
	osSeries       *metrics.Bounded[ostat.Rates]
	drv            *ostat.Reader
	drvStart       *ostat.Snapshot
	drvEnd         *ostat.Snapshot
	warmupOtherCPU float64 // cores used by neither driver nor server during the warm-up
	warmupMeasured bool
	// The database host's disclosure, taken at the start, and its data
	// directory (a path on that host).
	hostInfo disclose.HostInfo
	storage  *disclose.StorageInfo
	dataDir  string

	errMu sync.Mutex
	errs  map[string]*collectorError

	sampler    *counters.Sampler
	conns      []*collectorConn
	cancel     context.CancelFunc
	unwatch    func() bool // ends the watch on the run's context (one per repetition otherwise)
	done       sync.WaitGroup
	edges      chan int // phases whose edge snapshot is due
	edgesDone  chan struct{}
	database   *result.Database
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

// CollectOptions set what is collected during a run.
type CollectOptions struct {
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

// collectorStopGrace is how long the collectors' last readings may take
// after the user interrupted the run.
const collectorStopGrace = 2 * time.Second

func observe(ctx context.Context, t *opened, o CollectOptions, testsIO bool, journal *result.Journal) (*observer, error) {
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = 30 * time.Second
	}
	ob := &observer{t: t, testsIO: testsIO, interval: o.Interval, timeout: o.StatementTimeout, start: time.Now(),
		journal: journal, errs: map[string]*collectorError{},
		series: result.NewDBSeries(o.SeriesPoints), osSeries: result.NewOSSeries(o.SeriesPoints)}
	if o.Off {
		return ob, nil
	}
	// The collectors' statements end when the run ends, or shortly after
	// the user interrupts it: their last readings get a moment, no more.
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ob.cancel = cancel
	ob.unwatch = context.AfterFunc(ctx, func() { time.AfterFunc(collectorStopGrace, cancel) })
	switch t.Dialect {
	case target.Postgres:
		if err := ob.startPostgres(bg, o); err != nil {
			ob.close()
			return nil, err
		}
	case target.MySQL:
		if err := ob.startMySQL(bg, o); err != nil {
			ob.close()
			return nil, err
		}
	case target.SQLite:
		ob.engPrev, ob.engPrevAt = t.EngineCounters(), time.Now()
		c, err := t.Connect(ctx)
		if err != nil {
			ob.close()
			return nil, err
		}
		defer c.Close()
		if ob.database, err = sqlitestat.Describe(ctx, c, t.Path); err != nil {
			ob.close()
			return nil, err
		}
	}
	if err := ob.startHost(bg, o); err != nil {
		ob.close()
		return nil, err
	}
	ob.run(bg)
	return ob, nil
}

// startHost chooses how the database host is observed, discloses it and
// takes the first reading; the driver's host gets its own reader when it
// is another host.
func (ob *observer) startHost(ctx context.Context, o CollectOptions) error {
	pid := o.DBPID
	if pid == 0 && ob.t.managed != nil {
		pid = ob.t.managed.PID
	}
	ob.dataDir = ob.t.localDataDir()
	var pg *collectorConn
	if ob.t.Dialect == target.Postgres {
		// A connection of its own: the sql source reads through it for
		// the whole run; otherwise it only asks where the server is.
		var err error
		if pg, err = dialCollector(ctx, ob.t, collectorApp, ob.timeout); err != nil {
			return err
		}
		if pid == 0 && ob.t.OnThisHost() {
			pid = localServerPID(ctx, pg)
		}
		if ob.dataDir == "" {
			ob.dataDir = serverDataDir(ctx, pg)
		}
	}
	if ob.t.Dialect == target.MySQL && pid == 0 && ob.t.OnThisHost() {
		if c, err := dialCollector(ctx, ob.t, collectorApp, ob.timeout); err == nil {
			pid = localMySQLPID(ctx, c)
			ob.statements += c.Statements()
			c.Close()
		}
	}
	hc, err := chooseHost(ctx, ob.t, o, pg, pid)
	if pg != nil {
		if hc.keepConn {
			ob.hostConn = pg
			ob.conns = append(ob.conns, pg)
		} else {
			ob.statements += pg.Statements()
			pg.Close()
		}
	}
	if err != nil {
		return err
	}
	ob.host, ob.hostName, ob.hostLocal = hc.src, hc.name, hc.local
	if hc.warning != "" {
		ob.warnings = append(ob.warnings, hc.warning)
	}
	if !hc.local {
		if ob.drv, err = ostat.New(ostat.Options{}); err != nil {
			return fmt.Errorf("os collector: %w", err)
		}
	}
	if ob.host == nil {
		return nil
	}
	hctx, cancel := context.WithTimeout(ctx, ob.timeout)
	defer cancel()
	ob.hostInfo, ob.storage = ob.host.Disclose(hctx, ob.dataDir)
	s, err := ob.host.Read(hctx)
	if err != nil {
		return fmt.Errorf("os collector (%s): %w", ob.hostName, err)
	}
	ob.osPrev, ob.osRunStart = s, s
	return nil
}

// collectorApp is the application_name of the collectors' connections.
const collectorApp = "dbparity-collector"

func (ob *observer) startPostgres(ctx context.Context, o CollectOptions) error {
	c, err := dialCollector(ctx, ob.t, collectorApp, ob.timeout)
	if err != nil {
		return err
	}
	ob.conns = append(ob.conns, c)
	pg, err := pgstat.NewReader(ctx, c)
	if err != nil {
		return err
	}
	ob.stats, ob.commitKey = pg, "pg_stat_database.xact_commit"
	if ob.warnings, err = pgstat.Preflight(ctx, c); err != nil {
		return err
	}
	// Describe inside the reader's transaction: its queries are not counted.
	if ob.database, err = pgstat.Describe(ctx, c, pg.Missing); err != nil {
		return err
	}
	sc, err := dialCollector(ctx, ob.t, collectorApp, ob.timeout)
	if err != nil {
		return err
	}
	ob.conns = append(ob.conns, sc)
	ob.sampler = pgstat.NewSampler(sc, o.WaitInterval, collectorApp)
	if ob.prev, err = ob.stats.Read(ctx); err != nil {
		return err
	}
	ob.ownPrev = ob.own()
	return nil
}

// startMySQL starts MySQL's and MariaDB's collectors: SHOW GLOBAL STATUS
// and performance_schema on one connection, the process list sampled on
// another. MySQL counts COMMIT statements, and the collectors send none:
// no correction.
func (ob *observer) startMySQL(ctx context.Context, o CollectOptions) error {
	c, err := dialCollector(ctx, ob.t, collectorApp, ob.timeout)
	if err != nil {
		return err
	}
	ob.conns = append(ob.conns, c)
	my, err := mystat.NewReader(ctx, c)
	if err != nil {
		return err
	}
	ob.stats = my
	if ob.warnings, err = mystat.Preflight(ctx, c, my.PerfSchema); err != nil {
		return err
	}
	if ob.database, err = mystat.Describe(ctx, c); err != nil {
		return err
	}
	sc, err := dialCollector(ctx, ob.t, collectorApp, ob.timeout)
	if err != nil {
		return err
	}
	ob.conns = append(ob.conns, sc)
	ob.sampler = mystat.NewSampler(sc, o.WaitInterval)
	if ob.prev, err = ob.stats.Read(ctx); err != nil {
		return err
	}
	ob.ownPrev = ob.own()
	return nil
}

// statsReader reads an engine's cumulative counters (pgstat, mystat).
type statsReader interface {
	Read(ctx context.Context) (*counters.Snapshot, error)
	// Reads is how many readings were taken.
	Reads() int64
}

// own counts the collectors' transactions so far; call with pgMu held.
func (ob *observer) own() int64 {
	n := ob.stats.Reads()
	if ob.sampler != nil {
		n += ob.sampler.Transactions()
	}
	if ob.hostConn != nil {
		n += ob.hostConn.Statements() // one transaction each
	}
	return n
}

// fail records a collector's failure under its kind.
func (ob *observer) fail(kind string, err error) {
	ob.errMu.Lock()
	defer ob.errMu.Unlock()
	if e, ok := ob.errs[kind]; ok {
		e.n++
		return
	}
	ob.errs[kind] = &collectorError{first: err.Error(), n: 1}
}

// run starts the sampler, the interval ticker and the edge taker.
func (ob *observer) run(ctx context.Context) {
	if ob.sampler != nil {
		ob.done.Add(1)
		go func() { defer ob.done.Done(); ob.sampler.Run(ctx) }()
	}
	ob.done.Add(1)
	go func() { defer ob.done.Done(); ob.tick(ctx) }()
	ob.edges, ob.edgesDone = make(chan int, 2), make(chan struct{})
	go func() {
		defer close(ob.edgesDone)
		for p := range ob.edges {
			ob.edge(ctx, p)
		}
	}()
}

// tick reads the counters every interval for the series. A reading that
// fails leaves a gap; the next one tries again (the connection reopens).
func (ob *observer) tick(ctx context.Context) {
	t := time.NewTicker(ob.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ob.tickDB(ctx, ob.tickOS(ctx))
		}
	}
}

// tickOS reads the database host for the series and returns the reading
// (nil when there is none).
func (ob *observer) tickOS(ctx context.Context) *ostat.Snapshot {
	ob.osMu.Lock()
	defer ob.osMu.Unlock()
	s := ob.readHost(ctx, "os")
	if s == nil {
		return nil
	}
	r := busyOnly(ostat.Between(ob.osPrev, s))
	ob.osSeries.Add(r)
	ob.osPrev = s
	ob.record(result.JournalEntry{OS: &r})
	return s
}

// tickDB reads the database's counters for the series and the window;
// os is the database host's reading of the same tick.
func (ob *observer) tickDB(ctx context.Context, os *ostat.Snapshot) {
	ob.pgMu.Lock()
	defer ob.pgMu.Unlock()
	if eng := ob.t.EngineCounters(); eng != nil {
		now := time.Now()
		iv := dbInterval(deltas(ob.engPrev, eng), ob.engPrevAt, now, ob.start)
		wal := float64(sqlitestat.WALBytes(ob.t.Path))
		iv.WALFile = &wal
		ob.series.Add(iv)
		ob.engPrev, ob.engPrevAt = eng, now
		ob.record(result.JournalEntry{DB: &iv})
	}
	if ob.stats == nil {
		return
	}
	s, err := ob.stats.Read(ctx)
	if err != nil {
		if ctx.Err() == nil {
			ob.fail("database", err)
		}
		return
	}
	own := ob.own()
	if ob.prev != nil && !reset(ob.prev, s) {
		d := pgstat.Delta(ob.prev, s)
		// The database counted the collectors' readings and samples as
		// transactions; they are not the workload's. A backend publishes
		// its counts up to a second late, so an interval may not hold the
		// collectors' yet: never below zero.
		if ob.commitKey != "" {
			d[ob.commitKey] = max(d[ob.commitKey]-float64(own-ob.ownPrev), 0)
		}
		iv := dbInterval(d, ob.prev.At, s.At, ob.start)
		ob.series.Add(iv)
		ob.record(result.JournalEntry{DB: &iv})
	}
	ob.prev, ob.ownPrev = s, own
	ob.advance(s, own, os)
}

// record journals a collector's point; the journal's error, if any, ends
// the run through the driver's next tick.
func (ob *observer) record(e result.JournalEntry) {
	if ob.journal != nil {
		ob.journal.Append(e)
	}
}

// reset tells whether the server's counters went back between two
// readings: it restarted after a crash (or someone reset them).
func reset(a, b *pgstat.Snapshot) bool {
	for _, k := range []string{"pg_stat_database.xact_commit", "pg_stat_database.blks_hit", "pg_stat_wal.wal_bytes",
		"status.Questions", "status.Innodb_buffer_pool_read_requests"} {
		x, okA := a.Counters[k]
		y, okB := b.Counters[k]
		if okA && okB && y < x {
			return true
		}
	}
	return false
}

// advance adds the reading s to the window's deltas when the window is
// open; os is the database host's reading taken with it. Call with pgMu
// held.
func (ob *observer) advance(s *pgstat.Snapshot, own int64, os *ostat.Snapshot) {
	switch {
	case ob.winOpen.IsZero() || ob.winEnd != nil:
		return
	case ob.winFrom == nil:
		// The server did not answer at the window's start.
		ob.winFrom, ob.winOwn, ob.winLost = s, own, s.At.Sub(ob.winOpen).Seconds()
		ob.winStartOS, ob.winFromOS = os, os
		return
	case reset(ob.winFrom, s):
		// What happened between the last reading and the restart is lost
		// with the old counters.
		ob.winLost += s.At.Sub(ob.winFrom.At).Seconds()
		ob.restarts++
	default:
		for k, v := range pgstat.Delta(ob.winFrom, s) {
			ob.win[k] += v
		}
		if ob.commitKey != "" {
			ob.win[ob.commitKey] -= float64(own - ob.winOwn)
		}
	}
	ob.winFrom, ob.winOwn, ob.winFromOS = s, own, os
}

// dbInterval turns the deltas of one interval into rates; sum adds the
// deltas of keys, and is absent when any key is.
func dbInterval(d map[string]float64, from, to, start time.Time) result.DBInterval {
	secs := to.Sub(from).Seconds()
	iv := result.DBInterval{At: to.Sub(start).Seconds(), Seconds: secs}
	if secs <= 0 {
		return iv
	}
	rate := func(scale float64, keys ...string) *float64 {
		var v float64
		for _, k := range keys {
			x, ok := d[k]
			if !ok {
				return nil
			}
			v += x
		}
		v = v * scale / secs
		return &v
	}
	// Each figure from the engine's counters: PostgreSQL's, SQLite's or
	// MySQL's, whichever the deltas hold.
	first := func(vs ...*float64) *float64 {
		for _, v := range vs {
			if v != nil {
				return v
			}
		}
		return nil
	}
	iv.Commits = first(rate(1, "pg_stat_database.xact_commit"), rate(1, "status.Com_commit"))
	iv.Rollbacks = first(rate(1, "pg_stat_database.xact_rollback"), rate(1, "status.Com_rollback"))
	iv.LogicalRead = first(rate(1, "pg_stat_database.blks_hit", "pg_stat_database.blks_read"),
		rate(1, "sqlite.cache_hit", "sqlite.cache_miss"), rate(1, "status.Innodb_buffer_pool_read_requests"))
	iv.Reads = first(rate(1, "pg_stat_database.blks_read"), rate(1, "sqlite.cache_miss"), rate(1, "status.Innodb_buffer_pool_reads"))
	iv.Writes = first(rate(1, "sqlite.cache_write"), rate(1, "status.Innodb_buffer_pool_pages_flushed"))
	iv.RowsChanged = first(rate(1, "pg_stat_database.tup_inserted", "pg_stat_database.tup_updated", "pg_stat_database.tup_deleted"),
		rate(1, "status.Innodb_rows_inserted", "status.Innodb_rows_updated", "status.Innodb_rows_deleted"))
	iv.WALBytes = first(rate(1, "pg_stat_wal.wal_bytes"), rate(1, "status.Innodb_os_log_written"))
	iv.ActiveTime = first(rate(0.001, "pg_stat_database.active_time"), rate(1e-12, mystat.KeyStatementTime))
	return iv
}

func deltas(a, b map[string]float64) map[string]float64 {
	d := make(map[string]float64, len(b))
	for k, v := range b {
		if x, ok := a[k]; ok {
			d[k] = v - x
		}
	}
	return d
}

// phase is the driver's call at the window's edges: it must not block,
// so the snapshots are taken on the edge goroutine, in order.
func (ob *observer) phase(p int, _ time.Time) {
	if ob.edges == nil {
		return
	}
	select {
	case ob.edges <- p:
	default: // only two edges ever come
	}
}

// readHost reads the database host; call with osMu held. A local
// source that fails is not tried again (this host's /proc does not come
// back); a remote one is, as the server or the exporter may.
func (ob *observer) readHost(ctx context.Context, kind string) *ostat.Snapshot {
	if ob.host == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, ob.timeout)
	defer cancel()
	s, err := ob.host.Read(rctx)
	if err != nil {
		if ctx.Err() == nil {
			ob.fail(kind+" ("+ob.hostName+")", err)
		}
		if ob.hostLocal {
			ob.host = nil
		}
		return nil
	}
	return s
}

// readOS takes the OS snapshots at a window edge: the driver's host
// first (local, at once), then the database host into dst.
func (ob *observer) readOS(ctx context.Context, dst, drv **ostat.Snapshot) *ostat.Snapshot {
	ob.osMu.Lock()
	defer ob.osMu.Unlock()
	if ob.drv != nil {
		s, err := ob.drv.Read()
		if err != nil {
			ob.fail("os (driver host)", err)
		} else {
			*drv = s
		}
	}
	s := ob.readHost(ctx, "os")
	if s != nil {
		*dst = s
	}
	return s
}

// edge takes the snapshots of one edge of the window: the OS first (local,
// at once), then the database, which may be slow to answer.
func (ob *observer) edge(ctx context.Context, p int) {
	switch p {
	case driver.Measure:
		if ob.sampler != nil {
			ob.sampler.Count(true)
		}
		ob.engStart = ob.t.EngineCounters()
		os := ob.readOS(ctx, &ob.osStart, &ob.drvStart)
		if os != nil && os.At.Sub(ob.osRunStart.At) > ob.interval/2 {
			ob.warmupOtherCPU = ostat.Between(ob.osRunStart, os).OtherCPUCores
			ob.warmupMeasured = true
		}
		ob.pgMu.Lock()
		defer ob.pgMu.Unlock()
		ob.winOpen, ob.win = time.Now(), map[string]float64{}
		if ob.stats == nil {
			return
		}
		s, err := ob.stats.Read(ctx)
		if err != nil {
			ob.fail("database (window start)", err)
			return
		}
		ob.winStart, ob.winFrom, ob.winOwn = s, s, ob.own()
		ob.winStartOS, ob.winFromOS = os, os
	case driver.Drain:
		if ob.sampler != nil {
			ob.sampler.Count(false)
		}
		ob.engEnd = ob.t.EngineCounters()
		os := ob.readOS(ctx, &ob.osEnd, &ob.drvEnd)
		ob.pgMu.Lock()
		defer ob.pgMu.Unlock()
		if ob.stats == nil {
			return
		}
		s, err := ob.stats.Read(ctx)
		if err != nil {
			ob.fail("database (window end)", err)
		} else {
			ob.advance(s, ob.own(), os)
		}
		// The window's counters end at its last reading; when that is not
		// the edge (the server did not answer), the rest of the window is
		// left out (finish counts it from the window's end: the time this
		// reading waited past the end is no part of the window).
		ob.winEnd = ob.winFrom
	}
}

// busyOnly drops the devices and interfaces that did nothing in an
// interval: the series is kept for hours, and idle rows are most of it.
func busyOnly(r ostat.Rates) ostat.Rates {
	disks := r.Disks[:0:0]
	for _, d := range r.Disks {
		if d.ReadsPerS+d.WritesPerS > 0 {
			disks = append(disks, d)
		}
	}
	nets := r.Nets[:0:0]
	for _, n := range r.Nets {
		if n.RxPacketsPerS+n.TxPacketsPerS > 0 {
			nets = append(nets, n)
		}
	}
	r.Disks, r.Nets = disks, nets
	return r
}

// osWindow fills r.OS and r.DriverOS and returns the OS figures the load
// profile uses (totals over the window, on the database host).
func (ob *observer) osWindow(r *result.Run) map[string]float64 {
	if ob.drvStart != nil && ob.drvEnd != nil {
		r.DriverOS = &result.OS{Source: dbhost.Local, Window: ostat.Between(ob.drvStart, ob.drvEnd)}
	}
	if ob.osStart == nil || ob.osEnd == nil {
		return nil
	}
	w := ostat.Between(ob.osStart, ob.osEnd)
	r.OS = &result.OS{Source: ob.hostName, Window: w, Series: ob.osSeries.Points()}
	if st := r.Disclosure.Storage; st != nil && st.Device != nil {
		r.OS.DataDevice = st.Device.Name
		if st.Device.Parent != "" {
			r.OS.DataDevice = st.Device.Parent
		}
	}
	return osTotals(w, r.OS.DataDevice)
}

// osTotals are the OS figures of w the load profile uses, as totals:
// the server's CPU and the IO of the device under the data (dataDevice;
// "" when unknown).
func osTotals(w ostat.Rates, dataDevice string) map[string]float64 {
	d := map[string]float64{}
	secs := w.IntervalS
	if w.ServerCPUCores != nil {
		d[pgstat.ExtraServerCPU] = *w.ServerCPUCores * secs
	}
	found := false
	for _, disk := range w.Disks {
		// The device under the data when known; else every disk that is
		// not a device-mapper or md device (those would count the same IO
		// twice, once on the disk under them).
		if dataDevice != "" && disk.Name != dataDevice {
			continue
		}
		if dataDevice == "" && (strings.HasPrefix(disk.Name, "dm-") || strings.HasPrefix(disk.Name, "md")) {
			continue
		}
		found = true
		d[pgstat.ExtraDevReads] += disk.ReadsPerS * secs
		d[pgstat.ExtraDevWrites] += disk.WritesPerS * secs
		d[pgstat.ExtraDevReadMB] += disk.ReadMBPerS * secs
		d[pgstat.ExtraDevWriteMB] += disk.WriteMBPerS * secs
	}
	if !found {
		for _, k := range []string{pgstat.ExtraDevReads, pgstat.ExtraDevWrites, pgstat.ExtraDevReadMB, pgstat.ExtraDevWriteMB} {
			delete(d, k)
		}
	}
	return d
}

// finish stops the collectors and adds what they saw to r. The window's
// end snapshot gets the statement timeout from the window's end to
// arrive; a server that has not answered by then leaves the profile at its
// last reading.
func (ob *observer) finish(r *result.Run) error {
	ob.stopEdges(time.Until(r.MeasureEnd.Add(ob.timeout)))
	ob.close()
	r.Disclosure = ob.disclosure()
	if ob.database == nil {
		return nil // collectors off
	}
	r.Warnings = append(r.Warnings, ob.warnings...)
	if ob.warmupMeasured && ob.warmupOtherCPU > 0.1 {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"other processes used %.2f cores during the warm-up (neither dbparity nor the database): they compete with the workload", ob.warmupOtherCPU))
	}
	secs := r.MeasureEnd.Sub(r.MeasureStart).Seconds()
	s := r.Summarize()
	osd := ob.osWindow(r)
	switch {
	case ob.winEnd != nil:
		start := ob.winStart
		if start == nil {
			start = &pgstat.Snapshot{}
		}
		r.DBCounters = &result.Counters{Start: start.Counters, End: ob.winEnd.Counters}
		d := maps.Clone(ob.win)
		if v, ok := d[ob.commitKey]; ok && ob.commitKey != "" && v < 0 {
			// The collectors' own commits outnumber what the server has
			// counted: backends report their counts up to a second late,
			// and a short window ends before they do. Unknown, not negative.
			delete(d, ob.commitKey)
			r.Warnings = append(r.Warnings, fmt.Sprintf("the server had not yet counted the window's transactions when it ended "+
				"(it counts them up to a second late): the load profile's transactions are n/a for this %.1f s window", secs))
		}
		// The database's counters cover the window from its first reading
		// to its last: the time it did not answer at either end, or lost
		// to a restart, is left out, and every figure of the profile is
		// taken over the same time, so that no rate is inflated.
		lost := ob.winLost + max(r.MeasureEnd.Sub(ob.winEnd.At).Seconds(), 0)
		covered := secs
		if lost > 0.05*secs || ob.restarts > 0 {
			covered = max(secs-lost, 0)
		}
		switch {
		case covered == secs:
			maps.Copy(d, osd)
		case ob.restarts == 0 && ob.winStartOS != nil && ob.winFromOS != nil && r.OS != nil:
			// The database host read with the database's first and last
			// readings.
			maps.Copy(d, osTotals(ostat.Between(ob.winStartOS, ob.winFromOS), r.OS.DataDevice))
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
		if ob.sampler != nil {
			d[pgstat.ExtraASHDBTime], d[pgstat.ExtraASHCPU] = ob.sampler.DBTime(covered)
		}
		if !strings.HasPrefix(ob.database.Settings["track_io_timing"], "on") {
			// Off, the timings stay zero: not a measurement of zero.
			delete(d, "pg_stat_database.blk_read_time")
			delete(d, "pg_stat_database.blk_write_time")
		}
		if covered < secs {
			what := "the database did not answer for part of the window"
			if ob.restarts > 0 {
				what = fmt.Sprintf("the server restarted %d time(s) during the window and its counters were reset", ob.restarts)
			}
			r.Warnings = append(r.Warnings, fmt.Sprintf(
				"%s: the database profiles cover %.1f s of the %.1f s window (the time the server was up and answering)", what, covered, secs))
		}
		var lp, io result.Profile
		if ob.t.Dialect == target.MySQL {
			src := ob.database.Product + " " + ob.database.Version
			lp, io = mystat.LoadProfile(src, d, covered), mystat.IOProfile(src, d, covered)
			r.TimedWaits = mystat.TopWaits(d, 10)
		} else {
			src := "postgres " + ob.database.Version
			lp, io = pgstat.LoadProfile(src, d, covered), pgstat.IOProfile(src, d, covered, float64(ob.database.BlockSize))
			r.IOByBackend = pgstat.IOByBackend(d, covered)
		}
		if covered < secs {
			lp.Note = fmt.Sprintf("covers %.1f s of the %.1f s window", covered, secs)
			io.Note = lp.Note
		}
		if ob.t.Dialect != target.MySQL && ob.database.VersionNum > 0 && covered < 60 {
			// A busy backend's counters reach the views late: before 15
			// through the statistics collector, up to 500 ms
			// (PGSTAT_STAT_INTERVAL); from 15 it flushes them at most
			// once a second (PGSTAT_MIN_INTERVAL). Each edge of a short
			// window can miss that much.
			late, how := 1.0, "flushed at most once a second"
			if ob.database.VersionNum < 150000 {
				late, how = 0.5, "the statistics collector"
			}
			lag := fmt.Sprintf("PostgreSQL %s publishes a busy session's counters up to %g s late (%s): over %.0f s, up to %.0f%% off",
				ob.database.Version, late, how, covered, 100*late/covered)
			lp.Note = strings.TrimPrefix(lp.Note+"; "+lag, "; ")
			io.Note = lp.Note
		}
		r.LoadProfile, r.IOProfile = &lp, &io
	case ob.engStart != nil && ob.engEnd != nil:
		r.DBCounters = &result.Counters{Start: ob.engStart, End: ob.engEnd}
		d := deltas(ob.engStart, ob.engEnd)
		lp := sqlitestat.LoadProfile(ob.database.Version, d, secs, float64(s.Commits+s.Rollbacks), float64(s.Rollbacks),
			float64(r.Statements), r.Driver.CPUUserS+r.Driver.CPUSysS)
		r.LoadProfile = &lp
		ob.database.DataBytes = sqlitestat.FileBytes(ob.t.Path)
		ob.database.Settings["wal_file_bytes"] = fmt.Sprint(sqlitestat.WALBytes(ob.t.Path))
	case ob.stats != nil:
		r.Warnings = append(r.Warnings, "the database did not answer during the measured window: no load or IO profile")
	}
	if ob.sampler != nil {
		w, err := ob.sampler.Result()
		r.Waits = w
		if err != nil {
			ob.fail("waits", err)
		}
		if n := ob.sampler.Missed(); n > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf(
				"%d wait samples of the window failed (the database did not answer): the waits describe the rest", n))
		}
	}
	r.DBSeries = ob.series.Points()
	r.CollectorStatements = ob.statements
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
func (ob *observer) disclosure() *result.Disclosure {
	d := &result.Disclosure{Database: ob.database}
	switch {
	case ob.hostName != "":
		d.Host, d.HostSource, d.Storage = ob.hostInfo, ob.hostName, ob.storage
	case ob.t.OnThisHost() || ob.t.managed != nil:
		// Collectors off: this host's facts cost nothing.
		d.Host, d.HostSource = disclose.Host(disclose.Options{}), dbhost.Local
		d.Storage = disclose.Storage(disclose.Options{}, ob.t.localDataDir())
	default:
		d.HostSource = dbhost.None
	}
	if d.HostSource != dbhost.Local {
		h := disclose.Host(disclose.Options{})
		d.DriverHost = &h
	}
	return d
}

// stopEdges waits for the window's edge snapshots, at most wait; then the
// collectors' statements are cancelled and the edges taken as they are.
func (ob *observer) stopEdges(wait time.Duration) {
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

func (ob *observer) close() {
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
	ob.osMu.Lock()
	if ob.host != nil {
		ob.host.Close()
		ob.host = nil
	}
	ob.osMu.Unlock()
}
