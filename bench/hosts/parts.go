package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/cpuset"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/testhost"
)

// maxSkewMs is how far apart the parts' windows may start or end.
const maxSkewMs = 10

// studyParts: one run split over two driver hosts of their own (run
// --part 0/2 and 1/2, each in its own namespaces, reaching the database
// host through the driver's namespace), meeting at the barrier in the
// database across the links, merged; the merge must be exact: its
// counts the parts' sums, its histograms theirs merged, its windows
// within 10 ms.
func (b *bench) studyParts(s *study, e *eight) error {
	s.title = "one run split over two driver hosts of their own"
	h := e.hosts[0]
	var ds []*testhost.DriverHost
	defer func() {
		for _, d := range ds {
			if err := d.Close(); err != nil {
				logf("driver host %d: %v", d.M, err)
			}
		}
	}()
	for range 2 {
		d, err := testhost.StartDriverHost(h)
		if d != nil {
			ds = append(ds, d)
		}
		if err != nil {
			return err
		}
	}
	s.setup = []string{hostLine(h, "database host")}
	for i, d := range ds {
		s.setup = append(s.setup, fmt.Sprintf("- part %d: driver host %s at %s (its own network, PID, mount and UTS namespaces; a veth to the driver's namespace, which forwards to %s), CPU %s",
			i, d.Hostname, d.Addr, h.Addr, cpuset.Format(b.drvCPUs)))
	}
	s.commands = append(s.commands, e.load...)
	id := fmt.Sprintf("hosts-%d", time.Now().UnixNano())
	var files []string
	errs := make([]error, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		f := b.path(fmt.Sprintf("part-%d.json", i))
		files = append(files, f)
		args := []string{"run", "--workload", "order-entry", "--home-warehouse", "random", "--users", strconv.Itoa(b.o.partsUsers),
			"--part", fmt.Sprintf("%d/%d", i, len(ds)), "--run-id", id, "--label", "split", "--out", f, "--target", h.URL(),
			"--duration", b.o.duration.String(), "--warmup", b.o.warmup.String(), "--db-host", "sql", "--force"}
		s.command("on "+d.Hostname, relArgs(b, args)...)
		name, argv := b.bin, relArgs(b, args)
		if b.drvCPUs != nil {
			name, argv = "taskset", append([]string{"-c", cpuset.Format(b.drvCPUs), b.bin}, relArgs(b, args)...)
		}
		c := d.Command(b.dir, name, argv...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.exec(c, args)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	merged := b.path("split.json")
	margs := append([]string{"merge", "--out", merged, "--force"}, files...)
	if _, err := b.dbparity(margs...); err != nil {
		return err
	}
	s.command("", relArgs(b, margs)...)
	show, err := b.dbparity("show", merged)
	if err != nil {
		return err
	}
	s.command("", "show", "split.json")
	s.report = show
	m, err := result.Read(merged)
	if err != nil {
		return err
	}
	var parts []*result.Run
	for _, f := range files {
		p, err := result.Read(f)
		if err != nil {
			return err
		}
		parts = append(parts, p)
	}
	table, problems := checkMerge(m, parts, ds)
	s.extra = append(s.extra, table)
	committed := int64(0)
	for _, tx := range m.Transactions {
		committed += tx.Committed
	}
	verdict := "EXACT"
	if len(problems) > 0 {
		verdict = "NOT EXACT: " + strings.Join(problems, "; ")
	}
	skew := math.NaN()
	if m.Merged != nil {
		skew = m.Merged.SkewMs
	}
	s.answer.Sentences = []string{fmt.Sprintf("2 parts on driver hosts %s and %s met at the barrier in %s across the links: %d transactions committed, the parts' sums; windows %.1f ms apart (at most %d)",
		ds[0].Hostname, ds[1].Hostname, h.Hostname, committed, skew, maxSkewMs)}
	for _, l := range strings.Split(show, "\n") {
		if f := strings.Fields(l); len(f) > 1 && (f[0] == "answer" || f[0] == "grade") {
			s.answer.Sentences = append(s.answer.Sentences, "show: "+strings.Join(f, " "))
		}
	}
	s.answer.Assessment.Label = "merge " + verdict
	if len(problems) > 0 {
		return errors.New(verdict)
	}
	return nil
}

// checkMerge compares a merged run with its parts: every count the
// parts' sum, every transaction type's histogram count the sum of
// theirs, the windows within maxSkewMs, each part on its own driver
// host. It returns a table and what is wrong.
func checkMerge(m *result.Run, parts []*result.Run, ds []*testhost.DriverHost) (string, []string) {
	var problems []string
	var w strings.Builder
	if m.Merged == nil || len(m.Merged.Parts) != len(parts) {
		return "", []string{"the merged result names no parts"}
	}
	fmt.Fprintf(&w, "the parts and their merge\n\n| part | driver host | sessions | committed | statements | round trips | window start (UTC) | window end |\n|---|---|---:|---:|---:|---:|---|---|\n")
	var committed, statements, roundTrips int64
	for i, p := range parts {
		pd := m.Merged.Parts[i]
		var c int64
		for _, tx := range p.Transactions {
			c += tx.Committed
		}
		committed += c
		statements += p.Statements
		roundTrips += p.RoundTrips
		fmt.Fprintf(&w, "| %d | %s | %d | %d | %d | %d | %s | %s |\n", i, pd.Host, p.Driver.Users, c, p.Statements, p.RoundTrips,
			p.MeasureStart.UTC().Format("15:04:05.000"), p.MeasureEnd.UTC().Format("15:04:05.000"))
		if i < len(ds) && pd.Host != ds[i].Hostname {
			problems = append(problems, fmt.Sprintf("part %d ran on %q, not on driver host %s", i, pd.Host, ds[i].Hostname))
		}
	}
	var mc int64
	for _, tx := range m.Transactions {
		mc += tx.Committed
	}
	fmt.Fprintf(&w, "| merged | | %d | %d | %d | %d | skew %.2f ms | |\n", m.Driver.Users, mc, m.Statements, m.RoundTrips, m.Merged.SkewMs)
	if mc != committed || m.Statements != statements || m.RoundTrips != roundTrips {
		problems = append(problems, fmt.Sprintf("merged %d committed, %d statements, %d round trips; the parts' sums %d, %d, %d",
			mc, m.Statements, m.RoundTrips, committed, statements, roundTrips))
	}
	fmt.Fprintf(&w, "\n| transaction | merged committed | parts' sum | merged histogram count | parts' sum |\n|---|---:|---:|---:|---:|\n")
	for _, tx := range m.Transactions {
		var c, n int64
		for _, p := range parts {
			for _, pt := range p.Transactions {
				if pt.Name == tx.Name {
					c += pt.Committed
					n += pt.Latency.Count
				}
			}
		}
		fmt.Fprintf(&w, "| %s | %d | %d | %d | %d |\n", tx.Name, tx.Committed, c, tx.Latency.Count, n)
		if c != tx.Committed || n != tx.Latency.Count {
			problems = append(problems, fmt.Sprintf("%s: merged %d committed (%d timed), the parts %d (%d)", tx.Name, tx.Committed, tx.Latency.Count, c, n))
		}
	}
	if m.Merged.SkewMs > maxSkewMs {
		problems = append(problems, fmt.Sprintf("the windows are %.1f ms apart, more than %d", m.Merged.SkewMs, maxSkewMs))
	}
	return w.String(), problems
}
