package pgstat

import (
	"fmt"
	"strings"

	"github.com/dbparity/dbparity/internal/result"
)

// Extra figures from other collectors, merged into a window's deltas so the
// profile can use them: keys outside the pg_stat views.
const (
	ExtraServerCPU  = "os.server_cpu_s"    // CPU seconds of the server's processes (local server)
	ExtraASHDBTime  = "ash.db_time_s"      // sampled active sessions × window
	ExtraASHCPU     = "ash.cpu_s"          // sampled active, not waiting × window
	ExtraDevReads   = "os.device_reads"    // completed reads of the block devices
	ExtraDevWrites  = "os.device_writes"   // completed writes
	ExtraDevReadMB  = "os.device_read_mb"  // MB read
	ExtraDevWriteMB = "os.device_write_mb" // MB written
	ExtraClientStmt = "client.statements"  // statements the driver sent
)

// alt is one way of computing a line: the sum of the deltas of keys times
// scale. The first alternative whose keys all exist is used.
type alt struct {
	keys  []string
	scale float64
	note  string
}

type lineDef struct {
	name, unit string
	alts       []alt
	perTx      bool
}

func a(note string, scale float64, keys ...string) alt {
	return alt{keys: keys, scale: scale, note: note}
}

// loadLines is the load profile, after AWR's "Load Profile" section; the
// mapping and its caveats per version are in docs/metrics.md.
func loadLines() []lineDef {
	return []lineDef{
		{"DB time", "s", []alt{
			a("time sessions spent executing statements (14+)", 0.001, "pg_stat_database.active_time"),
			a("pg_stat_statements: execution and planning time of top-level statements", 0.001, "pg_stat_statements.total_exec_time", "pg_stat_statements.total_plan_time"),
			a("sampled: active sessions × window", 1, ExtraASHDBTime),
		}, true},
		{"DB time (sampled)", "s", []alt{a("pg_stat_activity samples: active sessions × window", 1, ExtraASHDBTime)}, true},
		{"DB CPU", "s", []alt{
			a("CPU of the server's processes from /proc (background processes included)", 1, ExtraServerCPU),
			a("sampled: active sessions not waiting × window", 1, ExtraASHCPU),
		}, true},
		{"DB CPU (sampled)", "s", []alt{a("pg_stat_activity samples: active, not waiting × window", 1, ExtraASHCPU)}, true},
		{"WAL (redo) size", "bytes", []alt{
			a("", 1, "pg_stat_wal.wal_bytes"),
			a("pg_stat_statements", 1, "pg_stat_statements.wal_bytes"),
		}, true},
		{"Logical reads", "blocks", []alt{a("buffer hits + reads", 1, "pg_stat_database.blks_hit", "pg_stat_database.blks_read")}, true},
		{"Block changes", "blocks", []alt{a("blocks dirtied by statements", 1, "pg_stat_statements.shared_blks_dirtied")}, true},
		{"Rows changed", "rows", []alt{a("inserted + updated + deleted", 1, "pg_stat_database.tup_inserted", "pg_stat_database.tup_updated", "pg_stat_database.tup_deleted")}, true},
		{"Physical reads", "blocks", []alt{
			a("pg_stat_io reads (16+)", 1, "pg_stat_io.reads"),
			a("engine reads: may be OS page-cache hits, compare device reads", 1, "pg_stat_database.blks_read"),
		}, true},
		{"Physical writes", "blocks", []alt{
			a("pg_stat_io writes (16+)", 1, "pg_stat_io.writes"),
			a("checkpointer + bgwriter (17+)", 1, "pg_stat_checkpointer.buffers_written", "pg_stat_bgwriter.buffers_clean"),
			a("checkpointer + bgwriter + backends (15, 16)", 1, "pg_stat_bgwriter.buffers_checkpoint", "pg_stat_bgwriter.buffers_clean", "pg_stat_bgwriter.buffers_backend"),
		}, true},
		{"Read IO requests", "requests", []alt{
			a("pg_stat_io reads (16+)", 1, "pg_stat_io.reads"),
			a("device reads (/proc/diskstats, every process)", 1, ExtraDevReads),
		}, true},
		{"Write IO requests", "requests", []alt{
			a("pg_stat_io writes (16+)", 1, "pg_stat_io.writes"),
			a("device writes (/proc/diskstats, every process)", 1, ExtraDevWrites),
		}, true},
		{"Executes", "calls", []alt{
			a("pg_stat_statements calls", 1, "pg_stat_statements.calls"),
			a("statements the driver sent (pg_stat_statements not installed)", 1, ExtraClientStmt),
		}, true},
		{"Transactions", "tx", []alt{a("commits + rollbacks", 1, "pg_stat_database.xact_commit", "pg_stat_database.xact_rollback")}, true},
		{"Rollbacks", "tx", []alt{a("", 1, "pg_stat_database.xact_rollback")}, true},
		{"Temp bytes", "bytes", []alt{a("", 1, "pg_stat_database.temp_bytes")}, true},
		{"WAL records", "records", []alt{a("", 1, "pg_stat_wal.wal_records")}, true},
		{"WAL full-page images", "records", []alt{a("", 1, "pg_stat_wal.wal_fpi")}, true},
		{"Checkpoints", "count", []alt{
			a("(17+)", 1, "pg_stat_checkpointer.num_timed", "pg_stat_checkpointer.num_requested"),
			a("", 1, "pg_stat_bgwriter.checkpoints_timed", "pg_stat_bgwriter.checkpoints_req"),
		}, false},
		{"Logons", "sessions", []alt{a("(14+)", 1, "pg_stat_database.sessions")}, true},
		{"Deadlocks", "count", []alt{a("", 1, "pg_stat_database.deadlocks")}, false},
	}
}

// Delta subtracts two snapshots: the work done between them.
func Delta(start, end *Snapshot) map[string]float64 {
	d := make(map[string]float64, len(end.Counters))
	for k, v := range end.Counters {
		if s, ok := start.Counters[k]; ok {
			d[k] = v - s
		}
	}
	return d
}

// LoadProfile derives the load profile from the deltas of a window of the
// given length, extra figures merged in.
func LoadProfile(source string, d map[string]float64, seconds float64) result.Profile {
	p := result.Profile{Source: source, Seconds: seconds,
		Transactions: d["pg_stat_database.xact_commit"] + d["pg_stat_database.xact_rollback"]}
	for _, l := range loadLines() {
		p.Lines = append(p.Lines, build(l, d, seconds, p.Transactions))
	}
	return p
}

// IOProfile derives the IO profile (per second) of the window: the
// engine's view in MB and the devices' where the OS collector ran.
func IOProfile(source string, d map[string]float64, seconds, blockSize float64) result.Profile {
	mb := blockSize / 1e6
	defs := []lineDef{
		{"Engine read", "MB", []alt{
			a("pg_stat_io read bytes (18+)", 1e-6, "pg_stat_io.read_bytes"),
			a("pg_stat_io reads × block size (16+)", mb, "pg_stat_io.reads"),
			a("blks_read × block size: may be OS page-cache hits", mb, "pg_stat_database.blks_read"),
		}, false},
		{"Engine write", "MB", []alt{
			a("pg_stat_io write bytes (18+)", 1e-6, "pg_stat_io.write_bytes"),
			a("pg_stat_io writes × block size (16+)", mb, "pg_stat_io.writes"),
			a("checkpointer + bgwriter (17+)", mb, "pg_stat_checkpointer.buffers_written", "pg_stat_bgwriter.buffers_clean"),
			a("checkpointer + bgwriter + backends × block size", mb, "pg_stat_bgwriter.buffers_checkpoint", "pg_stat_bgwriter.buffers_clean", "pg_stat_bgwriter.buffers_backend"),
		}, false},
		{"WAL write", "MB", []alt{a("", 1e-6, "pg_stat_wal.wal_bytes")}, false},
		{"WAL syncs", "syncs", []alt{a("(14+; 18 moves them to pg_stat_io)", 1, "pg_stat_wal.wal_sync")}, false},
		{"Device reads", "requests", []alt{a("/proc/diskstats", 1, ExtraDevReads)}, false},
		{"Device writes", "requests", []alt{a("/proc/diskstats", 1, ExtraDevWrites)}, false},
		{"Device read", "MB", []alt{a("/proc/diskstats", 1, ExtraDevReadMB)}, false},
		{"Device write", "MB", []alt{a("/proc/diskstats", 1, ExtraDevWriteMB)}, false},
		{"Read I/O time", "ms", []alt{a("needs track_io_timing = on", 1, "pg_stat_database.blk_read_time")}, false},
		{"Write I/O time", "ms", []alt{a("needs track_io_timing = on", 1, "pg_stat_database.blk_write_time")}, false},
	}
	p := result.Profile{Source: source, Seconds: seconds}
	for _, l := range defs {
		p.Lines = append(p.Lines, build(l, d, seconds, 0))
	}
	return p
}

func build(l lineDef, d map[string]float64, seconds, txs float64) result.ProfileLine {
	pl := result.ProfileLine{Name: l.name, Unit: l.unit}
	var tried []string
	for _, alt := range l.alts {
		total, ok := 0.0, true
		for _, k := range alt.keys {
			v, has := d[k]
			if !has {
				ok = false
				break
			}
			total += v
		}
		if !ok {
			tried = append(tried, strings.Join(alt.keys, " + "))
			continue
		}
		total *= alt.scale
		pl.Total = &total
		pl.Source = strings.Join(alt.keys, " + ")
		pl.Note = alt.note
		if seconds > 0 {
			ps := total / seconds
			pl.PerSecond = &ps
		}
		if l.perTx && txs > 0 {
			pt := total / txs
			pl.PerTx = &pt
		}
		return pl
	}
	pl.Source = "not available"
	pl.Note = fmt.Sprintf("needs %s", strings.Join(tried, ", or "))
	if len(l.alts) == 1 && l.alts[0].note != "" && strings.HasPrefix(l.alts[0].note, "needs") {
		pl.Note = l.alts[0].note
	}
	return pl
}
