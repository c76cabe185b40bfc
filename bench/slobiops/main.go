// Command slobiops sets slob's physical reads beside the physical limit of
// the storage under them: the random 8 KB read IOPS a plain reader gets
// from a file on the same file system (Go O_DIRECT preads, or fio when it
// is installed), with as many readers as slob has sessions. Rounds
// alternate the two measurements, so that drift on a shared machine falls
// on both, and each round prints its ratio.
//
// slob runs on a managed PostgreSQL with the small-cache preset. PostgreSQL
// 15 reads through the OS page cache, so by default the tables' pages are
// evicted from it every 100 ms during the run (SLOB on Oracle reads with
// direct IO for the same reason); the result's IO units say where the
// reads were served from all the same.
//
//	go run ./bench/slobiops [-users 4] [-scale 100000] [-duration 20s] [-rounds 2] [-evict=true]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/dbparity/dbparity/bench/internal/rawio"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/runner"
	"github.com/dbparity/dbparity/internal/workload"
	_ "github.com/dbparity/dbparity/internal/workload/slob" // registers slob
)

func main() {
	users := flag.Int("users", 4, "slob sessions, and raw readers")
	scale := flag.Int("scale", 100000, "slob SCALE: rows (8 KB blocks) in the one schema")
	workUnit := flag.Int("work-unit", 8, "slob WORK_UNIT")
	duration := flag.Duration("duration", 20*time.Second, "measured window of each measurement")
	rounds := flag.Int("rounds", 2, "rounds of (raw reads, slob) in alternating order")
	evict := flag.Bool("evict", true, "evict slob's tables from the OS page cache every 100 ms during its runs")
	flag.Parse()
	if err := run(*users, *scale, *workUnit, *duration, *rounds, *evict); err != nil {
		fmt.Fprintln(os.Stderr, "slobiops:", err)
		os.Exit(1)
	}
}

func run(users, scale, workUnit int, duration time.Duration, rounds int, evict bool) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dbparity-slobiops-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755) // the server's user (when run as root) must enter it
	pgdata := filepath.Join(dir, "pg")
	w, err := workload.New("slob")
	if err != nil {
		return err
	}
	wf := flag.NewFlagSet("", flag.ContinueOnError)
	w.Flags(wf)
	wf.Set("scale", strconv.Itoa(scale))
	wf.Set("work-unit", strconv.Itoa(workUnit))
	wf.Set("update-pct", "0")
	c := runner.Common{Workload: w, Seed: 1, Stdout: io.Discard, Stderr: os.Stderr,
		Target: runner.Target{Managed: "postgres", PGData: pgdata, PGPreset: "small-cache", Progress: io.Discard}}
	fmt.Fprintf(os.Stderr, "loading slob: %d rows of 8 KB (%.0f MB)\n", scale, float64(scale)*8192/1e6)
	if err := runner.Load(ctx, runner.LoadOptions{Common: c}); err != nil {
		return err
	}
	var ratios []float64
	for i := range rounds {
		var raw rawio.Result
		var io *result.IOUnits
		measureRaw := func() error {
			o := rawio.Options{Dir: dir, Size: int64(scale) * 8192, Workers: users, Duration: duration, Direct: true}
			r, ok, err := rawio.Fio(ctx, o)
			if !ok {
				r, err = rawio.Measure(ctx, o)
			}
			raw = r
			return err
		}
		measureSlob := func() error {
			out := filepath.Join(dir, fmt.Sprintf("slob-%d.json", i))
			stop := make(chan struct{})
			if evict {
				go evictEvery(filepath.Join(pgdata, "base"), 100*time.Millisecond, stop)
			}
			err := runner.Run(ctx, runner.RunOptions{Common: c, Users: users, Duration: duration, Warmup: 3 * time.Second,
				Label: "slob", Out: out})
			close(stop)
			if err != nil {
				return err
			}
			r, err := result.Read(out)
			if err != nil {
				return err
			}
			if io = r.IO; io == nil || io.PhysicalReads == nil {
				return fmt.Errorf("slob run recorded no IO units")
			}
			return nil
		}
		steps := []func() error{measureRaw, measureSlob}
		if i%2 == 1 {
			slices.Reverse(steps)
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		ratio := *io.PhysicalReads / raw.IOPS
		ratios = append(ratios, ratio)
		device := "n/a"
		if io.ReadIOPS != nil {
			device = fmt.Sprintf("%.0f", *io.ReadIOPS)
		}
		fmt.Printf("round %d: raw %.0f IOPS (%s, %d readers, p50 %v, p99 %v)  slob %.0f physical reads/s, device %s read IOPS, served from %s  ratio %.2f\n",
			i+1, raw.IOPS, raw.Method, users, raw.LatencyP50, raw.LatencyP99, *io.PhysicalReads, device, io.ServedFrom, ratio)
	}
	slices.Sort(ratios)
	n := len(ratios)
	median := (ratios[(n-1)/2] + ratios[n/2]) / 2
	fmt.Printf("slob physical reads per raw read, median of %d rounds: %.2f (range %.2f-%.2f)\n",
		n, median, ratios[0], ratios[n-1])
	return nil
}

// evictEvery drops the clean pages of every file under dir from the OS
// page cache, every interval, until stop closes.
func evictEvery(dir string, every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					rawio.DropCache(path)
				}
				return nil
			})
		}
	}
}
