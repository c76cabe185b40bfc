package live

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape reads addr's /metrics as Prometheus text: each sample's name
// and labels to its value.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	b := scrapeText(t, addr)
	out := map[string]float64{}
	for _, l := range strings.Split(b, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out[l[:i]] = v
	}
	return out
}

// sum adds the samples of name whose labels hold every pair in want.
func sum(m map[string]float64, name string, want ...string) float64 {
	var s float64
	for k, v := range m {
		n, labels, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(labels, w)
		}
		if ok {
			s += v
		}
	}
	return s
}

// The endpoint serves what it was told, labelled with the run; a second
// server on its port is refused in one line; closed, it answers no more.
func TestEndpoint(t *testing.T) {
	s, err := Listen("127.0.0.1:0", Labels{RunID: "r1", Part: "0/2", Workload: "order-entry"},
		Options{CPU: func() (time.Duration, time.Duration) { return 2 * time.Second, time.Second }})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Run(Labels{Label: "pg17"})
	if s.Run(Labels{Label: "pg17"}) != r {
		t.Error("a second Run of the same labels made new series")
	}
	r.Tick(State{Phase: "measure", Sessions: 4, Rate: 100, RateLag: 20 * time.Millisecond})
	for range 3 {
		r.Transaction("new_order", Committed, "", 0, 3*time.Millisecond)
	}
	r.Transaction("new_order", RolledBack, "", 1, 100*time.Microsecond)
	r.Transaction("payment", Failed, "serialization", 2, time.Second)
	r.Reconnect()
	r.Tick(State{Phase: "measure", Outage: true})
	r.Tick(State{Phase: "measure", Outage: true})
	r.ReplayProgress(10, 2, time.Second)
	r.ReplayProgress(15, 3, 0)
	r.Divergent("new error", 2)
	m := scrape(t, s.Addr())
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"dbparity_transactions_total", []string{`outcome="committed"`, `type="new_order"`, `label="pg17"`, `run_id="r1"`, `part="0/2"`, `workload="order-entry"`}, 3},
		{"dbparity_transactions_total", []string{`outcome="failed"`, `class="serialization"`}, 1},
		{"dbparity_retries_total", nil, 3},
		{"dbparity_transaction_latency_seconds_count", []string{`type="new_order"`}, 4},
		{"dbparity_transaction_latency_seconds_bucket", []string{`type="new_order"`, `le="0.004096"`}, 4},
		{"dbparity_transaction_latency_seconds_bucket", []string{`type="new_order"`, `le="0.002048"`}, 1},
		{"dbparity_transaction_latency_seconds_count", []string{`type="payment"`}, 0},
		{"dbparity_phase", []string{`phase="measure"`}, 1},
		{"dbparity_phase", []string{`phase="warmup"`}, 0},
		{"dbparity_sessions_active", nil, 0},
		{"dbparity_outage_open", nil, 1},
		{"dbparity_outages_total", nil, 1},
		{"dbparity_reconnects_total", nil, 1},
		{"dbparity_replay_statements_total", []string{`outcome="ok"`}, 12},
		{"dbparity_replay_statements_total", []string{`outcome="failed"`}, 3},
		{"dbparity_replay_divergent_total", []string{`kind="new error"`}, 2},
		{"dbparity_driver_cpu_seconds_total", []string{`run_id="r1"`, `label="pg17"`, `part="0/2"`, `workload="order-entry"`}, 3},
		{"dbparity_replay_lag_seconds", []string{`label="pg17"`, `workload="order-entry"`}, 0},
	} {
		if got := sum(m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %g, want %g", c.name, c.labels, got, c.want)
		}
	}
	if _, err := Listen(s.Addr(), Labels{}, Options{}); err == nil || !strings.Contains(err.Error(), "in use") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a second server on %s: %v", s.Addr(), err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + s.Addr() + "/metrics"); err == nil {
		t.Error("the endpoint still answers after Close")
	}
}

// A replay's lag is served for a run once it reports a replay's
// progress, never for a run of another workload (where it read 0).
func TestReplayLagOnlyForReplays(t *testing.T) {
	s, err := Listen("127.0.0.1:0", Labels{RunID: "r"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	run := s.Run(Labels{Label: "pg", Workload: "order-entry"})
	run.Tick(State{Phase: "measure", Sessions: 2})
	run.Transaction("new_order", Committed, "", 0, time.Millisecond)
	rp := s.Run(Labels{Label: "new", Workload: "replay"})
	rp.Tick(State{Phase: "measure", Sessions: 1})
	if body := scrapeText(t, s.Addr()); strings.Contains(body, "dbparity_replay_lag_seconds") {
		t.Errorf("the replay lag is served before any replay progress:\n%s", grepLines(body, "replay_lag"))
	}
	rp.ReplayProgress(10, 1, 1500*time.Millisecond)
	rp.ReplayProgress(12, 1, 2*time.Second)
	body := scrapeText(t, s.Addr())
	if lines := grepLines(body, "dbparity_replay_lag_seconds{"); strings.Count(lines, "\n") != 1 ||
		!strings.Contains(lines, `label="new"`) || !strings.Contains(lines, `workload="replay"`) || !strings.HasSuffix(lines, " 2\n") {
		t.Errorf("want the replay's lag alone, 2 s:\n%s", lines)
	}
}

// The driver's CPU carries every run label (run_id, label, part,
// workload): each run counts the process's CPU used while it went on, so
// that the runs' counters add up to the process's.
func TestDriverCPUPerRun(t *testing.T) {
	var cpu time.Duration // the process's, user and system together
	s, err := Listen("127.0.0.1:0", Labels{RunID: "ab-1", Part: "1/2", Workload: "order-entry"},
		Options{CPU: func() (time.Duration, time.Duration) { return cpu / 4, cpu - cpu/4 }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if m := scrape(t, s.Addr()); sum(m, "dbparity_driver_cpu_seconds_total") != 0 {
		t.Errorf("driver CPU before any run: %v", m)
	}
	cpu = 2 * time.Second // loading, before the first round
	a := s.Run(Labels{Label: "a"})
	a.Tick(State{Phase: "measure"})
	cpu = 5 * time.Second
	a.Tick(State{Phase: "measure"})
	b := s.Run(Labels{Label: "b"})
	cpu = 6 * time.Second
	b.Tick(State{Phase: "measure"})
	cpu = 9 * time.Second // B's last second, not yet ticked: B's at a scrape
	want := map[string]float64{"a": 5, "b": 4}
	check := func() {
		t.Helper()
		m := scrape(t, s.Addr())
		for label, w := range want {
			if got := sum(m, "dbparity_driver_cpu_seconds_total", `label="`+label+`"`, `run_id="ab-1"`, `part="1/2"`, `workload="order-entry"`); got != w {
				t.Errorf("side %s: driver CPU %g s, want %g s", label, got, w)
			}
		}
		if got, total := sum(m, "dbparity_driver_cpu_seconds_total"), cpu.Seconds(); got != total {
			t.Errorf("the runs' driver CPU adds up to %g s, the process used %g s", got, total)
		}
	}
	check()
	// Round 2: A again, its series going on where it stopped.
	if s.Run(Labels{Label: "a"}) != a {
		t.Fatal("a new Run for round 2")
	}
	cpu = 10 * time.Second
	a.Tick(State{Phase: "measure"})
	want["a"] = 6
	check()
}

// scrapeText is addr's /metrics as text.
func scrapeText(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// grepLines are the lines of text that hold s, each ending in a newline.
func grepLines(text, s string) string {
	var out strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out.WriteString(l + "\n")
		}
	}
	return out.String()
}

// Every query of the Grafana dashboard names metrics the endpoint serves.
func TestDashboardMetrics(t *testing.T) {
	b, err := os.ReadFile("../../deploy/grafana/dbparity-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name       string
				Type       string
				Definition string
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	s, err := Listen("127.0.0.1:0", Labels{RunID: "r"}, Options{CPU: func() (time.Duration, time.Duration) { return 0, 0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	r := s.Run(Labels{Label: "x"})
	r.Tick(State{Phase: "measure", Outage: true})
	r.Transaction("t", Committed, "", 1, time.Millisecond)
	r.Transaction("t", Failed, "c", 0, time.Millisecond)
	r.Reconnect()
	r.ReplayProgress(2, 1, 0)
	r.Divergent("new error", 1)
	served := map[string]bool{}
	for k := range scrape(t, s.Addr()) {
		n, _, _ := strings.Cut(k, "{")
		served[n] = true
	}
	metric := regexp.MustCompile(`\b(dbparity_[a-z_]+|go_[a-z_]+)\b`)
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	datasource := false
	for _, v := range d.Templating.List {
		datasource = datasource || (v.Name == "datasource" && v.Type == "datasource")
		exprs = append(exprs, v.Definition)
	}
	if !datasource {
		t.Error("the dashboard has no datasource variable")
	}
	// Every panel's series follow the dashboard's run and label choices.
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if strings.Contains(tg.Expr, "dbparity_") && (!strings.Contains(tg.Expr, `run_id=~"$run_id"`) || !strings.Contains(tg.Expr, `label=~"$label"`)) {
				t.Errorf("panel %q: %s does not select $run_id and $label", p.Title, tg.Expr)
			}
		}
	}
	n := 0
	for _, e := range exprs {
		for _, name := range metric.FindAllString(e, -1) {
			n++
			if !served[name] {
				t.Errorf("the dashboard queries %s, which the endpoint does not serve (in %s)", name, e)
			}
		}
	}
	if n < 15 {
		t.Errorf("only %d metric names in the dashboard's queries", n)
	}
}

// A port without a host binds loopback only; a host that is not a
// loopback address is reachable from other hosts, and says so.
func TestListenLoopbackByDefault(t *testing.T) {
	s, err := Listen(":0", Labels{RunID: "r"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if host, _, _ := net.SplitHostPort(s.Addr()); host != "127.0.0.1" || s.Reachable() {
		t.Errorf(":0 listens on %s (reachable %v), want loopback only", s.Addr(), s.Reachable())
	}
	w, err := Listen("0.0.0.0:0", Labels{RunID: "r"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	if !w.Reachable() {
		t.Errorf("0.0.0.0 is not reported reachable from other hosts: %s", w.Addr())
	}
}
