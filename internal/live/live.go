// Package live serves what a command is doing as OpenMetrics/Prometheus
// text at /metrics while it runs (--metrics-addr), for the Prometheus and
// Grafana users already watch their databases with: transactions by type
// and outcome, latency histograms with the result's buckets, sessions,
// phase, the target rate and its lag, a replay's lag and divergences, the
// driver's CPU and the Go scheduler's latency, reconnects and open
// outages. It is written with the Prometheus Go client library; it owns
// the HTTP server and the metrics, which the runner feeds through small
// methods (a Run is the driver's Observer). Nothing in it knows a
// workload or a database.
package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Labels name the command's series: constant labels on every metric. No
// password or target URL belongs here.
type Labels struct {
	RunID    string // a run's id, or the command's start time
	Label    string // the platform's label (--label)
	Part     string // "2/4" for a part of a split run, else ""
	Workload string // order-entry, slob, replay
}

// Phases are the phases the phase gauge takes, as the driver names them.
var Phases = []string{"warmup", "measure", "drain"}

// Server is the /metrics endpoint of one command.
type Server struct {
	reg  *prometheus.Registry
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
	base Labels
	// linger: Close waits this long first (Options.Linger).
	linger time.Duration

	mu   sync.Mutex
	runs map[Labels]*Run

	// The process's CPU (Options.CPU; nil: no driver CPU counter), counted
	// to the run going on: cpuRun, the run that last began or ticked, gets
	// what was used since cpuLast.
	cpu     func() time.Duration
	cpuMu   sync.Mutex
	cpuLast time.Duration
	cpuRun  *Run
}

// Run is the metrics of one run (one side of ab, one step of a sweep, a
// replay), each series labelled with its Labels. Its methods are safe for
// concurrent use; a nil *Run does nothing.
type Run struct {
	srv        *Server
	tx         *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	retries    *prometheus.CounterVec
	sessions   prometheus.Gauge
	phase      *prometheus.GaugeVec
	rate       prometheus.Gauge
	rateLag    prometheus.Gauge
	reconnects prometheus.Counter
	outageOpen prometheus.Gauge
	outages    prometheus.Counter
	replayLag  prometheus.Gauge
	statements *prometheus.CounterVec
	divergent  *prometheus.CounterVec

	mu                 sync.Mutex
	wasOut             bool
	sentOK, sentFailed int64 // a replay's totals already counted

	lagOnce sync.Once     // registers replayLag at a replay's first progress
	cpu     time.Duration // the process's CPU counted to this run (Server.cpuMu)
}

// LatencyBuckets are the upper bounds, in seconds, of the latency
// histograms: powers of two from 16 µs to 32 s, the buckets show prints a
// result's latencies in. A native histogram is kept beside them for
// scrapers that take it.
func LatencyBuckets() []float64 {
	var b []float64
	for us := 16.0; us <= 32e6; us *= 2 {
		b = append(b, us/1e6)
	}
	return b
}

// Options are what the server reads from the process itself.
type Options struct {
	// CPU returns the process's user and system CPU time so far; nil
	// leaves the driver CPU counter out. Each run's counter has the CPU
	// used while it went on (from the previous run's last tick, or the
	// process's start, to its own last tick); runs going on at once
	// (ab --slice) share it by turns, tick by tick.
	CPU func() (user, sys time.Duration)
	// Linger keeps the endpoint serving the final values this long when
	// it is closed, so that a scrape sees them (a scrape interval).
	Linger time.Duration
}

// Listen binds addr (HOST:PORT) and serves /metrics there until Close.
// Without a host (":9464") it binds the loopback address only: another
// host sees the endpoint only when a host is named. A port in use, or an
// address that cannot be bound, is refused in one line naming the flag.
func Listen(addr string, l Labels, o Options) (*Server, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		var se *net.OpError
		switch {
		case errors.Is(err, syscall.EADDRINUSE):
			return nil, fmt.Errorf("--metrics-addr %s: the port is in use: choose another", addr)
		case errors.As(err, &se) && se.Err != nil:
			return nil, fmt.Errorf("--metrics-addr %s: %v", addr, se.Err)
		}
		return nil, fmt.Errorf("--metrics-addr %s: %v", addr, err)
	}
	s := newServer(l, o)
	s.ln, s.done = ln, make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{EnableOpenMetrics: true, Registry: s.reg}))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln)
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Reachable says whether other hosts can reach the endpoint: it listens
// on an address that is not a loopback one.
func (s *Server) Reachable() bool {
	a, ok := s.ln.Addr().(*net.TCPAddr)
	return ok && !a.IP.IsLoopback()
}

// Close stops serving, after serving the final values for the linger
// (Options.Linger) unless ctx ends first (Ctrl-C), waiting at most a few
// seconds for scrapes in flight.
func (s *Server) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case <-time.After(s.linger):
	case <-ctx.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}

func newServer(l Labels, o Options) *Server {
	s := &Server{reg: prometheus.NewRegistry(), base: l, runs: map[Labels]*Run{}, linger: o.Linger}
	if o.CPU != nil {
		s.cpu = func() time.Duration { u, sy := o.CPU(); return u + sy }
	}
	// The Go scheduler's latency (go_sched_latencies_seconds): how long
	// the sessions' goroutines waited to run once ready, the driver's own
	// delay in every latency it measures.
	s.reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorMemStatsMetricsDisabled(),
		collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/sched/latencies:seconds$`)})))
	return s
}

// Run returns the metrics of the run labelled l (the server's run id,
// part and workload where l leaves them empty), made on first use: the
// rounds of one side of ab add to the same series. The process's CPU
// counts to this run from now on (until another run begins or ticks).
func (s *Server) Run(l Labels) *Run {
	if s == nil {
		return nil
	}
	if l.RunID == "" {
		l.RunID = s.base.RunID
	}
	if l.Part == "" {
		l.Part = s.base.Part
	}
	if l.Workload == "" {
		l.Workload = s.base.Workload
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[l]
	if r == nil {
		r = newRun(l)
		r.srv = s
		// replayLag is registered by a replay's first progress: a run of
		// another workload has no replay lag to serve.
		s.reg.MustRegister(r.tx, r.latency, r.retries, r.sessions, r.phase, r.rate, r.rateLag, r.reconnects, r.outageOpen, r.outages,
			r.statements, r.divergent)
		if s.cpu != nil {
			s.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "dbparity", Name: "driver_cpu_seconds_total",
				Help:        "CPU the dbparity process used, user and system (the driver's cost), counted to the run going on; runs at once share it by turns.",
				ConstLabels: runLabels(l)}, r.driverCPU))
		}
		s.runs[l] = r
	}
	r.current()
	return r
}

// runLabels are the constant labels of every series of the run labelled l.
func runLabels(l Labels) prometheus.Labels {
	return prometheus.Labels{"run_id": l.RunID, "label": l.Label, "part": l.Part, "workload": l.Workload}
}

// current counts the process's CPU from now on to s, what was used
// before to the run that went on then (to s when none did yet).
func (s *Run) current() {
	if s == nil || s.srv == nil || s.srv.cpu == nil {
		return
	}
	srv := s.srv
	srv.cpuMu.Lock()
	defer srv.cpuMu.Unlock()
	if srv.cpuRun == nil {
		srv.cpuRun = s
	}
	srv.settleCPU()
	srv.cpuRun = s
}

// settleCPU counts the CPU used since the last reading to the run going
// on; the caller holds cpuMu.
func (srv *Server) settleCPU() {
	if srv.cpuRun == nil {
		return // the first run gets what was used before it
	}
	if now := srv.cpu(); now > srv.cpuLast {
		srv.cpuRun.cpu += now - srv.cpuLast
		srv.cpuLast = now
	}
}

// driverCPU is the CPU counted to s so far, in seconds.
func (s *Run) driverCPU() float64 {
	s.srv.cpuMu.Lock()
	defer s.srv.cpuMu.Unlock()
	s.srv.settleCPU()
	return s.cpu.Seconds()
}

func newRun(l Labels) *Run {
	constant := runLabels(l)
	f := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "dbparity", Name: name, Help: help, ConstLabels: constant}
	}
	s := &Run{}
	s.tx = prometheus.NewCounterVec(prometheus.CounterOpts(f("transactions_total",
		"Transactions ended, by type and outcome (committed, rolled_back by design, failed) and, for failures, error class.")),
		[]string{"type", "outcome", "class"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "dbparity", Name: "transaction_latency_seconds",
		Help:        "Latency of the transactions that ended without error, by type (an open loop's from its intended start).",
		ConstLabels: constant, Buckets: LatencyBuckets(), NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160},
		[]string{"type"})
	s.retries = prometheus.NewCounterVec(prometheus.CounterOpts(f("retries_total", "Transactions retried after a serialization failure or deadlock, by type.")), []string{"type"})
	s.sessions = prometheus.NewGauge(prometheus.GaugeOpts(f("sessions_active", "Sessions with a connection, in the last interval.")))
	s.phase = prometheus.NewGaugeVec(prometheus.GaugeOpts(f("phase", "1 for the phase the run is in (warmup, measure, drain), 0 for the others.")), []string{"phase"})
	s.rate = prometheus.NewGauge(prometheus.GaugeOpts(f("target_rate_tps", "The target arrival rate of an open loop (--rate), transactions per second; 0 in a closed loop.")))
	s.rateLag = prometheus.NewGauge(prometheus.GaugeOpts(f("rate_lag_seconds", "How far an open loop's sessions are behind its schedule.")))
	s.reconnects = prometheus.NewCounter(prometheus.CounterOpts(f("reconnects_total", "Connections opened again after one was lost.")))
	s.outageOpen = prometheus.NewGauge(prometheus.GaugeOpts(f("outage_open", "1 while the server does not serve the sessions (connections lost or refused, nothing committed since).")))
	s.outages = prometheus.NewCounter(prometheus.CounterOpts(f("outages_total", "Outages and disconnections that began.")))
	s.replayLag = prometheus.NewGauge(prometheus.GaugeOpts(f("replay_lag_seconds", "How far a replay is behind its captured schedule.")))
	s.statements = prometheus.NewCounterVec(prometheus.CounterOpts(f("replay_statements_total", "Statements a replay sent, by outcome (ok, failed).")), []string{"outcome"})
	s.divergent = prometheus.NewCounterVec(prometheus.CounterOpts(f("replay_divergent_total", "Replayed statements that ended otherwise than captured, by kind.")), []string{"kind"})
	for _, p := range Phases {
		s.phase.WithLabelValues(p)
	}
	return s
}

// Outcomes of a transaction, as the transactions counter labels them.
const (
	Committed  = "committed"
	RolledBack = "rolled_back"
	Failed     = "failed"
)

// Transaction counts one transaction of type typ that ended with outcome
// (class: the error class of a failure), and its latency when it ended
// without error.
func (s *Run) Transaction(typ, outcome, class string, retries int, latency time.Duration) {
	if s == nil {
		return
	}
	s.tx.WithLabelValues(typ, outcome, class).Inc()
	if retries > 0 {
		s.retries.WithLabelValues(typ).Add(float64(retries))
	}
	if outcome != Failed {
		s.latency.WithLabelValues(typ).Observe(latency.Seconds())
	}
}

// Reconnect counts a connection opened again.
func (s *Run) Reconnect() {
	if s != nil {
		s.reconnects.Inc()
	}
}

// State is the run's state at a tick.
type State struct {
	Phase    string
	Sessions int
	Rate     float64       // target rate; 0 in a closed loop
	RateLag  time.Duration // behind schedule
	Outage   bool          // an outage is open
}

// Phase sets the phase the run is in, as it changes.
func (s *Run) Phase(phase string) {
	if s == nil {
		return
	}
	for _, p := range Phases {
		v := 0.0
		if strings.EqualFold(p, phase) {
			v = 1
		}
		s.phase.WithLabelValues(p).Set(v)
	}
}

// Tick sets the gauges from the run's state.
func (s *Run) Tick(st State) {
	if s == nil {
		return
	}
	s.current()
	s.Phase(st.Phase)
	s.sessions.Set(float64(st.Sessions))
	s.rate.Set(st.Rate)
	s.rateLag.Set(st.RateLag.Seconds())
	s.mu.Lock()
	if st.Outage && !s.wasOut {
		s.outages.Inc()
	}
	s.wasOut = st.Outage
	s.mu.Unlock()
	if st.Outage {
		s.outageOpen.Set(1)
	} else {
		s.outageOpen.Set(0)
	}
}

// ReplayProgress takes a replay's totals so far (statements sent, of
// them failed) and its lag behind the captured schedule.
func (s *Run) ReplayProgress(sent, failed int64, lag time.Duration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	ok, bad := sent-failed-s.sentOK, failed-s.sentFailed
	s.sentOK, s.sentFailed = sent-failed, failed
	s.mu.Unlock()
	if ok > 0 {
		s.statements.WithLabelValues("ok").Add(float64(ok))
	}
	if bad > 0 {
		s.statements.WithLabelValues("failed").Add(float64(bad))
	}
	s.lagOnce.Do(func() {
		if s.srv != nil {
			s.srv.reg.MustRegister(s.replayLag)
		}
	})
	s.replayLag.Set(lag.Seconds())
}

// Divergent adds n replayed statements that ended otherwise than
// captured, of one kind (new error, vanished error, rows differ, ...).
func (s *Run) Divergent(kind string, n int64) {
	if s != nil && n > 0 {
		s.divergent.WithLabelValues(kind).Add(float64(n))
	}
}
