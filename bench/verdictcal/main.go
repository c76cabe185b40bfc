// Command verdictcal calibrates compare's verdict on real runs (issue 13,
// docs/statistics.md): how often 3 interleaved rounds of a platform
// against itself are called different (false positives), and how often a
// known throughput difference is found with the right sign (power).
//
//	go run ./bench/verdictcal [-rounds 12] [-duration 60s] [-warmup 10s] [-quota 0.9 [-quota 0.95]]
//
// It starts one managed PostgreSQL and loads order-entry, then runs
// -rounds rounds of A against A' (the same server) and, for each -quota,
// -rounds rounds of A against B, where B is the same server with its
// processes in a CPU cgroup whose quota is that share of the CPU the
// server used unconstrained (cgroup v1 cpu.cfs_quota_us, or v2 cpu.max;
// needs root). Each round runs its two sides in random order, after a
// CHECKPOINT. From each set it compares every subset of 3 rounds (up to
// -draws) as `dbparity compare` does, and prints the rates with a 95%
// interval jackknifed over the rounds (the subsets share rounds), the
// round-to-round spread, what the t model predicts from that spread, and
// every round's throughputs. With -dir it keeps the result files there and
// reuses the rounds already in it, so that an interrupted calibration
// resumes where it stopped (on a freshly loaded server: each round's
// ratio compares two runs made back to back on the same data).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/bench/internal/benchenv"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/runner"
)

func main() {
	rounds := flag.Int("rounds", 12, "rounds of each set (A/A and each A/B); 3-round comparisons are drawn from them")
	duration := flag.Duration("duration", 60*time.Second, "measured window of each run (ab's default; 20 s or more gives each run its own noise by batch means)")
	warmup := flag.Duration("warmup", 10*time.Second, "warm-up of each run (ab's default)")
	draws := flag.Int("draws", 220, "3-round comparisons drawn from each set (at most C(rounds, 3))")
	var quotas quotaList
	flag.Var(&quotas, "quota", "B's CPU quota as a share of the CPU the server used unconstrained; repeat it for several A/B sets (default 0.9)")
	flag.BoolVar(&checkpoint, "checkpoint", true, "run CHECKPOINT before each run, so that no run inherits the last one's dirty buffers")
	flag.StringVar(&keep, "dir", "", "keep the result files in this directory, and reuse those already there (to resume an interrupted calibration)")
	flag.DurationVar(&sliceLen, "slice", 0, "run each round as ab --slice does: two servers, A and B at once in turns of this length (ABBA); B's server is the one in the cgroup")
	flag.Parse()
	if len(quotas) == 0 {
		quotas = quotaList{0.9}
	}
	if err := run(*rounds, *duration, *warmup, *draws, quotas); err != nil {
		fmt.Fprintln(os.Stderr, "verdictcal:", err)
		os.Exit(1)
	}
}

func run(rounds int, duration, warmup time.Duration, draws int, shares []float64) error {
	ctx := context.Background()
	cg, err := newCgroup()
	if err != nil {
		return err
	}
	defer cg.remove()
	env, err := benchenv.Start(ctx)
	if err != nil {
		return err
	}
	defer env.Close()
	common, err := env.LoadOrderEntry(ctx, 2)
	if err != nil {
		return err
	}
	one := func(label string, round int) (*result.Run, error) {
		dir := env.Dir
		if keep != "" {
			dir = keep
		}
		out := filepath.Join(dir, fmt.Sprintf("%s-%d.json", label, round))
		if keep != "" && round > 0 {
			if res, err := result.Read(out); err == nil {
				return res, nil
			}
		}
		if checkpoint {
			if err := sql(ctx, env, "CHECKPOINT"); err != nil {
				return nil, err
			}
		}
		err := runner.Run(ctx, runner.RunOptions{Common: common, Users: 2, Duration: duration, Warmup: warmup,
			Label: label, Round: round, Out: out, Force: true, Collect: runner.CollectOptions{Off: true}})
		if err != nil {
			return nil, fmt.Errorf("%s round %d: %w", label, round, err)
		}
		return result.Read(out)
	}

	// The CPU the server uses unconstrained sets B's quota.
	cores, err := serverCores(env, func() error { _, err := one("probe", 0); return err })
	if err != nil {
		return err
	}
	fmt.Printf("server used %.2f cores unconstrained\n", cores)

	g := rand.New(rand.NewPCG(1, 13))
	var other *benchenv.Env // B's server when sliced
	if sliceLen > 0 {
		if other, err = benchenv.Start(ctx); err != nil {
			return err
		}
		defer other.Close()
		if _, err := other.LoadOrderEntry(ctx, 2); err != nil {
			return err
		}
	}
	set := func(name string, quota float64) (a, b []*result.Run, err error) {
		if other != nil {
			return slicedSet(ctx, common, env, other, cg, name, quota, rounds, duration, warmup)
		}
		for r := 1; r <= rounds; r++ {
			order := []bool{false, true} // false: A, true: the other side
			if g.IntN(2) == 1 {
				order[0], order[1] = true, false
			}
			for _, other := range order {
				label := "A"
				if other {
					label = "B"
					if quota > 0 {
						if err := cg.enter(env.Inst.Processes(), quota); err != nil {
							return nil, nil, err
						}
					}
				}
				res, err := one(name+label, r)
				if other && quota > 0 {
					if err := cg.leave(env.Inst.Processes()); err != nil {
						return nil, nil, err
					}
				}
				if err != nil {
					return nil, nil, err
				}
				res.Label = label
				if other {
					b = append(b, res)
				} else {
					a = append(a, res)
				}
				fmt.Fprintf(os.Stderr, "%s round %d %s: %.1f tps\n", name, r, label, res.Summarize().TPS)
			}
		}
		return a, b, nil
	}
	type measured struct {
		name  string
		share float64 // 0 for A against A
		a, b  []*result.Run
	}
	sets := []measured{{name: "aa"}}
	for _, q := range shares {
		sets = append(sets, measured{name: fmt.Sprintf("ab%.0f", 100*q), share: q})
	}
	for i := range sets {
		m := &sets[i]
		if m.a, m.b, err = set(m.name, m.share*cores); err != nil {
			return err
		}
	}
	subsets := triples(rounds, draws, g)
	n := len(subsets)
	if sliceLen > 0 {
		fmt.Printf("\n%d comparisons of 3 sliced rounds in each set, drawn from %d real rounds (two servers, A and B at once in %s turns, ABBA, in %s windows after %s warm-up)\n",
			n, rounds, sliceLen, duration, warmup)
	} else {
		fmt.Printf("\n%d comparisons of 3 interleaved rounds in each set, drawn from %d real rounds (%s windows after %s warm-up, CHECKPOINT before each run: %v)\n",
			n, rounds, duration, warmup, checkpoint)
	}
	fmt.Println("  95% intervals are jackknifed over the rounds: the comparisons share rounds, and the interval says how much the rounds allow")
	for _, m := range sets {
		sd := sdLogRatio(m.a, m.b)
		if m.share == 0 {
			k, floored, lo, hi := rate(m.a, m.b, subsets, func(v compare.Verdict) bool { return v.Different })
			fmt.Printf("  A against A: false positives %d of %d = %.1f%% (95%% CI %.1f–%.1f%%); round-to-round sd of ln(B/A) %.3f; within-run floor used in %d\n",
				k, n, 100*float64(k)/float64(n), 100*lo, 100*hi, sd, floored)
			continue
		}
		k, _, lo, hi := rate(m.a, m.b, subsets, func(v compare.Verdict) bool { return v.Different && v.Ratio < 1 })
		eff := medianRatio(m.a, m.b)
		fmt.Printf("  B at %.0f%% CPU quota (%.2f cores), throughput %.1f%% of A: found slower in %d of %d = %.1f%% (95%% CI %.1f–%.1f%%); sd of ln(B/A) %.3f; the model predicts %.0f%%\n",
			100*m.share, m.share*cores, 100*eff, k, n, 100*float64(k)/float64(n), 100*lo, 100*hi, sd, 100*predictedPower(math.Log(eff), sd))
	}
	aaSD := sdLogRatio(sets[0].a, sets[0].b)
	fmt.Printf("  the model's power of 3 rounds at the A/A noise (sd %.3f): %.0f%% against a 10%% difference, %.0f%% against 15%%\n",
		aaSD, 100*predictedPower(math.Log(0.9), aaSD), 100*predictedPower(math.Log(0.85), aaSD))
	fmt.Println("\n  rounds (tps A, tps B, B/A):")
	for _, m := range sets {
		for r := range m.a {
			ta, tb := m.a[r].Summarize().TPS, m.b[r].Summarize().TPS
			fmt.Printf("    %-5s %2d  %7.1f  %7.1f  %.3f\n", m.name, r+1, ta, tb, tb/ta)
		}
	}
	return nil
}

// rate is the share of subsets whose verdict hit accepts, how many used
// the within-run floor, and a 95% interval of the share by the jackknife
// over rounds (each round left out in turn, the share taken over the
// subsets without it), clipped to [0, 1].
func rate(a, b []*result.Run, subsets [][]int, hit func(compare.Verdict) bool) (k, floored int, lo, hi float64) {
	hits := make([]bool, len(subsets))
	for i, s := range subsets {
		v := verdict(a, b, s)
		hits[i] = hit(v)
		if hits[i] {
			k++
		}
		if v.Floored {
			floored++
		}
	}
	p := float64(k) / float64(len(subsets))
	n := len(a)
	var loo []float64
	for out := 0; out < n; out++ {
		var m, t int
		for i, s := range subsets {
			if !slices.Contains(s, out) {
				t++
				if hits[i] {
					m++
				}
			}
		}
		if t > 0 {
			loo = append(loo, float64(m)/float64(t))
		}
	}
	var mean, v float64
	for _, x := range loo {
		mean += x
	}
	mean /= float64(len(loo))
	for _, x := range loo {
		v += (x - mean) * (x - mean)
	}
	se := math.Sqrt(float64(len(loo)-1) / float64(len(loo)) * v)
	// With no spread at all (every comparison alike), fall back on the
	// binomial of the independent triples the rounds hold: n/3.
	se = max(se, math.Sqrt(p*(1-p)/float64(n/3)))
	return k, floored, max(0, p-1.96*se), min(1, p+1.96*se)
}

// verdict compares one subset of rounds as compare does.
func verdict(a, b []*result.Run, s []int) compare.Verdict {
	ga, gb := compare.Group{Label: "A"}, compare.Group{Label: "B"}
	for _, i := range s {
		ga.Runs, gb.Runs = append(ga.Runs, a[i]), append(gb.Runs, b[i])
	}
	return compare.Verdicts(ga, gb, compare.Metrics(a[0])[:1])[0]
}

// predictedPower is the share of 3-round comparisons that Student's t
// (2 degrees of freedom, 5% two-sided) calls slower when the log ratio
// has mean mu and round-to-round sd sd: 200,000 seeded draws.
func predictedPower(mu, sd float64) float64 {
	g := rand.New(rand.NewPCG(3, 3))
	const draws = 200000
	crit := 4.302652729911275
	k := 0
	for range draws {
		var d [3]float64
		var m float64
		for i := range d {
			d[i] = mu + sd*g.NormFloat64()
			m += d[i]
		}
		m /= 3
		var v float64
		for _, x := range d {
			v += (x - m) * (x - m)
		}
		se := math.Sqrt(v / 2 / 3)
		if m < 0 && -m/se > crit {
			k++
		}
	}
	return float64(k) / draws
}

// quotaList is -quota, repeatable.
type quotaList []float64

func (q *quotaList) String() string { return fmt.Sprint(*q) }
func (q *quotaList) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0 && v < 1) {
		return fmt.Errorf("want a share between 0 and 1, got %q", s)
	}
	*q = append(*q, v)
	return nil
}

// checkpoint is -checkpoint.
var (
	checkpoint bool
	keep       string        // -dir
	sliceLen   time.Duration // -slice
)

// slicedSet runs the rounds of one set as ab --slice does, A on env and
// B on other, B's server in the cgroup at quota cores (0: none). With
// -dir, a set whose files are all there is read back instead.
func slicedSet(ctx context.Context, common runner.Common, env, other *benchenv.Env, cg *cgroup, name string, quota float64,
	rounds int, duration, warmup time.Duration) (a, b []*result.Run, err error) {
	dir := env.Dir
	if keep != "" {
		dir = keep
	}
	prefix := filepath.Join(dir, name)
	read := func() error {
		a, b = nil, nil
		for r := 1; r <= rounds; r++ {
			ra, err := result.Read(fmt.Sprintf("%s-A-%d.json", prefix, r))
			if err != nil {
				return err
			}
			rb, err := result.Read(fmt.Sprintf("%s-B-%d.json", prefix, r))
			if err != nil {
				return err
			}
			a, b = append(a, ra), append(b, rb)
		}
		return nil
	}
	if keep != "" && read() == nil {
		return a, b, nil
	}
	if quota > 0 {
		if err := cg.enter(other.Inst.Processes(), quota); err != nil {
			return nil, nil, err
		}
		defer cg.leave(other.Inst.Processes())
	}
	progress := &lineWriter{prefix: name}
	o := runner.ABOptions{RunOptions: runner.RunOptions{Common: common, Users: 2, Duration: duration, Warmup: warmup,
		Force: true, Collect: runner.CollectOptions{Off: true}},
		A: runner.Target{URL: env.Inst.URL()}, B: runner.Target{URL: other.Inst.URL()}, LabelA: "A", LabelB: "B",
		Rounds: rounds, Prefix: prefix, Slice: sliceLen}
	o.Stderr, o.Seed = progress, uint64(len(name))+uint64(1000*quota)
	if _, err := runner.AB(ctx, o); err != nil {
		return nil, nil, fmt.Errorf("set %s: %w", name, err)
	}
	if err := read(); err != nil {
		return nil, nil, err
	}
	for r := range a {
		fmt.Fprintf(os.Stderr, "%s round %d: A %.1f tps, B %.1f tps\n", name, r+1, a[r].Summarize().TPS, b[r].Summarize().TPS)
	}
	return a, b, nil
}

// lineWriter passes ab's round lines to stderr, prefixed.
type lineWriter struct{ prefix string }

func (w *lineWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if strings.HasPrefix(l, "round ") && strings.Contains(l, " of ") {
			fmt.Fprintf(os.Stderr, "%s %s\n", w.prefix, l)
		}
	}
	return len(p), nil
}

// sql runs one statement on the server.
func sql(ctx context.Context, env *benchenv.Env, stmt string) error {
	t, err := engine.Open(env.Inst.URL())
	if err != nil {
		return err
	}
	defer t.Close()
	c, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Exec(ctx, stmt)
	return err
}

// triples draws up to want distinct 3-subsets of 0..n-1.
func triples(n, want int, g *rand.Rand) [][]int {
	var all [][]int
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			for k := j + 1; k < n; k++ {
				all = append(all, []int{i, j, k})
			}
		}
	}
	g.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[:min(want, len(all))]
}

func sdLogRatio(a, b []*result.Run) float64 {
	var d []float64
	for i := range a {
		d = append(d, math.Log(b[i].Summarize().TPS/a[i].Summarize().TPS))
	}
	var m, v float64
	for _, x := range d {
		m += x
	}
	m /= float64(len(d))
	for _, x := range d {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(d)-1))
}

func medianRatio(a, b []*result.Run) float64 {
	var r []float64
	for i := range a {
		r = append(r, b[i].Summarize().TPS/a[i].Summarize().TPS)
	}
	return compare.Median(r)
}

// serverCores runs probe and returns the server tree's CPU in cores
// over it.
func serverCores(env *benchenv.Env, probe func() error) (float64, error) {
	r, err := ostat.New(ostat.Options{ServerPID: env.Inst.PID})
	if err != nil {
		return 0, err
	}
	a, err := r.Read()
	if err != nil {
		return 0, err
	}
	if err := probe(); err != nil {
		return 0, err
	}
	b, err := r.Read()
	if err != nil {
		return 0, err
	}
	w := ostat.Between(a, b)
	if w.ServerCPUCores == nil || *w.ServerCPUCores <= 0 {
		return 0, errors.New("no server CPU measured")
	}
	return *w.ServerCPUCores, nil
}

// cgroup is a CPU cgroup of its own, v1 (cpu.cfs_quota_us) or v2
// (cpu.max).
type cgroup struct {
	dir, root string
	v2        bool
}

func newCgroup() (*cgroup, error) {
	for _, c := range []cgroup{{root: "/sys/fs/cgroup/cpu"}, {root: "/sys/fs/cgroup", v2: true}} {
		probe := filepath.Join(c.root, "cpu.cfs_quota_us")
		if c.v2 {
			probe = filepath.Join(c.root, "cgroup.controllers")
		}
		if _, err := os.Stat(probe); err != nil {
			continue
		}
		c.dir = filepath.Join(c.root, "dbparity-verdictcal")
		if err := os.Mkdir(c.dir, 0o755); err != nil && !os.IsExist(err) {
			return nil, fmt.Errorf("make a CPU cgroup (run as root): %w", err)
		}
		return &c, nil
	}
	return nil, errors.New("no cgroup CPU controller found under /sys/fs/cgroup")
}

// enter limits the group to cores and moves pids into it.
func (c *cgroup) enter(pids []int, cores float64) error {
	const period = 100000
	q := strconv.Itoa(int(cores * period))
	var err error
	if c.v2 {
		err = os.WriteFile(filepath.Join(c.dir, "cpu.max"), []byte(q+" "+strconv.Itoa(period)), 0o644)
	} else {
		if err = os.WriteFile(filepath.Join(c.dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(period)), 0o644); err == nil {
			err = os.WriteFile(filepath.Join(c.dir, "cpu.cfs_quota_us"), []byte(q), 0o644)
		}
	}
	if err != nil {
		return fmt.Errorf("set the CPU quota: %w", err)
	}
	return move(c.dir, pids)
}

// leave moves pids back to the root group.
func (c *cgroup) leave(pids []int) error { return move(c.root, pids) }

func move(dir string, pids []int) error {
	for _, pid := range pids {
		err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
		if err != nil && !strings.Contains(err.Error(), "no such process") {
			return fmt.Errorf("move %d to %s: %w", pid, dir, err)
		}
	}
	return nil
}

func (c *cgroup) remove() {
	if b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs")); err == nil {
		for _, f := range strings.Fields(string(b)) {
			os.WriteFile(filepath.Join(c.root, "cgroup.procs"), []byte(f), 0o644)
		}
	}
	os.Remove(c.dir)
}
