package observe

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/collect/dbhost"
	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/collect/pgstat"
	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// hostSource reads the OS of the database host, wherever it runs, through
// the source ChooseHost picks; and this host's too, for the driver's
// figures, when that is another host. It discloses the database host at
// the start, gives the OS series every tick, the window's OS figures from
// its edges, and the warm-up's competing CPU.
type hostSource struct {
	ob *Observer

	// mu guards the OS collectors: the database host's through its
	// source (src, nil when it cannot be seen), and this host's for the
	// driver's figures (drv) when that is another host.
	mu    sync.Mutex
	src   dbhost.Source
	name  string // src's name, or "none"
	local bool   // src is this host: no separate driver reading
	conn  *collectorConn
	prev  *ostat.Snapshot
	runAt *ostat.Snapshot // the first reading, at the run's start
	// The readings at the window's edges, and the series.
	winStart, winEnd *ostat.Snapshot
	// taken holds an edge's reading taken at the edge itself (early).
	taken          map[int]*ostat.Snapshot
	series         *metrics.Bounded[ostat.Rates]
	drv            *ostat.Reader
	drvStart       *ostat.Snapshot
	drvEnd         *ostat.Snapshot
	warmupOtherCPU float64 // cores used by neither driver nor server during the warm-up
	warmupMeasured bool
	// The database host's disclosure, taken at the start, and its data
	// directory (a path on that host).
	info    disclose.HostInfo
	storage *disclose.StorageInfo
	dataDir string
}

func newHost(ob *Observer) *hostSource {
	return &hostSource{ob: ob, series: result.NewOSSeries(ob.opts.SeriesPoints)}
}

// statements are those the source's connection to the database sent so
// far (0 without one): the database counts them as transactions.
func (h *hostSource) statements() int64 {
	if h == nil || h.conn == nil {
		return 0
	}
	return h.conn.Statements()
}

// start chooses how the database host is observed, discloses it and
// takes the first reading; the driver's host gets its own reader when it
// is another host.
func (h *hostSource) start(_, ctx context.Context) error {
	ob, t := h.ob, h.ob.t
	pid := ob.opts.DBPID
	if pid == 0 && t.Managed {
		pid = t.PID
	}
	h.dataDir = t.DataDir
	var pg *collectorConn
	if t.Dialect == engine.Postgres {
		// A connection of its own: the sql source reads through it for
		// the whole run; otherwise it only asks where the server is.
		var err error
		if pg, err = dialCollector(ctx, t.Target, collectorApp, ob.timeout); err != nil {
			return err
		}
		if pid == 0 && t.OnThisHost() {
			pid = localServerPID(ctx, pg)
		}
		if h.dataDir == "" {
			h.dataDir = serverDataDir(ctx, pg)
		}
	}
	if t.Dialect == engine.MySQL && pid == 0 && t.OnThisHost() {
		if c, err := dialCollector(ctx, t.Target, collectorApp, ob.timeout); err == nil {
			pid = localMySQLPID(ctx, c)
			ob.statements += c.Statements()
			c.Close()
		}
	}
	hc, err := ChooseHost(ctx, t, ob.opts, pg, pid)
	if pg != nil {
		if hc.KeepConn {
			h.conn = pg
			ob.conns = append(ob.conns, pg)
		} else {
			ob.statements += pg.Statements()
			pg.Close()
		}
	}
	if err != nil {
		return err
	}
	h.src, h.name, h.local = hc.Source, hc.Name, hc.Local
	if hc.Warning != "" {
		ob.warnings = append(ob.warnings, hc.Warning)
	}
	if !hc.Local {
		if h.drv, err = ostat.New(ostat.Options{}); err != nil {
			return fmt.Errorf("os collector: %w", err)
		}
	}
	if h.src == nil {
		return nil
	}
	hctx, cancel := context.WithTimeout(ctx, ob.timeout)
	defer cancel()
	h.info, h.storage = h.src.Disclose(hctx, h.dataDir)
	s, err := h.src.Read(hctx)
	if err != nil {
		return fmt.Errorf("os collector (%s): %w", h.name, err)
	}
	h.prev, h.runAt = s, s
	return nil
}

// tick reads the database host for the series and leaves the reading in
// m (nil when there is none).
func (h *hostSource) tick(ctx context.Context, m *moment) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.read(ctx, "os")
	if s == nil {
		return
	}
	r := busyOnly(ostat.Between(h.prev, s))
	h.series.Add(r)
	h.prev = s
	h.ob.record(result.JournalEntry{OS: &r})
	m.os = s
}

// read reads the database host; call with mu held. A local source that
// fails is not tried again (this host's /proc does not come back); a
// remote one is, as the server or the exporter may.
func (h *hostSource) read(ctx context.Context, kind string) *ostat.Snapshot {
	if h.src == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, h.ob.timeout)
	defer cancel()
	began := time.Now()
	s, err := h.src.Read(rctx)
	if err != nil {
		// A reading cut by the run's end is no failure, unless it had
		// waited half its timeout by then: a server that stopped
		// answering (--db-host sql reads through it) holds each reading
		// until its timeout, and the run may fail on that same silence
		// first.
		if waited := time.Since(began); ctx.Err() == nil || waited >= h.ob.timeout/2 {
			if ctx.Err() != nil {
				err = fmt.Errorf("no answer in %.1f s when the run ended", waited.Seconds())
			}
			h.ob.fail(kind+" ("+h.name+")", err)
		}
		if h.local {
			h.src = nil
		}
		return nil
	}
	return s
}

// edge takes the OS snapshots at a window edge: the driver's host first
// (local, at once), then the database host, whose reading it leaves in m.
// At the window's start it measures what else used the CPU during the
// warm-up.
func (h *hostSource) edge(ctx context.Context, p int, m *moment) {
	switch p {
	case driver.Measure:
		m.os = h.readEdge(ctx, p, &h.winStart, &h.drvStart)
		if m.os != nil && m.os.At.Sub(h.runAt.At) > h.ob.interval/2 {
			h.warmupOtherCPU = ostat.Between(h.runAt, m.os).OtherCPUCores
			h.warmupMeasured = true
		}
	case driver.Drain:
		m.os = h.readEdge(ctx, p, &h.winEnd, &h.drvEnd)
	}
}

// early takes edge p's reading at once, in the caller's goroutine (the
// driver's, at the edge), when the database host is this host: its /proc
// is read in a few milliseconds and never waits on a network.
func (h *hostSource) early(p int) {
	if h == nil || h.name != dbhost.Local || !h.local {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.read(context.Background(), "os"); s != nil {
		if h.taken == nil {
			h.taken = map[int]*ostat.Snapshot{}
		}
		h.taken[p] = s
	}
}

func (h *hostSource) readEdge(ctx context.Context, p int, dst, drv **ostat.Snapshot) *ostat.Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.taken[p]; s != nil {
		*dst = s
		return s
	}
	if h.drv != nil {
		s, err := h.drv.Read()
		if err != nil {
			h.ob.fail("os (driver host)", err)
		} else {
			*drv = s
		}
	}
	s := h.read(ctx, "os")
	if s != nil {
		*dst = s
	}
	return s
}

// finish warns of the warm-up's competing CPU and fills r.OS and
// r.DriverOS (the engine's profiles take their OS figures from r.OS).
func (h *hostSource) finish(r *result.Run) {
	if h.warmupMeasured && h.warmupOtherCPU > 0.1 {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"other processes used %.2f cores during the warm-up (neither dbparity nor the database): they compete with the workload", h.warmupOtherCPU))
	}
	if h.drvStart != nil && h.drvEnd != nil {
		r.DriverOS = &result.OS{Source: dbhost.Local, Window: ostat.Between(h.drvStart, h.drvEnd)}
	}
	if h.winStart == nil || h.winEnd == nil {
		return
	}
	r.OS = &result.OS{Source: h.name, Window: ostat.Between(h.winStart, h.winEnd), Series: h.series.Points()}
	if st := r.Disclosure.Storage; st != nil && st.Device != nil {
		r.OS.DataDevice = st.Device.Name
		if st.Device.Parent != "" {
			r.OS.DataDevice = st.Device.Parent
		}
	}
}

// close closes the database host's source.
func (h *hostSource) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.src != nil {
		h.src.Close()
		h.src = nil
	}
}

// osWindow is the window's OS figures the load profile uses (totals over
// the window, on the database host), nil when the host's source gave none.
func osWindow(r *result.Run) map[string]float64 {
	if r.OS == nil {
		return nil
	}
	return osTotals(r.OS.Window, r.OS.DataDevice)
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
