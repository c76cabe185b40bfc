// Package pgstat reads PostgreSQL's cumulative statistics (pg_stat_database,
// pg_stat_wal, pg_stat_bgwriter, pg_stat_checkpointer, pg_stat_io,
// pg_stat_statements) and derives an AWR-style load profile from two
// snapshots; it samples session states from pg_stat_activity (waits), and
// describes the server (settings, sizes) for the disclosure. It never
// resets statistics: it reads cumulative counters and subtracts. What a
// server version lacks is detected from the catalog and reported as not
// available, never as zero.
package pgstat

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/collect/counters"
	"github.com/dbparity/dbparity/internal/engine"
)

// Snapshot is one reading of the cumulative counters, keyed "view.column"
// (pg_stat_io and pg_stat_statements summed over their rows). A counter
// the server does not have is absent from the map.
type Snapshot = counters.Snapshot

// Delta subtracts two snapshots: the work done between them.
func Delta(start, end *Snapshot) map[string]float64 { return counters.Delta(start, end) }

// sampleQuery reads the state of the other client sessions of this
// database, but those of the application named $1 (the collectors). An
// active session without a wait event is on CPU (or in code PostgreSQL
// does not instrument: ASH calls that CPU too).
const sampleQuery = `SELECT coalesce(wait_event_type, ''), coalesce(wait_event, ''), count(*)
	FROM pg_stat_activity
	WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
	  AND backend_type = 'client backend' AND application_name <> $1
	GROUP BY 1, 2`

// NewSampler samples pg_stat_activity every interval through c, which it
// uses alone, leaving out the sessions of application exclude.
func NewSampler(c engine.Conn, interval time.Duration, exclude string) *counters.Sampler {
	return counters.NewSampler(c, interval, counters.SampleQuery{SQL: sampleQuery, Args: []any{exclude}, Source: "pg_stat_activity"})
}

// source is one view and the counters wanted from it.
type source struct {
	view    string
	columns []string
	// from is the FROM/WHERE text; sum says the columns are summed over rows.
	from string
	sum  bool
}

var sources = []source{
	{view: "pg_stat_database", from: "pg_stat_database WHERE datname = current_database()", columns: []string{
		"xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_returned", "tup_fetched",
		"tup_inserted", "tup_updated", "tup_deleted", "conflicts", "temp_files", "temp_bytes", "deadlocks",
		"blk_read_time", "blk_write_time", "session_time", "active_time", "idle_in_transaction_time",
		"sessions", "sessions_abandoned", "sessions_fatal", "sessions_killed"}},
	{view: "pg_stat_wal", from: "pg_stat_wal", columns: []string{
		"wal_records", "wal_fpi", "wal_bytes", "wal_buffers_full", "wal_write", "wal_sync",
		"wal_write_time", "wal_sync_time"}},
	{view: "pg_stat_bgwriter", from: "pg_stat_bgwriter", columns: []string{
		"checkpoints_timed", "checkpoints_req", "checkpoint_write_time", "checkpoint_sync_time",
		"buffers_checkpoint", "buffers_clean", "maxwritten_clean", "buffers_backend",
		"buffers_backend_fsync", "buffers_alloc"}},
	{view: "pg_stat_checkpointer", from: "pg_stat_checkpointer", columns: []string{
		"num_timed", "num_requested", "write_time", "sync_time", "buffers_written"}},
	{view: "pg_stat_io", from: "pg_stat_io", sum: true, columns: []string{
		"reads", "read_time", "writes", "write_time", "writebacks", "extends", "hits", "evictions",
		"fsyncs", "fsync_time", "read_bytes", "write_bytes"}},
	{view: "pg_stat_statements", from: "pg_stat_statements", sum: true, columns: []string{
		"calls", "total_exec_time", "total_plan_time", "rows", "shared_blks_hit", "shared_blks_read",
		"shared_blks_dirtied", "shared_blks_written", "local_blks_read", "temp_blks_read",
		"temp_blks_written", "blk_read_time", "blk_write_time", "shared_blk_read_time",
		"shared_blk_write_time", "wal_records", "wal_fpi", "wal_bytes"}},
}

// Reader reads snapshots through one connection. The columns each view
// has on this server are found once, from the catalog.
type Reader struct {
	c       engine.Conn
	query   string
	keys    []string
	Version int // server_version_num
	reads   int64
	// byBackend: the query's last column is pg_stat_io by backend type
	// and context, as JSON.
	byBackend bool
	// stamped: the query's very last column is the server's clock
	// (serverNow), placed on this host's by clock.
	stamped bool
	clock   counters.Clock
	// Missing lists the views this server does not have (or, for
	// pg_stat_statements, that are not installed in this database).
	Missing []string
}

// NewReader inspects the server and prepares the snapshot query.
//
// Each reading is a transaction of its own, and PostgreSQL counts it in
// xact_commit with the workload's: Reads says how many there were, so the
// caller can take them out. (One long transaction would not be counted,
// but it holds back the vacuum horizon for the whole run, which slowed the
// workload by 5% in bench/collectors.)
func NewReader(ctx context.Context, c engine.Conn) (*Reader, error) {
	r := &Reader{c: c}
	if err := c.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&r.Version); err != nil {
		return nil, fmt.Errorf("read server version: %w", err)
	}
	var parts []string
	for _, s := range sources {
		have, err := viewColumns(ctx, c, s.view)
		if err != nil {
			return nil, err
		}
		var exprs []string
		for _, col := range s.columns {
			if !have[col] {
				continue
			}
			e := "coalesce(" + col + ", 0)::float8"
			if s.sum {
				e = "coalesce(sum(" + col + "), 0)::float8"
			}
			exprs = append(exprs, e)
			r.keys = append(r.keys, s.view+"."+col)
		}
		if len(exprs) == 0 {
			r.Missing = append(r.Missing, s.view)
			continue
		}
		// A view can be unreadable even where it exists (pg_stat_statements
		// created but its library not preloaded): test it once.
		q := "SELECT " + strings.Join(exprs, ", ") + " FROM " + s.from
		if err := try(ctx, c, "SELECT 1 FROM ("+q+") x"); err != nil {
			r.keys = r.keys[:len(r.keys)-len(exprs)]
			r.Missing = append(r.Missing, s.view)
			continue
		}
		parts = append(parts, fmt.Sprintf("(%s) s%d", q, len(parts)))
	}
	// pg_stat_io by backend type and context (16+), as one JSON column
	// read into keys of their own (ioKey).
	if !slices.Contains(r.Missing, "pg_stat_io") {
		var arr []string
		for _, col := range ioColumns {
			arr = append(arr, "coalesce(sum("+col+"), 0)")
		}
		q := "SELECT coalesce(json_object_agg(k, v), '{}')::text FROM (SELECT backend_type || '/' || context AS k, json_build_array(" +
			strings.Join(arr, ", ") + ") AS v FROM pg_stat_io GROUP BY 1) x"
		if try(ctx, c, q) == nil {
			parts = append(parts, fmt.Sprintf("(%s) s%d", q, len(parts)))
			r.byBackend = true
		}
	}
	// One round trip per snapshot: every view in one row, and the
	// server's clock when it began the statement (counters.Clock), whose
	// offset from this host's a few round trips taken now first bound.
	r.query = "SELECT * FROM " + strings.Join(parts, " CROSS JOIN ")
	for range 3 {
		var now float64
		sent := time.Now()
		if err := c.QueryRow(ctx, "SELECT "+serverNow).Scan(&now); err != nil {
			break
		}
		r.clock.Place(sent, time.Now(), counters.Epoch(now))
		r.stamped = true
	}
	if r.stamped {
		r.query = "SELECT *, " + serverNow + " FROM " + strings.Join(parts, " CROSS JOIN ")
	}
	return r, nil
}

// serverNow is the server's clock when it began the statement, in
// seconds since the epoch: a backend starved of CPU reads the statement
// only once it runs.
const serverNow = "extract(epoch FROM statement_timestamp())::float8"

// ioColumns are the pg_stat_io columns kept by backend type and context
// (the times need track_io_timing).
var ioColumns = []string{"reads", "read_time", "writes", "write_time", "extends", "extend_time", "fsyncs", "fsync_time"}

// ioKey is the counter key of a pg_stat_io column for one backend type
// and context: "pg_stat_io[client backend/normal].reads".
func ioKey(group, col string) string { return "pg_stat_io[" + group + "]." + col }

// try runs q and reports whether it failed.
func try(ctx context.Context, c engine.Conn, q string) error {
	_, err := c.Exec(ctx, q)
	return err
}

// CanForceFlush tells whether a session of this server can make its
// backend publish its counts at once: pg_stat_force_next_flush() (15+,
// executable by every role), which a server that speaks PostgreSQL's
// protocol and reports 15 may not have.
func CanForceFlush(ctx context.Context, c engine.Conn) bool {
	var ok bool
	err := c.QueryRow(ctx, "SELECT to_regprocedure('pg_stat_force_next_flush()') IS NOT NULL").Scan(&ok)
	return err == nil && ok
}

// Reads is the number of readings taken: each one a transaction in the
// server's counters.
func (r *Reader) Reads() int64 { return r.reads }

// viewColumns lists the columns a view has, in the connection's search path.
func viewColumns(ctx context.Context, c engine.Conn, view string) (map[string]bool, error) {
	rows, err := c.Query(ctx, "SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped", view)
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", view, err)
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("inspect %s: %w", view, err)
		}
		have[n] = true
	}
	return have, rows.Err()
}

// Has reports whether the server has the counter "view.column".
func (r *Reader) Has(key string) bool {
	for _, k := range r.keys {
		if k == key {
			return true
		}
	}
	return false
}

// Read takes one snapshot.
func (r *Reader) Read(ctx context.Context) (*Snapshot, error) {
	vals := make([]float64, len(r.keys))
	dest := make([]any, len(vals), len(vals)+1)
	for i := range vals {
		dest[i] = &vals[i]
	}
	var io string
	if r.byBackend {
		dest = append(dest, &io)
	}
	var now float64
	if r.stamped {
		dest = append(dest, &now)
	}
	r.reads++
	sent := time.Now()
	s := &Snapshot{At: sent, Counters: make(map[string]float64, len(vals))}
	if err := r.c.QueryRow(ctx, r.query).Scan(dest...); err != nil {
		return nil, fmt.Errorf("read statistics: %w", err)
	}
	if r.stamped {
		s.At = r.clock.Place(sent, time.Now(), counters.Epoch(now))
	}
	for i, k := range r.keys {
		s.Counters[k] = vals[i]
	}
	if r.byBackend {
		var groups map[string][]float64
		if err := json.Unmarshal([]byte(io), &groups); err != nil {
			return nil, fmt.Errorf("read pg_stat_io by backend: %w", err)
		}
		for g, v := range groups {
			for i, col := range ioColumns {
				if i < len(v) {
					s.Counters[ioKey(g, col)] = v[i]
				}
			}
		}
	}
	return s, nil
}
