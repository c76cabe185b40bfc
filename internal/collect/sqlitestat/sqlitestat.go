// Package sqlitestat describes an SQLite database (pragmas, sizes) and
// derives its load profile from the page cache counters the target sums
// over its connections and from the files' sizes. SQLite keeps no
// statistics of its own beyond those; what it lacks is reported as not
// available.
package sqlitestat

import (
	"context"
	"fmt"
	"os"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/result"
)

var pragmas = []string{"page_size", "cache_size", "journal_mode", "synchronous", "mmap_size", "wal_autocheckpoint",
	"locking_mode", "temp_store", "busy_timeout", "auto_vacuum"}

// Describe returns the database's disclosure.
func Describe(ctx context.Context, c engine.Conn, path string) (*result.Database, error) {
	d := &result.Database{Product: "sqlite", Settings: map[string]string{}}
	if err := c.QueryRow(ctx, "SELECT sqlite_version()").Scan(&d.Version); err != nil {
		return nil, fmt.Errorf("describe sqlite: %w", err)
	}
	var pageSize, cacheSize int64
	for _, p := range pragmas {
		var v string
		if err := c.QueryRow(ctx, "PRAGMA "+p).Scan(&v); err != nil {
			continue // a pragma this build lacks
		}
		d.Settings[p] = v
		switch p {
		case "page_size":
			fmt.Sscan(v, &pageSize)
		case "cache_size":
			fmt.Sscan(v, &cacheSize)
		}
	}
	d.BlockSize = pageSize
	// A negative cache_size is in KiB, a positive one in pages.
	if cacheSize < 0 {
		d.BufferCacheBytes = -cacheSize * 1024
	} else {
		d.BufferCacheBytes = cacheSize * pageSize
	}
	d.DataBytes = FileBytes(path)
	if d.BufferCacheBytes > 0 {
		d.DataToCache = float64(d.DataBytes) / float64(d.BufferCacheBytes)
	}
	return d, nil
}

// FileBytes is the size of the database file.
func FileBytes(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// WALBytes is the size of the write-ahead log file (it grows to the
// checkpoint threshold and is then reused from its start).
func WALBytes(path string) int64 { return FileBytes(path + "-wal") }

func line(name, unit, source, note string, total *float64, seconds, txs float64) result.ProfileLine {
	l := result.ProfileLine{Name: name, Unit: unit, Total: total, Source: source, Note: note}
	if total == nil {
		l.Source = "not available"
		return l
	}
	if seconds > 0 {
		v := *total / seconds
		l.PerSecond = &v
	}
	if txs > 0 {
		v := *total / txs
		l.PerTx = &v
	}
	return l
}

func ptr(v float64) *float64 { return &v }

// LoadProfile derives the profile of a window from the deltas of the
// engine counters, the transactions the driver completed (SQLite counts
// none itself) and the driver's CPU, which includes the engine.
func LoadProfile(version string, d map[string]float64, seconds, txs, rollbacks, statements, cpu float64) result.Profile {
	p := result.Profile{Source: "sqlite " + version, Seconds: seconds, Transactions: txs}
	hit, miss, write := d["sqlite.cache_hit"], d["sqlite.cache_miss"], d["sqlite.cache_write"]
	p.Lines = []result.ProfileLine{
		line("DB time", "s", "", "SQLite keeps no time accounting", nil, seconds, txs),
		line("DB CPU", "s", "dbparity process CPU", "SQLite runs inside the driver: this is the engine and the driver together", ptr(cpu), seconds, txs),
		line("Logical reads", "pages", "sqlite.cache_hit + sqlite.cache_miss", "", ptr(hit+miss), seconds, txs),
		line("Physical reads", "pages", "sqlite.cache_miss", "pages read from the file: may be OS page-cache hits", ptr(miss), seconds, txs),
		line("Physical writes", "pages", "sqlite.cache_write", "dirty pages written (to the WAL in WAL mode)", ptr(write), seconds, txs),
		line("Executes", "calls", "statements the driver sent", "", ptr(statements), seconds, txs),
		line("Transactions", "tx", "transactions the driver completed", "", ptr(txs), seconds, txs),
		line("Rollbacks", "tx", "rollbacks the driver asked for", "", ptr(rollbacks), seconds, txs),
		line("WAL (redo) size", "bytes", "", "SQLite does not count WAL bytes; see the WAL file size in the disclosure", nil, seconds, txs),
	}
	return p
}
