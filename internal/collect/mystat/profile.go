package mystat

import (
	"github.com/dbparity/dbparity/internal/collect/counters"
	"github.com/dbparity/dbparity/internal/result"
)

var a = counters.A

type alts = []counters.Alt

func st(name string) string { return "status." + name }

// loadLines is the load profile, after AWR's "Load Profile" section; the
// mapping is in docs/metrics.md.
func loadLines() []counters.Line {
	return []counters.Line{
		{Name: "DB time", Unit: "s", PerTx: true, Alts: alts{
			a("performance_schema: time of every statement, the collectors' too", 1e-12, KeyStatementTime),
			a("sampled: active sessions × window", 1, counters.ExtraASHDBTime),
		}},
		{Name: "DB time (sampled)", Unit: "s", PerTx: true, Alts: alts{a("process list samples: sessions running a statement × window", 1, counters.ExtraASHDBTime)}},
		{Name: "DB CPU", Unit: "s", PerTx: true, Alts: alts{a("CPU of the server's process from /proc", 1, counters.ExtraServerCPU)}},
		{Name: "Redo size", Unit: "bytes", PerTx: true, Alts: alts{a("", 1, st("Innodb_os_log_written"))}},
		{Name: "Logical reads", Unit: "pages", PerTx: true, Alts: alts{a("buffer pool read requests", 1, st("Innodb_buffer_pool_read_requests"))}},
		{Name: "Block changes", Unit: "pages", PerTx: true, Alts: alts{a("buffer pool write requests", 1, st("Innodb_buffer_pool_write_requests"))}},
		{Name: "Rows changed", Unit: "rows", PerTx: true, Alts: alts{
			a("InnoDB rows inserted + updated + deleted", 1, st("Innodb_rows_inserted"), st("Innodb_rows_updated"), st("Innodb_rows_deleted")),
			a("handler writes + updates + deletes, every engine (MariaDB has no InnoDB row counters)", 1, st("Handler_write"), st("Handler_update"), st("Handler_delete")),
		}},
		{Name: "Physical reads", Unit: "pages", PerTx: true, Alts: alts{
			a("reads the buffer pool could not serve (O_DIRECT: from the device)", 1, st("Innodb_buffer_pool_reads")),
		}},
		{Name: "Physical writes", Unit: "pages", PerTx: true, Alts: alts{a("pages flushed from the buffer pool", 1, st("Innodb_buffer_pool_pages_flushed"))}},
		{Name: "Read IO requests", Unit: "requests", PerTx: true, Alts: alts{
			a("InnoDB data file reads", 1, st("Innodb_data_reads")),
			a("device reads (/proc/diskstats, every process)", 1, counters.ExtraDevReads),
		}},
		{Name: "Write IO requests", Unit: "requests", PerTx: true, Alts: alts{
			a("InnoDB data file writes (the redo log's included)", 1, st("Innodb_data_writes")),
			a("device writes (/proc/diskstats, every process)", 1, counters.ExtraDevWrites),
		}},
		{Name: "Executes", Unit: "calls", PerTx: true, Alts: alts{
			a("statements from clients (the collectors' included)", 1, st("Questions")),
			a("statements the driver sent", 1, counters.ExtraClientStmt),
		}},
		{Name: "Transactions", Unit: "tx", PerTx: true, Alts: transactions},
		{Name: "Rollbacks", Unit: "tx", PerTx: true, Alts: alts{a("ROLLBACK statements", 1, st("Com_rollback"))}},
		{Name: "Temp tables on disk", Unit: "tables", PerTx: true, Alts: alts{a("", 1, st("Created_tmp_disk_tables"))}},
		{Name: "Redo writes", Unit: "writes", PerTx: true, Alts: alts{a("", 1, st("Innodb_log_writes"))}},
		{Name: "Redo waits", Unit: "waits", PerTx: true, Alts: alts{a("log buffer too small: waits to flush it", 1, st("Innodb_log_waits"))}},
		{Name: "Row lock waits", Unit: "waits", PerTx: true, Alts: alts{a("", 1, st("Innodb_row_lock_waits"))}},
		{Name: "Row lock time", Unit: "ms", PerTx: true, Alts: alts{a("", 1, st("Innodb_row_lock_time"))}},
		{Name: "Logons", Unit: "sessions", PerTx: true, Alts: alts{a("connection attempts", 1, st("Connections"))}},
		{Name: "Deadlocks", Unit: "count", Alts: alts{a("(MariaDB)", 1, st("Innodb_deadlocks"))}},
	}
}

// LoadProfile derives the load profile from the deltas of a window of the
// given length, extra figures merged in; the per-transaction divisor is
// the Transactions line (transactions).
func LoadProfile(source string, d map[string]float64, seconds float64) result.Profile {
	d = countable(d)
	return counters.Build(source, loadLines(), d, seconds, transactionCount(d))
}

// IOProfile derives the IO profile of the window: InnoDB's view in MB and
// the devices' where the OS collector ran.
func IOProfile(source string, d map[string]float64, seconds float64) result.Profile {
	defs := []counters.Line{
		{Name: "Engine read", Unit: "MB", Alts: alts{a("InnoDB data file bytes read", 1e-6, st("Innodb_data_read"))}},
		{Name: "Engine write", Unit: "MB", Alts: alts{a("InnoDB data file bytes written (doublewrite and redo included)", 1e-6, st("Innodb_data_written"))}},
		{Name: "Redo write", Unit: "MB", Alts: alts{a("", 1e-6, st("Innodb_os_log_written"))}},
		{Name: "Redo syncs", Unit: "syncs", Alts: alts{a("", 1, st("Innodb_os_log_fsyncs"))}},
		{Name: "Data file syncs", Unit: "syncs", Alts: alts{a("", 1, st("Innodb_data_fsyncs"))}},
		{Name: "Device reads", Unit: "requests", Alts: alts{a("/proc/diskstats", 1, counters.ExtraDevReads)}},
		{Name: "Device writes", Unit: "requests", Alts: alts{a("/proc/diskstats", 1, counters.ExtraDevWrites)}},
		{Name: "Device read", Unit: "MB", Alts: alts{a("/proc/diskstats", 1, counters.ExtraDevReadMB)}},
		{Name: "Device write", Unit: "MB", Alts: alts{a("/proc/diskstats", 1, counters.ExtraDevWriteMB)}},
	}
	return counters.Build(source, defs, d, seconds, 0)
}
