package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// topWaits is how many wait events the reports list.
const topWaits = 10

// num prints a profile figure with a sensible number of digits, or n/a.
func num(v *float64) string {
	if v == nil {
		return "n/a"
	}
	x := *v
	switch a := abs(x); {
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", x)
	case a >= 10:
		return fmt.Sprintf("%.1f", x)
	case a >= 0.01:
		return fmt.Sprintf("%.3f", x)
	}
	return fmt.Sprintf("%.2g", x)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func profileText(w io.Writer, title string, p *result.Profile, perTx bool) error {
	if p == nil {
		return nil
	}
	fmt.Fprintf(w, "\n  %s (%s, %.1f s", title, p.Source, p.Seconds)
	if perTx {
		fmt.Fprintf(w, ", %.0f transactions", p.Transactions)
	}
	fmt.Fprintln(w, ")")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if perTx {
		fmt.Fprintf(tw, "    \tunit\tper second\tper transaction\tsource\n")
	} else {
		fmt.Fprintf(tw, "    \tunit\tper second\t\tsource\n")
	}
	for _, l := range p.Lines {
		src := l.Source
		if l.Total == nil {
			src = l.Note
		}
		pt := ""
		if perTx {
			pt = num(l.PerTx)
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\n", l.Name, l.Unit, num(l.PerSecond), pt, src)
	}
	return tw.Flush()
}

func waitsText(w io.Writer, ws *result.Waits) error {
	if ws == nil {
		return nil
	}
	fmt.Fprintf(w, "\n  top wait events (%s every %.0f ms, %d samples, %.2f average active sessions)\n",
		ws.Source, ws.IntervalMs, ws.Samples, ws.AvgActiveSessions)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    class\tevent\t%% DB time\tavg active\tsamples\n")
	for i, e := range ws.Events {
		if i == topWaits {
			break
		}
		fmt.Fprintf(tw, "    %s\t%s\t%.1f\t%.2f\t%d\n", e.Class, e.Event, e.PctDBTime, e.AvgActive, e.Samples)
	}
	return tw.Flush()
}

// commitBuckets returns the COMMIT latency histogram in log2 µs buckets.
func commitBuckets(r *result.Run) []metrics.Bucket {
	if r.Commit.HDR == "" {
		return nil
	}
	h, err := r.Commit.Decode()
	if err != nil {
		return nil
	}
	return metrics.Log2Buckets(h)
}

func bucketsText(w io.Writer, title string, b []metrics.Bucket) error {
	if len(b) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n  %s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "    < µs\tcount\t%%\t\n")
	for _, x := range b {
		// The bar is left out of the aligned cells so it grows from the left.
		fmt.Fprintf(tw, "    %d\t%d\t%.1f\t  %s\n", x.UpToMicros, x.Count, x.Pct, bar(x.Pct))
	}
	return tw.Flush()
}

func bar(pct float64) string {
	n := int(pct/2 + 0.5)
	b := make([]byte, n)
	for i := range b {
		b[i] = '#'
	}
	return string(b)
}
