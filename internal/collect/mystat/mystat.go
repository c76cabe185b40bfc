// Package mystat reads MySQL's and MariaDB's statistics: SHOW GLOBAL
// STATUS's cumulative counters and performance_schema's statement,
// transaction and wait summaries, from which it derives the AWR-style
// load and IO profiles of a window; it samples session states from the
// process list, names the top timed waits, describes the server (version,
// the settings not at their compiled defaults, sizes) and checks it
// before a run (purge lag, other work running). It never resets
// statistics. What the server lacks (performance_schema off) is reported
// as not available.
package mystat

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/collect/counters"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/result"
)

// Tag marks the collectors' statements, so that the sampler leaves them
// out of the process list; it also sends them as text (a comment first),
// as the driver sends utility statements.
const Tag = "/* dbparity-collector */ "

// statusNames are the SHOW GLOBAL STATUS counters read, keyed
// "status.NAME" in a snapshot.
var statusNames = []string{
	"Com_commit", "Com_rollback", "Questions", "Connections",
	"Com_select", "Com_insert", "Com_update", "Com_delete",
	"Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads", "Innodb_buffer_pool_write_requests",
	"Innodb_buffer_pool_pages_flushed", "Innodb_pages_read", "Innodb_pages_written",
	"Innodb_data_reads", "Innodb_data_writes", "Innodb_data_read", "Innodb_data_written", "Innodb_data_fsyncs",
	"Innodb_os_log_written", "Innodb_log_writes", "Innodb_os_log_fsyncs", "Innodb_log_waits",
	"Innodb_rows_read", "Innodb_rows_inserted", "Innodb_rows_updated", "Innodb_rows_deleted",
	"Handler_write", "Handler_update", "Handler_delete", "Handler_read_rnd_next",
	"Innodb_row_lock_waits", "Innodb_row_lock_time", "Innodb_deadlocks",
	"Created_tmp_disk_tables", "Created_tmp_tables",
}

// Keys of the performance_schema sums in a snapshot; each wait event's
// time and count are under "wait.EVENT.ps" and "wait.EVENT.count".
// KeyTransactions is every transaction that ended, committed or rolled
// back, autocommit statements included; KeyCommits is that less the
// ROLLBACK statements.
const (
	KeyStatementTime  = "ps.statements.sum_timer_wait_ps"
	KeyStatementCount = "ps.statements.count_star"
	KeyTransactions   = "ps.transactions.count_star"
	KeyCommits        = "ps.transactions.commits"
)

// serverNow is the server's clock when it began the statement, in
// seconds since the epoch.
const serverNow = "UNIX_TIMESTAMP(NOW(6))"

// Reader reads snapshots through one connection.
type Reader struct {
	c     engine.Conn
	query string
	ps    string // the performance_schema sums' query
	clock counters.Clock
	reads int64
	// PerfSchema tells whether performance_schema is on: without it there
	// is no statement time and no wait summary.
	PerfSchema bool
	// Transactions tells whether performance_schema counts transactions
	// (its transaction instrument and global_instrumentation on: MySQL
	// 8.0's default; MariaDB's is off, --managed mariadb turns it on).
	Transactions bool
}

// NewReader inspects the server and prepares the status query.
func NewReader(ctx context.Context, c engine.Conn) (*Reader, error) {
	r := &Reader{c: c, query: Tag + "SHOW GLOBAL STATUS WHERE Variable_name IN ('" + strings.Join(statusNames, "', '") + "')"}
	var on int64
	if err := c.QueryRow(ctx, Tag+"SELECT @@performance_schema").Scan(&on); err != nil {
		return nil, fmt.Errorf("read performance_schema: %w", err)
	}
	r.PerfSchema = on == 1
	if !r.PerfSchema {
		return r, nil
	}
	r.ps = Tag + "SELECT coalesce(sum(COUNT_STAR), 0), coalesce(sum(SUM_TIMER_WAIT), 0), 0, " + serverNow +
		" FROM performance_schema.events_statements_summary_global_by_event_name"
	// A server without the table (before MySQL 5.7 and MariaDB 10.5), or
	// with the instrument off, has no transaction counts.
	var enabled int64
	err := c.QueryRow(ctx, Tag+"SELECT (SELECT count(*) FROM performance_schema.setup_instruments WHERE NAME = 'transaction' AND ENABLED = 'YES')"+
		" + (SELECT count(*) FROM performance_schema.setup_consumers WHERE NAME = 'global_instrumentation' AND ENABLED = 'YES')").Scan(&enabled)
	if r.Transactions = err == nil && enabled == 2; r.Transactions {
		r.ps = Tag + "SELECT coalesce(sum(COUNT_STAR), 0), coalesce(sum(SUM_TIMER_WAIT), 0)," +
			" (SELECT coalesce(sum(COUNT_STAR), 0) FROM performance_schema.events_transactions_summary_global_by_event_name), " + serverNow +
			" FROM performance_schema.events_statements_summary_global_by_event_name"
	}
	// The server clock's offset, bounded by a few round trips taken now
	// (each reading bounds it further: counters.Clock).
	for range 3 {
		var now float64
		sent := time.Now()
		if err := c.QueryRow(ctx, Tag+"SELECT "+serverNow).Scan(&now); err != nil {
			break
		}
		r.clock.Place(sent, time.Now(), counters.Epoch(now))
	}
	return r, nil
}

// Reads is the readings taken. The server counts no transaction for
// them: Com_commit counts COMMIT statements, and the readings send none;
// performance_schema counts a transaction for a statement that reads or
// writes a transactional table (InnoDB's), and the readings read only
// status variables, performance_schema and information_schema.
func (r *Reader) Reads() int64 { return r.reads }

// Read takes one snapshot.
func (r *Reader) Read(ctx context.Context) (*counters.Snapshot, error) {
	// The snapshot is stamped when the server ran the query that reads
	// the transactions (performance_schema's, by the server's clock: see
	// counters.Clock), else when the status variables' query was sent: on
	// a saturated host the first query of a reading can take hundreds of
	// milliseconds, and the window's first reading stamped before it
	// looked earlier than what it read.
	s := &counters.Snapshot{At: time.Now(), Counters: make(map[string]float64, len(statusNames)+40)}
	r.reads++
	if err := r.rows(ctx, r.query, func(name string, v float64) { s.Counters["status."+name] = v }); err != nil {
		return nil, fmt.Errorf("SHOW GLOBAL STATUS: %w", err)
	}
	if !r.PerfSchema {
		return s, nil
	}
	var n, t, tx, now float64
	sent := time.Now()
	if err := r.c.QueryRow(ctx, r.ps).Scan(&n, &t, &tx, &now); err != nil {
		return nil, fmt.Errorf("performance_schema statements: %w", err)
	}
	s.At = r.clock.Place(sent, time.Now(), counters.Epoch(now))
	s.Counters[KeyStatementCount], s.Counters[KeyStatementTime] = n, t
	if r.Transactions {
		s.Counters[KeyTransactions] = tx
		s.Counters[KeyCommits] = tx - s.Counters["status.Com_rollback"]
	}
	err := r.waitRows(ctx, func(event string, count, ps float64) {
		s.Counters["wait."+event+".count"] = count
		s.Counters["wait."+event+".ps"] = ps
	})
	if err != nil {
		return nil, fmt.Errorf("performance_schema waits: %w", err)
	}
	return s, nil
}

// rows reads name, value rows.
func (r *Reader) rows(ctx context.Context, q string, each func(string, float64)) error {
	rows, err := r.c.Query(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var v float64
		if err := rows.Scan(&name, &v); err != nil {
			return err
		}
		each(name, v)
	}
	return rows.Err()
}

// waitRows reads the timed wait events that happened at all ("idle" is a
// session waiting for its client, not the server's time).
func (r *Reader) waitRows(ctx context.Context, each func(string, float64, float64)) error {
	rows, err := r.c.Query(ctx, Tag+"SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT"+
		" FROM performance_schema.events_waits_summary_global_by_event_name WHERE COUNT_STAR > 0 AND EVENT_NAME <> 'idle'")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n, t float64
		if err := rows.Scan(&name, &n, &t); err != nil {
			return err
		}
		each(name, n, t)
	}
	return rows.Err()
}

// TopWaits are the wait events of the window's deltas by time, most
// first, at most n: performance_schema times each wait (picoseconds) but
// keeps no histogram of them.
func TopWaits(d map[string]float64, n int) *result.TimedWaits {
	w := &result.TimedWaits{Source: "performance_schema.events_waits_summary_global_by_event_name",
		Note: "timed waits of the instruments enabled (setup_instruments); performance_schema keeps no wait histograms"}
	var total float64
	for k, ps := range d {
		event, ok := strings.CutSuffix(k, ".ps")
		if !ok || !strings.HasPrefix(event, "wait.") || ps <= 0 {
			continue
		}
		event = strings.TrimPrefix(event, "wait.")
		class, _, _ := strings.Cut(strings.TrimPrefix(event, "wait/"), "/")
		w.Events = append(w.Events, result.TimedWait{Class: class, Event: event, Count: d["wait."+event+".count"], Seconds: ps * 1e-12})
		total += ps * 1e-12
	}
	sort.Slice(w.Events, func(i, j int) bool {
		if w.Events[i].Seconds != w.Events[j].Seconds {
			return w.Events[i].Seconds > w.Events[j].Seconds
		}
		return w.Events[i].Event < w.Events[j].Event
	})
	if len(w.Events) > n {
		w.Events = w.Events[:n]
	}
	for i := range w.Events {
		w.Events[i].PctWaitTime = 100 * w.Events[i].Seconds / total
	}
	return w
}

// sampleQuery counts this database's other sessions running a statement
// by state; the process list cannot tell a session on CPU from one
// waiting, so every state has the class "state".
const sampleQuery = Tag + `SELECT 'state', coalesce(nullif(STATE, ''), COMMAND), count(*)
	FROM information_schema.PROCESSLIST
	WHERE ID <> CONNECTION_ID() AND DB = DATABASE() AND COMMAND NOT IN ('Sleep', 'Daemon', 'Binlog Dump')
	  AND coalesce(INFO, '') NOT LIKE '%dbparity-collector%'
	GROUP BY 2`

// NewSampler samples the process list every interval through c, which it
// uses alone.
func NewSampler(c engine.Conn, interval time.Duration) *counters.Sampler {
	return counters.NewSampler(c, interval, counters.SampleQuery{SQL: sampleQuery, Source: "information_schema.PROCESSLIST"})
}

// secretSetting matches settings whose values can hold credentials.
var secretSetting = regexp.MustCompile(`password|secret|key_id|_key$|^ssl_`)

// Describe returns the server's disclosure: version, the global variables
// not at their compiled defaults ("value [origin]"), page size, buffer
// pool and the database's size.
func Describe(ctx context.Context, c engine.Conn) (*result.Database, error) {
	d := &result.Database{Product: "mysql", Settings: map[string]string{}}
	var pool int64
	if err := c.QueryRow(ctx, Tag+"SELECT version(), @@innodb_page_size, @@innodb_buffer_pool_size").Scan(&d.Version, &d.BlockSize, &pool); err != nil {
		return nil, fmt.Errorf("describe mysql: %w", err)
	}
	d.BufferCacheBytes = pool
	if strings.Contains(strings.ToLower(d.Version), "mariadb") {
		d.Product = "mariadb"
	}
	// MariaDB tells each variable's origin in SYSTEM_VARIABLES, MySQL 8 in
	// performance_schema.variables_info.
	queries := []string{
		Tag + "SELECT VARIABLE_NAME, coalesce(GLOBAL_VALUE, ''), GLOBAL_VALUE_ORIGIN FROM information_schema.SYSTEM_VARIABLES" +
			" WHERE GLOBAL_VALUE_ORIGIN <> 'COMPILE-TIME'",
		Tag + "SELECT vi.VARIABLE_NAME, coalesce(gv.VARIABLE_VALUE, ''), vi.VARIABLE_SOURCE FROM performance_schema.variables_info vi" +
			" JOIN performance_schema.global_variables gv ON gv.VARIABLE_NAME = vi.VARIABLE_NAME WHERE vi.VARIABLE_SOURCE <> 'COMPILED'",
	}
	var err error
	for _, q := range queries {
		if err = settings(ctx, c, q, d.Settings); err == nil {
			break
		}
	}
	if err != nil {
		d.Settings["(settings)"] = "not available: " + err.Error()
	}
	var size float64
	if err := c.QueryRow(ctx, Tag+"SELECT coalesce(sum(data_length + index_length), 0) FROM information_schema.tables WHERE table_schema = database()").Scan(&size); err == nil {
		d.DataBytes = int64(size)
	}
	if d.BufferCacheBytes > 0 {
		d.DataToCache = float64(d.DataBytes) / float64(d.BufferCacheBytes)
	}
	return d, nil
}

func settings(ctx context.Context, c engine.Conn, q string, into map[string]string) error {
	rows, err := c.Query(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name, value, origin string
		if err := rows.Scan(&name, &value, &origin); err != nil {
			return err
		}
		name = strings.ToLower(name)
		if secretSetting.MatchString(name) && value != "" {
			value = "(redacted)"
		}
		into[name] = value + " [" + strings.ToLower(origin) + "]"
	}
	return rows.Err()
}

// Preflight returns warnings about the server's state before a run:
// performance_schema off or counting no transactions, a purge lag (undo
// history InnoDB has not yet purged, which it will do during the run),
// and other sessions running statements.
func Preflight(ctx context.Context, c engine.Conn, r *Reader) ([]string, error) {
	var out []string
	switch {
	case !r.PerfSchema:
		out = append(out, "performance_schema is OFF: no DB time, statement counts, transaction counts or timed waits from the server"+
			" (start it with performance_schema=ON and performance_schema_instrument='transaction=ON'; --managed mariadb does)")
	case !r.Transactions:
		out = append(out, "performance_schema counts no transactions (its transaction instrument is off): the load profile's"+
			" per-transaction figures divide by the driver's transactions (start the server with performance_schema_instrument='transaction=ON';"+
			" --managed mariadb does)")
	}
	var history float64
	err := c.QueryRow(ctx, Tag+"SELECT coalesce(max(COUNT), 0) FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'").Scan(&history)
	if err == nil && history > 100000 {
		out = append(out, fmt.Sprintf("InnoDB purge lag: %.0f undo log records not yet purged; the purge will compete with the run (wait for it to fall)", history))
	}
	var others, longest float64
	err = c.QueryRow(ctx, Tag+"SELECT count(*), coalesce(max(TIME), 0) FROM information_schema.PROCESSLIST"+
		" WHERE ID <> CONNECTION_ID() AND COMMAND NOT IN ('Sleep', 'Daemon', 'Binlog Dump') AND USER <> 'system user'"+
		" AND coalesce(INFO, '') NOT LIKE '%dbparity-collector%'").Scan(&others, &longest)
	if err != nil {
		return out, fmt.Errorf("preflight: %w", err)
	}
	if others > 0 {
		out = append(out, fmt.Sprintf("%.0f other sessions were running statements before the run (the longest for %.0f s): they compete with the workload", others, longest))
	}
	return out, nil
}
