package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/collect/counters"
	"github.com/dbparity/dbparity/internal/collect/mystat"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/result"
)

// tolerance is how far a figure may be from its truth before it is
// marked off.
const tolerance = 0.05

// outcome is one measured run with what the bench read beside it.
type outcome struct {
	mode    string
	engine  string // "postgres" or "mariadb"
	r       *result.Run
	samples []sample
	q0, q1  *counters.Snapshot // PostgreSQL's counters, quiet, before and after the run
	period  time.Duration
	err     error  // how the run ended, when not well
	note    string // what failed of the truths
}

// figure is one figure of a run beside its truth.
type figure struct {
	section, name, unit string
	got, truth          float64
	secs                float64 // the window's length
	known               bool    // both sides have a value
	truthIs             string  // what the truth is
	reason              string  // why it is off, when it is
}

// off tells whether the figure is more than the tolerance from its truth.
// Figures whose truth is near zero are compared in absolute terms: a
// count of 2 against 1 is not 100% off in any sense that matters.
func (f figure) off() bool {
	if !f.known {
		return false
	}
	if f.count() && math.Abs(f.got-f.truth)*f.secs <= 10 {
		return false // ten events or fewer apart
	}
	if math.Abs(f.truth) < 1e-9 {
		return math.Abs(f.got) > 1e-9
	}
	return math.Abs(f.got/f.truth-1) > tolerance
}

// count tells whether the figure counts events (per second), whose
// difference in a window can be a handful of them.
func (f figure) count() bool {
	switch strings.TrimSuffix(f.unit, "/s") {
	case "tx", "calls", "blocks", "pages", "requests", "records", "sessions", "count", "syncs", "writes", "waits", "rows", "tables", "":
		return true
	}
	return false
}

// driverTx is the driver's transactions of a phase (committed, rolled
// back, failed: the server ends each one way or the other) and its
// rollbacks (a failed transaction is rolled back too).
func driverTx(p result.Phase) (tx, rollbacks float64) {
	for name, n := range p.Committed {
		tx += float64(n + p.Rollbacks[name] + p.Errors[name])
		rollbacks += float64(p.Rollbacks[name] + p.Errors[name])
	}
	return tx, rollbacks
}

// window is the measured window as the driver timed it.
func (o *outcome) window() (start, end time.Time, secs float64) {
	return o.r.MeasureStart, o.r.MeasureEnd, o.r.MeasureEnd.Sub(o.r.MeasureStart).Seconds()
}

// truthOS is /proc over the window, from the bench's first and last
// readings inside it (rates: a tenth of a second less of the window
// changes none of them).
func (o *outcome) truthOS() ostat.Rates {
	t0, t1, _ := o.window()
	return ostat.Between(inside(o.samples, t0, t1))
}

// background tells whether a PostgreSQL counter counts the background
// processes' work (17+'s checkpointer), which goes by time, not by
// transaction, and is not sampled.
func background(k string) bool { return strings.HasPrefix(k, "pg_stat_checkpointer.") }

// proxies are, for pg_stat_database's counters that the sessions publish
// late, a pg_stat_statements sum that counts the same work in real time
// (the statements' share of it): the quiet total is shared out by the
// window's part of the proxy, so that a window busier or quieter than the
// rest of the run (a cache still warming, a checkpoint) keeps its truth.
var proxies = map[string]string{
	"pg_stat_database.blks_hit":       "pg_stat_statements.shared_blks_hit",
	"pg_stat_database.blks_read":      "pg_stat_statements.shared_blks_read",
	"pg_stat_database.blk_read_time":  "pg_stat_statements.blk_read_time",
	"pg_stat_database.blk_write_time": "pg_stat_statements.blk_write_time",
	"pg_stat_database.active_time":    "pg_stat_statements.total_exec_time",
	"pg_stat_wal.wal_records":         "pg_stat_statements.wal_records",
	"pg_stat_wal.wal_fpi":             "pg_stat_statements.wal_fpi",
}

// keyTruth is the truth of one counter over the window, and what it is.
func (o *outcome) keyTruth(k string) (float64, string, bool) {
	t0, t1, secs := o.window()
	realtime := func(key string) (float64, bool) {
		x, ok0 := at(o.samples, key, t0)
		y, ok1 := at(o.samples, key, t1)
		return y - x, ok0 && ok1
	}
	osr := o.truthOS()
	switch {
	case k == counters.ExtraServerCPU:
		if osr.ServerCPUCores == nil {
			return 0, "", false
		}
		return *osr.ServerCPUCores * secs, "/proc", true
	case strings.HasPrefix(k, "os.device_"):
		v := deviceTotals(osr, o.r)[k]
		return v * secs, "/proc", true
	case k == counters.ExtraClientStmt:
		return float64(o.r.Statements), "driver", true
	case k == mystat.ExtraClientTx:
		tx, _ := driverTx(o.r.Phases["measure"])
		return tx, "driver", true
	case k == counters.ExtraASHCPU:
		if osr.ServerCPUCores == nil {
			return 0, "", false
		}
		return *osr.ServerCPUCores * secs, "/proc (server CPU)", true
	case k == counters.ExtraASHDBTime:
		if o.engine == "postgres" {
			v, _, ok := o.keyTruth("pg_stat_database.active_time")
			return v / 1000, "server active time", ok
		}
		v, ok := realtime(mystat.KeyStatementTime)
		return v * 1e-12, "statement time", ok
	case o.engine == "mariadb":
		v, ok := realtime(k)
		return v, "real time", ok
	case k == "pg_stat_wal.wal_bytes":
		v, ok := realtime("lsn")
		return v, "WAL position", ok
	case strings.HasPrefix(k, "pg_stat_statements."), strings.HasPrefix(k, "pg_stat_bgwriter."):
		v, ok := realtime(k)
		return v, "real time", ok
	case k == "pg_stat_database.sessions":
		// Logons: the sessions connected before the window; only a
		// reconnect (the driver's) logs on inside it.
		return float64(o.r.Driver.Reconnects), "driver", true
	}
	if o.q0 == nil || o.q1 == nil {
		return 0, "", false
	}
	x, ok0 := o.q0.Counters[k]
	y, ok1 := o.q1.Counters[k]
	if !ok0 || !ok1 {
		return 0, "", false
	}
	if background(k) {
		run := o.q1.At.Sub(o.q0.At).Seconds()
		return (y - x) * secs / run, "quiet, time share", true
	}
	if px, ok := proxies[k]; ok {
		win, ok0 := realtime(px)
		first, last := o.samples[0].db[px], o.samples[len(o.samples)-1].db[px]
		if ok0 && last > first {
			return (y - x) * win / (last - first), "quiet, shared by " + strings.TrimPrefix(px, "pg_stat_statements."), true
		}
	}
	win, _ := driverTx(o.r.Phases["measure"])
	var all float64
	for _, p := range o.r.Phases {
		n, _ := driverTx(p)
		all += n
	}
	if all == 0 {
		return 0, "", false
	}
	return (y - x) * win / all, "quiet, tx share", true
}

// deviceTotals are the device figures per second the way the load
// profile takes them: the data's device when known, else every disk but
// device-mapper and md devices.
func deviceTotals(w ostat.Rates, r *result.Run) map[string]float64 {
	dev := ""
	if r.OS != nil {
		dev = r.OS.DataDevice
	}
	d := map[string]float64{}
	for _, disk := range w.Disks {
		if dev != "" && disk.Name != dev {
			continue
		}
		if dev == "" && (strings.HasPrefix(disk.Name, "dm-") || strings.HasPrefix(disk.Name, "md")) {
			continue
		}
		d[counters.ExtraDevReads] += disk.ReadsPerS
		d[counters.ExtraDevWrites] += disk.WritesPerS
		d[counters.ExtraDevReadMB] += disk.ReadMBPerS
		d[counters.ExtraDevWriteMB] += disk.WriteMBPerS
	}
	return d
}

// lineTruth is the truth of a profile line over the window: the sum of
// its counters' truths, in the line's unit (the scale read off the
// product's own total against its counters' deltas).
func (o *outcome) lineTruth(l result.ProfileLine) (float64, string, bool) {
	switch l.Name {
	case "Transactions":
		tx, _ := driverTx(o.r.Phases["measure"])
		return tx, "driver", true
	case "Rollbacks":
		_, rb := driverTx(o.r.Phases["measure"])
		return rb, "driver", true
	}
	if l.Total == nil || l.Source == "" || l.Source == "not available" {
		return 0, "", false
	}
	keys := strings.Split(l.Source, " + ")
	var raw, truth float64
	var kinds []string
	for _, k := range keys {
		v, kind, ok := o.keyTruth(k)
		if !ok {
			return 0, "", false
		}
		truth += v
		if !contains(kinds, kind) {
			kinds = append(kinds, kind)
		}
		if o.r.DBCounters != nil {
			if e, ok := o.r.DBCounters.End[k]; ok {
				raw += e - o.r.DBCounters.Start[k]
			}
		}
	}
	return truth * scale(l, raw, keys), strings.Join(kinds, ", "), true
}

// scale is what a line multiplies its counters' sum by: the product's
// total over the raw deltas where those are known, else by the unit.
func scale(l result.ProfileLine, raw float64, keys []string) float64 {
	if raw != 0 && !strings.HasPrefix(keys[0], "os.") && !strings.HasPrefix(keys[0], "ash.") {
		return *l.Total / raw
	}
	switch {
	case strings.HasPrefix(keys[0], "os.") || strings.HasPrefix(keys[0], "ash.") || strings.HasPrefix(keys[0], "driver."):
		return 1
	case l.Unit == "MB" && strings.Contains(keys[0], "bytes"), l.Unit == "MB" && strings.HasPrefix(keys[0], "status."):
		return 1e-6
	case l.Unit == "MB":
		return 8192 / 1e6
	case l.Unit == "s" && strings.HasSuffix(keys[0], "_time"):
		return 0.001
	case l.Unit == "s" && strings.HasSuffix(keys[0], "_ps"):
		return 1e-12
	}
	return 1
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// figures are every load-profile, IO-profile and host figure of the run
// (per second) beside its truth.
func (o *outcome) figures() []figure {
	var out []figure
	_, _, secs := o.window()
	for _, p := range []struct {
		section string
		prof    *result.Profile
	}{{"load profile", o.r.LoadProfile}, {"IO profile", o.r.IOProfile}} {
		if p.prof == nil {
			continue
		}
		for _, l := range p.prof.Lines {
			f := figure{section: p.section, name: l.Name, unit: l.Unit + "/s", secs: secs}
			if l.PerSecond == nil {
				continue
			}
			f.got = *l.PerSecond
			if t, kind, ok := o.lineTruth(l); ok {
				f.truth, f.truthIs, f.known = t/secs, kind, true
			}
			out = append(out, f)
		}
	}
	if o.r.OS != nil && o.r.OS.HasWindow() {
		w, t := o.r.OS.Window, o.truthOS()
		host := func(name, unit string, got, truth float64) {
			out = append(out, figure{section: "host", name: name, unit: unit, got: got, truth: truth, known: true, truthIs: "/proc", secs: secs})
		}
		hostPtr := func(name, unit string, got, truth *float64) {
			if got != nil && truth != nil {
				host(name, unit, *got, *truth)
			}
		}
		host("CPU busy", "%", w.CPUBusyPct, t.CPUBusyPct)
		host("CPU iowait", "%", w.CPUIowaitPct, t.CPUIowaitPct)
		host("interrupts", "/s", w.InterruptsPerS, t.InterruptsPerS)
		host("context switches", "/s", w.ContextSwitchesPerS, t.ContextSwitchesPerS)
		hostPtr("server CPU", "cores", w.ServerCPUCores, t.ServerCPUCores)
		host("driver CPU", "cores", w.SelfCPUCores, t.SelfCPUCores)
		host("other CPU", "cores", w.OtherCPUCores, t.OtherCPUCores)
		hostPtr("run queue wait", "s/s", w.RunDelayPerS, t.RunDelayPerS)
		hostPtr("server's CPU wait", "s/s", w.ServerRunDelayPerS, t.ServerRunDelayPerS)
		gd, td := deviceTotals(w, o.r), deviceTotals(t, o.r)
		host("device reads", "/s", gd[counters.ExtraDevReads], td[counters.ExtraDevReads])
		host("device writes", "/s", gd[counters.ExtraDevWrites], td[counters.ExtraDevWrites])
		host("device write", "MB/s", gd[counters.ExtraDevWriteMB], td[counters.ExtraDevWriteMB])
	}
	for i := range out {
		if out[i].off() {
			out[i].reason = o.reason(out[i])
		}
	}
	return out
}

// txLag is how many seconds of the window's transaction rate the
// server's count of the window's transactions (the load profile's) is
// above the driver's.
func (o *outcome) txLag() (float64, bool) {
	lp := o.r.LoadProfile.Line("Transactions")
	win, _ := driverTx(o.r.Phases["measure"])
	_, _, secs := o.window()
	if lp == nil || lp.PerSecond == nil || win == 0 {
		return 0, false
	}
	rate := win / secs
	return (*lp.PerSecond - rate) / rate * secs, true
}

// osOffsets says how far the OS readings of the window were from its
// edges.
func (o *outcome) osOffsets() string {
	w := o.r.OS.Window
	return fmt.Sprintf("%+.0f ms and %+.0f ms from the window's edges", 1000*w.From.Sub(o.r.MeasureStart).Seconds(),
		1000*w.To.Sub(o.r.MeasureEnd).Seconds())
}

// reason says why a figure is off, from what the bench knows of its
// truth and of the run.
func (o *outcome) reason(f figure) string {
	lagNote := ""
	if lag, ok := o.txLag(); ok && o.engine == "postgres" && math.Abs(lag) > 0.1 {
		lagNote = fmt.Sprintf("the server counted %+.2f s of transactions more than the driver in the window: "+
			"its sessions publish their counts up to a second late", lag)
	}
	osNote := func() string { return "OS readings " + o.osOffsets() }
	switch {
	case f.truthIs == "driver" && lagNote != "":
		return lagNote
	case f.truthIs == "quiet, tx share" && lagNote != "":
		return "the run's per-transaction figure times the window's transactions; " + lagNote
	case f.truthIs == "quiet, tx share":
		return "the run's per-transaction figure times the window's transactions: warm-up and window differ"
	case strings.HasPrefix(f.truthIs, "quiet, shared by"):
		return "truth approximate: the run's quiet total shared out as pg_stat_statements' " + strings.TrimPrefix(f.truthIs, "quiet, shared by ") +
			", which counts the statements' work only (not autovacuum's, nor work outside statements)"
	case f.truthIs == "WAL position":
		if f.got < 0.9*f.truth {
			return "the WAL position counts every process's WAL as it is written, autovacuum's too (which its worker publishes to pg_stat_wal as it ends, after the window)"
		}
		return "the WAL position counts the records' alignment and page headers, wal_bytes the records"
	case f.truthIs == "quiet, time share":
		return "background work, bursty: the run's average per second"
	case f.section == "host" && o.r.OS != nil:
		return osNote()
	case f.truthIs == "/proc (server CPU)" && f.got > f.truth:
		return "sampled (ASH): a session active without a wait event counts as on a CPU, also while it waits for one (the server's run-queue wait is a host figure)"
	case f.truthIs == "/proc (server CPU)":
		return "sampled (ASH): CPU spent inside an instrumented wait (a read served by the page cache) counts as waiting, and the background processes' CPU is in /proc only"
	case f.truthIs == "server active time":
		return "sampled (ASH) against the backends' own active time: on a saturated host the samples are not taken at instants independent of the sessions (likely as the sampler runs in the driver's process, in its time slices)"
	case f.truthIs == "/proc":
		if o.r.OS != nil {
			return osNote()
		}
	case f.truthIs == "real time" && o.engine == "mariadb":
		return "the collectors read the server as their goroutine wakes, after the window's edges on a saturated host (no reading of a server waits at the edge itself), where the truth is interpolated at the edges: " +
			"a counter that moves in bursts (InnoDB's page cleaner flushes about once a second; a row lock wait's time is counted as the wait ends) differs by a burst"
	case f.truthIs == "statement time":
		return "sampled (process list) against performance_schema's statement time: on a saturated host the samples are not taken at instants independent of the sessions (likely as the sampler runs in the driver's process, in its time slices)"
	}
	return "unexplained"
}
