// Command parts measures what splitting a run over driver processes
// costs: throughput of one dbparity process with 2U sessions against two
// processes (run --part 0/2 and 1/2, meeting at the barrier in the
// database) of U sessions each, merged, on one managed PostgreSQL, in
// interleaved rounds (ABBA), so that the machine's drift falls on both:
//
//	go run ./bench/parts -users 4 -warehouses 4 -duration 15s -rounds 4
//
// It prints each run's transactions/s and driver CPU per transaction, the
// windows' skew of each split run, and the ratio split/single per round
// and its median: near 1 when splitting costs nothing.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/dbparity/dbparity/bench/internal/benchenv"
	"github.com/dbparity/dbparity/internal/result"
)

func main() {
	users := flag.Int("users", 4, "U: sessions of each part; the single process runs 2U")
	warehouses := flag.Int("warehouses", 4, "order-entry warehouses (even, so the parts split them)")
	duration := flag.Duration("duration", 15*time.Second, "measured window of each run")
	warmup := flag.Duration("warmup", 3*time.Second, "warm-up of each run")
	rounds := flag.Int("rounds", 4, "rounds; each runs both, in ABBA order")
	flag.Parse()
	if err := run(*users, *warehouses, *duration, *warmup, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "parts:", err)
		os.Exit(1)
	}
}

func run(users, warehouses int, duration, warmup time.Duration, rounds int) error {
	ctx := context.Background()
	env, err := benchenv.Start(ctx)
	if err != nil {
		return err
	}
	defer env.Close()
	if _, err := env.LoadOrderEntry(ctx, warehouses); err != nil {
		return err
	}
	bin := filepath.Join(env.Dir, "dbparity")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/dbparity").CombinedOutput(); err != nil {
		return fmt.Errorf("build dbparity (run from the module's root): %v\n%s", err, out)
	}
	common := []string{"--target", env.Inst.URL(), "--warmup", warmup.String(), "--duration", duration.String(), "--no-collect", "--force"}
	dbparity := func(args ...string) error {
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("dbparity %v: %v\n%s", args, err, out.String())
		}
		return nil
	}
	single := func(k int) (*result.Run, error) {
		out := filepath.Join(env.Dir, fmt.Sprintf("single-%d.json", k))
		if err := dbparity(append([]string{"run", "--users", fmt.Sprint(2 * users), "--label", "single", "--out", out}, common...)...); err != nil {
			return nil, err
		}
		return result.Read(out)
	}
	split := func(k int) (*result.Run, error) {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		var files []string
		id := fmt.Sprintf("bench-%d-%d", k, time.Now().UnixNano())
		for i := range 2 {
			f := filepath.Join(env.Dir, fmt.Sprintf("split-%d-part-%d.json", k, i))
			files = append(files, f)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = dbparity(append([]string{"run", "--users", fmt.Sprint(2 * users), "--label", "split", "--out", f,
					"--part", fmt.Sprintf("%d/2", i), "--run-id", id}, common...)...)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		out := filepath.Join(env.Dir, fmt.Sprintf("split-%d.json", k))
		if err := dbparity(append([]string{"merge", "--out", out}, files...)...); err != nil {
			return nil, err
		}
		return result.Read(out)
	}
	fmt.Printf("order-entry, %d warehouses, %s measured after %s warm-up; single: 1 process × %d sessions; split: 2 processes × %d, merged\n\n",
		warehouses, duration, warmup, 2*users, users)
	fmt.Printf("  %-6s %-7s %10s %16s %10s\n", "round", "run", "tps", "driver µs/tx", "skew ms")
	var ratios []float64
	for k := 1; k <= rounds; k++ {
		order := []string{"single", "split"}
		if k%2 == 0 {
			order = []string{"split", "single"}
		}
		tps := map[string]float64{}
		for _, which := range order {
			var r *result.Run
			var err error
			if which == "single" {
				r, err = single(k)
			} else {
				r, err = split(k)
			}
			if err != nil {
				return err
			}
			s := r.Summarize()
			skew := "-"
			if r.Merged != nil {
				skew = fmt.Sprintf("%.1f", r.Merged.SkewMs)
			}
			tps[which] = s.TPS
			fmt.Printf("  %-6d %-7s %10.1f %16.1f %10s\n", k, which, s.TPS, result.Value(s.DriverCPUPerTxUs), skew)
		}
		ratios = append(ratios, tps["split"]/tps["single"])
	}
	slices.Sort(ratios)
	fmt.Printf("\nsplit/single throughput per round (sorted): ")
	for _, r := range ratios {
		fmt.Printf("%.3f ", r)
	}
	fmt.Printf("\nmedian ratio %.3f\n", median(ratios))
	return nil
}

func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
