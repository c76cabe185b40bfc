// Command collectors measures what dbparity's collectors (database
// counters, wait sampling, OS counters) cost the workload: order-entry
// throughput with every collector on against with none, on one managed
// PostgreSQL, in pairs of runs whose order is drawn at random, so that
// drift on a shared machine falls on both sides alike.
//
//	go run ./bench/collectors [-pairs 4] [-duration 20s] [-users 4]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/dbparity/dbparity/bench/internal/benchenv"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/runner"
)

func main() {
	pairs := flag.Int("pairs", 4, "pairs of runs (collectors on, off)")
	duration := flag.Duration("duration", 20*time.Second, "measured window of each run")
	warmup := flag.Duration("warmup", 5*time.Second, "warm-up of each run")
	users := flag.Int("users", 4, "sessions")
	flag.Parse()
	if err := run(*pairs, *users, *duration, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "collectors:", err)
		os.Exit(1)
	}
}

func run(pairs, users int, duration, warmup time.Duration) error {
	ctx := context.Background()
	env, err := benchenv.Start(ctx)
	if err != nil {
		return err
	}
	defer env.Close()
	inst, dir := env.Inst, env.Dir
	c, err := env.LoadOrderEntry(ctx, 1)
	if err != nil {
		return err
	}
	g := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7)) // the order only; no result depends on it
	var on, off, ratios []float64
	for i := range pairs {
		order := []bool{true, false}
		if g.IntN(2) == 0 {
			order = []bool{false, true}
		}
		var tps [2]float64 // on, off
		for _, collect := range order {
			out := filepath.Join(dir, fmt.Sprintf("r%d-%v.json", i, collect))
			err := runner.Run(ctx, runner.RunOptions{Common: c, Users: users, Duration: duration, Warmup: warmup,
				Label: "bench", Out: out, Collect: runner.CollectOptions{Off: !collect, DBPID: inst.PID}})
			if err != nil {
				return err
			}
			r, err := result.Read(out)
			if err != nil {
				return err
			}
			k := 1
			if collect {
				k = 0
			}
			tps[k] = r.Summarize().TPS
		}
		on, off = append(on, tps[0]), append(off, tps[1])
		ratios = append(ratios, tps[0]/tps[1])
		fmt.Fprintf(os.Stderr, "pair %d: on %.1f tps, off %.1f tps, ratio %.4f\n", i+1, tps[0], tps[1], tps[0]/tps[1])
	}
	fmt.Printf("\ncollectors' overhead, %d pairs of %s runs, %d sessions, PostgreSQL %s (managed, this host)\n\n", pairs, duration, users, inst.Version)
	fmt.Printf("%-34s %10s\n", "median tps, collectors on", fmt.Sprintf("%.1f", median(on)))
	fmt.Printf("%-34s %10s\n", "median tps, collectors off", fmt.Sprintf("%.1f", median(off)))
	fmt.Printf("%-34s %10s   (pairs: %s)\n", "median on/off ratio", fmt.Sprintf("%.4f", median(ratios)), list(ratios))
	fmt.Printf("%-34s %9.2f%%\n", "overhead (1 - ratio)", 100*(1-median(ratios)))
	return nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func list(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.3f", x)
	}
	return s
}
