package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/dbparity/dbparity/internal/result"
)

// Group is the runs of one platform (one label): repetitions.
type Group struct {
	Label string
	Runs  []*result.Run
	Files []string
}

// Groups sorts runs by label in the order labels first appear; baseline,
// when set, is moved first. The first group is the one others are
// compared with.
func Groups(runs []*result.Run, files []string, baseline string) ([]Group, error) {
	return GroupBy(runs, files, "", baseline)
}

// GroupBy groups runs by the value of a disclosed fact instead of the
// label: key is a fact's name as the disclosure diff prints it
// (driver.users, workload.warehouses, disclosure.host.kernel,
// target.server_version, ...). "" or "label" groups by label.
func GroupBy(runs []*result.Run, files []string, key, baseline string) ([]Group, error) {
	gs, err := GroupRuns(runs, files, key, baseline)
	if err != nil {
		return nil, err
	}
	return gs, TwoGroups(gs, key)
}

// TwoGroups refuses a comparison of one group: every run has the same
// label (or the same value of the fact grouped by).
func TwoGroups(gs []Group, key string) error {
	if len(gs) >= 2 {
		return nil
	}
	if key != "" && key != "label" {
		return fmt.Errorf("every run has %s: --group needs a fact whose value differs", gs[0].Label)
	}
	return fmt.Errorf("all runs have the label %q: compare needs two labels (run each platform with its own --label), or a sweep (--over users)", gs[0].Label)
}

// GroupRuns groups as GroupBy does, and allows a single group (a sweep
// of one platform).
func GroupRuns(runs []*result.Run, files []string, key, baseline string) ([]Group, error) {
	var gs []Group
	at := map[string]int{}
	for i, r := range runs {
		name := r.Label
		if key != "" && key != "label" {
			v, ok := facts(r)[key]
			if !ok {
				return nil, fmt.Errorf("--group %s: %s has no such fact (facts are named like driver.users, workload.warehouses, disclosure.host.kernel, target.server_version)", key, files[i])
			}
			name = key + "=" + v
		}
		k, ok := at[name]
		if !ok {
			k = len(gs)
			at[name] = k
			gs = append(gs, Group{Label: name})
		}
		gs[k].Runs = append(gs[k].Runs, r)
		gs[k].Files = append(gs[k].Files, files[i])
	}
	if baseline != "" {
		k, ok := at[baseline]
		if !ok {
			return nil, fmt.Errorf("--baseline %q: no run has that label (labels: %s)", baseline, strings.Join(labels(gs), ", "))
		}
		gs[0], gs[k] = gs[k], gs[0]
	}
	return gs, nil
}

func labels(gs []Group) []string {
	var l []string
	for _, g := range gs {
		l = append(l, g.Label)
	}
	return l
}

// Comparable refuses groups whose runs cannot be compared: another
// workload, another workload version, another engine (MySQL or MariaDB
// against another), or another value of a parameter that shapes the data
// (the scale).
func Comparable(gs []Group, loadParams []string) error {
	ref := gs[0].Runs[0]
	for _, g := range gs {
		for i, r := range g.Runs {
			switch {
			case r.Failed:
				return fmt.Errorf("%s is a failed run (%s): its figures do not describe the workload; leave it out, or pass --force", g.Files[i], r.FailedReason)
			case r.Part != nil:
				return fmt.Errorf("%s is part %d of %d of a split run: it ran a share of the sessions; dbparity merge its parts first (or pass --force)", g.Files[i], r.Part.Index, r.Part.Of)
			case r.Merged != nil && len(r.Merged.Forced) > 0:
				return fmt.Errorf("%s was merged with --force (%s): leave it out, or pass --force", g.Files[i], r.Merged.Forced[0])
			case r.Workload.Name != ref.Workload.Name:
				return fmt.Errorf("%s runs %s, %s runs %s: not comparable (pass --force to compare anyway)", g.Files[i], r.Workload.Name, gs[0].Files[0], ref.Workload.Name)
			case (r.Target.Dialect == "mysql") != (ref.Target.Dialect == "mysql"):
				return fmt.Errorf("%s ran on %s, %s on %s: different engines run different SQL and storage, not comparable as platforms (pass --force to compare anyway)",
					g.Files[i], r.Target.Dialect, gs[0].Files[0], ref.Target.Dialect)
			case r.Workload.Version != ref.Workload.Version:
				return fmt.Errorf("%s runs %s version %s, %s version %s: not comparable (pass --force)", g.Files[i], r.Workload.Name, r.Workload.Version, gs[0].Files[0], ref.Workload.Version)
			}
			for _, p := range loadParams {
				if fmt.Sprint(r.Workload.Params[p]) != fmt.Sprint(ref.Workload.Params[p]) {
					return fmt.Errorf("%s has %s %v, %s has %v: not comparable (pass --force)", g.Files[i], p, r.Workload.Params[p], gs[0].Files[0], ref.Workload.Params[p])
				}
			}
		}
	}
	return nil
}

// Metric extracts one figure from a run; NaN when the run lacks it.
type Metric struct {
	Name string
	// Lower says a smaller value is better (latency, cost).
	Lower bool
	Get   func(r *result.Run) float64
	// Within, when set, is the run's own noise: the variance of the log
	// of its figure (NaN when the run cannot tell).
	Within func(r *result.Run) float64
}

// Metrics are the figures a comparison tests: throughput, a replay's
// elapsed time, SLOB's physical reads per second for workloads that test
// IO, then p95 and p99 of each transaction type.
func Metrics(r *result.Run) []Metric {
	ms := []Metric{{Name: "throughput (tps)", Get: func(r *result.Run) float64 { return r.Summarize().TPS }, Within: WithinThroughput}}
	if r.Replay != nil {
		// A replay's throughput is of statements, not transactions.
		ms[0].Name = "throughput (statements/s)"
		ms = append(ms, Metric{Name: "replay time (s)", Lower: true, Get: func(r *result.Run) float64 {
			if r.Replay == nil {
				return math.NaN()
			}
			return r.Replay.ReplaySeconds
		}})
	}
	if r.IO != nil && r.IO.PhysicalReads != nil {
		ms = append(ms, Metric{Name: "physical reads/s", Get: func(r *result.Run) float64 {
			if r.IO == nil || r.IO.PhysicalReads == nil {
				return math.NaN()
			}
			return *r.IO.PhysicalReads
		}})
	}
	for _, t := range r.Transactions {
		name := t.Name
		get := func(q string) func(r *result.Run) float64 {
			return func(r *result.Run) float64 {
				for _, x := range r.Transactions {
					if x.Name == name && x.Latency.Count > 0 {
						if q == "p95" {
							return x.Latency.P95Ms
						}
						return x.Latency.P99Ms
					}
				}
				return math.NaN()
			}
		}
		ms = append(ms, Metric{Name: name + " p95 (ms)", Lower: true, Get: get("p95")},
			Metric{Name: name + " p99 (ms)", Lower: true, Get: get("p99")})
	}
	return ms
}

// Values returns the metric of every run of g that has it.
func (m Metric) Values(g Group) []float64 {
	var v []float64
	for _, r := range g.Runs {
		if x := m.Get(r); !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	return v
}

// Verdicts compares group b with the baseline a on every metric: the
// first (throughput) is the primary one, tested alone; the others are
// corrected among themselves. Runs of interleaved rounds (dbparity ab)
// are compared as pairs.
func Verdicts(a, b Group, ms []Metric) []Verdict {
	ra, rb, paired := Rounds(a, b)
	// Sliced rounds have no floor: their runs' own noise is the host's
	// wander, which the slices cancel in the ratio (docs/statistics.md).
	sliced := paired && sliceOf(ra, rb) > 0
	within := func(m Metric, r *result.Run) float64 {
		if m.Within == nil || sliced {
			return math.NaN()
		}
		return m.Within(r)
	}
	var vs []Verdict
	for i, m := range ms {
		var v Verdict
		if paired {
			var va, vb, w []float64
			for k := range ra {
				x, y := m.Get(ra[k]), m.Get(rb[k])
				if !math.IsNaN(x) && !math.IsNaN(y) {
					va, vb = append(va, x), append(vb, y)
					w = append(w, within(m, ra[k])+within(m, rb[k]))
				}
			}
			if len(va) == 0 {
				continue
			}
			v = Paired(m.Name, va, vb, w)
		} else {
			var va, vb, wa, wb []float64
			for _, r := range a.Runs {
				if x := m.Get(r); !math.IsNaN(x) {
					va, wa = append(va, x), append(wa, within(m, r))
				}
			}
			for _, r := range b.Runs {
				if x := m.Get(r); !math.IsNaN(x) {
					vb, wb = append(vb, x), append(wb, within(m, r))
				}
			}
			if len(va) == 0 || len(vb) == 0 {
				continue
			}
			v = Unpaired(m.Name, va, vb, wa, wb)
		}
		v.LowerIsBetter, v.Primary, v.LabelA, v.LabelB = m.Lower, i == 0, a.Label, b.Label
		if paired {
			v.SliceS = sliceOf(ra, rb)
		}
		if v.Primary {
			v.resolutionNote()
		}
		vs = append(vs, v)
	}
	Decide(vs)
	return vs
}

// fileOf names run i of g: its file, or the group and the run's number
// when the group was built without files.
func fileOf(g Group, i int) string {
	if i < len(g.Files) {
		return g.Files[i]
	}
	return fmt.Sprintf("%s run %d", g.Label, i+1)
}

// Contended is the CPU, in cores, that processes other than the database
// server and dbparity used on the database host during r's window, when
// it is enough to change the figures: a tenth of a core, and a twentieth
// of the host's CPUs. 0 otherwise.
func Contended(r *result.Run) float64 {
	if !r.OS.HasWindow() {
		return 0
	}
	w := r.OS.Window
	if w.OtherCPUCores >= 0.1 && w.OtherCPUCores >= 0.05*float64(w.NumCPU) {
		return w.OtherCPUCores
	}
	return 0
}

// Caveats are what makes a run's throughput not a platform figure: the
// driver was its limit, other processes shared the database host, or it
// did not hold still; file names the run.
func Caveats(r *result.Run, file string) []string {
	var out []string
	if r.Driver.Bound {
		out = append(out, fmt.Sprintf("NOT A PLATFORM FIGURE: %s was driver-bound (%s): its throughput may be the driver's limit; give the driver more CPU or another host",
			file, r.Driver.BoundReason))
	}
	if c := Contended(r); c > 0 {
		out = append(out, fmt.Sprintf("NOT A PLATFORM FIGURE: other processes used %.2f cores of %s's database host during its window: they competed with the workload",
			c, file))
	}
	if d := Drift(r); math.Abs(d) > driftLimit {
		out = append(out, fmt.Sprintf("NOT STATIONARY: %s's throughput drifted %+.0f%% from the first to the last third of its window: the platform did not hold still", file, 100*d))
	}
	return out
}

// WithinThroughput is a run's own noise in its throughput: the variance
// of the log of its mean transactions per second, from the per-second
// series of its measured window by batch means (10 batches, so that the
// seconds' correlation stays inside a batch). NaN for a run of fewer than
// 20 seconds. A sliced run's values are its slices (5 batches, at least
// 10 slices).
func WithinThroughput(r *result.Run) float64 {
	tps := throughputs(r)
	batches := 10
	if r.Driver.Slicing != nil {
		batches = 5
	}
	if len(tps) < 2*batches {
		return math.NaN()
	}
	size := len(tps) / batches
	means := make([]float64, batches)
	for k := range means {
		var s float64
		for _, x := range tps[k*size : (k+1)*size] {
			s += x
		}
		means[k] = s / float64(size)
	}
	m, v := meanVar(means)
	if m <= 0 {
		return math.NaN()
	}
	// The mean of the batch means has variance v/batches; the log's is
	// that over the mean squared (the delta method).
	return v / float64(batches) / (m * m)
}

// sliceOf is the slice every run of the rounds took turns in, or 0.
func sliceOf(ra, rb []*result.Run) float64 {
	var slice float64
	for _, r := range append(slices.Clone(ra), rb...) {
		sl := r.Driver.Slicing
		if sl == nil || slice != 0 && sl.SliceS != slice {
			return 0
		}
		slice = sl.SliceS
	}
	return slice
}

// throughputs are the run's throughputs over its measured window in
// order: of each second, or of each of its slices when it ran in turns
// with another (whose seconds are half idle).
func throughputs(r *result.Run) []float64 {
	var tps []float64
	if sl := r.Driver.Slicing; sl != nil {
		for _, x := range sl.Slices {
			tps = append(tps, x.TPS())
		}
		return tps
	}
	for _, iv := range r.Series {
		if iv.Phase == "measure" && iv.Seconds > 0.5 {
			tps = append(tps, iv.TPS())
		}
	}
	return tps
}

// Rounds pairs the runs of a and b by round when both groups come from
// the same interleaved rounds: each round once in each group.
func Rounds(a, b Group) (ra, rb []*result.Run, ok bool) {
	if len(a.Runs) != len(b.Runs) {
		return nil, nil, false
	}
	byRound := map[int]*result.Run{}
	for _, r := range a.Runs {
		if r.Round == 0 || byRound[r.Round] != nil {
			return nil, nil, false
		}
		byRound[r.Round] = r
	}
	for _, r := range b.Runs {
		x := byRound[r.Round]
		if r.Round == 0 || x == nil {
			return nil, nil, false
		}
		ra, rb = append(ra, x), append(rb, r)
		delete(byRound, r.Round)
	}
	return ra, rb, true
}

// RunNotes lists what may make a group's runs untrustworthy: partial
// runs, CPU steal, throughput that drifted within a run. No run is ever
// dropped; each is named.
func RunNotes(g Group) []string {
	var notes []string
	for i, r := range g.Runs {
		f := g.Files[i]
		if r.Failed {
			notes = append(notes, fmt.Sprintf("%s FAILED (%s)", f, r.FailedReason))
		}
		if r.Partial {
			notes = append(notes, fmt.Sprintf("%s is partial (%s)", f, r.PartialReason))
		}
		if n, secs := outages(r); n > 0 {
			notes = append(notes, fmt.Sprintf("%s had %d outage(s), %.1f s in all, %d transactions failed in them: the server was not serving for part of the run",
				f, n, secs, outageFailures(r)))
		} else if len(r.Events) > 0 {
			notes = append(notes, fmt.Sprintf("%s lost connections %d time(s) and reconnected", f, len(r.Events)))
		}
		if r.Driver.Bound {
			notes = append(notes, fmt.Sprintf("%s was DRIVER-BOUND: %s", f, r.Driver.BoundReason))
		}
		if rt := r.Driver.Rate; rt != nil && rt.Behind {
			notes = append(notes, fmt.Sprintf("%s could not keep its target rate: %s; its throughput is what the platform could do, not the rate asked for, and its latencies include the backlog", f, rt.BehindReason))
		}
		if r.OS.HasWindow() && r.OS.Window.CPUStealPct > 2 {
			notes = append(notes, fmt.Sprintf("%s: %.1f%% of the CPU was stolen by the hypervisor", f, r.OS.Window.CPUStealPct))
		}
		if d := Drift(r); math.Abs(d) > driftLimit {
			notes = append(notes, fmt.Sprintf("%s: throughput drifted %+.0f%% from the first to the last third of the window (not stationary)", f, 100*d))
		}
		if c := Contended(r); c > 0 {
			notes = append(notes, fmt.Sprintf("%s: other processes used %.2f cores of the database host during the window", f, c))
		}
		if n, h := len(r.Parts), r.DatabaseHosts(); n > 1 && h < n {
			notes = append(notes, fmt.Sprintf("%s: its %d targets ran on %d database host(s): they shared the CPUs and devices, so its figures over the targets measure a host shared, not hosts added", f, n, h))
		}
	}
	return append(notes, WithinGroup(g)...)
}

// WithinGroup lists the server's facts that change between the runs of
// one group (its version, a setting, the kernel): a group stands for one
// platform, and compare's "what differs" reads its first run only.
func WithinGroup(g Group) []string {
	if len(g.Runs) < 2 {
		return nil
	}
	first := facts(g.Runs[0])
	var out []string
	seen := map[string]bool{}
	for i, r := range g.Runs[1:] {
		for k, v := range facts(r) {
			if seen[k] || Volatile(k) || !platformFact(k) || first[k] == v {
				continue
			}
			seen[k] = true
			out = append(out, fmt.Sprintf("group %s is not one platform: %s is %q in %s, %q in %s", g.Label, k, first[k], fileOf(g, 0), v, fileOf(g, i+1)))
		}
	}
	sort.Strings(out)
	return out
}

// platformFact: a fact that stays put while one platform is measured
// (the server's version and settings, the kernel); a sweep's steps
// change others by design (users, CPUs, warehouses).
func platformFact(k string) bool {
	return k == "target.server_version" || k == "disclosure.database.version" || k == "disclosure.host.kernel" ||
		strings.HasPrefix(k, "disclosure.database.settings.")
}

// driftLimit is the drift beyond which a run did not hold still.
const driftLimit = 0.10

// Drift is the change of throughput from the first third of the measured
// window to the last, as a fraction of the first.
func Drift(r *result.Run) float64 {
	tps := throughputs(r)
	if len(tps) < 6 {
		return 0
	}
	k := len(tps) / 3
	first, last := Median(tps[:k]), Median(tps[len(tps)-k:])
	if first == 0 {
		return 0
	}
	return last/first - 1
}

// Difference is one disclosed fact whose value differs between groups.
type Difference struct {
	Key    string   `json:"key"`
	Values []string `json:"values"` // one per group, "" where absent
	// Driver marks a fact of the driver's host, not of the platform
	// under test (when the database ran on another host).
	Driver bool `json:"driver_host,omitempty"`
	// Default marks a setting's compiled-in default that differs between
	// the servers' versions: nobody set it (Key is the setting's name).
	Default bool `json:"default_changed,omitempty"`
	// Packaging marks a default that differs because of how the server
	// was built or packaged (a path, a build option), not its version.
	Packaging bool `json:"packaging,omitempty"`
}

// packaging are the settings whose compiled-in defaults a packager or a
// build sets (paths): a distribution's server and a portable archive of
// the same version differ in them.
var packaging = []string{"unix_socket_directories", "krb_server_keyfile", "dynamic_library_path", "external_pid_file",
	"ssl_ca_file", "ssl_cert_file", "ssl_key_file", "ssl_crl_file", "ssl_crl_dir", "stats_temp_directory", "log_directory"}

// defaultsKey prefixes the flattened compiled-in defaults: diffed apart.
const defaultsKey = "disclosure.database.defaults."

// firstKeys open the list of what differs: the server's version.
var firstKeys = []string{"target.server_version", "disclosure.database.version", "disclosure.database.version_num", "disclosure.database.build"}

// volatile facts change between any two runs and say nothing of the platform.
// The managed server's random port and socket directory, and the paths of
// its temporary directories, differ by construction.
var volatile = []string{"disclosure.storage.free_bytes", "disclosure.database.data_bytes", "disclosure.database.data_to_cache",
	"disclosure.host.cpu.mhz", "target.url", "disclosure.database.settings.port",
	"disclosure.database.settings.unix_socket_directories", "disclosure.database.settings.data_directory",
	"disclosure.database.settings.config_file", "disclosure.database.settings.hba_file", "disclosure.database.settings.ident_file",
	"disclosure.database.settings.external_pid_file", "disclosure.storage.dir", "disclosure.storage.path",
	"disclosure.driver_host.cpu.mhz", "target.path",
	// A managed MariaDB's paths and port (its data directory's).
	"disclosure.database.settings.datadir", "disclosure.database.settings.socket", "disclosure.database.settings.pid_file",
	"disclosure.database.settings.log_error"}

// Volatile tells whether a disclosed fact ("disclosure.database.settings.port")
// differs between any two runs by construction, saying nothing of the
// platform. The settings the workload's sessions saw (target.settings.X)
// are the server's settings again.
func Volatile(key string) bool {
	if rest, ok := strings.CutPrefix(key, "target.settings."); ok {
		key = "disclosure.database.settings." + rest
	}
	return slices.Contains(volatile, key)
}

// DisclosureDiff lists every disclosed fact (host, storage, database
// settings, target, workload parameters, how the load was driven) whose
// value differs between the groups' first runs.
func DisclosureDiff(gs []Group) []Difference {
	flat := make([]map[string]string, len(gs))
	keys := map[string]bool{}
	for i, g := range gs {
		flat[i] = facts(g.Runs[0])
		for k := range flat[i] {
			keys[k] = true
		}
	}
	var out []Difference
	for k := range keys {
		if Volatile(k) {
			continue
		}
		if name, ok := strings.CutPrefix(k, defaultsKey); ok {
			if name == "server_version" || name == "server_version_num" {
				continue // the version itself, first in the list
			}
			// A default that changed between versions, where every
			// version has the setting.
			d := Difference{Key: name, Default: true, Packaging: slices.Contains(packaging, name)}
			differs, everywhere := false, true
			for i := range gs {
				raw, ok := flat[i][k]
				everywhere = everywhere && ok
				differs = differs || raw != flat[0][k]
				v := HumanSetting(raw)
				if v == "" {
					v = "(empty)"
				}
				d.Values = append(d.Values, v)
			}
			if differs && everywhere {
				out = append(out, d)
			}
			continue
		}
		d := Difference{Key: k}
		differs := false
		for i := range gs {
			v := flat[i][k]
			if strings.HasPrefix(k, "disclosure.database.settings.") {
				v = HumanSetting(v)
			}
			d.Values = append(d.Values, v)
			differs = differs || flat[i][k] != flat[0][k]
		}
		if differs {
			d.Driver = strings.HasPrefix(k, "host.") || strings.HasPrefix(k, "disclosure.driver_host.")
			out = append(out, d)
		}
	}
	rank := func(d Difference) int {
		if i := slices.Index(firstKeys, d.Key); i >= 0 && !d.Default {
			return i
		}
		return len(firstKeys)
	}
	sort.Slice(out, func(i, j int) bool {
		if ri, rj := rank(out[i]), rank(out[j]); ri != rj {
			return ri < rj
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// facts flattens what a run discloses (host, storage, database, target,
// workload parameters, how the load was driven) to "a.b.c" → value. The
// basic facts of the driver's host ("host.") are left out when the
// database ran on that host: "disclosure.host." has them in full.
func facts(r *result.Run) map[string]string {
	m := map[string]any{"disclosure": r.Disclosure, "target": r.Target, "workload": r.Workload.Params,
		"driver": map[string]any{"users": r.Driver.Users, "warmup_s": r.Driver.WarmupS, "duration_s": r.Driver.DurationS}}
	if HostSource(r) != "local" {
		m["host"] = map[string]any{"kernel": r.Host.Kernel, "cpu_model": r.Host.CPUModel, "cores": r.Host.Cores, "memory_bytes": r.Host.MemoryBytes}
	}
	out := map[string]string{}
	flatten("", toMap(m), out)
	return out
}

func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, e, out)
		}
	case nil:
	default:
		b, _ := json.Marshal(x)
		out[prefix] = strings.Trim(string(b), `"`)
	}
}

// outages counts a run's outages and their total length.
func outages(r *result.Run) (n int, secs float64) {
	for _, e := range r.Events {
		if e.Kind == "outage" {
			n++
			secs += e.Seconds(r.End)
		}
	}
	return n, secs
}

func outageFailures(r *result.Run) (n int64) {
	for _, e := range r.Events {
		if e.Kind == "outage" {
			n += e.Failed
		}
	}
	return n
}
