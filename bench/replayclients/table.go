package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// printTable writes the markdown table, the notes, the date and the build.
func printTable(w io.Writer, rows []*row, o options, build string) {
	sync := o.sync
	if sync == "" {
		sync = "not given (replay's default"
		if used := syncUsed(rows); used != "" {
			sync += ": " + used
		}
		sync += ")"
	}
	fmt.Fprintf(w, "\n## dbparity replay of real clients\n\n")
	fmt.Fprintf(w, "%s; %s\n", time.Now().Format("2006-01-02 15:04 MST"), build)
	fmt.Fprintf(w, "capture %s per client (pgbench-200: 10s); replay limit %s; --sync %s\n\n", o.duration, o.limit, sync)
	fmt.Fprintf(w, "dbparity CPU: the replaying process's own (user+sys, getrusage) over the replay, synchronisation and monitor included, per statement sent; target at most %d µs\n\n", cpuTargetUS)
	fmt.Fprintln(w, "| client | statements | captured s | speed 1: s | ratio | sync waits (every statement's, zero included) | releases | dbparity CPU µs/statement | end state (speed 1) | max: s | releases | dbparity CPU µs/statement | end state (max) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|")
	var notes []string
	for _, r := range rows {
		cells := []string{r.client}
		switch {
		case r.skipped != "":
			cells = append(cells, "skipped: "+r.skipped)
			cells = append(cells, make([]string, 11)...)
		case r.failed != "":
			cells = append(cells, "recording failed: "+r.failed)
			cells = append(cells, make([]string, 11)...)
		default:
			cells = append(cells, count(r.statements), fmt.Sprintf("%.1f", r.captureS))
			one, most := find(r.replays, "1"), find(r.replays, "max")
			cells = append(cells, replayCells(one, r.captureS, true)...)
			cells = append(cells, replayCells(most, r.captureS, false)...)
		}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		for _, n := range r.notes {
			notes = append(notes, r.client+": "+n)
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
	printBefore(w, rows, o.before)
	printPeers(w, rows)
}

func find(rs []*replayRow, speed string) *replayRow {
	for _, r := range rs {
		if r.speed == speed {
			return r
		}
	}
	return nil
}

// cpuTargetUS is issue 51's bound on dbparity's own CPU per replayed
// statement, synchronisation and monitor included.
const cpuTargetUS = 10

// replayCells: seconds, [ratio, sync waits,] releases, CPU per statement,
// end state.
func replayCells(r *replayRow, captureS float64, paced bool) []string {
	n := 4
	if paced {
		n = 6
	}
	out := make([]string, n)
	switch {
	case r == nil:
		out[0] = "not run"
	case r.notFinished > 0:
		out[0] = "not finished after " + r.notFinished.String()
	case r.failed != "":
		out[0] = r.failed
	default:
		out[0] = fmt.Sprintf("%.1f", r.seconds)
		k := 1
		if paced {
			if captureS > 0 {
				out[1] = fmt.Sprintf("%.2f", r.seconds/captureS)
			}
			if r.syncWaits >= 0 {
				out[2] = fmt.Sprintf("%d (mean %.2f ms)", r.syncWaits, r.syncWaitMeanMs)
			} else {
				out[2] = "–"
			}
			k = 3
		}
		out[k], out[k+1], out[k+2] = strconv.Itoa(r.releases), cpuCell(r.cpuPerStmt), r.end
	}
	return out
}

// cpuCell is a CPU per statement against the target.
func cpuCell(us float64) string {
	switch {
	case us <= 0:
		return "?"
	case us <= cpuTargetUS:
		return fmt.Sprintf("%.1f", us)
	}
	return fmt.Sprintf("%.1f (over %d)", us, cpuTargetUS)
}

func count(n int64) string {
	if n < 0 {
		return "?"
	}
	return strconv.FormatInt(n, 10)
}

// syncUsed is the --sync the replays' results name.
func syncUsed(rows []*row) string {
	for _, r := range rows {
		for _, rr := range r.replays {
			if rr.sync != "" {
				return rr.sync
			}
		}
	}
	return ""
}
