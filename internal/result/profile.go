package result

// Profile is an AWR-style profile over the measured window: each line a
// total, a rate per second and, for a load profile, a rate per
// transaction. A line whose source the server lacks has nil figures and
// says so: it is never shown as zero.
type Profile struct {
	Source       string        `json:"source"`       // for example "postgres 15.18"
	Seconds      float64       `json:"seconds"`      // length of the window the deltas cover
	Transactions float64       `json:"transactions"` // the per-transaction divisor: the database's commits + rollbacks
	Lines        []ProfileLine `json:"lines"`
	// Note says when the profile covers less than the measured window (the
	// server restarted or did not answer for part of it), or when the
	// server's counters lag (PostgreSQL before 15).
	Note string `json:"note,omitempty"`
}

// ProfileLine is one line of a profile.
type ProfileLine struct {
	Name      string   `json:"name"`
	Unit      string   `json:"unit"`
	Total     *float64 `json:"total"`
	PerSecond *float64 `json:"per_second"`
	PerTx     *float64 `json:"per_tx,omitempty"`
	Source    string   `json:"source"` // the view.column (or collector) it comes from
	Note      string   `json:"note,omitempty"`
}

// Line returns the line called name, or nil.
func (p *Profile) Line(name string) *ProfileLine {
	if p == nil {
		return nil
	}
	for i := range p.Lines {
		if p.Lines[i].Name == name {
			return &p.Lines[i]
		}
	}
	return nil
}

// Waits is the sampled session states of the measured window, as ASH
// counts them: each sample of an active session is one unit of DB time.
type Waits struct {
	Source            string      `json:"source"`
	IntervalMs        float64     `json:"interval_ms"`
	Samples           int64       `json:"samples"` // sampling rounds in the window
	ActiveSamples     int64       `json:"active_samples"`
	AvgActiveSessions float64     `json:"avg_active_sessions"`
	Events            []WaitEvent `json:"events"` // most sampled first
}

// WaitEvent is one wait event (or CPU) in the samples.
type WaitEvent struct {
	Class     string  `json:"class"` // wait_event_type, or "CPU" for active sessions not waiting
	Event     string  `json:"event"`
	Samples   int64   `json:"samples"`
	PctDBTime float64 `json:"pct_db_time"`
	AvgActive float64 `json:"avg_active"`
}

// TimedWaits are the wait events a server times itself, over the window:
// the most time first.
type TimedWaits struct {
	Source string      `json:"source"`
	Note   string      `json:"note,omitempty"`
	Events []TimedWait `json:"events"`
}

// TimedWait is one wait event's count and time in the window.
type TimedWait struct {
	Class       string  `json:"class"`
	Event       string  `json:"event"`
	Count       float64 `json:"count"`
	Seconds     float64 `json:"seconds"`
	PctWaitTime float64 `json:"pct_wait_time"` // of all the timed waits' time in the window
}

// Database is the database half of the disclosure.
type Database struct {
	Product    string `json:"product"`
	Version    string `json:"version"`
	VersionNum int    `json:"version_num,omitempty"`
	// Build is how the server was built, as it says (PostgreSQL's
	// version(): platform and compiler): two builds of one version can
	// differ in speed.
	Build string `json:"build,omitempty"`
	// Settings holds every setting not at its default ("value unit
	// [source]"); values that could hold secrets are redacted.
	Settings         map[string]string `json:"settings"`
	BlockSize        int64             `json:"block_size,omitempty"`
	BufferCacheBytes int64             `json:"buffer_cache_bytes"`
	DataBytes        int64             `json:"data_bytes"`
	// DataToCache is data size / buffer cache size: below 1 the data set
	// can be cached entirely, and a run says little about storage.
	DataToCache float64  `json:"data_to_cache"`
	Extensions  []string `json:"extensions,omitempty"`
	// Defaults holds every setting's compiled-in default ("value unit",
	// pg_settings.boot_val), so that two versions compared can tell a
	// default that changed from a setting someone set.
	Defaults    map[string]string `json:"defaults,omitempty"`
	Unavailable []string          `json:"unavailable,omitempty"` // statistics views this server lacks
}

// DBInterval is one interval of the database's own counters, per second.
// A figure the database does not keep is absent.
type DBInterval struct {
	At          float64  `json:"t"` // seconds from the start of the run to the end of the interval
	Seconds     float64  `json:"s"`
	Commits     *float64 `json:"commits_per_s,omitempty"`
	Rollbacks   *float64 `json:"rollbacks_per_s,omitempty"`
	LogicalRead *float64 `json:"logical_reads_per_s,omitempty"`
	Reads       *float64 `json:"physical_reads_per_s,omitempty"` // engine reads (may be page-cache hits)
	Writes      *float64 `json:"physical_writes_per_s,omitempty"`
	RowsChanged *float64 `json:"rows_changed_per_s,omitempty"`
	WALBytes    *float64 `json:"wal_bytes_per_s,omitempty"`
	WALFile     *float64 `json:"wal_file_bytes,omitempty"` // SQLite: size of the WAL file at the end of the interval
	ActiveTime  *float64 `json:"db_time_per_s,omitempty"`  // seconds of DB time per second: average active sessions
}

// IOBackend is one backend type's IO in one context over the window, per
// second; a figure the server does not keep is absent. Times need
// track_io_timing.
type IOBackend struct {
	Backend  string   `json:"backend"`           // client backend, checkpointer, background writer, autovacuum worker, ...
	Context  string   `json:"context,omitempty"` // normal, vacuum, bulkread, bulkwrite (16+)
	Reads    *float64 `json:"reads,omitempty"`
	ReadMs   *float64 `json:"read_ms,omitempty"`
	Writes   *float64 `json:"writes,omitempty"`
	WriteMs  *float64 `json:"write_ms,omitempty"`
	Extends  *float64 `json:"extends,omitempty"`
	ExtendMs *float64 `json:"extend_ms,omitempty"`
	Fsyncs   *float64 `json:"fsyncs,omitempty"`
	FsyncMs  *float64 `json:"fsync_ms,omitempty"`
	Source   string   `json:"source"`
}
