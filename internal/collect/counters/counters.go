// Package counters holds what every database's statistics collector
// shares: a snapshot of cumulative counters and the delta of two, the
// placing of a reading at the server's own instant (Clock), the
// AWR-style profile built from a window's deltas by lines that each name
// the counters they sum (the first alternative the server has wins), and
// the ASH-style sampler of session states. The engines' packages (pgstat,
// mystat) name their counters and lines; this package knows no engine.
package counters

import (
	"fmt"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/result"
)

// Snapshot is one reading of the cumulative counters, keyed
// "source.counter". A counter the server does not have is absent.
type Snapshot struct {
	At       time.Time          `json:"at"`
	Counters map[string]float64 `json:"counters"`
}

// Delta subtracts two snapshots: the work done between them.
func Delta(start, end *Snapshot) map[string]float64 {
	d := make(map[string]float64, len(end.Counters))
	for k, v := range end.Counters {
		if s, ok := start.Counters[k]; ok {
			d[k] = v - s
		}
	}
	return d
}

// Extra figures from other collectors, merged into a window's deltas so a
// profile can use them: keys outside any server's statistics. Those that
// are the driver process's own counts begin with result.DriverKeyPrefix:
// in a run split over driver processes they are one part's, where the
// server's counters are every part's, and merge recomputes the lines that
// take them.
const (
	ExtraServerCPU  = "os.server_cpu_s"                     // CPU seconds of the server's processes (local server)
	ExtraASHDBTime  = "ash.db_time_s"                       // sampled active sessions × window
	ExtraASHCPU     = "ash.cpu_s"                           // sampled active, not waiting × window
	ExtraDevReads   = "os.device_reads"                     // completed reads of the block devices
	ExtraDevWrites  = "os.device_writes"                    // completed writes
	ExtraDevReadMB  = "os.device_read_mb"                   // MB read
	ExtraDevWriteMB = "os.device_write_mb"                  // MB written
	ExtraClientStmt = result.DriverKeyPrefix + "statements" // statements the driver sent
)

// Alt is one way of computing a line: the sum of the deltas of Keys
// times Scale.
type Alt struct {
	Keys  []string
	Scale float64
	Note  string
}

// A is an alternative: keys summed, times scale, with a note.
func A(note string, scale float64, keys ...string) Alt {
	return Alt{Keys: keys, Scale: scale, Note: note}
}

// Line is one line of a profile: the first alternative whose keys all
// exist is used; PerTx adds a rate per transaction.
type Line struct {
	Name, Unit string
	Alts       []Alt
	PerTx      bool
}

// Build makes a profile of the deltas d over seconds, txs the
// per-transaction divisor.
func Build(source string, lines []Line, d map[string]float64, seconds, txs float64) result.Profile {
	p := result.Profile{Source: source, Seconds: seconds, Transactions: txs}
	for _, l := range lines {
		p.Lines = append(p.Lines, build(l, d, seconds, txs))
	}
	return p
}

func build(l Line, d map[string]float64, seconds, txs float64) result.ProfileLine {
	pl := result.ProfileLine{Name: l.Name, Unit: l.Unit}
	var tried []string
	for _, alt := range l.Alts {
		total, ok := 0.0, true
		for _, k := range alt.Keys {
			v, has := d[k]
			if !has {
				ok = false
				break
			}
			total += v
		}
		if !ok {
			tried = append(tried, strings.Join(alt.Keys, " + "))
			continue
		}
		total *= alt.Scale
		pl.Total = &total
		pl.Source = strings.Join(alt.Keys, " + ")
		pl.Note = alt.Note
		if seconds > 0 {
			ps := total / seconds
			pl.PerSecond = &ps
		}
		if l.PerTx && txs > 0 {
			pt := total / txs
			pl.PerTx = &pt
		}
		return pl
	}
	pl.Source = "not available"
	pl.Note = fmt.Sprintf("needs %s", strings.Join(tried, ", or "))
	if len(l.Alts) == 1 && l.Alts[0].Note != "" && strings.HasPrefix(l.Alts[0].Note, "needs") {
		pl.Note = l.Alts[0].Note
	}
	return pl
}
