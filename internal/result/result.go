// Package result owns the result file: one self-describing, schema-versioned
// JSON document per run, written atomically (temporary file, fsync, rename)
// so that a crash or a full disk never leaves half a file, and read back
// with clear errors. It also derives the run's summary figures, so every
// report computes them the same way.
package result

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dbparity/dbparity/internal/atomicfile"
	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/metrics"
)

// Schema names the format; the number after the slash changes when a
// field changes meaning. Readers accept every version they know.
const Schema = "dbparity.run/1"

// Run is one run's result file.
type Run struct {
	Schema string `json:"schema"`
	Tool   Tool   `json:"tool"`
	Label  string `json:"label"`
	// Round is the round of an interleaved comparison (dbparity ab): the
	// runs of two labels with the same round ran back to back.
	Round int `json:"round,omitempty"`
	// Step is the run's place in a sweep (dbparity sweep).
	Step          *Step  `json:"step,omitempty"`
	Partial       bool   `json:"partial"`
	PartialReason string `json:"partial_reason,omitempty"`
	// SeriesFile names the gzipped journal beside the result that holds
	// every point of the series, when the result's series were merged down
	// to stay small (a run longer than about 24 minutes at 1 s).
	SeriesFile string `json:"series_file,omitempty"`
	// Failed marks a run whose figures do not describe the workload: a
	// fault aborted it, too many transactions failed, or a transaction
	// type never committed. compare refuses it unless forced.
	Failed       bool   `json:"failed,omitempty"`
	FailedReason string `json:"failed_reason,omitempty"`
	// Recovered marks a result rebuilt from the journal of a run that
	// died (dbparity recover): what the journal kept, nothing more.
	Recovered bool `json:"recovered,omitempty"`
	// Events are the outages the sessions met: the server unreachable,
	// connections lost or statements timed out, until a commit again.
	Events       []Event   `json:"events,omitempty"`
	Command      []string  `json:"command"` // credentials redacted
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	MeasureStart time.Time `json:"measure_start"`
	MeasureEnd   time.Time `json:"measure_end"`

	Workload Workload `json:"workload"`
	Target   Target   `json:"target"`
	Host     Host     `json:"host"`
	Driver   Driver   `json:"driver"`

	// Measured window only.
	Transactions []Transaction    `json:"transactions"`
	Commit       Histogram        `json:"commit"`
	Errors       map[string]int64 `json:"errors"` // by class
	Statements   int64            `json:"statements"`
	// RoundTrips are the times the sessions waited for the server to
	// answer: a statement each, or a batch of pipelined statements.
	RoundTrips int64 `json:"round_trips,omitempty"`
	// First message of each error class seen in any phase.
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	// Every phase, so that counts can be reconciled with the database.
	Phases map[string]Phase   `json:"phases"`
	Series []metrics.Interval `json:"series"`

	// What the collectors saw (absent when they did not run).
	Disclosure  *Disclosure `json:"disclosure,omitempty"`
	Warnings    []string    `json:"warnings,omitempty"` // preflight: what may have disturbed the run
	LoadProfile *Profile    `json:"load_profile,omitempty"`
	IOProfile   *Profile    `json:"io_profile,omitempty"`
	// IOByBackend is the engine's IO by backend type and context, per
	// second (PostgreSQL: pg_stat_io on 16+, pg_stat_bgwriter before).
	IOByBackend []IOBackend `json:"io_by_backend,omitempty"`
	Waits       *Waits      `json:"waits,omitempty"`
	// TimedWaits are the server's own timed waits of the window (MySQL's
	// performance_schema), next to the sampled Waits.
	TimedWaits *TimedWaits  `json:"timed_waits,omitempty"`
	DBSeries   []DBInterval `json:"db_series,omitempty"`
	// DBCounters are the raw cumulative counters at the window's edges
	// ("view.column"), so any figure can be derived again later.
	DBCounters *Counters `json:"db_counters,omitempty"`
	// OS is the database host's operating system, from the source it
	// names; DriverOS is the driver's host when that is another host, or
	// when the database host could not be observed.
	OS       *OS `json:"os,omitempty"`
	DriverOS *OS `json:"driver_os,omitempty"`
	// IO is the run in SLOB's units, for workloads that test IO.
	IO *IOUnits `json:"io_units,omitempty"`
	// Replay is the replay workload's report.
	Replay *Replay `json:"replay,omitempty"`
	// Parts are the runs of each target of a multi-target run, which this
	// run aggregates (see Aggregate).
	Parts []*Run `json:"parts,omitempty"`
	// Part is set in the result of one part of a run split over several
	// driver processes (run --part); Merged in the run merged from them.
	Part   *Part   `json:"part,omitempty"`
	Merged *Merged `json:"merged,omitempty"`
	// CollectorStatements is what the collectors sent to the database during
	// the run: each one a transaction in its counters (the load profile and
	// series already leave them out), for reconciling those counters.
	CollectorStatements int64 `json:"collector_statements,omitempty"`
}

// Step is a run's place in a sweep: the parameter swept and its value
// at this step. Repetitions of a step share it (and differ in Round).
type Step struct {
	Param string  `json:"param"` // users, rate, warehouses or cpus
	Value float64 `json:"value"`
	Index int     `json:"index"` // the step's place in the sweep, from 1
}

// Event is one outage in a run.
type Event struct {
	// Kind is "outage" (the server could not be reached, or a statement
	// timed out) or "disconnect" (connections lost, reopened at once).
	Kind  string    `json:"kind"`
	Start time.Time `json:"start"`
	// End is the first commit after Start; absent when the run ended first.
	End        time.Time `json:"end,omitzero"`
	Failed     int64     `json:"failed_transactions"`
	Reconnects int64     `json:"reconnects"`
	Cause      string    `json:"cause"`
}

// Seconds is how long the event lasted, up to end when it never ended.
func (e Event) Seconds(end time.Time) float64 {
	if !e.End.IsZero() {
		end = e.End
	}
	return end.Sub(e.Start).Seconds()
}

// OS is what the operating system's counters show: over the measured
// window, and every interval of the run.
type OS struct {
	// Source is where the figures come from: "local" (this host's /proc),
	// "sql" (the database host's /proc read through the database's
	// connection) or "node-exporter"; "" in results before it was
	// recorded, which were all local.
	Source string `json:"source,omitempty"`
	// Window is absent (zero, and left out of the file) when no reading
	// was taken at the window's edges: a result recovered from its
	// journal has only the series. Read it through HasWindow.
	Window ostat.Rates   `json:"window,omitzero"`
	Series []ostat.Rates `json:"series,omitempty"`
	// DataDevice is the block device under the database's files, when
	// known: its figures feed the load profile's device lines.
	DataDevice string `json:"data_device,omitempty"`
}

// HasWindow tells whether o holds figures over the measured window. A
// window always has a length, so one without (the zero window of a
// recovered result, whether written by this version or an earlier one)
// is absent: its figures are n/a, never zeros.
func (o *OS) HasWindow() bool { return o != nil && o.Window.IntervalS > 0 }

// Counters are raw cumulative counters at the start and the end of the
// measured window.
type Counters struct {
	Start map[string]float64 `json:"start"`
	End   map[string]float64 `json:"end"`
}

// Disclosure is what the run was done on, beyond the basic host facts.
type Disclosure struct {
	// Host is the database host, as HostSource saw it: "local", "sql" or
	// "node-exporter" (see OS.Source), "none" when it could not be seen
	// (Host is then empty), "" in results before it was recorded (local).
	Host       disclose.HostInfo `json:"host"`
	HostSource string            `json:"host_source,omitempty"`
	// DriverHost is the driver's host when it is not the database host
	// (or the database host could not be seen).
	DriverHost *disclose.HostInfo `json:"driver_host,omitempty"`
	// Storage is the file system and device under the database's files
	// on the database host, when the source could see it.
	Storage  *disclose.StorageInfo `json:"storage,omitempty"`
	Database *Database             `json:"database,omitempty"`
}

type Tool struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
}

type Workload struct {
	Name       string         `json:"name"`
	Version    string         `json:"version"`
	Disclaimer string         `json:"disclaimer,omitempty"`
	Params     map[string]any `json:"params"`
}

type Target struct {
	Dialect       string            `json:"dialect"`
	URL           string            `json:"url"` // never holds a password
	Managed       bool              `json:"managed"`
	ServerVersion string            `json:"server_version,omitempty"`
	Settings      map[string]string `json:"settings,omitempty"`
	// CPUs are the CPUs the managed server's processes were allowed to
	// run on, when dbparity restricted them (a sweep over cpus=).
	CPUs []int `json:"server_cpus,omitempty"`
}

type Host struct {
	Hostname    string `json:"hostname"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	Kernel      string `json:"kernel"`
	CPUModel    string `json:"cpu_model"`
	Cores       int    `json:"cores"`
	MemoryBytes int64  `json:"memory_bytes"`
}

// Driver describes how the load was driven and what it cost.
type Driver struct {
	Users      int     `json:"users"`
	WarmupS    float64 `json:"warmup_s"`
	DurationS  float64 `json:"duration_s"` // as asked; the measured window is MeasureEnd-MeasureStart
	Seed       uint64  `json:"seed"`
	Reconnects int64   `json:"reconnects"`
	// RoundTripMs is the least time an empty query (SELECT 1) took on
	// one connection, of 20 before the run: the network's round trip and
	// the server's least answer, what each of a transaction's round trips
	// costs at least. Absent when not measured (SQLite; older results).
	RoundTripMs float64 `json:"round_trip_ms,omitempty"`
	// CPU of the dbparity process (user+sys) during the measured window.
	// A recovered result has none (its journal holds no CPU readings):
	// they are left out of its file, and Run.DriverCPU says so.
	CPUUserS float64 `json:"cpu_user_s,omitempty"`
	CPUSysS  float64 `json:"cpu_sys_s,omitempty"`
	// And over the whole run, warm-up and drain included.
	TotalCPUS float64 `json:"total_cpu_s,omitempty"`
	// SeriesStep is how many 1 s ticks the series' points stand for, when
	// more than one: the series were merged down to stay small, and
	// SeriesFile has every point.
	SeriesStep int `json:"series_step,omitempty"`
	// Rate is set for an open-loop run (--rate): the schedule and how
	// well the run kept it.
	Rate *Rate `json:"rate,omitempty"`
	// Think is set when the workload's sessions paused between
	// transactions as terminals do (order-entry --think): the scale of
	// the specification's keying and think times.
	Think float64 `json:"think_scale,omitempty"`
	// The driver's own load over the measured window, the proof that it
	// was not the bottleneck: the CPUs dbparity could use and its share
	// of them, the Go scheduler's latency (how long a session's goroutine
	// waited, runnable, to run), how late its timers fired (its threads
	// waiting for a CPU in the kernel's run queue, which the Go scheduler
	// does not see), and the time sessions spent between transactions on
	// the driver's account. Bound marks a run whose driver may have
	// limited it (see JudgeDriver).
	CPUs        int     `json:"cpus,omitempty"`
	CPUShare    float64 `json:"cpu_share,omitempty"`
	SchedP99Ms  float64 `json:"sched_latency_p99_ms,omitempty"`
	SchedMaxMs  float64 `json:"sched_latency_max_ms,omitempty"`
	WakeP99Ms   float64 `json:"wake_latency_p99_ms,omitempty"`
	WakeMaxMs   float64 `json:"wake_latency_max_ms,omitempty"`
	GapUsPerTx  float64 `json:"gap_us_per_tx,omitempty"`
	Bound       bool    `json:"driver_bound,omitempty"`
	BoundReason string  `json:"driver_bound_reason,omitempty"`
	// Slicing is set when the run took turns with another target in short
	// slices (dbparity ab --slice): its rates are over ActiveS, the time it
	// ran, not over the whole window.
	Slicing *Slicing `json:"slicing,omitempty"`
}

// Slicing describes a run driven in slices alternating with another
// target's (ABBA: the two sides swap every second slice, so a drift of
// the host cancels within a round). Each side's sessions stay connected
// and start transactions only in its own slices; a slice ends when its
// last transaction has ended, so the two targets never work at once.
type Slicing struct {
	SliceS float64 `json:"slice_s"` // the slice asked for
	With   string  `json:"with"`    // the label of the other side
	// ActiveS is the time the run's slices took in the measured window;
	// the driver's CPU is that of these slices.
	ActiveS float64 `json:"active_s"`
	// Slices are the slices wholly inside the measured window, in order
	// (two adjacent slots of one side are one slice): start from the
	// window's start, length, commits.
	Slices []Slice `json:"slices,omitempty"`
}

// Slice is one slice of a sliced run.
type Slice struct {
	T       float64 `json:"t"` // seconds from the measured window's start
	S       float64 `json:"s"`
	Commits int64   `json:"commits"`
}

// TPS is the slice's committed transactions per second.
func (s Slice) TPS() float64 {
	if s.S <= 0 {
		return 0
	}
	return float64(s.Commits) / s.S
}

// A run is driver-bound when the driver used more than BoundShare of the
// CPUs it could use, its sessions waited more than BoundSchedP99Ms at the
// 99th percentile in Go's scheduler, or its timers fired more than
// BoundWakeP99Ms late at the 99th percentile: the numbers it measured may
// be the driver's limit, not the platform's. The kernel's threshold is a
// scheduling slice (the kernel's slices are 3 ms and more): a driver
// sharing a 2-core host with a busy server wakes about 1.5 ms late at the
// 99th percentile, one whose CPU a busy loop also uses 14 ms.
const (
	BoundShare      = 0.80
	BoundSchedP99Ms = 1.0
	BoundWakeP99Ms  = 5.0
)

// JudgeDriver sets Bound from the driver's share and scheduler latency.
func (d *Driver) JudgeDriver() {
	switch {
	case d.CPUs > 0 && d.CPUShare > BoundShare:
		d.Bound, d.BoundReason = true, fmt.Sprintf("dbparity used %.0f%% of the %d CPU(s) it could use (over %.0f%%)", 100*d.CPUShare, d.CPUs, 100*BoundShare)
	case d.SchedP99Ms > BoundSchedP99Ms:
		d.Bound, d.BoundReason = true, fmt.Sprintf("its sessions waited %.1f ms (p99) for a CPU to run on (over %g ms): the driver's host is short of CPU", d.SchedP99Ms, BoundSchedP99Ms)
	case d.WakeP99Ms > BoundWakeP99Ms:
		d.Bound, d.BoundReason = true, fmt.Sprintf("its threads woke %.1f ms late (p99) for want of a CPU (over %g ms): the driver's host is short of CPU", d.WakeP99Ms, BoundWakeP99Ms)
	default:
		d.Bound, d.BoundReason = false, ""
	}
}

// Transaction is one transaction type's measured window.
type Transaction struct {
	Name      string    `json:"name"`
	Committed int64     `json:"committed"`
	Rollbacks int64     `json:"rollbacks"` // asked for by the workload, not errors
	Errors    int64     `json:"errors"`
	Retries   int64     `json:"retries"`
	Latency   Histogram `json:"latency"`
}

// Phase is the counts of one phase per transaction type.
type Phase struct {
	Committed  map[string]int64 `json:"committed"`
	Rollbacks  map[string]int64 `json:"rollbacks"`
	Errors     map[string]int64 `json:"errors"`
	Statements int64            `json:"statements"`
}

// Histogram is a latency histogram: readable percentiles, and the full
// histogram in HdrHistogram's compressed format for exact merging.
type Histogram struct {
	Count     int64   `json:"count"`
	MeanMs    float64 `json:"mean_ms"`
	P50Ms     float64 `json:"p50_ms"`
	P90Ms     float64 `json:"p90_ms"`
	P95Ms     float64 `json:"p95_ms"`
	P99Ms     float64 `json:"p99_ms"`
	P999Ms    float64 `json:"p999_ms"`
	MaxMs     float64 `json:"max_ms"`
	Saturated int64   `json:"saturated,omitempty"` // values above the histogram's range, recorded as its maximum
	HDR       string  `json:"hdr"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// NewHistogram summarises and encodes h.
func NewHistogram(h *metrics.Histogram) (Histogram, error) {
	enc, err := h.Encode()
	if err != nil {
		return Histogram{}, err
	}
	return Histogram{
		Count: h.Count(), MeanMs: ms(h.Mean()), P50Ms: ms(h.Quantile(0.50)), P90Ms: ms(h.Quantile(0.90)),
		P95Ms: ms(h.Quantile(0.95)), P99Ms: ms(h.Quantile(0.99)), P999Ms: ms(h.Quantile(0.999)),
		MaxMs: ms(h.Max()), Saturated: h.Saturated, HDR: enc,
	}, nil
}

// Decode returns the full histogram.
func (h Histogram) Decode() (*metrics.Histogram, error) {
	return metrics.DecodeHistogram(h.HDR, h.Saturated)
}

// Write stores r at path atomically: the file is either the complete new
// result or untouched. r holds no password to look for: the target and
// the command line were redacted where they entered (engine.Redact), so
// a finished run is never lost here.
func Write(path string, r *Run) error {
	// Compact: a long run's series make most of the file; `dbparity show`
	// is the way to read one (or jq).
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	return writeAtomic(path, append(b, '\n'))
}

func writeAtomic(path string, data []byte) error {
	if err := atomicfile.WriteBytes(path, data); err != nil {
		return fmt.Errorf("write result %s: %w", path, err)
	}
	return nil
}

// CheckWritable fails early, before a long run, when path cannot be
// written or already holds a file that overwrite does not allow replacing.
func CheckWritable(path string, overwrite bool) error {
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return fmt.Errorf("--out %s is a directory: name a file", path)
		}
		if !overwrite {
			return fmt.Errorf("--out %s already exists: choose another file or pass --force to replace it", path)
		}
	}
	if _, err := os.Stat(JournalPath(path)); err == nil && !overwrite {
		return fmt.Errorf("--out %s: %s holds the journal of a run that died: move it away or pass --force", path, JournalPath(path))
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: cannot create its directory: %v", path, err)
	}
	f, err := os.CreateTemp(dir, ".dbparity-probe-*")
	if err != nil {
		return fmt.Errorf("--out %s: directory is not writable: %v", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// MaxFileBytes bounds what Read takes: a result is a few MB by design
// (its series are bounded). MaxJournalBytes bounds a journal, read line
// by line (a day's run writes tens of MB).
const (
	MaxFileBytes    = 256 << 20
	MaxJournalBytes = 2 << 30
)

// openJSON checks, before reading more, that f is no larger than limit
// and that its first byte (after white space) opens a JSON object; what
// names the kind of file in the error.
func openJSON(f *os.File, path, what string, limit int64) (*bufio.Reader, error) {
	if st, err := f.Stat(); err == nil && st.Size() > limit {
		return nil, fmt.Errorf("%s is %d MiB: not a dbparity %s (those are at most a few MiB; refused above %d MiB)",
			path, st.Size()>>20, what, limit>>20)
	}
	br := bufio.NewReader(io.LimitReader(f, limit+1))
	for {
		c, err := br.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("%s is truncated (empty): not a dbparity %s", path, what)
		}
		if c == ' ' || c == '\n' || c == '\r' || c == '\t' {
			continue
		}
		if c != '{' {
			return nil, fmt.Errorf("%s is not a dbparity %s (it does not begin with a JSON object)", path, what)
		}
		br.UnreadByte()
		return br, nil
	}
}

// Read loads a result file.
func Read(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, errors.Unwrap(err))
	}
	defer f.Close()
	br, err := openJSON(f, path, "result file", MaxFileBytes)
	if err != nil {
		return nil, err
	}
	var r Run
	dec := json.NewDecoder(br)
	if err := dec.Decode(&r); err != nil {
		return nil, decodeError(path, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
