// Package report renders results for people and tools: the terminal
// summary of a run and its JSON summary object. It reads result files and
// never measures anything itself.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// Text writes the readable summary of a run.
func Text(w io.Writer, r *result.Run) error { return TextWith(w, r, Options{}) }

// TextWith writes the readable summary of a run with options.
func TextWith(w io.Writer, r *result.Run, o Options) error {
	s := r.Summarize()
	p := &printer{w: w}
	head := fmt.Sprintf("%s: %s v%s on %s %s", s.Label, r.Workload.Name, r.Workload.Version, r.Target.Dialect, r.Target.ServerVersion)
	if r.Failed {
		head += "   FAILED (" + r.FailedReason + ")"
	}
	if s.Partial && s.PartialReason != "aborted: "+r.FailedReason {
		head += "   PARTIAL (" + s.PartialReason + ")"
	}
	p.f("%s\n", head)
	if s.Disclaimer != "" {
		p.f("  %s\n", s.Disclaimer)
	}
	users := "users"
	if r.Replay != nil {
		users = "sessions" // the capture's, not virtual users
	}
	p.f("  target %s, %d %s, measured %.1f s after %.0f s warm-up, started %s\n",
		s.Target, s.Users, users, s.DurationS, r.Driver.WarmupS, r.Start.Local().Format(time.DateTime))
	if sl := r.Driver.Slicing; sl != nil {
		p.f("  in turns with %s: %s slices (ABBA) in a %.1f s window; per-second figures of the database and its host are over the whole window\n",
			sl.With, time.Duration(sl.SliceS*float64(time.Second)), r.MeasureEnd.Sub(r.MeasureStart).Seconds())
	}
	p.f("\n")
	if r.Replay != nil {
		p.f("  answer       %s\n", replayAnswer(r.Replay))
	}
	a := RunAssessment(r)
	p.f("  grade        %s\n", a.Label)
	for _, l := range a.Lines {
		p.f("               %s\n", l)
	}
	p.f("\n")
	line := fmt.Sprintf("  throughput   %.1f tps   %.0f tpm", s.TPS, s.TPM)
	if r.Replay != nil {
		line = fmt.Sprintf("  throughput   %.1f statements/s (completed without error)", s.TPS)
	}
	if _, ok := s.Transactions["new_order"]; ok {
		line += fmt.Sprintf("   %.0f NOPM", s.NOPM)
	}
	p.f("%s\n", line)
	if rt := r.Driver.Rate; rt != nil {
		p.f("  open loop    %.1f transactions/s asked (%s arrivals), %.1f served (%.1f%%); latencies count from the intended start\n",
			rt.TargetTPS, rt.Arrival, rt.AchievedTPS, 100*rt.AchievedTPS/rt.TargetTPS)
		p.f("  queue        p50 %.2f ms   p95 %.2f ms   p99 %.2f ms   max %.2f ms waiting for a session; behind schedule %.2f s at the end (most %.2f s)\n",
			rt.Queue.P50Ms, rt.Queue.P95Ms, rt.Queue.P99Ms, rt.Queue.MaxMs, rt.LagEndS, rt.MaxLagS)
		if rt.Behind {
			p.f("  BEHIND       %s\n", rt.BehindReason)
		}
	}
	if r.Driver.Think > 0 {
		p.f("  terminals    keying and think times of the specification × %g between transactions\n", r.Driver.Think)
	}
	if rp := r.Replay; rp != nil {
		tps := 0.0
		if s.DurationS > 0 {
			tps = float64(rp.ReplayedTransactions) / s.DurationS
		}
		p.f("  statements   %d completed without error, %d failed%s\n", s.Commits, s.Errors, classes(s.ErrorsByClass))
		p.f("  transactions %d committed (%.1f/s; %d in the capture)\n", rp.ReplayedTransactions, tps, rp.CapturedTransactions)
		// Statements left out by a flag (the reason names it) were the
		// user's choice; the others are missing from what was checked.
		var notReplayed int64
		for k, n := range rp.NotReplayed {
			if !strings.Contains(k, "--") {
				notReplayed += n
			}
		}
		skipped := ""
		if notReplayed > 0 {
			skipped = fmt.Sprintf("; %d captured statements NOT REPLAYED (see below)", notReplayed)
		}
		p.f("  replay       %s captured, replayed in %s; %d divergent statements%s\n", secs(rp.CaptureSeconds), secs(rp.ReplaySeconds), rp.Divergent(), skipped)
		p.f("  %s\n", endStateLine(rp))
		if s.DriverCPUS == nil {
			p.f("  driver CPU   %s\n", noDriverCPU)
		} else {
			p.f("  driver CPU   %.2f s   %s µs per statement (%d statements)\n", *s.DriverCPUS, fixed(s.DriverCPUPerStmtUs, 2), s.Statements)
		}
	} else {
		p.f("  commits      %d   rollbacks (by design) %d   retries %d\n", s.Commits, s.Rollbacks, s.Retries)
		p.f("  errors       %d%s\n", s.Errors, classes(s.ErrorsByClass))
		if s.DriverCPUS == nil {
			p.f("  driver CPU   %s\n", noDriverCPU)
		} else {
			p.f("  driver CPU   %.2f s   %s µs per transaction   %s µs per statement (%d statements)\n",
				*s.DriverCPUS, fixed(s.DriverCPUPerTxUs, 1), fixed(s.DriverCPUPerStmtUs, 2), s.Statements)
		}
		if s.RoundTripsPerTx > 0 && r.Target.Dialect != "sqlite" { // SQLite's are calls into the engine, in the process
			line := fmt.Sprintf("  round trips  %.1f per transaction, %.1f statements each", s.RoundTripsPerTx, float64(s.Statements)/float64(s.RoundTrips))
			if s.RoundTripMs > 0 {
				line += fmt.Sprintf("; each %.3f ms at least (an empty query)", s.RoundTripMs)
				if s.RoundTripShare > 0 {
					line += fmt.Sprintf(": %.0f%% of a mean transaction's time", 100*s.RoundTripShare)
				}
			}
			p.f("%s\n", line)
		}
	}
	if r.Target.Dialect == "sqlite" {
		p.f("               (SQLite runs inside dbparity: its CPU is in the driver's)\n")
	}
	if d := r.Driver; d.CPUs > 0 {
		p.f("  driver load  %.0f%% of its %d CPU(s)   scheduler latency p99 %.2f ms (max %.2f)   wakes late p99 %.2f ms (max %.2f)   %.1f µs between transactions\n",
			100*d.CPUShare, d.CPUs, d.SchedP99Ms, d.SchedMaxMs, d.WakeP99Ms, d.WakeMaxMs, d.GapUsPerTx)
		if d.Bound {
			p.f("  DRIVER-BOUND %s: the figures may be the driver's limit, not the platform's\n", d.BoundReason)
		}
	}
	splitText(p, r)
	p.f("\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  transaction\tcount\terrors\tp50 ms\tp95 ms\tp99 ms\tmax ms\t\n")
	for _, t := range r.Transactions {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t\n", t.Name, t.Committed+t.Rollbacks, t.Errors, latencies(t.Latency))
	}
	// The COMMITs timed in the window: n/a in a recovered run (or one merged
	// from a recovered part), whose histogram stops at its journal's last
	// checkpoint while the window's transactions went on.
	commits := "n/a"
	if !r.Recovered {
		commits = strconv.FormatInt(r.Commit.Count, 10)
	}
	fmt.Fprintf(tw, "  (commit)\t%s\t\t%s\t\n", commits, latencies(r.Commit))
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Recovered && emptyLatencies(r) {
		p.f("  (n/a: the journal's last checkpoint holds no latency of these: it came before they were recorded)\n")
	}
	if err := partsText(w, r); err != nil {
		return err
	}
	eventsText(p, r)
	for _, f := range []func() error{
		func() error { return profileText(w, "load profile", r.LoadProfile, true) },
		func() error { return profileText(w, "io profile", r.IOProfile, false) },
		func() error { return ioBackendText(w, r.IOByBackend) },
		func() error { return ioText(w, r) },
		func() error { return replayText(w, r, o) },
		func() error { return waitsText(w, r.Waits) },
		func() error { return timedWaitsText(w, r.TimedWaits) },
		func() error { return bucketsText(w, "commit latency", commitBuckets(r)) },
		func() error { return osText(w, r) },
		func() error { return disclosureText(w, r) },
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

// Line writes a run as one line, with the file it was written to: what
// a sweep prints of each of its runs.
func Line(w io.Writer, r *result.Run, file string) error {
	s := r.Summarize()
	line := s.Label
	if r.Step != nil {
		line += fmt.Sprintf(" %s=%s", r.Step.Param, strconv.FormatFloat(r.Step.Value, 'f', -1, 64))
	}
	line += fmt.Sprintf(": %.1f tps", s.TPS)
	if len(r.Transactions) > 0 {
		t := r.Transactions[0]
		line += fmt.Sprintf(", %s p95 %s ms", t.Name, p95(t.Latency))
	}
	if u, ok := r.CPU(); ok {
		line += fmt.Sprintf(", server CPU %.1f%%", u.Pct)
	}
	if rt := r.Driver.Rate; rt != nil && rt.Behind {
		line += fmt.Sprintf(", BEHIND its rate (%.1f of %.1f/s)", rt.AchievedTPS, rt.TargetTPS)
	}
	line += fmt.Sprintf(", errors %d", s.Errors)
	if r.Failed {
		line += ", FAILED (" + r.FailedReason + ")"
	}
	_, err := fmt.Fprintf(w, "%s -> %s\n", line, file)
	return err
}

// partsText prints each target of a multi-target run on a line: the
// aggregate above sums them.
func partsText(w io.Writer, r *result.Run) error {
	if len(r.Parts) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n  targets (driven at once; the figures above are their sum, latencies merged)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	p95of := ""
	if len(r.Transactions) > 0 {
		p95of = " " + r.Transactions[0].Name
	}
	fmt.Fprintf(tw, "  #\ttps\tp95%s ms\terrors\tphysical reads/s\tread IOPS\treads served from\t  target\n", p95of)
	for i, p := range r.Parts {
		s := p.Summarize()
		lat := "n/a"
		if len(p.Transactions) > 0 {
			lat = p95(p.Transactions[0].Latency)
		}
		reads, iops, served := "-", "-", "-"
		if u := p.IO; u != nil {
			reads, iops, served = num(u.PhysicalReads), num(u.ReadIOPS), u.ServedFrom
		}
		fmt.Fprintf(tw, "  %d\t%.1f\t%s\t%d\t%s\t%s\t%s\t  %s\n", i+1, s.TPS, lat, s.Errors, reads, iops, served, p.Target.URL)
	}
	return tw.Flush()
}

// jsonSummary is the summary object: the headline figures, then the
// sections the collectors filled.
type jsonSummary struct {
	result.Summary
	// Statements and Commit shadow the summary's: a recovered run does
	// not know its statements, nor its COMMITs' count when its
	// checkpoint held none (null, never 0).
	Statements  *int64             `json:"statements"`
	Commit      jsonCommit         `json:"commit"`
	LoadProfile *result.Profile    `json:"load_profile,omitempty"`
	IOProfile   *result.Profile    `json:"io_profile,omitempty"`
	Waits       *result.Waits      `json:"waits,omitempty"`
	TimedWaits  *result.TimedWaits `json:"timed_waits,omitempty"`
	CommitHist  []metrics.Bucket   `json:"commit_histogram,omitempty"`
	IO          *result.IOUnits    `json:"io_units,omitempty"`
	// ReadHist is the read operations' latency, for workloads that test IO.
	ReadHist []metrics.Bucket `json:"read_histogram,omitempty"`
	// Parts are the targets of a multi-target run.
	Parts []jsonPart `json:"parts,omitempty"`
	// Replay is a replay's report (fingerprints: the top ones).
	Replay   *result.Replay `json:"replay,omitempty"`
	OS       *ostat.Rates   `json:"os,omitempty"` // the database host over the measured window
	OSSource string         `json:"os_source,omitempty"`
	DriverOS *ostat.Rates   `json:"driver_os,omitempty"` // the driver's host, when another
	Warnings []string       `json:"warnings,omitempty"`
}

// jsonCommit is the summary's COMMIT line with its count absent when
// unknown.
type jsonCommit struct {
	result.TxSummary
	Count *int64 `json:"count"`
}

type jsonPart struct {
	result.Summary
	IO *result.IOUnits `json:"io_units,omitempty"`
}

// JSON writes the summary object of a run.
func JSON(w io.Writer, r *result.Run) error { return JSONWith(w, r, Options{}) }

// JSONWith writes the summary object of a run with options.
func JSONWith(w io.Writer, r *result.Run, o Options) error {
	s := jsonSummary{Summary: r.Summarize(), LoadProfile: r.LoadProfile, IOProfile: r.IOProfile,
		CommitHist: commitBuckets(r), Warnings: r.Warnings, IO: r.IO}
	s.Commit.TxSummary = s.Summary.Commit
	if !r.Recovered {
		s.Statements, s.Commit.Count = &s.Summary.Statements, &s.Summary.Commit.Count
	} else if r.Commit.Count > 0 {
		s.Commit.Count = &s.Summary.Commit.Count
	}
	if r.IO != nil {
		s.ReadHist = latencyBuckets(r, "read")
	}
	for _, p := range r.Parts {
		s.Parts = append(s.Parts, jsonPart{Summary: p.Summarize(), IO: p.IO})
	}
	if r.Replay != nil {
		rp := *r.Replay
		rp.Fingerprints = append([]result.ReplayFingerprint(nil), rp.Fingerprints[:min(len(rp.Fingerprints), 15)]...)
		for i := range rp.Fingerprints {
			rp.Fingerprints[i].Capture.HDR, rp.Fingerprints[i].Replay.HDR = "", ""
			if !o.Literals {
				rp.Fingerprints[i].Example = ""
			}
		}
		s.Replay = &rp
	}
	if r.OS.HasWindow() {
		s.OS, s.OSSource = &r.OS.Window, r.OS.Source
	}
	if r.DriverOS.HasWindow() {
		s.DriverOS = &r.DriverOS.Window
	}
	if r.Waits != nil {
		ws := *r.Waits
		ws.Events = ws.Events[:min(len(ws.Events), topWaits)]
		s.Waits = &ws
	}
	s.TimedWaits = r.TimedWaits
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// noDriverCPU is the driver CPU line of a run that has none.
const noDriverCPU = "n/a (the run was recovered from its journal, which holds no CPU readings)"

// fixed prints v with prec decimals, or n/a.
func fixed(v *float64, prec int) string {
	if v == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

// latencies are a histogram's p50, p95, p99 and max as table cells, n/a
// when it is empty: no latency is not a latency of zero.
func latencies(h result.Histogram) string {
	if h.Count == 0 {
		return "n/a\tn/a\tn/a\tn/a"
	}
	return fmt.Sprintf("%.2f\t%.2f\t%.2f\t%.2f", h.P50Ms, h.P95Ms, h.P99Ms, h.MaxMs)
}

// p95 is a histogram's p95 in ms, or n/a when it is empty.
func p95(h result.Histogram) string {
	if h.Count == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", h.P95Ms)
}

// emptyLatencies tells whether a run that completed transactions has an
// empty latency histogram for some of them.
func emptyLatencies(r *result.Run) bool {
	for _, t := range r.Transactions {
		if t.Latency.Count == 0 && t.Committed+t.Rollbacks > 0 {
			return true
		}
	}
	return false
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

// eventsText lists the run's outages: when, how long, what failed.
func eventsText(p *printer, r *result.Run) {
	if len(r.Events) == 0 {
		return
	}
	p.f("\n  events (the server did not serve the sessions)\n")
	for _, e := range r.Events {
		end := "still going on when the run ended"
		if !e.End.IsZero() {
			end = fmt.Sprintf("until %s", e.End.Sub(r.Start).Round(10*time.Millisecond))
		}
		p.f("    %-10s at %s, %s (%.1f s): %d transactions failed, %d reconnects; %s\n", e.Kind,
			e.Start.Sub(r.Start).Round(10*time.Millisecond), end, e.Seconds(r.End), e.Failed, e.Reconnects, e.Cause)
	}
}

// splitText says how a run split over several driver processes was made:
// a part's share and start, or a merged run's parts and their drivers.
func splitText(p *printer, r *result.Run) {
	if pt := r.Part; pt != nil {
		clock := ""
		if pt.Sync == "barrier" {
			clock = fmt.Sprintf(", this host's clock %+.1f ms from the database's (±%.1f)", pt.ClockOffsetMs, pt.ClockErrMs)
		}
		p.f("  part         %d of %d of run %q: %d of its %d sessions, started by %s at %s%s (dbparity merge combines the parts)\n",
			pt.Index, pt.Of, pt.RunID, len(pt.Sessions), pt.Users, pt.Sync, pt.StartAt.Local().Format("15:04:05.000"), clock)
	}
	m := r.Merged
	if m == nil {
		return
	}
	// A part recovered from its journal has no driver figures (and a
	// merged file written before PartDriver.Recovered tells it by its
	// CPUs, which every measured part has): n/a, never zeros.
	unmeasured := func(x result.PartDriver) bool { return x.Recovered || x.Driver.CPUs == 0 }
	busiest, some := "", ""
	for _, x := range m.Parts {
		if unmeasured(x) {
			some = " measured"
		}
	}
	for _, x := range m.Parts {
		if x.Index == m.Busiest && !unmeasured(x) {
			busiest = fmt.Sprintf("; busiest%s driver part %d (%s) at %.0f%% of its %d CPU(s)", some, x.Index, x.Host, 100*x.Driver.CPUShare, x.Driver.CPUs)
		}
	}
	p.f("  merged       %d parts of run %q, windows %.1f ms apart%s\n", len(m.Parts), m.RunID, m.SkewMs, busiest)
	for _, x := range m.Parts {
		driver := "driver n/a (recovered from its journal: no CPU or scheduler readings)"
		if !unmeasured(x) {
			driver = fmt.Sprintf("driver %.2f s CPU, %.0f%% of %d CPU(s), scheduler p99 %.2f ms%s",
				x.Driver.CPUUserS+x.Driver.CPUSysS, 100*x.Driver.CPUShare, x.Driver.CPUs,
				x.Driver.SchedP99Ms, map[bool]string{true: "   DRIVER-BOUND", false: ""}[x.Driver.Bound])
		}
		p.f("    part %-3d %-20s %4d users %8d commits   %s\n", x.Index, x.Host, x.Users, x.Committed, driver)
	}
	if len(m.Forced) > 0 {
		p.f("  FORCED       merged with --force: %s\n", strings.Join(m.Forced, "; "))
	}
}
