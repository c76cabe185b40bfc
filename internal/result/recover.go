package result

import (
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
// (every minute), and it says so in its warnings.
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
	r.Transactions, r.Commit, r.Errors, r.Statements = cp.Transactions, cp.Commit, cp.Errors, cp.Statements
	r.ErrorSamples, r.Phases, r.Events = cp.ErrorSamples, cp.Phases, cp.Events
	r.Driver.Reconnects = cp.Driver.Reconnects
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
