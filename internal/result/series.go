package result

import (
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/metrics"
)

// NewDBSeries returns a bounded database series (max 0: the default),
// for a result file that stays small however long the run; the journal
// keeps every point.
func NewDBSeries(max int) *metrics.Bounded[DBInterval] {
	return metrics.NewBounded(max, MergeDBIntervals, nil)
}

// NewOSSeries returns a bounded OS series (max 0: the default).
func NewOSSeries(max int) *metrics.Bounded[ostat.Rates] {
	return metrics.NewBounded(max, ostat.MergeRates, nil)
}

// MergeDBIntervals combines two adjacent intervals, a before b, into one
// covering both. Every figure but the WAL file's size is a per-second
// rate, so the merged one is the mean weighted by seconds, which keeps
// every total (rate × seconds); the WAL file's size is a reading at the
// end, b's. A figure absent on either side is absent: a mean over part of
// the time would not be one.
func MergeDBIntervals(a, b DBInterval) DBInterval {
	w := func(x, y *float64) *float64 {
		if x == nil || y == nil {
			return nil
		}
		s := a.Seconds + b.Seconds
		if !(s > 0) {
			v := *y
			return &v
		}
		v := (*x*a.Seconds + *y*b.Seconds) / s
		return &v
	}
	out := DBInterval{
		At:          b.At,
		Seconds:     a.Seconds + b.Seconds,
		Commits:     w(a.Commits, b.Commits),
		Rollbacks:   w(a.Rollbacks, b.Rollbacks),
		LogicalRead: w(a.LogicalRead, b.LogicalRead),
		Reads:       w(a.Reads, b.Reads),
		Writes:      w(a.Writes, b.Writes),
		RowsChanged: w(a.RowsChanged, b.RowsChanged),
		WALBytes:    w(a.WALBytes, b.WALBytes),
		ActiveTime:  w(a.ActiveTime, b.ActiveTime),
	}
	if a.WALFile != nil && b.WALFile != nil {
		v := *b.WALFile
		out.WALFile = &v
	}
	return out
}
