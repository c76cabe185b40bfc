package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dbparity/dbparity/internal/result"
)

// Options change what a summary shows.
type Options struct {
	// Literals shows a replay's statement texts with their literal values
	// (when the replay kept them), not only fingerprints.
	Literals bool
	// TopStatements is how many fingerprints a replay report lists
	// (default 15).
	TopStatements int
}

// replayText prints a replay's report: capture against replay, outcomes
// that diverge, sessions that differ, and the statements that gained the
// most time.
func replayText(w io.Writer, r *result.Run, o Options) error {
	rp := r.Replay
	if rp == nil {
		return nil
	}
	if o.TopStatements <= 0 {
		o.TopStatements = 15
	}
	speed := "as fast as possible"
	if rp.Speed > 0 {
		speed = fmt.Sprintf("speed %g", rp.Speed)
	}
	timing := "sync " + rp.Sync
	if rp.Sync == "" {
		timing = rp.Order + " order"
	}
	fmt.Fprintf(w, "\n  replay of %s (%s, %s)\n", rp.Capture, speed, timing)
	fmt.Fprintf(w, "    duration     captured %s, replayed in %s\n", secs(rp.CaptureSeconds), secs(rp.ReplaySeconds))
	fmt.Fprintf(w, "    sessions     %d (%d could not connect", rp.Sessions, rp.SessionsFailed)
	if rp.SessionsFiltered > 0 {
		fmt.Fprintf(w, "; %d more left out by the session filters", rp.SessionsFiltered)
	}
	fmt.Fprintf(w, ")\n")
	fmt.Fprintf(w, "    statements   %d captured, %d replayed: %d ok, %d failed", rp.Statements, rp.Replayed, rp.OK, rp.Errors)
	for _, k := range sortedKeys(rp.NotReplayed) {
		fmt.Fprintf(w, "; %d not replayed (%s)", rp.NotReplayed[k], k)
	}
	fmt.Fprintf(w, "\n    transactions %d captured, %d replayed (committed blocks and autocommit statements; of them COMMITs %d and %d)",
		rp.CapturedTransactions, rp.ReplayedTransactions, rp.CapturedCommits, rp.ReplayedCommits)
	if n := rp.ServerRollbacks; n > 0 {
		fmt.Fprintf(w, "; %d rolled back by the replay where a deadlock had rolled them back in the capture", n)
	}
	if n := rp.Retries; n > 0 {
		fmt.Fprintf(w, "; blocks run again from their BEGIN %d times after a deadlock the capture had not met", n)
	}
	fmt.Fprintln(w)
	if l := rp.Lag; l != nil {
		fmt.Fprintf(w, "    lag          behind schedule when issued: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms\n",
			l.P50Ms, l.P95Ms, l.P99Ms, l.MaxMs)
	}
	if sw := rp.SyncWait; sw != nil && sw.MaxMs > 0 {
		fmt.Fprintf(w, "    sync wait    for other sessions' statements: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms\n",
			sw.P50Ms, sw.P95Ms, sw.P99Ms, sw.MaxMs)
	}
	if n := len(rp.Releases); n > 0 {
		fmt.Fprintf(w, "    sync released %d times, to break a cycle with the server's lock waits:", n)
		for i, rel := range rp.Releases {
			if i == 5 {
				fmt.Fprintf(w, " (%d more in the result file)", n-5)
				break
			}
			fmt.Fprintf(w, "\n      at %s after %s: %s", secs(rel.AtS), secs(rel.WaitedS), rel.Cycle)
		}
		fmt.Fprintln(w)
	}
	for i, st := range rp.Stalls {
		if i == 5 {
			fmt.Fprintf(w, "    (%d more stalls in the result file)\n", len(rp.Stalls)-5)
			break
		}
		fmt.Fprintf(w, "    STALLED      session %s %s %d for %s (seen at %s), waiting for %s: %s\n", st.Session, st.What,
			st.Statement, secs(st.Seconds), secs(st.AtS), st.Waiting, clip(st.Fingerprint, 60))
	}
	if ty := rp.Typing; ty != nil {
		fmt.Fprintf(w, "    typing       %d parameters in %d statement texts (%d executions) bound with types inferred from their values; %d texts untyped (not preparable before the replay)\n",
			ty.Params, ty.Texts, ty.Executions, ty.Failed)
	}
	if len(rp.Admin) > 0 {
		fmt.Fprintf(w, "    not sent     statements that change the server (--replay-admin sends them):")
		for _, k := range sortedKeys(rp.Admin) {
			fmt.Fprintf(w, " %s ×%d;", clip(k, 60), rp.Admin[k])
		}
		fmt.Fprintln(w)
	}
	for _, n := range rp.Notes {
		fmt.Fprintf(w, "    note         %s\n", n)
	}
	div := rp.Divergent()
	compared := "errors and commits compared, not rows or results"
	if rp.RowsCompared > 0 {
		compared = fmt.Sprintf("errors, commits and the rows of %d statements compared, not results", rp.RowsCompared)
	}
	fmt.Fprintf(w, "\n    outcomes against the capture (%d divergent statements; %s)\n", div, compared)
	if len(rp.Outcomes) == 0 {
		fmt.Fprintf(w, "      every replayed statement succeeded or failed as it did in the capture\n")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "      kind\tcount\tcaptured\treplayed\tstatement\n")
		for _, x := range rp.Outcomes {
			captured := state(x.Captured)
			if x.Kind == result.OutcomeUntold {
				captured = "not in the log"
			}
			fmt.Fprintf(tw, "      %s\t%d\t%s\t%s\t%s\n", x.Kind, x.Count, captured, state(x.Replayed), clip(x.Fingerprint, 70))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if n := rp.RolledBackAlike(); n > 0 {
			fmt.Fprintf(w, "      rolled back alike: %d %s ended otherwise than captured inside transactions that rolled back in the capture and in the replay: they leave nothing, as captured (not divergent)\n",
				n, plural(n, "statement", "statements"))
		}
		if n := rp.Untold(); n > 0 {
			fmt.Fprintf(w, "      log cannot tell: %d %s failed where the capture records no errors (MySQL's and MariaDB's logs): %s may have failed in the application too (not counted as divergent)\n",
				n, plural(n, "statement", "statements"), plural(n, "it", "they"))
		}
	}
	if len(rp.SessionDiffs) > 0 {
		fmt.Fprintf(w, "\n    sessions whose replay differs from their capture (%d)\n", len(rp.SessionDiffs))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "      session\tok: captured\treplayed\tcommits: captured\treplayed\terrors: captured\treplayed\t\n")
		for i, d := range rp.SessionDiffs {
			if i == 10 {
				fmt.Fprintf(tw, "      (%d more in the result file)\t\t\t\t\t\t\t\n", len(rp.SessionDiffs)-10)
				break
			}
			fmt.Fprintf(tw, "      %s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", d.ID, d.CapturedOK, d.ReplayedOK, d.CapturedCommits,
				d.ReplayedCommits, d.CapturedErrors, d.ReplayedErrors)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\n    statements, most time added first (capture: server time from the log; replay: client time, round trip included)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "      calls\treplayed\tcapture mean ms\tp95\treplay mean ms\tp95\tratio\t  statement\n")
	for i, f := range rp.Fingerprints {
		if i == o.TopStatements {
			fmt.Fprintf(tw, "      (%d more in the result file)\t\t\t\t\t\t\t\n", len(rp.Fingerprints)-i)
			break
		}
		text := f.Text
		if o.Literals && f.Example != "" {
			text = f.Example
		}
		ratio := "-"
		if f.Capture.Count > 0 && f.Replay.Count > 0 && f.Capture.MeanMs > 0 {
			ratio = fmt.Sprintf("%.2fx", f.Replay.MeanMs/f.Capture.MeanMs)
		}
		fmt.Fprintf(tw, "      %d\t%d\t%s\t%s\t%s\t%s\t%s\t  %s\n", f.Calls, f.Replayed, msOrDash(f.Capture, f.Capture.MeanMs),
			msOrDash(f.Capture, f.Capture.P95Ms), msOrDash(f.Replay, f.Replay.MeanMs), msOrDash(f.Replay, f.Replay.P95Ms), ratio,
			clip(text, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if o.Literals && !rp.Literals {
		fmt.Fprintf(w, "    (the replay kept no literal values: run it with --show-literals to keep them)\n")
	}
	return nil
}

// endStateLine says what the replay's end state was checked against, and
// how it came out; never more than was checked.
func endStateLine(rp *result.Replay) string {
	switch es := rp.EndState; {
	case es != nil && rp.EndStateDiffers():
		return "END STATE    DIFFERS: " + strings.TrimPrefix(es.Summary, "end state: ")
	case es != nil:
		return "end state    " + strings.TrimPrefix(es.Summary, "end state: ")
	case rp.EndStateSkipped != "":
		return "end state    not verified against " + rp.Verify + ": " + rp.EndStateSkipped + likelyDiffers(rp)
	}
	if l := likelyDiffers(rp); l != "" {
		return "end state    not checked" + l + "; replay onto a copy of the starting state with --verify END.snap to see which rows"
	}
	return "end state    not checked: replay onto a copy of the starting state with --verify END.snap " +
		"(dbparity snapshot at the capture's end) to check that the data ends as the application left it"
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

func state(s string) string {
	switch s {
	case "":
		return "ok"
	case "?":
		return "error (no SQLSTATE in the log)"
	}
	return s
}

func msOrDash(h result.Histogram, v float64) string {
	if h.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}

// clip shortens a statement to one line of at most n characters.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
