package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/result"
)

// The Job that dbparity k8s writes, played by local processes: its three
// parts' command lines (the completion index and the volume put in by
// hand, as Kubernetes would) run at once against one managed PostgreSQL,
// meet at the barrier in the database, and the merge step's command line
// combines them. The merged run is the parts summed: its counts are the
// sum of theirs, its percentiles those of their raw histograms merged, its
// mix order-entry's; its windows coincide within 100 ms; the collectors
// ran on part 0 only. merge refuses a missing part, a repeated one and a
// part of another run, and merges them with --force, flagged. The merged
// latencies export as an .hlog that HdrHistogram's own log reader reads
// back to the same counts.
func TestPartsAsJob(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs three driver processes against PostgreSQL")
	}
	dir, inst := partsServer(t)
	tg := []string{"--target", inst.URL()}
	if code, _, stderr := dbparity(t, dir, append([]string{"load", "--warehouses", "3"}, tg...)...); code != 0 {
		t.Fatalf("load: %s", stderr)
	}
	runFlags := append([]string{"--users", "6", "--warmup", "1s", "--duration", "4s", "--label", "split"}, tg...)
	code, manifest, stderr := dbparity(t, dir, append([]string{"k8s", "--parts", "3", "--image", "dbparity:test", "--claim", "results",
		"--name", "oe", "--run-id", "job-test", "--"}, runFlags...)...)
	if code != 0 {
		t.Fatalf("k8s: %s", stderr)
	}
	docs := strings.Split(manifest, "\n---\n")
	var job, merge batchv1.Job
	for i, j := range []*batchv1.Job{&job, &merge} {
		if err := yaml.UnmarshalStrict([]byte(docs[i]), j); err != nil {
			t.Fatal(err)
		}
	}
	results := filepath.Join(dir, "results")
	local := func(s, index string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "$(JOB_COMPLETION_INDEX)", index), "/results", results)
	}
	os.MkdirAll(filepath.Join(results, "oe"), 0o755)
	var wg sync.WaitGroup
	outs := make([]string, 3)
	codes := make([]int, 3)
	for i := range 3 {
		var args []string
		for _, a := range job.Spec.Template.Spec.Containers[0].Args {
			args = append(args, local(a, fmt.Sprint(i)))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var se string
			codes[i], _, se = dbparity(t, dir, args...)
			outs[i] = se
		}()
	}
	wg.Wait()
	for i := range 3 {
		if codes[i] != 0 {
			t.Fatalf("part %d exited %d: %s", i, codes[i], outs[i])
		}
	}
	// The merge step, as the merge Job runs it (without its hold).
	mergeLine, _, _ := strings.Cut(local(merge.Spec.Template.Spec.Containers[0].Args[0], ""), " && ")
	mergeArgs := strings.Fields(mergeLine)[1:]
	code, _, stderr = dbparity(t, dir, mergeArgs...)
	skewed := code != 0 && strings.Contains(stderr, "they did not run at once")
	if skewed {
		// A loaded host woke a part's window more than 100 ms late: the
		// merge refuses it unless forced, and says so (two suites beside).
		t.Logf("%s: %s: merged with --force", mergeLine, strings.TrimSpace(stderr))
		code, _, stderr = dbparity(t, dir, append([]string{mergeArgs[0], "--force"}, mergeArgs[1:]...)...)
	}
	if code != 0 {
		t.Fatalf("%s: %s", mergeLine, stderr)
	}
	var parts []*result.Run
	var files []string
	for i := range 3 {
		f := filepath.Join(results, "oe", fmt.Sprintf("part-%d.json", i))
		p, err := result.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		parts, files = append(parts, p), append(files, f)
	}
	merged, err := result.Read(filepath.Join(results, "oe", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := merged.Merged
	if m == nil || len(m.Parts) != 3 || m.CollectorsFrom != 0 || (len(m.Forced) != 0) != skewed || merged.Driver.Users != 6 {
		t.Fatalf("merged %+v, users %d", m, merged.Driver.Users)
	}
	t.Logf("window skew %.1f ms; busiest driver part %d at %.0f%% of its CPUs", m.SkewMs, m.Busiest, 100*merged.Driver.CPUShare)
	if m.SkewMs > 100 && !skewed {
		t.Errorf("the parts' windows are %.1f ms apart, want within 100 ms", m.SkewMs)
	}
	seen := map[int]bool{}
	homes := map[int]int{} // home warehouse → part
	for i, p := range parts {
		if p.Part == nil || p.Part.Sync != "barrier" || p.Part.RunID != "job-test" {
			t.Fatalf("part %d: %+v", i, p.Part)
		}
		if (p.LoadProfile != nil) != (i == 0) {
			t.Errorf("part %d: load profile %v: the collectors run on part 0 only", i, p.LoadProfile != nil)
		}
		for _, g := range p.Part.Sessions {
			if seen[g] {
				t.Errorf("session %d ran twice", g)
			}
			seen[g] = true
			if o, ok := homes[g%3]; ok && o != i {
				t.Errorf("home warehouse %d driven by parts %d and %d", g%3+1, o, i)
			}
			homes[g%3] = i
		}
	}
	if len(seen) != 6 || merged.LoadProfile == nil {
		t.Errorf("sessions %v; merged load profile %v", seen, merged.LoadProfile != nil)
	}
	var total int64
	for _, tx := range merged.Transactions {
		h := metrics.NewHistogram()
		var committed int64
		for _, p := range parts {
			for _, pt := range p.Transactions {
				if pt.Name == tx.Name {
					committed += pt.Committed
					ph, err := pt.Latency.Decode()
					if err != nil {
						t.Fatal(err)
					}
					h.Merge(ph)
				}
			}
		}
		want, err := result.NewHistogram(h)
		if err != nil {
			t.Fatal(err)
		}
		if tx.Committed != committed || tx.Latency.Count != want.Count || tx.Latency.P50Ms != want.P50Ms ||
			tx.Latency.P95Ms != want.P95Ms || tx.Latency.P99Ms != want.P99Ms || tx.Latency.MaxMs != want.MaxMs {
			t.Errorf("%s: merged %d committed, p95 %.3f ms, p99 %.3f ms; the parts' %d, %.3f ms, %.3f ms",
				tx.Name, tx.Committed, tx.Latency.P95Ms, tx.Latency.P99Ms, committed, want.P95Ms, want.P99Ms)
		}
		total += tx.Committed
	}
	// The mix: New-Order about 45%, Payment 43%, the others 4% each;
	// within 4 points and four binomial standard deviations of the run's
	// count (a loaded CI host ran 21 transactions in the 4 s: 3 Stock-Levels
	// of 21 are 14%, a draw of 1 in 30 at 4%).
	t.Logf("%d transactions in the merged run", total)
	for _, tx := range merged.Transactions {
		share := float64(tx.Committed+tx.Rollbacks) / float64(total)
		want := map[string]float64{"new_order": 0.45, "payment": 0.43}[tx.Name]
		if want == 0 {
			want = 0.04
		}
		margin := 0.04 + 4*math.Sqrt(want*(1-want)/float64(max(total, 1)))
		if share < want-margin || share > want+margin {
			t.Errorf("%s is %.1f%% of the merged run's %d, want %.0f%% ± %.1f", tx.Name, 100*share, total, 100*want, 100*margin)
		}
	}
	var seriesCommits int64
	for _, iv := range merged.Series {
		if iv.Phase == "measure" {
			seriesCommits += iv.Commits
		}
	}
	// The series counts a transaction in the second it ended, the run in
	// the window it began: each session may differ by one at each edge.
	edge := max(total/10, 2*int64(merged.Driver.Users))
	if seriesCommits < total-edge || seriesCommits > total+edge {
		t.Errorf("the merged series count %d commits in the window, the run %d", seriesCommits, total)
	}

	// show reads a merged run like any other.
	if code, out, stderr := dbparity(t, dir, "show", filepath.Join(results, "oe", "run.json")); code != 0 || !strings.Contains(out, "3 parts") {
		t.Errorf("show: %d %s\n%s", code, stderr, out)
	}

	// A part alone is no run to compare.
	relabeled := *parts[1]
	relabeled.Label = "other"
	other1 := filepath.Join(dir, "other-label.json")
	if err := result.Write(other1, &relabeled); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := dbparity(t, dir, "compare", files[0], other1); code != 2 || !strings.Contains(stderr, "merge its parts first") {
		t.Errorf("compare of parts: exit %d, %s", code, stderr)
	}

	// Bad input, refused with one line (exit 2), or merged with --force.
	other := filepath.Join(dir, "other.json")
	p2 := *parts[2]
	pp := *p2.Part
	pp.RunID = "another-run"
	p2.Part = &pp
	if err := result.Write(other, &p2); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bad.json")
	for _, c := range []struct {
		files []string
		want  string
	}{
		{files[:2], "part 2 of 3 missing"},
		{[]string{files[0], files[1], files[1]}, "part 1 is given twice"},
		{[]string{files[0], files[1], other}, "of run \"another-run\""},
	} {
		code, _, stderr := dbparity(t, dir, append([]string{"merge", "--out", out}, c.files...)...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("merge %v: exit %d, %q; want exit 2 and one line naming %q", c.files, code, stderr, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("a refused merge wrote %s", out)
		}
	}
	if code, _, stderr := dbparity(t, dir, "merge", "--force", "--out", out, files[0], files[1]); code != 0 {
		t.Fatalf("merge --force: %s", stderr)
	}
	if forced, err := result.Read(out); err != nil || len(forced.Merged.Forced) == 0 || !strings.Contains(strings.Join(forced.Warnings, "\n"), "--force") {
		t.Errorf("a forced merge is not flagged: %v %+v", err, forced)
	}

	// The .hlog, read back by HdrHistogram's own log reader.
	hlog := filepath.Join(dir, "run.hlog")
	if code, _, stderr := dbparity(t, dir, "hlog", "--out", hlog, filepath.Join(results, "oe", "run.json")); code != 0 {
		t.Fatalf("hlog: %s", stderr)
	}
	f, err := os.Open(hlog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := hdr.NewHistogramLogReader(f)
	got := map[string]int64{}
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		got[h.Tag()] = h.TotalCount()
	}
	for _, tx := range merged.Transactions {
		if got[tx.Name] != tx.Latency.Count {
			t.Errorf("hlog %s: %d values, the result %d", tx.Name, got[tx.Name], tx.Latency.Count)
		}
	}
	if got["commit"] != merged.Commit.Count {
		t.Errorf("hlog commit: %d values, the result %d", got["commit"], merged.Commit.Count)
	}
}

// A split run after a fault, with the binary's own processes against one
// managed PostgreSQL:
//
//   - a part interrupted (SIGINT) while it waits at the barrier removes its
//     row: the other part, started after, does not find the run complete,
//     waits and gives up (exit 1), instead of running alone;
//   - a part killed outright (SIGKILL) while it waits leaves its row, which
//     stops counting once its heartbeat is 3 s old: the same;
//   - a part killed outright inside its window is recovered from its
//     journal (which holds the part), and merges with the other part
//     without --force, the merged run marked partial and recovered.
func TestPartFaultsAfterKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs driver processes against PostgreSQL")
	}
	dir, inst := partsServer(t)
	if code, _, stderr := dbparity(t, dir, "load", "--warehouses", "2", "--target", inst.URL()); code != 0 {
		t.Fatalf("load: %s", stderr)
	}
	part := func(run string, i int, extra ...string) []string {
		return append([]string{"run", "--target", inst.URL(), "--users", "4", "--warmup", "1s", "--duration", "8s", "--label", "split",
			"--part", fmt.Sprintf("%d/2", i), "--run-id", run, "--out", fmt.Sprintf("%s-%d.json", run, i)}, extra...)
	}
	// waiting starts part 0 of run and returns it once it waits at the
	// barrier.
	waiting := func(run string) *exec.Cmd {
		cmd := exec.Command(bin, part(run, 0, "--barrier-timeout", "1m")...)
		cmd.Dir = dir
		w := newOutputWatch("waiting for the other parts")
		cmd.Stderr = w
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.await(t, cmd)
		return cmd
	}
	// alone runs part 1 of run, which must find no live partner.
	alone := func(what, run string) {
		t.Helper()
		start := time.Now()
		code, _, stderr := dbparity(t, dir, part(run, 1, "--barrier-timeout", "2s")...)
		if code != 1 || !strings.Contains(stderr, fmt.Sprintf("only 1 of 2 parts of run %q registered", run)) || strings.Contains(stderr, "all 2 parts registered") {
			t.Errorf("%s: the other part exited %d after %s:\n%s", what, code, time.Since(start).Round(time.Millisecond), stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, run+"-1.json")); err == nil {
			t.Errorf("%s: the other part ran alone and wrote its result", what)
		}
	}
	tg, err := engine.Open(inst.URL())
	if err != nil {
		t.Fatal(err)
	}
	rows := func(run string) int64 {
		t.Helper()
		c, err := tg.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var n int64
		if err := c.QueryRow(context.Background(), "SELECT count(*) FROM dbparity_barrier WHERE run = $1", run).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	cmd := waiting("interrupted")
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 130 {
		t.Errorf("a part interrupted at the barrier: %v", err)
	}
	if n := rows("interrupted"); n != 0 {
		t.Errorf("a part interrupted at the barrier left %d rows", n)
	}
	alone("after an interrupted part", "interrupted")

	cmd = waiting("killed")
	cmd.Process.Kill()
	cmd.Wait()
	if n := rows("killed"); n != 1 {
		t.Fatalf("a part killed at the barrier left %d rows, want its own", n)
	}
	time.Sleep(3500 * time.Millisecond) // its heartbeat stale
	alone("after a killed part", "killed")

	// Both parts run; part 1 is killed 3 s into its window.
	var stderr0 bytes.Buffer
	p0 := exec.Command(bin, part("rec", 0)...)
	p0.Dir, p0.Stderr = dir, &stderr0
	p1 := exec.Command(bin, part("rec", 1)...)
	p1.Dir = dir
	for _, c := range []*exec.Cmd{p0, p1} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	journal := filepath.Join(dir, "rec-1.json.journal")
	deadline := time.Now().Add(time.Minute)
	for {
		b, _ := os.ReadFile(journal)
		if strings.Count(string(b), `"phase":"measure"`) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			p0.Process.Kill()
			p1.Process.Kill()
			t.Fatalf("part 1's journal has no 3 measured seconds after a minute:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p1.Process.Kill()
	p1.Wait()
	if err := p0.Wait(); err != nil {
		t.Fatalf("part 0: %v\n%s", err, stderr0.String())
	}
	if code, stdout, stderr := dbparity(t, dir, "recover", journal, "--out", "rec-1.json"); code != 0 {
		t.Fatalf("recover: exit %d: %s%s", code, stdout, stderr)
	}
	code, stdout, stderr := dbparity(t, dir, "merge", "--out", "rec.json", "rec-0.json", "rec-1.json")
	if code != 0 {
		t.Fatalf("merge of a recovered part: exit %d: %s%s", code, stdout, stderr)
	}
	m, err := result.Read(filepath.Join(dir, "rec.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Partial || !m.Recovered || !strings.HasPrefix(m.PartialReason, "part 1: recovered from rec-1.json.journal") ||
		m.Merged == nil || len(m.Merged.Parts) != 2 || len(m.Merged.Forced) != 0 || m.Driver.Users != 4 {
		t.Errorf("merged: partial %v %q, recovered %v, merged %+v, users %d", m.Partial, m.PartialReason, m.Recovered, m.Merged, m.Driver.Users)
	}
	var committed [2]int64
	for i, f := range []string{"rec-0.json", "rec-1.json"} {
		p, err := result.Read(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if p.Part == nil || p.Part.Index != i || p.Part.Sync != "barrier" {
			t.Errorf("%s: part %+v", f, p.Part)
		}
		for _, tx := range p.Transactions {
			committed[i] += tx.Committed
		}
	}
	var total int64
	for _, tx := range m.Transactions {
		total += tx.Committed
	}
	if committed[1] == 0 || total != committed[0]+committed[1] {
		t.Errorf("merged %d committed, the parts %d and %d", total, committed[0], committed[1])
	}
	t.Logf("part 1 killed after %.1f s of its window; merged: %s; skew %.1f ms", m.Merged.Parts[1].MeasureEnd.Sub(m.Merged.Parts[1].MeasureStart).Seconds(),
		m.PartialReason, m.Merged.SkewMs)
	if code, out, _ := dbparity(t, dir, "show", filepath.Join(dir, "rec.json")); code != 0 || !strings.Contains(out, "PARTIAL (part 1: recovered") {
		t.Errorf("show of the merged run: exit %d\n%s", code, out)
	}
}

// partsServer starts a managed PostgreSQL for a split run's parts and
// returns the directory to run them in.
func partsServer(t *testing.T) (string, *managed.Instance) {
	t.Helper()
	pgData := managedDataDir(t)
	inst, err := managed.Start(context.Background(), managed.Options{DataDir: pgData})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	return filepath.Dir(pgData), inst
}
