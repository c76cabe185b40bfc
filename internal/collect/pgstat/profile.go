package pgstat

import (
	"sort"
	"strings"

	"github.com/dbparity/dbparity/internal/collect/counters"
	"github.com/dbparity/dbparity/internal/result"
)

// The extra figures' keys, for the line definitions below.
const (
	ExtraServerCPU  = counters.ExtraServerCPU
	ExtraASHDBTime  = counters.ExtraASHDBTime
	ExtraASHCPU     = counters.ExtraASHCPU
	ExtraDevReads   = counters.ExtraDevReads
	ExtraDevWrites  = counters.ExtraDevWrites
	ExtraDevReadMB  = counters.ExtraDevReadMB
	ExtraDevWriteMB = counters.ExtraDevWriteMB
	ExtraClientStmt = counters.ExtraClientStmt
)

// lineDef is a counters.Line written positionally: name, unit,
// alternatives, per transaction.
type lineDef struct {
	name, unit string
	alts       []counters.Alt
	perTx      bool
}

func lines(defs []lineDef) []counters.Line {
	out := make([]counters.Line, len(defs))
	for i, d := range defs {
		out[i] = counters.Line{Name: d.name, Unit: d.unit, Alts: d.alts, PerTx: d.perTx}
	}
	return out
}

var a = counters.A

// loadLines is the load profile, after AWR's "Load Profile" section; the
// mapping and its caveats per version are in docs/metrics.md.
func loadLines() []counters.Line {
	return lines([]lineDef{
		{"DB time", "s", []counters.Alt{
			a("time sessions spent executing statements (14+)", 0.001, "pg_stat_database.active_time"),
			a("pg_stat_statements: execution and planning time of top-level statements", 0.001, "pg_stat_statements.total_exec_time", "pg_stat_statements.total_plan_time"),
			a("sampled: active sessions × window", 1, ExtraASHDBTime),
		}, true},
		{"DB time (sampled)", "s", []counters.Alt{a("pg_stat_activity samples: active sessions × window", 1, ExtraASHDBTime)}, true},
		{"DB CPU", "s", []counters.Alt{
			a("CPU of the server's processes from /proc (background processes included)", 1, ExtraServerCPU),
			a("sampled: active sessions not waiting × window", 1, ExtraASHCPU),
		}, true},
		{"DB CPU (sampled)", "s", []counters.Alt{a("pg_stat_activity samples: active, not waiting × window", 1, ExtraASHCPU)}, true},
		{"WAL (redo) size", "bytes", []counters.Alt{
			a("", 1, "pg_stat_wal.wal_bytes"),
			a("pg_stat_statements", 1, "pg_stat_statements.wal_bytes"),
		}, true},
		{"Logical reads", "blocks", []counters.Alt{a("buffer hits + reads", 1, "pg_stat_database.blks_hit", "pg_stat_database.blks_read")}, true},
		{"Block changes", "blocks", []counters.Alt{a("blocks dirtied by statements", 1, "pg_stat_statements.shared_blks_dirtied")}, true},
		{"Rows changed", "rows", []counters.Alt{a("inserted + updated + deleted", 1, "pg_stat_database.tup_inserted", "pg_stat_database.tup_updated", "pg_stat_database.tup_deleted")}, true},
		{"Physical reads", "blocks", []counters.Alt{
			a("pg_stat_io reads (16+)", 1, "pg_stat_io.reads"),
			a("engine reads: may be OS page-cache hits, compare device reads", 1, "pg_stat_database.blks_read"),
		}, true},
		{"Physical writes", "blocks", []counters.Alt{
			a("pg_stat_io writes (16+)", 1, "pg_stat_io.writes"),
			a("checkpointer + bgwriter (17+)", 1, "pg_stat_checkpointer.buffers_written", "pg_stat_bgwriter.buffers_clean"),
			a("checkpointer + bgwriter + backends (15, 16)", 1, "pg_stat_bgwriter.buffers_checkpoint", "pg_stat_bgwriter.buffers_clean", "pg_stat_bgwriter.buffers_backend"),
		}, true},
		// AWR's IO requests are the database's own read and write calls,
		// whether the OS cache served them or not: before 16 PostgreSQL
		// reads and writes one block per call, so its block counts are its
		// requests. The devices' requests (every process's, after the
		// page cache) are the IO profile's device lines.
		{"Read IO requests", "requests", []counters.Alt{
			a("pg_stat_io reads (16+)", 1, "pg_stat_io.reads"),
			a("blocks read, one request each (pg_stat_database.blks_read)", 1, "pg_stat_database.blks_read"),
			a("device reads (/proc/diskstats, every process)", 1, ExtraDevReads),
		}, true},
		{"Write IO requests", "requests", []counters.Alt{
			a("pg_stat_io writes (16+)", 1, "pg_stat_io.writes"),
			a("blocks written by checkpointer, bgwriter and backends, one request each (15)", 1, "pg_stat_bgwriter.buffers_checkpoint", "pg_stat_bgwriter.buffers_clean", "pg_stat_bgwriter.buffers_backend"),
			a("device writes (/proc/diskstats, every process)", 1, ExtraDevWrites),
		}, true},
		{"Executes", "calls", []counters.Alt{
			a("pg_stat_statements calls", 1, "pg_stat_statements.calls"),
			a("statements the driver sent (pg_stat_statements not installed)", 1, ExtraClientStmt),
		}, true},
		{"Transactions", "tx", []counters.Alt{a("commits + rollbacks", 1, "pg_stat_database.xact_commit", "pg_stat_database.xact_rollback")}, true},
		{"Rollbacks", "tx", []counters.Alt{a("", 1, "pg_stat_database.xact_rollback")}, true},
		{"Temp bytes", "bytes", []counters.Alt{a("", 1, "pg_stat_database.temp_bytes")}, true},
		{"WAL records", "records", []counters.Alt{a("", 1, "pg_stat_wal.wal_records")}, true},
		{"WAL full-page images", "records", []counters.Alt{a("", 1, "pg_stat_wal.wal_fpi")}, true},
		{"Checkpoints", "count", []counters.Alt{
			a("(17+)", 1, "pg_stat_checkpointer.num_timed", "pg_stat_checkpointer.num_requested"),
			a("", 1, "pg_stat_bgwriter.checkpoints_timed", "pg_stat_bgwriter.checkpoints_req"),
		}, false},
		{"Logons", "sessions", []counters.Alt{a("(14+)", 1, "pg_stat_database.sessions")}, true},
		{"Deadlocks", "count", []counters.Alt{a("", 1, "pg_stat_database.deadlocks")}, false},
	})
}

// LoadProfile derives the load profile from the deltas of a window of the
// given length, extra figures merged in.
func LoadProfile(source string, d map[string]float64, seconds float64) result.Profile {
	return counters.Build(source, loadLines(), d, seconds, d["pg_stat_database.xact_commit"]+d["pg_stat_database.xact_rollback"])
}

// IOProfile derives the IO profile (per second) of the window: the
// engine's view in MB and the devices' where the OS collector ran.
func IOProfile(source string, d map[string]float64, seconds, blockSize float64) result.Profile {
	mb := blockSize / 1e6
	defs := []lineDef{
		{"Engine read", "MB", []counters.Alt{
			a("pg_stat_io read bytes (18+)", 1e-6, "pg_stat_io.read_bytes"),
			a("pg_stat_io reads × block size (16+)", mb, "pg_stat_io.reads"),
			a("blks_read × block size: may be OS page-cache hits", mb, "pg_stat_database.blks_read"),
		}, false},
		{"Engine write", "MB", []counters.Alt{
			a("pg_stat_io write bytes (18+)", 1e-6, "pg_stat_io.write_bytes"),
			a("pg_stat_io writes × block size (16+)", mb, "pg_stat_io.writes"),
			a("checkpointer + bgwriter (17+)", mb, "pg_stat_checkpointer.buffers_written", "pg_stat_bgwriter.buffers_clean"),
			a("checkpointer + bgwriter + backends × block size", mb, "pg_stat_bgwriter.buffers_checkpoint", "pg_stat_bgwriter.buffers_clean", "pg_stat_bgwriter.buffers_backend"),
		}, false},
		{"WAL write", "MB", []counters.Alt{a("", 1e-6, "pg_stat_wal.wal_bytes")}, false},
		{"WAL syncs", "syncs", []counters.Alt{a("(14+; 18 moves them to pg_stat_io)", 1, "pg_stat_wal.wal_sync")}, false},
		{"Device reads", "requests", []counters.Alt{a("/proc/diskstats", 1, ExtraDevReads)}, false},
		{"Device writes", "requests", []counters.Alt{a("/proc/diskstats", 1, ExtraDevWrites)}, false},
		{"Device read", "MB", []counters.Alt{a("/proc/diskstats", 1, ExtraDevReadMB)}, false},
		{"Device write", "MB", []counters.Alt{a("/proc/diskstats", 1, ExtraDevWriteMB)}, false},
		{"Read I/O time", "ms", []counters.Alt{a("needs track_io_timing = on", 1, "pg_stat_database.blk_read_time")}, false},
		{"Write I/O time", "ms", []counters.Alt{a("needs track_io_timing = on", 1, "pg_stat_database.blk_write_time")}, false},
	}
	return counters.Build(source, lines(defs), d, seconds, 0)
}

// IOByBackend gives the engine's IO by backend type and context, per
// second of a window of the given length: from pg_stat_io on 16+, else
// what pg_stat_bgwriter and pg_stat_database say (writes of the
// checkpointer, the background writer and the client backends, the
// backends' fsyncs, the database's block reads). Rows without IO are left
// out.
func IOByBackend(d map[string]float64, seconds float64) []result.IOBackend {
	if seconds <= 0 {
		return nil
	}
	per := func(v float64) *float64 { v /= seconds; return &v }
	var out []result.IOBackend
	groups := map[string]bool{}
	for k := range d {
		if rest, ok := strings.CutPrefix(k, "pg_stat_io["); ok {
			if g, _, ok := strings.Cut(rest, "]."); ok {
				groups[g] = true
			}
		}
	}
	for g := range groups {
		v := func(col string) *float64 {
			x, ok := d[ioKey(g, col)]
			if !ok {
				return nil
			}
			return per(x)
		}
		backend, ctx, _ := strings.Cut(g, "/")
		b := result.IOBackend{Backend: backend, Context: ctx, Reads: v("reads"), ReadMs: v("read_time"), Writes: v("writes"),
			WriteMs: v("write_time"), Extends: v("extends"), ExtendMs: v("extend_time"), Fsyncs: v("fsyncs"), FsyncMs: v("fsync_time"),
			Source: "pg_stat_io"}
		if busy(b.Reads) || busy(b.Writes) || busy(b.Extends) || busy(b.Fsyncs) {
			out = append(out, b)
		}
	}
	if len(groups) == 0 {
		get := func(k string) *float64 {
			x, ok := d[k]
			if !ok {
				return nil
			}
			return per(x)
		}
		for _, b := range []result.IOBackend{
			{Backend: "client backend", Reads: get("pg_stat_database.blks_read"), Writes: get("pg_stat_bgwriter.buffers_backend"),
				Fsyncs: get("pg_stat_bgwriter.buffers_backend_fsync"), Source: "pg_stat_database.blks_read (this database), pg_stat_bgwriter.buffers_backend, buffers_backend_fsync"},
			{Backend: "checkpointer", Writes: first(get("pg_stat_checkpointer.buffers_written"), get("pg_stat_bgwriter.buffers_checkpoint")),
				Source: "pg_stat_bgwriter.buffers_checkpoint (pg_stat_checkpointer.buffers_written on 17+)"},
			{Backend: "background writer", Writes: get("pg_stat_bgwriter.buffers_clean"), Source: "pg_stat_bgwriter.buffers_clean"},
		} {
			if busy(b.Reads) || busy(b.Writes) || busy(b.Fsyncs) {
				out = append(out, b)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Backend != out[j].Backend {
			return out[i].Backend < out[j].Backend
		}
		return out[i].Context < out[j].Context
	})
	return out
}

func busy(v *float64) bool { return v != nil && *v > 0 }

func first(v ...*float64) *float64 {
	for _, x := range v {
		if x != nil {
			return x
		}
	}
	return nil
}
