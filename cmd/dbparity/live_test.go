package main

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dbparity/dbparity/internal/result"
)

// scrapeFamilies reads addr's /metrics; nil when it does not answer.
func scrapeFamilies(addr string) map[string]*dto.MetricFamily {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil
	}
	return mf
}

// label is the value of a sample's label name.
func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// committed sums dbparity_transactions_total{outcome="committed"}.
func committed(mf map[string]*dto.MetricFamily) float64 {
	var n float64
	for _, m := range mf["dbparity_transactions_total"].GetMetric() {
		if labelOf(m, "outcome") == "committed" {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// A run serves its progress at --metrics-addr while it lives: scraped
// every 100 ms, it goes through warm-up and the measured window, counts
// each type's transactions and latencies under its labels, and its last
// count is the run's (every phase's commits in the result's series); a
// port in use is refused at start in one line.
func TestLiveMetrics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, stderr := dbparity(t, dir, "load", "--warehouses", "1"); code != 0 {
		t.Fatalf("load: exit %d\n%s", code, stderr)
	}
	cmd := exec.Command(bin, "run", "--users", "2", "--duration", "3s", "--warmup", "1s", "--label", "live",
		"--out", "live.json", "--metrics-addr", "127.0.0.1:0", "--metrics-linger", "1s")
	cmd.Dir = dir
	w := newOutputWatch("live metrics at ")
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := w.await(t, cmd)
	addr := strings.TrimSuffix(strings.TrimPrefix(line[strings.Index(line, "http://"):], "http://"), "/metrics")
	phases := map[string]bool{}
	var last map[string]*dto.MetricFamily
	for {
		mf := scrapeFamilies(addr)
		if mf == nil {
			break
		}
		last = mf
		for _, m := range mf["dbparity_phase"].GetMetric() {
			if m.GetGauge().GetValue() == 1 {
				phases[labelOf(m, "phase")] = true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, w.buf.String())
	}
	r, err := result.Read(filepath.Join(dir, "live.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !phases["warmup"] || !phases["measure"] {
		t.Errorf("phases seen: %v", phases)
	}
	// The endpoint lingered with the final values: each counter equals
	// the run's own count over all its phases.
	var total, rollbacks, errors, retries int64
	for _, iv := range r.Series {
		total, rollbacks, errors, retries = total+iv.Commits, rollbacks+iv.Rollbacks, errors+iv.Errors, retries+iv.Retries
	}
	got := committed(last)
	sumOf := func(name, outcome string) float64 {
		var n float64
		for _, m := range last[name].GetMetric() {
			if outcome == "" || labelOf(m, "outcome") == outcome {
				n += m.GetCounter().GetValue()
			}
		}
		return n
	}
	if got != float64(total) || sumOf("dbparity_transactions_total", "rolled_back") != float64(rollbacks) ||
		sumOf("dbparity_transactions_total", "failed") != float64(errors) || sumOf("dbparity_retries_total", "") != float64(retries) {
		t.Errorf("final scrape: %.0f committed, %.0f rolled back, %.0f failed, %.0f retries; the run: %d, %d, %d, %d", got,
			sumOf("dbparity_transactions_total", "rolled_back"), sumOf("dbparity_transactions_total", "failed"),
			sumOf("dbparity_retries_total", ""), total, rollbacks, errors, retries)
	}
	types := map[string]bool{}
	for _, m := range last["dbparity_transaction_latency_seconds"].GetMetric() {
		if m.GetHistogram().GetSampleCount() > 0 && labelOf(m, "label") == "live" && labelOf(m, "workload") == "order-entry" &&
			strings.HasPrefix(labelOf(m, "run_id"), "live-") {
			types[labelOf(m, "type")] = true
		}
	}
	for _, tx := range []string{"new_order", "payment", "order_status", "delivery", "stock_level"} {
		if !types[tx] {
			t.Errorf("no latency histogram for %s: %v", tx, types)
		}
	}
	if last["dbparity_driver_cpu_seconds_total"] == nil || last["go_sched_latencies_seconds"] == nil {
		t.Error("no driver CPU or scheduler latency")
	}
	t.Logf("last scrape %.0f commits, the run's series %d", got, total)

	// A port in use: refused before anything runs.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := dbparity(t, dir, "run", "--duration", "1s", "--warmup", "0s", "--out", "busy.json", "--metrics-addr", ln.Addr().String())
	if code != 2 || !strings.Contains(stderr, "in use") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("a port in use: exit %d, %q", code, stderr)
	}
}

// A run split in two parts, each serving its metrics: scraped every
// 250 ms while they run, the parts' last counts sum to the merged run's
// commits (every phase's, from its series) within what the run committed
// after the last scrape that answered, and each part's series carry its
// part label.
func TestPartsMetrics(t *testing.T) {
	t.Parallel()
	dir, inst := partsServer(t)
	if code, _, stderr := dbparity(t, dir, "load", "--warehouses", "2", "--target", inst.URL()); code != 0 {
		t.Fatalf("load: %s", stderr)
	}
	const every = 250 * time.Millisecond
	type part struct {
		cmd  *exec.Cmd
		w    *outputWatch
		last map[string]*dto.MetricFamily
		// gap is the time from the last scrape that answered to the
		// first that did not: the commits after it are not scraped.
		gap  time.Duration
		done chan struct{}
	}
	parts := make([]*part, 2)
	for i := range parts {
		cmd := exec.Command(bin, "run", "--target", inst.URL(), "--users", "4", "--warmup", "1s", "--duration", "3s", "--label", "split",
			"--part", fmt.Sprintf("%d/2", i), "--run-id", "metrics-test", "--out", fmt.Sprintf("part-%d.json", i), "--metrics-addr", "127.0.0.1:0")
		cmd.Dir = dir
		p := &part{cmd: cmd, w: newOutputWatch("live metrics at "), done: make(chan struct{})}
		cmd.Stderr = p.w
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		parts[i] = p
	}
	for _, p := range parts {
		line := p.w.await(t, p.cmd)
		addr := strings.TrimSuffix(line[strings.Index(line, "http://")+len("http://"):], "/metrics")
		go func() {
			defer close(p.done)
			var lastAt time.Time
			for {
				at := time.Now()
				mf := scrapeFamilies(addr)
				if mf == nil {
					p.gap = at.Sub(lastAt)
					return
				}
				p.last, lastAt = mf, at
				time.Sleep(every)
			}
		}()
	}
	var scraped float64
	var gap time.Duration
	for i, p := range parts {
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("part %d: %v\n%s", i, err, p.w.buf.String())
		}
		<-p.done
		scraped += committed(p.last)
		gap = max(gap, p.gap)
		for _, m := range p.last["dbparity_transactions_total"].GetMetric() {
			if labelOf(m, "part") != fmt.Sprintf("%d/2", i) || labelOf(m, "run_id") != "metrics-test" {
				t.Errorf("part %d's series labelled part %q, run %q", i, labelOf(m, "part"), labelOf(m, "run_id"))
				break
			}
		}
	}
	code, _, stderr := dbparity(t, dir, "merge", "--out", "run.json", "part-0.json", "part-1.json")
	if code != 0 && strings.Contains(stderr, "they did not run at once") {
		// A loaded host started a part's window more than 100 ms late
		// (108 ms with a second suite beside): what this test checks of
		// the merged run does not depend on it.
		t.Logf("merge: %s: merged with --force", strings.TrimSpace(stderr))
		code, _, stderr = dbparity(t, dir, "merge", "--force", "--out", "run.json", "part-0.json", "part-1.json")
	}
	if code != 0 {
		t.Fatalf("merge: %s", stderr)
	}
	merged, err := result.Read(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, iv := range merged.Series {
		total += iv.Commits
	}
	s := merged.Summarize()
	// The commits after each part's last answered scrape are missing from
	// the sum: at most the run's rate over the longest time from that
	// scrape to the first unanswered one (one interval, 250 ms, on a quiet
	// machine; more when a loaded host delays the scraper).
	if slack := s.TPS * gap.Seconds(); scraped > float64(total) || scraped < float64(total)-slack {
		t.Errorf("the parts' last scrapes sum to %.0f commits, the merged run counts %d (%.0f tps: %s from the last scrape answered to the first not is %.0f)",
			scraped, total, s.TPS, gap.Round(time.Millisecond), slack)
	}
	t.Logf("parts' last scrapes %.0f commits, merged run %d (%.0f tps)", scraped, total, s.TPS)
}

// The endpoint answers while the server is frozen: the run's sessions
// wait, the statement timeout cuts them, and a scrape in the freeze says
// an outage is open; after the server resumes, it is closed again.
func TestLiveMetricsFrozen(t *testing.T) {
	t.Parallel()
	dir, inst := partsServer(t)
	if code, _, stderr := dbparity(t, dir, "load", "--warehouses", "1", "--target", inst.URL()); code != 0 {
		t.Fatalf("load: %s", stderr)
	}
	cmd := exec.Command(bin, "run", "--target", inst.URL(), "--users", "2", "--warmup", "1s", "--duration", "7s",
		"--statement-timeout", "1s", "--out", "frozen.json", "--metrics-addr", "127.0.0.1:0")
	cmd.Dir = dir
	w := newOutputWatch("live metrics at ")
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := w.await(t, cmd)
	addr := strings.TrimSuffix(line[strings.Index(line, "http://")+len("http://"):], "/metrics")
	outage := func(mf map[string]*dto.MetricFamily) float64 {
		var v float64
		for _, m := range mf["dbparity_outage_open"].GetMetric() {
			v += m.GetGauge().GetValue()
		}
		return v
	}
	time.Sleep(2 * time.Second)
	if _, err := inst.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozenAt := time.Now()
	answered, open := 0, false
	for time.Since(frozenAt) < 3*time.Second {
		began := time.Now()
		mf := scrapeFamilies(addr)
		if mf != nil && time.Since(began) < time.Second {
			answered++
			open = open || outage(mf) == 1
		}
		time.Sleep(200 * time.Millisecond)
	}
	inst.Signal(syscall.SIGCONT)
	time.Sleep(2 * time.Second)
	after := scrapeFamilies(addr)
	cmd.Wait()
	if answered < 10 || !open {
		t.Errorf("during the freeze: %d scrapes answered within a second, outage seen open %v", answered, open)
	}
	if after == nil || outage(after) != 0 || after["dbparity_outages_total"].GetMetric()[0].GetCounter().GetValue() < 1 {
		t.Errorf("after the freeze: %v", after["dbparity_outage_open"])
	}
}

// ab serves one endpoint for all its rounds: each side's series under its
// label, and after the last round (the endpoint lingers) each side's
// commits equal its results' in all phases.
func TestABLiveMetrics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(bin, "ab", "--a", "sqlite://a.db", "--b", "sqlite://b.db", "--load", "--warehouses", "1", "--users", "2",
		"--rounds", "2", "--duration", "1s", "--warmup", "0s", "--prefix", "ab", "--metrics-addr", "127.0.0.1:0", "--metrics-linger", "1s")
	cmd.Dir = dir
	w := newOutputWatch("live metrics at ")
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := w.await(t, cmd)
	addr := strings.TrimSuffix(line[strings.Index(line, "http://")+len("http://"):], "/metrics")
	var last map[string]*dto.MetricFamily
	for {
		mf := scrapeFamilies(addr)
		if mf == nil {
			break
		}
		last = mf
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ab: %v\n%s", err, w.buf.String())
	}
	for _, side := range []string{"a", "b"} {
		var want int64
		for round := 1; round <= 2; round++ {
			r, err := result.Read(filepath.Join(dir, fmt.Sprintf("ab-%s-%d.json", side, round)))
			if err != nil {
				t.Fatal(err)
			}
			for _, iv := range r.Series {
				want += iv.Commits
			}
		}
		var got float64
		for _, m := range last["dbparity_transactions_total"].GetMetric() {
			if labelOf(m, "label") == side && labelOf(m, "outcome") == "committed" {
				got += m.GetCounter().GetValue()
			}
		}
		if got != float64(want) || want == 0 {
			t.Errorf("side %s: %.0f commits scraped, %d in its results", side, got, want)
		}
	}
}
