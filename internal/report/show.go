// Package report renders results for people and tools: the terminal
// summary of a run and its JSON summary object. It reads result files and
// never measures anything itself.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// Text writes the readable summary of a run.
func Text(w io.Writer, r *result.Run) error {
	s := r.Summarize()
	p := &printer{w: w}
	head := fmt.Sprintf("%s: %s v%s on %s %s", s.Label, r.Workload.Name, r.Workload.Version, r.Target.Dialect, r.Target.ServerVersion)
	if s.Partial {
		head += "   PARTIAL (" + s.PartialReason + ")"
	}
	p.f("%s\n", head)
	if s.Disclaimer != "" {
		p.f("  %s\n", s.Disclaimer)
	}
	p.f("  target %s, %d users, measured %.1f s after %.0f s warm-up, started %s\n",
		s.Target, s.Users, s.DurationS, r.Driver.WarmupS, r.Start.Local().Format(time.DateTime))
	p.f("\n")
	line := fmt.Sprintf("  throughput   %.1f tps   %.0f tpm", s.TPS, s.TPM)
	if _, ok := s.Transactions["new_order"]; ok {
		line += fmt.Sprintf("   %.0f NOPM", s.NOPM)
	}
	p.f("%s\n", line)
	p.f("  commits      %d   rollbacks (by design) %d   retries %d\n", s.Commits, s.Rollbacks, s.Retries)
	p.f("  errors       %d%s\n", s.Errors, classes(s.ErrorsByClass))
	p.f("  driver CPU   %.2f s   %.1f µs per transaction   %.2f µs per statement (%d statements)\n",
		s.DriverCPUS, s.DriverCPUPerTxUs, s.DriverCPUPerStmtUs, s.Statements)
	if r.Target.Dialect == "sqlite" {
		p.f("               (SQLite runs inside dbparity: its CPU is in the driver's)\n")
	}
	p.f("\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  transaction\tcount\terrors\tp50 ms\tp95 ms\tp99 ms\tmax ms\t\n")
	for _, t := range r.Transactions {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n", t.Name, t.Latency.Count, t.Errors,
			t.Latency.P50Ms, t.Latency.P95Ms, t.Latency.P99Ms, t.Latency.MaxMs)
	}
	c := r.Commit
	fmt.Fprintf(tw, "  (commit)\t%d\t\t%.2f\t%.2f\t%.2f\t%.2f\t\n", c.Count, c.P50Ms, c.P95Ms, c.P99Ms, c.MaxMs)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range []func() error{
		func() error { return profileText(w, "load profile", r.LoadProfile, true) },
		func() error { return profileText(w, "io profile", r.IOProfile, false) },
		func() error { return waitsText(w, r.Waits) },
		func() error { return bucketsText(w, "commit latency", commitBuckets(r)) },
		func() error { return osText(w, r.OS, r.Target.Dialect == "sqlite") },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	if len(r.Warnings) > 0 {
		p.f("\n  warnings:\n")
		for _, x := range r.Warnings {
			p.f("    %s\n", x)
		}
	}
	if len(r.ErrorSamples) > 0 {
		p.f("\n  first error of each class:\n")
		for _, k := range sortedKeys(r.ErrorSamples) {
			p.f("    %s: %s\n", k, r.ErrorSamples[k])
		}
	}
	return p.err
}

// jsonSummary is the summary object: the headline figures, then the
// sections the collectors filled.
type jsonSummary struct {
	result.Summary
	LoadProfile *result.Profile  `json:"load_profile,omitempty"`
	IOProfile   *result.Profile  `json:"io_profile,omitempty"`
	Waits       *result.Waits    `json:"waits,omitempty"`
	CommitHist  []metrics.Bucket `json:"commit_histogram,omitempty"`
	OS          *ostat.Rates     `json:"os,omitempty"` // the measured window
	Warnings    []string         `json:"warnings,omitempty"`
}

// JSON writes the summary object of a run.
func JSON(w io.Writer, r *result.Run) error {
	s := jsonSummary{Summary: r.Summarize(), LoadProfile: r.LoadProfile, IOProfile: r.IOProfile,
		CommitHist: commitBuckets(r), Warnings: r.Warnings}
	if r.OS != nil {
		s.OS = &r.OS.Window
	}
	if r.Waits != nil {
		ws := *r.Waits
		ws.Events = ws.Events[:min(len(ws.Events), topWaits)]
		s.Waits = &ws
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

func classes(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// printer keeps the first write error so the rendering code stays flat.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}
