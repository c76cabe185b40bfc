// Command verdictcal calibrates compare's verdict on real runs (issue 13,
// docs/statistics.md): how often 3 interleaved rounds of a platform
// against itself are called different (false positives), and how often a
// known ~10% throughput difference is found with the right sign (power).
//
//	go run ./bench/verdictcal [-rounds 8] [-duration 20s] [-warmup 3s] [-draws 56]
//
// It starts one managed PostgreSQL and loads order-entry, then runs
// -rounds rounds of A against A' (the same server) and -rounds rounds of
// A against B, where B is the same server with its processes in a CPU
// cgroup whose quota is 90% of the CPU the server used unconstrained
// (cgroup v1 cpu.cfs_quota_us, or v2 cpu.max; needs root). Each round runs
// its two sides in random order. From each set it draws -draws
// comparisons of 3 rounds (distinct subsets of the rounds) and compares
// them as `dbparity compare` does. It prints both rates with a Wilson 95%
// interval; the subsets share rounds, so the interval is optimistic and
// says so.
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
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/bench/internal/benchenv"
	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/runner"
	"github.com/dbparity/dbparity/internal/target"
)

func main() {
	rounds := flag.Int("rounds", 8, "rounds of each set (A/A and A/B); 3-round comparisons are drawn from them")
	duration := flag.Duration("duration", 20*time.Second, "measured window of each run (20 s or more gives each run its own noise by batch means)")
	warmup := flag.Duration("warmup", 3*time.Second, "warm-up of each run")
	draws := flag.Int("draws", 56, "3-round comparisons drawn from each set (at most C(rounds, 3))")
	quota := flag.Float64("quota", 0.9, "B's CPU quota as a share of the CPU the server used unconstrained")
	flag.BoolVar(&checkpoint, "checkpoint", true, "run CHECKPOINT before each run, so that no run inherits the last one's dirty buffers")
	flag.Parse()
	if err := run(*rounds, *duration, *warmup, *draws, *quota); err != nil {
		fmt.Fprintln(os.Stderr, "verdictcal:", err)
		os.Exit(1)
	}
}

func run(rounds int, duration, warmup time.Duration, draws int, share float64) error {
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
		if checkpoint {
			if err := sql(ctx, env, "CHECKPOINT"); err != nil {
				return nil, err
			}
		}
		out := filepath.Join(env.Dir, fmt.Sprintf("%s-%d.json", label, round))
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
	quota := share * cores
	fmt.Printf("server used %.2f cores unconstrained; B's quota: %.2f cores (%.0f%%)\n", cores, quota, 100*share)

	g := rand.New(rand.NewPCG(1, 13))
	set := func(name string, bConstrained bool) (a, b []*result.Run, err error) {
		for r := 1; r <= rounds; r++ {
			order := []bool{false, true} // false: A, true: the other side
			if g.IntN(2) == 1 {
				order[0], order[1] = true, false
			}
			for _, other := range order {
				label := "A"
				if other {
					label = "B"
					if bConstrained {
						if err := cg.enter(env.Inst.Processes(), quota); err != nil {
							return nil, nil, err
						}
					}
				}
				res, err := one(name+label, r)
				if other && bConstrained {
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
	aa, aa2, err := set("aa", false)
	if err != nil {
		return err
	}
	ab, bb, err := set("ab", true)
	if err != nil {
		return err
	}
	subsets := triples(rounds, draws, g)
	fp, fpFloor := count(aa, aa2, subsets, func(v compare.Verdict) bool { return v.Different })
	pw, _ := count(ab, bb, subsets, func(v compare.Verdict) bool { return v.Different && v.Ratio < 1 })
	n := len(subsets)
	fmt.Printf("\n%d comparisons of 3 interleaved rounds, drawn from %d real rounds of each set (%s windows, CHECKPOINT before each run: %v)\n", n, rounds, duration, checkpoint)
	fmt.Printf("  round-to-round sd of the log ratio: A/A %.3f, A/B %.3f\n", sdLogRatio(aa, aa2), sdLogRatio(ab, bb))
	lo, hi := wilson(fp, n)
	fmt.Printf("  false positives (A against A'):          %d of %d = %.1f%% (95%% CI %.1f–%.1f%%)\n", fp, n, 100*float64(fp)/float64(n), 100*lo, 100*hi)
	lo, hi = wilson(pw, n)
	fmt.Printf("  power (B at %.0f%% CPU quota, found slower): %d of %d = %.1f%% (95%% CI %.1f–%.1f%%)\n", 100*share, pw, n, 100*float64(pw)/float64(n), 100*lo, 100*hi)
	fmt.Printf("  within-run floor applied in %d of the %d A/A comparisons\n", fpFloor, n)
	fmt.Printf("  median throughput ratio B/A over all rounds: A/A %.3f, A/B %.3f\n", medianRatio(aa, aa2), medianRatio(ab, bb))
	fmt.Println("  (the subsets share rounds: the intervals assume independent comparisons and are narrower than they should be)")
	return nil
}

// checkpoint is -checkpoint.
var checkpoint bool

// sql runs one statement on the server.
func sql(ctx context.Context, env *benchenv.Env, stmt string) error {
	t, err := target.Open(env.Inst.URL())
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

// count compares each subset of rounds as compare does and counts the
// verdicts hit accepts, and those whose interval used the runs' own noise.
func count(a, b []*result.Run, subsets [][]int, hit func(compare.Verdict) bool) (n, floored int) {
	for _, s := range subsets {
		ga, gb := compare.Group{Label: "A"}, compare.Group{Label: "B"}
		for _, i := range s {
			ga.Runs, gb.Runs = append(ga.Runs, a[i]), append(gb.Runs, b[i])
		}
		v := compare.Verdicts(ga, gb, compare.Metrics(a[0])[:1])[0]
		if hit(v) {
			n++
		}
		if v.Floored {
			floored++
		}
	}
	return n, floored
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

// wilson is the Wilson score interval of k successes in n.
func wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	const z = 1.959964
	p, nf := float64(k)/float64(n), float64(n)
	c := (p + z*z/(2*nf)) / (1 + z*z/nf)
	h := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / (1 + z*z/nf)
	return max(0, c-h), min(1, c+h)
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
