package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/dbparity/dbparity/internal/metrics"
)

// Recover rebuilds the result of a run that died (killed outright, out of
// memory, a crash, a disk that filled) from its journal. The result is
// marked partial and recovered: its counts are those of the journal's last
// whole interval, its latency histograms those of the last checkpoint
// (every minute), and it says so in its warnings. What the journal does
// not hold is absent, never zero: the driver's CPU and load (no readings),
// the statement, round trip and reconnect counts (the intervals after the
// checkpoint carry none), the latencies when the checkpoint held none,
// the database's profiles, waits and OS window (see Run.MarshalJSON).
func Recover(journalPath string) (*Run, error) {
	h, entries, cut, err := ReadJournal(journalPath)
	if err != nil {
		return nil, err
	}
	r := *h
	r.Schema = Schema
	base := filepath.Base(journalPath)
	last := -1
	for i, e := range entries {
		if e.Checkpoint != nil {
			last = i
		}
	}
	if last < 0 {
		return nil, fmt.Errorf("%s holds no checkpoint (the run died in its first second, or it is a replay's journal): nothing to recover", base)
	}
	cp := entries[last].Checkpoint
	r.Start, r.End, r.MeasureStart, r.MeasureEnd = cp.Start, cp.End, cp.MeasureStart, cp.MeasureEnd
	r.Transactions, r.Commit, r.Errors = cp.Transactions, cp.Commit, cp.Errors
	r.ErrorSamples, r.Phases, r.Events = cp.ErrorSamples, cp.Phases, cp.Events
	// The checkpoint's statement and reconnect counts stop where it was
	// taken, while the intervals after it count on: they are not the
	// window's, and are left out (absent, not zero). The same for every
	// figure of the driver's own load, which the journal never holds.
	r.Statements, r.RoundTrips, r.Driver.Reconnects = 0, 0, 0
	for k, ph := range r.Phases {
		ph.Statements = 0
		r.Phases[k] = ph
	}
	d := &r.Driver
	d.CPUUserS, d.CPUSysS, d.TotalCPUS, d.CPUs, d.CPUShare = 0, 0, 0, 0, 0
	d.SchedP99Ms, d.SchedMaxMs, d.WakeP99Ms, d.WakeMaxMs, d.GapUsPerTx = 0, 0, 0, 0, 0
	d.Bound, d.BoundReason = false, ""
	r.Partial, r.PartialReason, r.Failed, r.FailedReason = cp.Partial, cp.PartialReason, cp.Failed, cp.FailedReason
	histogramsAt := cp.End

	// The intervals after the checkpoint add their counts.
	byName := map[string]int{}
	for i, t := range r.Transactions {
		byName[t.Name] = i
	}
	var lateErrors int64
	for _, e := range entries[last+1:] {
		iv := e.Interval
		if iv == nil {
			continue
		}
		end := r.Start.Add(time.Duration(iv.At * float64(time.Second)))
		r.End = end
		ph := r.Phases[iv.Phase]
		if iv.Phase == "measure" && r.MeasureStart.IsZero() {
			r.MeasureStart = end.Add(-time.Duration(iv.Seconds * float64(time.Second)))
		}
		if iv.Phase == "measure" {
			r.MeasureEnd = end
		}
		for i, c := range e.Types {
			if i >= len(r.Transactions) {
				break
			}
			name := r.Transactions[i].Name
			if ph.Committed != nil {
				ph.Committed[name] += c.Committed
				ph.Rollbacks[name] += c.Rollbacks
				ph.Errors[name] += c.Errors
			}
			if iv.Phase == "measure" {
				t := &r.Transactions[i]
				t.Committed += c.Committed
				t.Rollbacks += c.Rollbacks
				t.Errors += c.Errors
				t.Retries += c.Retries
				lateErrors += c.Errors
			}
		}
		r.Phases[iv.Phase] = ph
	}
	if r.MeasureStart.IsZero() || !r.MeasureEnd.After(r.MeasureStart) {
		return nil, errors.New(base + ": the run died before its measured window began: nothing measured to recover")
	}
	if lateErrors > 0 {
		if r.Errors == nil {
			r.Errors = map[string]int64{}
		}
		r.Errors["unclassified"] += lateErrors
	}

	// The series, bounded as a run bounds them (the journal keeps every
	// point).
	series, db, os := metrics.NewSeries(0), NewDBSeries(0), NewOSSeries(0)
	for _, e := range entries {
		switch {
		case e.Part != nil:
			// A part of a split run: as its start was agreed, so that
			// merge can place it among the others.
			r.Part = e.Part
		case e.Interval != nil:
			series.Add(*e.Interval)
		case e.DB != nil:
			db.Add(*e.DB)
		case e.OS != nil:
			os.Add(*e.OS)
		}
	}
	r.Series, r.DBSeries = series.Points(), db.Points()
	if series.Step() > 1 {
		r.Driver.SeriesStep = series.Step()
	}
	if os.Len() > 0 {
		r.OS = &OS{Series: os.Points()}
	}

	why := fmt.Sprintf("recovered from %s: the run died after %s of its measured window",
		base, r.MeasureEnd.Sub(r.MeasureStart).Round(time.Second))
	if r.PartialReason != "" {
		why += " (it was already ending: " + r.PartialReason + ")"
	}
	r.Partial, r.PartialReason, r.Recovered = true, why, true
	r.Warnings = append(r.Warnings, fmt.Sprintf(
		"recovered from the journal: counts cover the measured window to its last whole interval; latency histograms cover it to the last checkpoint, %s before that; no database profile, waits or OS window",
		r.End.Sub(histogramsAt).Round(time.Second)))
	if cut {
		r.Warnings = append(r.Warnings, "the journal's last line was cut when the run died: it was left out")
	}
	if sl := r.Driver.Slicing; sl != nil {
		sl.ActiveS, sl.Slices = 0, nil
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"it ran in turns with %s (ab --slice), and the journal does not hold its slices: its rates are over the whole window, of which it ran about half", sl.With))
	}
	return &r, nil
}

// MarshalJSON writes r; a recovered run (or one merged from a recovered
// part) without the figures its journal did not hold, which a reader
// would otherwise take for measured zeros: the statement counts (the run's
// and each phase's), the reconnects, the count of a latency histogram its
// last checkpoint held nothing of (the window's COMMITs and transactions
// went on after it), and a sliced run's active time. The driver's CPU and
// load are zero in such a run and their fields omitted when zero. Older
// files, which hold zeros there, read as before.
func (r Run) MarshalJSON() ([]byte, error) {
	type plain Run
	if !r.Recovered {
		return json.Marshal((*plain)(&r))
	}
	type phase struct {
		Phase
		Statements *int64 `json:"statements,omitempty"`
	}
	type transaction struct {
		Transaction
		Latency recoveredHistogram `json:"latency"`
	}
	type slicing struct {
		Slicing
		ActiveS *float64 `json:"active_s,omitempty"`
	}
	type driver struct {
		Driver
		Reconnects *int64   `json:"reconnects,omitempty"`
		Slicing    *slicing `json:"slicing,omitempty"`
	}
	out := struct {
		*plain
		Driver       driver             `json:"driver"`
		Transactions []transaction      `json:"transactions"`
		Commit       recoveredHistogram `json:"commit"`
		Statements   *int64             `json:"statements,omitempty"`
		Phases       map[string]phase   `json:"phases"`
	}{plain: (*plain)(&r), Driver: driver{Driver: r.Driver}, Commit: recoveredHistogram(r.Commit)}
	if sl := r.Driver.Slicing; sl != nil {
		out.Driver.Slicing = &slicing{Slicing: *sl}
		if sl.ActiveS > 0 {
			out.Driver.Slicing.ActiveS = &sl.ActiveS
		}
	}
	if r.Transactions != nil {
		out.Transactions = make([]transaction, len(r.Transactions))
		for i, t := range r.Transactions {
			out.Transactions[i] = transaction{Transaction: t, Latency: recoveredHistogram(t.Latency)}
		}
	}
	if r.Phases != nil {
		out.Phases = make(map[string]phase, len(r.Phases))
		for k, ph := range r.Phases {
			out.Phases[k] = phase{Phase: ph}
		}
	}
	return json.Marshal(out)
}

// histogramJSON is a Histogram as a file holds it. An empty histogram has
// no percentiles (absent, not zero); Count is left out only where it is
// not known (recoveredHistogram).
type histogramJSON struct {
	Count     *int64   `json:"count,omitempty"`
	MeanMs    *float64 `json:"mean_ms,omitempty"`
	P50Ms     *float64 `json:"p50_ms,omitempty"`
	P90Ms     *float64 `json:"p90_ms,omitempty"`
	P95Ms     *float64 `json:"p95_ms,omitempty"`
	P99Ms     *float64 `json:"p99_ms,omitempty"`
	P999Ms    *float64 `json:"p999_ms,omitempty"`
	MaxMs     *float64 `json:"max_ms,omitempty"`
	Saturated int64    `json:"saturated,omitempty"`
	HDR       string   `json:"hdr"`
}

func (h Histogram) toJSON(count bool) histogramJSON {
	out := histogramJSON{Saturated: h.Saturated, HDR: h.HDR}
	if count || h.Count > 0 {
		out.Count = &h.Count
	}
	if h.Count > 0 {
		out.MeanMs, out.P50Ms, out.P90Ms, out.P95Ms = &h.MeanMs, &h.P50Ms, &h.P90Ms, &h.P95Ms
		out.P99Ms, out.P999Ms, out.MaxMs = &h.P99Ms, &h.P999Ms, &h.MaxMs
	}
	return out
}

// MarshalJSON writes h: an empty histogram without percentiles, which
// it does not have (a reader gets zeros back, and Count says why).
func (h Histogram) MarshalJSON() ([]byte, error) { return json.Marshal(h.toJSON(true)) }

// recoveredHistogram is a recovered run's latency histogram: one its last
// checkpoint held nothing of has no count either (the window's went on
// after the checkpoint, unknown).
type recoveredHistogram Histogram

func (h recoveredHistogram) MarshalJSON() ([]byte, error) {
	return json.Marshal(Histogram(h).toJSON(false))
}
