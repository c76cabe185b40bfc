package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dbparity/dbparity/internal/cpuset"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/testhost"
)

// eight are the eight PostgreSQL hosts of studies 000, 003, 004 and the
// parts: hosts 1-3 hold order-entry (one warehouse, loaded alike), all
// eight slob.
type eight struct {
	hosts []*testhost.Host
	load  []string // the load command lines, for the studies that use them
}

// pgSettings are the eight hosts' settings: commits wait for no disk
// flush, so that a transaction's time is the server's CPU and the
// link's.
var pgSettings = []string{"synchronous_commit=off"}

func (b *bench) startEight() (*eight, error) {
	opts := make([]testhost.Options, 8)
	for i := range opts {
		opts[i] = testhost.Options{Engine: managed.Postgres, Settings: pgSettings}
	}
	e := &eight{}
	needOE := slices.ContainsFunc(b.o.studies, func(s string) bool { return s == "000" || s == "004" || s == "parts" })
	if needOE {
		// One load, three copies: the same starting state, row for row
		// (a load stamps its rows with the time), for the replays to
		// reach the application's end state from.
		data, err := os.MkdirTemp("", "dbparity-hosts-data-")
		if err != nil {
			return nil, err
		}
		os.Chmod(data, 0o755) // the servers' user enters it
		b.onClose(func() error { return os.RemoveAll(data) })
		seed := filepath.Join(data, "oe")
		args := []string{"load", "--workload", "order-entry", "--warehouses", "1", "--managed", "postgres", "--pg-data", seed}
		if _, err := b.dbparity(args...); err != nil {
			return nil, err
		}
		e.load = append(e.load, "dbparity "+strings.Join(args[:len(args)-1], " ")+" oe    # then cp -a oe oe-1, oe-2, oe-3: the first three hosts' data directories")
		for i := range 3 {
			dst := fmt.Sprintf("%s-%d", seed, i+1)
			if out, err := exec.Command("cp", "-a", seed, dst).CombinedOutput(); err != nil {
				return nil, fmt.Errorf("cp -a %s %s: %v: %s", seed, dst, err, out)
			}
			opts[i].DataDir = dst
		}
	}
	t0 := time.Now()
	hs, _, err := b.startHosts(opts...)
	if err != nil {
		return nil, err
	}
	// In the order of the options (the first three hold the copies), the
	// rest by number.
	slices.SortFunc(hs[3:], func(x, y *testhost.Host) int { return x.N - y.N })
	logf("8 hosts started in %s", time.Since(t0).Round(100*time.Millisecond))
	b.hosts = append(b.hosts, hs...)
	e.hosts = hs
	return e, nil
}

// recorder reads hosts from inside until stop.
type recorder struct {
	hosts []*testhost.Host
	stops []func() (testhost.Readings, error)
}

func (b *bench) record(hs ...*testhost.Host) *recorder {
	r := &recorder{hosts: hs}
	for _, h := range hs {
		r.stops = append(r.stops, h.Record(b.o.interval))
	}
	return r
}

// stop ends the readings: each host's, by host number.
func (r *recorder) stop() (map[int]testhost.Readings, error) {
	out := map[int]testhost.Readings{}
	var errs []error
	for i, s := range r.stops {
		rs, err := s()
		if err != nil {
			errs = append(errs, fmt.Errorf("host %d: readings inside: %w", r.hosts[i].N, err))
		}
		out[r.hosts[i].N] = rs
	}
	return out, errors.Join(errs...)
}

func (b *bench) path(name string) string { return filepath.Join(b.dir, name) }

func rel(b *bench, files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i], _ = filepath.Rel(b.dir, f)
	}
	return out
}

// hostLine describes a host for a study's setup.
func hostLine(h *testhost.Host, role string) string {
	delay := "no added delay"
	if h.Delay > 0 {
		delay = fmt.Sprintf("%s added to each round trip", ms(h.Delay))
	}
	return fmt.Sprintf("- %s: %s at %s:%d, %s %s, CPU %s, %s", role, h.Hostname, h.Addr, h.Port, h.Engine, h.Version, cpuset.Format(h.CPUs), delay)
}

// study000: order-entry, A without and B with an added round trip, a
// sweep over users on two hosts, compared at equal CPU utilisation.
func (b *bench) study000(s *study, e *eight) error {
	s.title = fmt.Sprintf("order-entry, no added delay against %s more per round trip, two hosts", ms(b.o.delay))
	a, bh := e.hosts[0], e.hosts[1]
	if err := bh.SetDelay(b.o.delay); err != nil {
		return err
	}
	defer bh.SetDelay(0)
	state := ""
	if slices.Contains(b.o.studies, "004") {
		state = ", in the state study 004 left them (its application's end state on A, its first replay's, the same, on B)"
	}
	s.setup = []string{hostLine(a, "A"), hostLine(bh, "B"), fmt.Sprintf("- both from copies of one load (order-entry, one warehouse)%s; %s", state, strings.Join(pgSettings, ", "))}
	s.commands = append(s.commands, e.load...)
	la, lb := "no-delay", fmt.Sprintf("rt+%gms", b.o.delay.Seconds()*1000)
	prefix := b.path("s000")
	args := []string{"sweep", "--workload", "order-entry", "--a", a.URL(), "--b", bh.URL(), "--label-a", la, "--label-b", lb,
		"--over", "users=" + b.o.users, "--repeat", strconv.Itoa(b.o.rounds), "--duration", b.o.duration.String(), "--warmup", b.o.warmup.String(),
		"--db-host", "sql", "--prefix", prefix, "--html", b.path("000.html"), "--force"}
	rec := b.record(a, bh)
	out, err := b.dbparity(args...)
	readings, rerr := rec.stop()
	if err != nil {
		return err
	}
	s.command("", relArgs(b, args)...)
	s.report = out
	files, _ := filepath.Glob(prefix + "-*.json")
	sort.Strings(files)
	if len(files) == 0 {
		return errors.New("the sweep wrote no result files")
	}
	if err := b.answer(s, la, append([]string{"--over", "users"}, files...)...); err != nil {
		return err
	}
	var cs []check
	for _, f := range files {
		r, err := result.Read(f)
		if err != nil {
			return err
		}
		h := a
		if r.Label == lb {
			h = bh
		}
		cs = append(cs, b.checkRun("000", filepath.Base(f), r, h, readings[h.N])...)
	}
	s.extra = append(s.extra, checkTable("000", cs))
	return rerr
}

// relArgs shows the work directory's files by their names.
func relArgs(b *bench, args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if strings.HasPrefix(a, b.dir+"/") {
			out[i] = strings.TrimPrefix(a, b.dir+"/")
		}
	}
	return out
}

// study002: slob on PostgreSQL and on MariaDB, each on a host of its
// own with a small cache, in interleaved rounds; each host read by the
// node_exporter inside it.
func (b *bench) study002(s *study) error {
	s.title = "slob, AWR side by side: PostgreSQL and MariaDB, each on a host of its own"
	hs, closeThem, err := b.startHosts(
		testhost.Options{Engine: managed.Postgres, Settings: []string{"shared_buffers=16MB"}, NodeExporter: true},
		testhost.Options{Engine: managed.MariaDB, Settings: []string{"innodb_buffer_pool_size=16M"}, NodeExporter: true})
	if err != nil {
		return err
	}
	defer closeThem()
	b.hosts = append(b.hosts, hs...)
	pg, my := hs[0], hs[1]
	s.setup = []string{hostLine(pg, "postgres"), hostLine(my, "mariadb"),
		fmt.Sprintf("- small caches (shared_buffers=16MB; innodb_buffer_pool_size=16M) against %d rows of one 8 KB block (%d MB); each host's node_exporter at 198.18.N.2:9100",
			b.o.slobScale, b.o.slobScale*8/1024)}
	for _, h := range hs {
		args := []string{"load", "--workload", "slob", "--scale", strconv.Itoa(b.o.slobScale), "--target", h.URL()}
		if _, err := b.dbparity(args...); err != nil {
			return err
		}
		s.command("", args...)
	}
	labels := map[*testhost.Host]string{pg: "postgres", my: "mariadb"}
	var files []string
	fileHost := map[string]*testhost.Host{}
	rec := b.record(pg, my)
	for k := 1; k <= b.o.rounds; k++ {
		order := []*testhost.Host{pg, my}
		if k%2 == 0 {
			order = []*testhost.Host{my, pg}
		}
		for _, h := range order {
			f := b.path(fmt.Sprintf("s002-%s-%d.json", labels[h], k))
			args := []string{"run", "--workload", "slob", "--update-pct", "20", "--users", strconv.Itoa(b.o.slobUsers),
				"--duration", b.o.duration.String(), "--warmup", b.o.warmup.String(), "--label", labels[h], "--out", f, "--target", h.URL(),
				"--db-host", "node-exporter", "--db-host-metrics", h.MetricsURL, "--force"}
			if _, err := b.dbparity(args...); err != nil {
				rec.stop()
				return err
			}
			if k == 1 {
				s.command(fmt.Sprintf("round 1 of %d; rounds alternate the order (ABBA)", b.o.rounds), relArgs(b, args)...)
			}
			files = append(files, f)
			fileHost[f] = h
		}
	}
	readings, rerr := rec.stop()
	sort.Strings(files)
	if err := b.compare(s, b.path("002.html"), "postgres", files...); err != nil {
		return err
	}
	var cs []check
	for _, f := range files {
		r, err := result.Read(f)
		if err != nil {
			return err
		}
		h := fileHost[f]
		cs = append(cs, b.checkRun("002", filepath.Base(f), r, h, readings[h.N])...)
	}
	s.extra = append(s.extra, checkTable("002", cs))
	return rerr
}

// study003: slob over 4 and then 8 hosts at once, in interleaved
// rounds: the efficiency of the hosts added, and each host's figures.
func (b *bench) study003(s *study, e *eight) error {
	s.title = "slob over 4 and 8 database hosts of their own"
	var names []string
	for _, h := range e.hosts {
		names = append(names, fmt.Sprintf("%s (%s)", h.Hostname, h.Addr))
	}
	s.setup = []string{fmt.Sprintf("- hosts %s; four: the first 4, eight: all", strings.Join(names, ", ")),
		fmt.Sprintf("- PostgreSQL %s, %s, every host on CPU %s (the machine has %d): the hosts share it", e.hosts[0].Version, strings.Join(pgSettings, ", "),
			cpuset.Format(b.hostCPUs), len(b.hostCPUs)+len(b.drvCPUs)),
		fmt.Sprintf("- slob loaded on each: %d rows (dbparity load --workload slob --scale %d --target URL1 ... --target URL8)", b.o.scaleOut, b.o.scaleOut)}
	// Loaded now, not with the hosts: study 004 verifies every table of
	// its hosts against the application's, and a load stamps its time.
	args := []string{"load", "--workload", "slob", "--scale", strconv.Itoa(b.o.scaleOut)}
	for _, h := range e.hosts {
		args = append(args, "--target", h.URL())
	}
	if _, err := b.dbparity(args...); err != nil {
		return err
	}
	rec := b.record(e.hosts...)
	var files []string
	for k := 1; k <= b.o.rounds; k++ {
		steps := []int{4, 8}
		if k%2 == 0 {
			steps = []int{8, 4}
		}
		for _, n := range steps {
			label := map[int]string{4: "four", 8: "eight"}[n]
			f := b.path(fmt.Sprintf("s003-%s-%d.json", label, k))
			args := []string{"run", "--workload", "slob", "--users", "1", "--duration", b.o.duration.String(), "--warmup", b.o.warmup.String(),
				"--label", label, "--out", f, "--db-host", "sql", "--force"}
			for _, h := range e.hosts[:n] {
				args = append(args, "--target", h.URL())
			}
			if _, err := b.dbparity(args...); err != nil {
				rec.stop()
				return err
			}
			if k == 1 {
				s.command(fmt.Sprintf("round 1 of %d; rounds alternate the order", b.o.rounds), relArgs(b, args)...)
			}
			files = append(files, f)
		}
	}
	readings, rerr := rec.stop()
	sort.Strings(files)
	if err := b.compare(s, b.path("003.html"), "four", files...); err != nil {
		return err
	}
	var cs []check
	byLabel := map[string][]*result.Run{}
	for _, f := range files {
		r, err := result.Read(f)
		if err != nil {
			return err
		}
		byLabel[r.Label] = append(byLabel[r.Label], r)
		for i, p := range r.Parts {
			h := e.hosts[i]
			cs = append(cs, b.checkRun("003", fmt.Sprintf("%s target %d", filepath.Base(f), i+1), p, h, readings[h.N])...)
		}
	}
	s.extra = append(s.extra, perHostTable(byLabel, readings, e.hosts), checkTable("003", cs))
	return rerr
}

// perHostTable is each host's figures in each step, medians of the
// rounds: as the driver saw them (sql source) and, for the server's CPU
// and the network, as read inside the host.
func perHostTable(byLabel map[string][]*result.Run, readings map[int]testhost.Readings, hosts []*testhost.Host) string {
	var w strings.Builder
	fmt.Fprintf(&w, "per host (medians of the rounds; outside: the run's sql source; inside: the host's own /proc over the same window)\n\n")
	fmt.Fprintf(&w, "| step | host | tps | server CPU cores outside | inside | eth0 MB/s in+out outside | inside | device IOPS r+w (the machine's) |\n")
	fmt.Fprintf(&w, "|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, label := range []string{"four", "eight"} {
		runs := byLabel[label]
		if len(runs) == 0 {
			continue
		}
		n := len(runs[0].Parts)
		tot := make([][]float64, 6)
		for i := 0; i < n; i++ {
			h := hosts[i]
			var tps, cpuO, cpuI, netO, netI, iops []float64
			for _, r := range runs {
				if i >= len(r.Parts) {
					continue
				}
				p := r.Parts[i]
				tps = append(tps, p.Summarize().TPS)
				if !p.OS.HasWindow() {
					continue
				}
				w := p.OS.Window
				if w.ServerCPUCores != nil {
					cpuO = append(cpuO, *w.ServerCPUCores)
				}
				for _, nr := range w.Nets {
					if nr.Name == "eth0" {
						netO = append(netO, nr.RxMBPerS+nr.TxMBPerS)
					}
				}
				var io float64
				for _, d := range w.Disks {
					if d.Name == p.OS.DataDevice || p.OS.DataDevice == "" {
						io += d.ReadsPerS + d.WritesPerS
					}
				}
				iops = append(iops, io)
				if in, ok := readings[h.N].Between(w.From, w.To); ok && in.Seconds > 0 {
					cpuI = append(cpuI, in.ServerCPUS/in.Seconds)
					nd := in.Nets["eth0"]
					netI = append(netI, (nd.RxBytes+nd.TxBytes)/in.Seconds/(1<<20))
				}
			}
			vals := []float64{median(tps), median(cpuO), median(cpuI), median(netO), median(netI), median(iops)}
			for j, v := range vals {
				tot[j] = append(tot[j], v)
			}
			fmt.Fprintf(&w, "| %s | %s | %.0f | %.3f | %.3f | %.3f | %.3f | %.0f |\n", label, h.Hostname, vals[0], vals[1], vals[2], vals[3], vals[4], vals[5])
		}
		sum := func(xs []float64) float64 {
			t := 0.0
			for _, x := range xs {
				t += x
			}
			return t
		}
		fmt.Fprintf(&w, "| %s | **total of %d** | %.0f | %.3f | %.3f | %.3f | %.3f | %.0f (one device, counted %d times) |\n", label, n,
			sum(tot[0]), sum(tot[1]), sum(tot[2]), sum(tot[3]), sum(tot[4]), sum(tot[5]), n)
	}
	return w.String()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// study004: capture on the database host from the packets on its eth0
// (inside its namespaces) while an application runs, then replay from
// the driver's side onto two copies of the starting state, one across
// the added delay, each verified against the end state.
func (b *bench) study004(s *study, e *eight) error {
	s.title = "capture on the database host, replay from the driver's side"
	app, near, far := e.hosts[0], e.hosts[1], e.hosts[2]
	s.setup = []string{hostLine(app, "the application's host, captured"), hostLine(near, "replay 1"),
		hostLine(far, "replay 2") + fmt.Sprintf(" (%s added to each round trip for the replay)", ms(b.o.delay)),
		"- the three start from copies of one load (order-entry, one warehouse)"}
	s.commands = append(s.commands, e.load...)
	capFile := b.path("app.capture")
	os.Remove(capFile)
	capArgs := []string{"capture", "--listen-on", "eth0", "--port", strconv.Itoa(app.Port), "--out", capFile,
		"--duration", (b.o.appDuration + time.Minute).String()}
	// On the host: in its namespaces (nsenter), on its CPU.
	c := app.Command(b.dir, "taskset", append([]string{"-c", cpuset.Format(app.CPUs), b.bin}, relArgs(b, capArgs)...)...)
	c.SysProcAttr.Setpgid = true // a SIGKILL to the group takes both nsenter and the capture
	var capOut bytes.Buffer
	c.Stdout = &capOut
	errPipe, err := c.StderrPipe()
	if err != nil {
		return err
	}
	logf("on %s: dbparity %s", app.Hostname, strings.Join(capArgs, " "))
	if err := c.Start(); err != nil {
		return err
	}
	capErr := &lockedBuf{}
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(errPipe)
		once := sync.Once{}
		for sc.Scan() {
			capErr.write(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "capturing:") {
				once.Do(func() { close(listening) })
			}
		}
	}()
	capDone := make(chan error, 1)
	go func() { capDone <- c.Wait() }()
	select {
	case <-listening:
	case err := <-capDone:
		return fmt.Errorf("capture on %s ended at once: %v: %s", app.Hostname, err, capErr)
	case <-time.After(30 * time.Second):
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		return fmt.Errorf("capture on %s did not start within 30 s: %s", app.Hostname, capErr)
	}
	s.command(fmt.Sprintf("on %s, inside its namespaces (nsenter), on its CPU; ended with Ctrl-C (SIGINT) after the application", app.Hostname),
		relArgs(b, capArgs[:len(capArgs)-2])...)
	rec := b.record(app, near, far)
	appFile := b.path("app.json")
	// Parameters as text (pgx's exec mode): the capture decodes binary
	// parameters only of the types the client's Parse declares, and pgx
	// prepares without declaring them.
	appURL := app.URL() + "&default_query_exec_mode=exec"
	appArgs := []string{"run", "--workload", "order-entry", "--users", "4", "--duration", b.o.appDuration.String(), "--warmup", "0s",
		"--label", "app", "--out", appFile, "--target", appURL, "--db-host", "sql", "--force"}
	_, appErr := b.dbparity(appArgs...)
	time.Sleep(500 * time.Millisecond) // the last segments of the closed connections
	// Ctrl-C to the capture itself: nsenter, its parent here, would die
	// of it and leave the capture writing.
	if pid := childOf(c.Process.Pid); pid > 0 {
		syscall.Kill(pid, syscall.SIGINT)
	}
	select {
	case err = <-capDone:
	case <-time.After(30 * time.Second):
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		err = errors.New("did not end within 30 s of SIGINT")
	}
	if appErr != nil {
		rec.stop()
		return appErr
	}
	if err != nil {
		rec.stop()
		return fmt.Errorf("capture on %s: %v: %s", app.Hostname, err, capErr)
	}
	snapArgs := []string{"snapshot", "--target", app.URL(), "--out", b.path("end.snap"), "--force"}
	if _, err := b.dbparity(snapArgs...); err != nil {
		rec.stop()
		return err
	}
	s.command("the application, from the driver's side", relArgs(b, appArgs)...)
	s.command("right after it (the capture ended)", relArgs(b, snapArgs)...)
	if err := far.SetDelay(b.o.delay); err != nil {
		rec.stop()
		return err
	}
	defer far.SetDelay(0)
	var files []string
	for _, r := range []struct {
		h     *testhost.Host
		label string
	}{{near, "replay-near"}, {far, "replay-far"}} {
		f := b.path(r.label + ".json")
		args := []string{"replay", "--capture", capFile, "--target", r.h.URL(), "--verify", b.path("end.snap"),
			"--label", r.label, "--out", f, "--db-host", "sql", "--force"}
		// Exit 3: the end state differs, which the report says.
		if _, err := b.dbparity(args...); err != nil && exitCode(err) != 3 {
			rec.stop()
			return err
		}
		s.command("", relArgs(b, args)...)
		files = append(files, f)
	}
	readings, rerr := rec.stop()
	if err := b.compare(s, b.path("004.html"), "replay-near", files...); err != nil {
		return err
	}
	s.extra = append(s.extra, "the capture's summary (dbparity capture on "+app.Hostname+")\n\n"+indent(capOut.String()))
	var cs []check
	for f, h := range map[string]*testhost.Host{appFile: app, files[0]: near, files[1]: far} {
		r, err := result.Read(f)
		if err != nil {
			return err
		}
		cs = append(cs, b.checkRun("004", filepath.Base(f), r, h, readings[h.N])...)
	}
	s.extra = append(s.extra, checkTable("004", cs))
	return rerr
}

func indent(s string) string {
	var w strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		w.WriteString("    " + l + "\n")
	}
	return w.String()
}

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) write(s string) { l.mu.Lock(); l.b.WriteString(s); l.mu.Unlock() }
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// childOf is pid's first child (its /proc children list), 0 when none.
func childOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}
