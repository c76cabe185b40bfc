package result

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteHlog writes r's latencies as an HdrHistogram interval log (format
// 1.3, the .hlog that HdrHistogram's log readers, HistogramLogAnalyzer and
// wrk2-style tools read): one interval per transaction type, tagged with
// its name, and one tagged "commit", each covering the measured window
// (a result keeps one histogram per type for the window, not one per
// second). Values are microseconds; the interval's maximum column is in
// milliseconds.
func WriteHlog(w io.Writer, r *Run) error {
	b := bufio.NewWriter(w)
	start := r.MeasureStart
	length := r.MeasureEnd.Sub(r.MeasureStart).Seconds()
	fmt.Fprintf(b, "#[Histogram log format version 1.3]\n")
	fmt.Fprintf(b, "#[dbparity %s: run %q, workload %s, values in microseconds]\n", r.Tool.Version, r.Label, r.Workload.Name)
	fmt.Fprintf(b, "#[StartTime: %.3f (seconds since epoch), %s]\n", float64(start.UnixMilli())/1000, start.UTC().Format(time.RFC3339))
	fmt.Fprintf(b, "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n")
	line := func(tag string, h Histogram) error {
		if h.HDR == "" || h.Count == 0 {
			return nil
		}
		if strings.ContainsAny(tag, ", \r\n") {
			return fmt.Errorf("hlog: tag %q holds a comma, space or line break", tag)
		}
		// Decoded and encoded again: older results hold it encoded twice.
		d, err := h.Decode()
		if err != nil {
			return fmt.Errorf("hlog: %s: %w", tag, err)
		}
		enc, err := d.Encode()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(b, "Tag=%s,%.3f,%.3f,%.3f,%s\n", tag, 0.0, length, h.MaxMs, enc)
		return err
	}
	for _, t := range r.Transactions {
		if err := line(t.Name, t.Latency); err != nil {
			return err
		}
	}
	if err := line("commit", r.Commit); err != nil {
		return err
	}
	return b.Flush()
}
