package pgstat

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/result"
)

// secretSetting matches settings whose values can hold credentials
// (connection strings, commands with arguments): their values are never
// recorded.
var secretSetting = regexp.MustCompile(`conninfo|passphrase|password|secret|_command$|^ssl_.*file$`)

// Describe returns the database's disclosure: version, the settings that
// differ from their defaults, buffer cache and data sizes.
func Describe(ctx context.Context, c engine.Conn, missing []string) (*result.Database, error) {
	d := &result.Database{Product: "postgres", Settings: map[string]string{}, Unavailable: missing}
	err := c.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('server_version_num')::int, version(),
		current_setting('block_size')::bigint,
		(SELECT setting::bigint FROM pg_settings WHERE name = 'shared_buffers') * current_setting('block_size')::bigint,
		pg_database_size(current_database())`).
		Scan(&d.Version, &d.VersionNum, &d.Build, &d.BlockSize, &d.BufferCacheBytes, &d.DataBytes)
	if err != nil {
		return nil, fmt.Errorf("describe the database: %w", err)
	}
	if d.BufferCacheBytes > 0 {
		d.DataToCache = float64(d.DataBytes) / float64(d.BufferCacheBytes)
	}
	rows, err := c.Query(ctx, `SELECT name, coalesce(setting, ''), coalesce(unit, ''), source FROM pg_settings
		WHERE source NOT IN ('default', 'client', 'session') ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	for rows.Next() {
		var name, value, unit, source string
		if err := rows.Scan(&name, &value, &unit, &source); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read settings: %w", err)
		}
		if secretSetting.MatchString(name) && value != "" {
			value = "(redacted)"
		}
		if unit != "" {
			value += " " + unit
		}
		d.Settings[name] = value + " [" + source + "]"
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	d.Defaults = map[string]string{}
	rows, err = c.Query(ctx, `SELECT name, coalesce(boot_val, ''), coalesce(unit, '') FROM pg_settings`)
	if err != nil {
		return nil, fmt.Errorf("read settings' defaults: %w", err)
	}
	for rows.Next() {
		var name, value, unit string
		if err := rows.Scan(&name, &value, &unit); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read settings' defaults: %w", err)
		}
		if secretSetting.MatchString(name) && value != "" {
			value = "(redacted)"
		}
		if unit != "" {
			value += " " + unit
		}
		d.Defaults[name] = value
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = c.Query(ctx, "SELECT extname || ' ' || extversion FROM pg_extension ORDER BY 1")
	if err != nil {
		return nil, fmt.Errorf("read extensions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			return nil, err
		}
		d.Extensions = append(d.Extensions, e)
	}
	return d, rows.Err()
}

// Preflight returns one line for each thing on the server that would
// disturb a measurement now: maintenance or a checkpoint running, other
// sessions at work in the database.
func Preflight(ctx context.Context, c engine.Conn) ([]string, error) {
	var autovac, checkpoint, others int
	err := c.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE backend_type = 'autovacuum worker'),
		count(*) FILTER (WHERE backend_type = 'checkpointer' AND (wait_event = 'CheckpointWriteDelay' OR wait_event_type = 'IO')),
		count(*) FILTER (WHERE backend_type = 'client backend' AND state <> 'idle' AND pid <> pg_backend_pid()
			AND datname = current_database())
		FROM pg_stat_activity`).Scan(&autovac, &checkpoint, &others)
	if err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	var w []string
	if autovac > 0 {
		w = append(w, strconv.Itoa(autovac)+" autovacuum worker(s) running (vacuum or analyze): they compete with the workload")
	}
	if checkpoint > 0 {
		w = append(w, "a checkpoint is in progress: its writes compete with the workload")
	}
	if others > 0 {
		w = append(w, strconv.Itoa(others)+" other session(s) active in the database before the run")
	}
	return w, nil
}
