package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/collect/pgstat"
	"github.com/dbparity/dbparity/internal/collect/sqlitestat"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/target"
)

// observer runs the collectors of one run beside the driver: database
// counters every interval and at the edges of the measured window, wait
// sampling, and the disclosure and preflight before the run. Collectors
// have their own connections, never the sessions'.
type observer struct {
	t        *opened
	testsIO  bool // the workload tests IO: the result gets IO units
	interval time.Duration
	start    time.Time // the run's start, for the series' time axis

	mu        sync.Mutex // guards the statistics connection and what follows
	pg        *pgstat.Reader
	prev      *pgstat.Snapshot
	winStart  *pgstat.Snapshot
	winEnd    *pgstat.Snapshot
	engStart  map[string]float64 // SQLite engine counters at the window's edges
	engEnd    map[string]float64
	engPrev   map[string]float64 // and at the last tick
	engPrevAt time.Time
	// The collectors' own transactions (each reading and each sample is
	// one), at the last tick and at the window's edges, to take them out of
	// the database's counts.
	ownPrev, ownStart, ownEnd int64
	series                    []result.DBInterval
	errs                      []error

	os             *ostat.Reader
	osPrev         *ostat.Snapshot
	osRunStart     *ostat.Snapshot
	osStart, osEnd *ostat.Snapshot
	osSeries       []ostat.Rates
	warmupOtherCPU float64 // cores used by neither driver nor server during the warm-up
	warmupMeasured bool

	sampler    *pgstat.Sampler
	conns      []target.Conn
	cancel     context.CancelFunc
	done       sync.WaitGroup
	database   *result.Database
	warnings   []string
	statements int64 // sent by the collectors' connections
}

// CollectOptions set what is collected during a run.
type CollectOptions struct {
	Off          bool          // --no-collect: no collectors (to measure their overhead)
	Interval     time.Duration // --interval: counters and the OS every interval
	WaitInterval time.Duration // --wait-interval: session state sampling
	DBPID        int           // --db-pid: the server's main process, when it runs on this host
}

func observe(ctx context.Context, t *opened, o CollectOptions, testsIO bool) (*observer, error) {
	ob := &observer{t: t, testsIO: testsIO, interval: o.Interval, start: time.Now()}
	if o.Off {
		return ob, nil
	}
	if o.DBPID == 0 && t.managed != nil {
		o.DBPID = t.managed.PID
	}
	var err error
	if ob.os, err = ostat.New(ostat.Options{ServerPID: o.DBPID}); err != nil {
		return nil, UsageError{fmt.Errorf("os collector: %w (check --db-pid)", err)}
	}
	if ob.osPrev, err = ob.os.Read(); err != nil {
		return nil, fmt.Errorf("os collector: %w", err)
	}
	ob.osRunStart = ob.osPrev
	switch t.Dialect {
	case target.Postgres:
		if err := ob.startPostgres(ctx, o); err != nil {
			ob.close()
			return nil, err
		}
	case target.SQLite:
		ob.engPrev, ob.engPrevAt = t.EngineCounters(), time.Now()
		c, err := t.Connect(ctx)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		if ob.database, err = sqlitestat.Describe(ctx, c, t.Path); err != nil {
			return nil, err
		}
	}
	ob.run(ctx)
	return ob, nil
}

// collectorApp is the application_name of the collectors' connections.
const collectorApp = "dbparity-collector"

func (ob *observer) startPostgres(ctx context.Context, o CollectOptions) error {
	c, err := ob.t.ConnectCollector(ctx, collectorApp)
	if err != nil {
		return err
	}
	ob.conns = append(ob.conns, c)
	if ob.pg, err = pgstat.NewReader(ctx, c); err != nil {
		return err
	}
	if ob.warnings, err = pgstat.Preflight(ctx, c); err != nil {
		return err
	}
	// Describe inside the reader's transaction: its queries are not counted.
	if ob.database, err = pgstat.Describe(ctx, c, ob.pg.Missing); err != nil {
		return err
	}
	sc, err := ob.t.ConnectCollector(ctx, collectorApp)
	if err != nil {
		return err
	}
	ob.conns = append(ob.conns, sc)
	ob.sampler = pgstat.NewSampler(sc, o.WaitInterval, collectorApp)
	if ob.prev, err = ob.pg.Read(ctx); err != nil {
		return err
	}
	ob.ownPrev = ob.own()
	return nil
}

// own counts the collectors' transactions so far; call with mu held.
func (ob *observer) own() int64 {
	n := ob.pg.Reads()
	if ob.sampler != nil {
		n += ob.sampler.Transactions()
	}
	return n
}

// run starts the sampler and the interval ticker.
func (ob *observer) run(ctx context.Context) {
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ob.cancel = cancel
	if ob.sampler != nil {
		ob.done.Add(1)
		go func() { defer ob.done.Done(); ob.sampler.Run(bg) }()
	}
	ob.done.Add(1)
	go func() { defer ob.done.Done(); ob.tick(bg) }()
}

// tick reads the counters every interval for the series. A collector
// that fails stops; the others go on, and the failure becomes a warning.
func (ob *observer) tick(ctx context.Context) {
	t := time.NewTicker(ob.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ob.mu.Lock()
			if ob.os != nil {
				if s, err := ob.os.Read(); err != nil {
					ob.errs = append(ob.errs, err)
					ob.os = nil
				} else {
					ob.osSeries = append(ob.osSeries, busyOnly(ostat.Between(ob.osPrev, s)))
					ob.osPrev = s
				}
			}
			if eng := ob.t.EngineCounters(); eng != nil {
				now := time.Now()
				iv := dbInterval(deltas(ob.engPrev, eng), ob.engPrevAt, now, ob.start)
				wal := float64(sqlitestat.WALBytes(ob.t.Path))
				iv.WALFile = &wal
				ob.series = append(ob.series, iv)
				ob.engPrev, ob.engPrevAt = eng, now
			}
			if ob.pg != nil && ob.prev != nil {
				if s, err := ob.pg.Read(ctx); err != nil {
					if ctx.Err() == nil {
						ob.errs = append(ob.errs, err)
					}
					ob.prev = nil
				} else {
					d := pgstat.Delta(ob.prev, s)
					own := ob.own()
					d["pg_stat_database.xact_commit"] -= float64(own - ob.ownPrev)
					ob.series = append(ob.series, dbInterval(d, ob.prev.At, s.At, ob.start))
					ob.prev, ob.ownPrev = s, own
				}
			}
			ob.mu.Unlock()
		}
	}
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
	iv.Commits = rate(1, "pg_stat_database.xact_commit")
	iv.Rollbacks = rate(1, "pg_stat_database.xact_rollback")
	iv.LogicalRead = rate(1, "pg_stat_database.blks_hit", "pg_stat_database.blks_read")
	if iv.LogicalRead == nil {
		iv.LogicalRead = rate(1, "sqlite.cache_hit", "sqlite.cache_miss")
	}
	iv.Reads = rate(1, "pg_stat_database.blks_read")
	if iv.Reads == nil {
		iv.Reads = rate(1, "sqlite.cache_miss")
	}
	iv.Writes = rate(1, "sqlite.cache_write")
	iv.RowsChanged = rate(1, "pg_stat_database.tup_inserted", "pg_stat_database.tup_updated", "pg_stat_database.tup_deleted")
	iv.WALBytes = rate(1, "pg_stat_wal.wal_bytes")
	iv.ActiveTime = rate(0.001, "pg_stat_database.active_time")
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

// phase takes the window's snapshots; the driver calls it at the edges.
func (ob *observer) phase(p int, _ time.Time) {
	switch p {
	case driver.Measure:
		if ob.sampler != nil {
			ob.sampler.Count(true)
		}
		ob.snapshot(&ob.winStart, &ob.engStart, &ob.osStart, &ob.ownStart)
		if ob.osStart != nil && ob.osStart.At.Sub(ob.osRunStart.At) > ob.interval/2 {
			ob.warmupOtherCPU = ostat.Between(ob.osRunStart, ob.osStart).OtherCPUCores
			ob.warmupMeasured = true
		}
	case driver.Drain:
		if ob.sampler != nil {
			ob.sampler.Count(false)
		}
		ob.snapshot(&ob.winEnd, &ob.engEnd, &ob.osEnd, &ob.ownEnd)
	}
}

func (ob *observer) snapshot(pg **pgstat.Snapshot, eng *map[string]float64, os **ostat.Snapshot, own *int64) {
	*eng = ob.t.EngineCounters()
	ob.mu.Lock()
	defer ob.mu.Unlock()
	if ob.os != nil {
		s, err := ob.os.Read()
		if err != nil {
			ob.errs = append(ob.errs, err)
		}
		*os = s
	}
	if ob.pg == nil {
		return
	}
	s, err := ob.pg.Read(context.Background())
	if err != nil {
		ob.errs = append(ob.errs, err)
		return
	}
	*pg, *own = s, ob.own()
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

// osWindow fills r.OS and returns the OS figures the load profile uses
// (totals over the window).
func (ob *observer) osWindow(r *result.Run) map[string]float64 {
	if ob.osStart == nil || ob.osEnd == nil {
		return nil
	}
	w := ostat.Between(ob.osStart, ob.osEnd)
	r.OS = &result.OS{Window: w, Series: ob.osSeries}
	if st := r.Disclosure.Storage; st != nil && st.Device != nil {
		r.OS.DataDevice = st.Device.Name
		if st.Device.Parent != "" {
			r.OS.DataDevice = st.Device.Parent
		}
	}
	d := map[string]float64{}
	secs := w.IntervalS
	if w.ServerCPUCores != nil {
		d[pgstat.ExtraServerCPU] = *w.ServerCPUCores * secs
	}
	found := false
	if ob.t.localDataDir() == "" {
		// A remote server: this host's disks are not its disks.
		return d
	}
	for _, disk := range w.Disks {
		// The device under the data when known; else every disk that is
		// not a device-mapper or md device (those would count the same IO
		// twice, once on the disk under them).
		if r.OS.DataDevice != "" && disk.Name != r.OS.DataDevice {
			continue
		}
		if r.OS.DataDevice == "" && (strings.HasPrefix(disk.Name, "dm-") || strings.HasPrefix(disk.Name, "md")) {
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

// finish stops the collectors and adds what they saw to r.
func (ob *observer) finish(r *result.Run) error {
	ob.close()
	// The platform is disclosed in every result, collectors on or off.
	r.Disclosure = &result.Disclosure{Host: disclose.Host(disclose.Options{}), Database: ob.database}
	if dir := ob.t.localDataDir(); dir != "" {
		r.Disclosure.Storage = disclose.Storage(disclose.Options{}, dir)
	}
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
	case ob.winStart != nil && ob.winEnd != nil:
		r.DBCounters = &result.Counters{Start: ob.winStart.Counters, End: ob.winEnd.Counters}
		d := pgstat.Delta(ob.winStart, ob.winEnd)
		// The database counted the collectors' readings and samples as
		// transactions; they are not the workload's.
		d["pg_stat_database.xact_commit"] -= float64(ob.ownEnd - ob.ownStart)
		for k, v := range osd {
			d[k] = v
		}
		d[pgstat.ExtraClientStmt] = float64(r.Statements)
		if ob.sampler != nil {
			d[pgstat.ExtraASHDBTime], d[pgstat.ExtraASHCPU] = ob.sampler.DBTime()
		}
		if !strings.HasPrefix(ob.database.Settings["track_io_timing"], "on") {
			// Off, the timings stay zero: not a measurement of zero.
			delete(d, "pg_stat_database.blk_read_time")
			delete(d, "pg_stat_database.blk_write_time")
		}
		src := "postgres " + ob.database.Version
		lp := pgstat.LoadProfile(src, d, secs)
		io := pgstat.IOProfile(src, d, secs, float64(ob.database.BlockSize))
		r.LoadProfile, r.IOProfile = &lp, &io
	case ob.engStart != nil && ob.engEnd != nil:
		r.DBCounters = &result.Counters{Start: ob.engStart, End: ob.engEnd}
		d := deltas(ob.engStart, ob.engEnd)
		lp := sqlitestat.LoadProfile(ob.database.Version, d, secs, float64(s.Commits+s.Rollbacks), float64(s.Rollbacks),
			float64(r.Statements), r.Driver.CPUUserS+r.Driver.CPUSysS)
		r.LoadProfile = &lp
		ob.database.DataBytes = sqlitestat.FileBytes(ob.t.Path)
		ob.database.Settings["wal_file_bytes"] = fmt.Sprint(sqlitestat.WALBytes(ob.t.Path))
	}
	if ob.sampler != nil {
		w, err := ob.sampler.Result()
		r.Waits = w
		if err != nil {
			ob.errs = append(ob.errs, err)
		}
	}
	r.DBSeries = ob.series
	r.CollectorStatements = ob.statements
	if ob.testsIO {
		r.IO = r.ComputeIOUnits()
	}
	if len(ob.errs) > 0 {
		r.Warnings = append(r.Warnings, "collector: "+errors.Join(ob.errs...).Error())
	}
	return nil
}

func (ob *observer) close() {
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
}
