package observe

import (
	"time"

	"github.com/dbparity/dbparity/internal/result"
)

// figures names the counters behind an engine's interval figures
// (result.DBInterval): each figure is the sum of its counters' deltas per
// second, scaled, and absent when the engine has no such counters or a
// reading lacks one of them.
type figures struct {
	commits, rollbacks []string
	logicalRead, reads []string
	writes             []string
	rowsChanged        []string
	walBytes           []string
	activeTime         []string
	activeScale        float64 // seconds per unit of activeTime
	// monotonic only grow while the server runs: one that went back
	// between two readings tells of a restart (resetBetween).
	monotonic []string
}

// dbInterval turns the deltas of one interval into rates, each figure
// from the engine's counters that fig names.
func dbInterval(fig figures, d map[string]float64, from, to, start time.Time) result.DBInterval {
	secs := to.Sub(from).Seconds()
	iv := result.DBInterval{At: to.Sub(start).Seconds(), Seconds: secs}
	if secs <= 0 {
		return iv
	}
	// rate sums the deltas of keys: absent when there are none, or when
	// any key is.
	rate := func(scale float64, keys []string) *float64 {
		if len(keys) == 0 {
			return nil
		}
		var v float64
		for _, k := range keys {
			x, ok := d[k]
			if !ok {
				return nil
			}
			v += x
		}
		v = v * scale / secs
		return &v
	}
	iv.Commits = rate(1, fig.commits)
	iv.Rollbacks = rate(1, fig.rollbacks)
	iv.LogicalRead = rate(1, fig.logicalRead)
	iv.Reads = rate(1, fig.reads)
	iv.Writes = rate(1, fig.writes)
	iv.RowsChanged = rate(1, fig.rowsChanged)
	iv.WALBytes = rate(1, fig.walBytes)
	iv.ActiveTime = rate(fig.activeScale, fig.activeTime)
	return iv
}

// deltas are b's values less a's, for the keys both have.
func deltas(a, b map[string]float64) map[string]float64 {
	d := make(map[string]float64, len(b))
	for k, v := range b {
		if x, ok := a[k]; ok {
			d[k] = v - x
		}
	}
	return d
}
