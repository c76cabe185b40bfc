// Command slobiops sets slob's physical reads beside the physical limit of
// the storage under them: the random read IOPS a plain reader gets from a
// file on the same file system (Go O_DIRECT preads, or fio when it is
// installed) in blocks of the engine's page size (8 KB for PostgreSQL,
// 16 KB for InnoDB), with as many readers as slob has sessions, so at the
// same queue depth. Rounds alternate the two measurements, so that drift
// on a shared machine falls on both, and each round prints its ratio. With
// no -engine it measures PostgreSQL, then MariaDB.
//
// slob runs read-only (UPDATE_PCT 0, WORK_UNIT 64 as SLOB's default) on
// a managed server with the small-cache preset (a 16 MB buffer cache; 64
// MB on MariaDB, see run). MariaDB's InnoDB reads with O_DIRECT
// (innodb_flush_method, set here), around the OS page cache, so its
// buffer pool is what can cache the data. PostgreSQL 15 reads through the OS page
// cache, so SLOB's rule is kept for it: the data set is at least 4 times
// the memory that can cache it. With -cache cgroup (what auto, the
// default, picks where a memory cgroup can be made) the runs start their
// server in a memory cgroup limited to a quarter of the data (-cache-mb
// to choose), which holds the server's processes and the page cache
// their reads fill; with -cache evict the tables' files are dropped from
// the OS page cache every 100 ms instead. The arrangement and the sizes
// are printed, and the result's IO units say where the reads were served
// from all the same: PostgreSQL's physical reads count those the page
// cache served, the device's read IOPS do not.
//
//	go run ./bench/slobiops [-engine postgres|mariadb] [-users 4] [-scale N] [-work-unit 64] [-duration 20s] [-rounds 2]
//	    [-cache auto|cgroup|evict] [-cache-mb N] [-cpuprofile file]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/bench/internal/rawio"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/runner"
	"github.com/dbparity/dbparity/internal/workload"
	_ "github.com/dbparity/dbparity/internal/workload/slob" // registers slob
)

// engine is what differs between the servers slob runs on.
type engine struct {
	name  string // -engine and --managed
	block int    // bytes per page: one physical read
	scale int    // default rows: 800 MB of pages
}

var engines = []engine{
	{name: "postgres", block: 8192, scale: 100000},
	{name: "mariadb", block: 16384, scale: 50000},
}

// myPoolMB is MariaDB's buffer pool.
const myPoolMB = 64

type options struct {
	users, scale, workUnit, rounds int
	duration                       time.Duration
	cache                          string
	cacheMB                        int
	cpuProfile                     string
}

func main() {
	var o options
	eng := flag.String("engine", "", "postgres or mariadb (default: both, one after the other)")
	flag.IntVar(&o.users, "users", 4, "slob sessions, and raw readers")
	flag.IntVar(&o.scale, "scale", 0, "slob SCALE: rows (one page each) in the one schema (default: 800 MB of pages, 100000 on PostgreSQL, 50000 on MariaDB)")
	flag.IntVar(&o.workUnit, "work-unit", 64, "slob WORK_UNIT (SLOB's default: one statement per 64 reads)")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "measured window of each measurement")
	flag.IntVar(&o.rounds, "rounds", 2, "rounds of (raw reads, slob) in alternating order")
	flag.StringVar(&o.cache, "cache", "auto", "how the data is kept 4 times the memory that can cache it: cgroup (a memory cgroup on the server), evict (drop the tables from the OS page cache every 100 ms), auto (cgroup where it can be made, else evict)")
	flag.IntVar(&o.cacheMB, "cache-mb", 0, "memory cgroup limit in MB (default: a quarter of the data)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the driver) during the slob runs to this file, with the engine's name added")
	evict := flag.Bool("evict", false, "the same as -cache evict (kept for older command lines)")
	flag.Parse()
	if *evict {
		o.cache = "evict"
	}
	if !slices.Contains([]string{"auto", "cgroup", "evict"}, o.cache) {
		fmt.Fprintf(os.Stderr, "slobiops: -cache %q: give auto, cgroup or evict\n", o.cache)
		os.Exit(2)
	}
	todo := engines
	if *eng != "" {
		i := slices.IndexFunc(engines, func(e engine) bool { return e.name == *eng })
		if i < 0 {
			fmt.Fprintf(os.Stderr, "slobiops: -engine %q: give postgres or mariadb\n", *eng)
			os.Exit(2)
		}
		todo = engines[i : i+1]
	}
	failed := false
	for _, e := range todo {
		if err := run(e, o); err != nil {
			fmt.Fprintf(os.Stderr, "slobiops: %s: %v\n", e.name, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func run(e engine, o options) error {
	ctx := context.Background()
	scale := o.scale
	if scale == 0 {
		scale = e.scale
	}
	dir, err := os.MkdirTemp("", "dbparity-slobiops-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755) // the server's user (when run as root) must enter it
	data := filepath.Join(dir, "data")
	w, err := workload.New("slob")
	if err != nil {
		return err
	}
	wf := flag.NewFlagSet("", flag.ContinueOnError)
	w.Flags(wf)
	wf.Set("scale", strconv.Itoa(scale))
	wf.Set("work-unit", strconv.Itoa(o.workUnit))
	wf.Set("update-pct", "0")
	tg := runner.Target{Managed: e.name, Progress: io.Discard}
	if e.name == "postgres" {
		tg.PGData, tg.PGPreset = data, "small-cache"
	} else {
		// O_DIRECT is MariaDB 10.11's default; said here so that a
		// changed default cannot put the OS page cache under the reads.
		// The pool is 64 MB, not the preset's 16: the primary key's
		// upper levels, built at fill factor 10 with the leaves, and the
		// index on id take about 10 MB, and in 16 MB they are evicted
		// by the leaves, so that half the physical reads were index
		// blocks (2 reads per row).
		tg.MyData, tg.MyPreset = data, "small-cache"
		tg.MySet = []string{"innodb_flush_method=O_DIRECT", fmt.Sprintf("innodb_buffer_pool_size=%dM", myPoolMB)}
	}
	c := runner.Common{Workload: w, Seed: 1, Stdout: io.Discard, Stderr: os.Stderr, Target: tg}
	fmt.Fprintf(os.Stderr, "%s: loading slob: %d rows, one %d KB page each (%.0f MB)\n", e.name, scale, e.block/1024, float64(scale)*float64(e.block)/1e6)
	if err := runner.Load(ctx, runner.LoadOptions{Common: c}); err != nil {
		return err
	}
	tables := tableFiles(e, data)
	dataBytes := sizeOf(tables)

	// Keep the data at least 4 times the memory that can cache it. InnoDB
	// reads around the page cache: its buffer pool is that memory.
	var cg *memCgroup
	arrangement := ""
	evict := o.cache == "evict" && e.name == "postgres"
	if e.name == "postgres" && !evict {
		limit := int64(o.cacheMB) << 20
		if limit == 0 {
			limit = dataBytes / 4
		}
		cg, err = newMemCgroup(limit)
		switch {
		case err != nil && o.cache == "cgroup":
			return err
		case err != nil:
			evict = true
			arrangement = fmt.Sprintf("no memory cgroup (%v): ", err)
		default:
			defer cg.remove()
			arrangement = fmt.Sprintf("memory cgroup limit %.0f MB on the server's processes and the page cache they fill (%s); data %.1f× it",
				float64(limit)/1e6, cg, float64(dataBytes)/float64(limit))
		}
	}
	if evict {
		arrangement += "the tables' files evicted from the OS page cache every 100 ms"
	}
	if e.name == "mariadb" {
		arrangement = fmt.Sprintf("InnoDB reads with O_DIRECT (no OS page cache) into a %d MB buffer pool; data %.1f× it",
			myPoolMB, float64(dataBytes)/float64(myPoolMB<<20))
	} else {
		arrangement += "; 16 MB shared_buffers"
	}
	fmt.Printf("%s: data %.0f MB (slob's tables and indexes), %s\n", e.name, float64(dataBytes)/1e6, arrangement)

	var ratios, devRatios []float64
	for i := range o.rounds {
		var raw rawio.Result
		var io *result.IOUnits
		measureRaw := func() error {
			ro := rawio.Options{Dir: dir, Size: int64(scale) * int64(e.block), Block: e.block, Workers: o.users, Duration: o.duration, Direct: true}
			r, ok, err := rawio.Fio(ctx, ro)
			if !ok {
				r, err = rawio.Measure(ctx, ro)
			}
			raw = r
			return err
		}
		measureSlob := func() error {
			out := filepath.Join(dir, fmt.Sprintf("slob-%d.json", i))
			// The load's pages and the last run's are charged to whoever
			// read them: drop them, so that the run's own reads fill the
			// page cache (and the cgroup's share of it).
			dropAll(tables)
			stop := make(chan struct{})
			if evict {
				go evictEvery(tables, 100*time.Millisecond, stop)
			}
			if cg != nil {
				if err := cg.join(); err != nil {
					return fmt.Errorf("join %s: %w", cg, err)
				}
			}
			if o.cpuProfile != "" {
				stopProfile, err := startProfile(o.cpuProfile + "." + e.name)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			err := runner.Run(ctx, runner.RunOptions{Common: c, Users: o.users, Duration: o.duration, Warmup: 3 * time.Second,
				Label: "slob", Out: out})
			if cg != nil {
				cg.leave()
			}
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
			devRatios = append(devRatios, *io.ReadIOPS/raw.IOPS)
		}
		peak := ""
		if cg != nil {
			peak = fmt.Sprintf(", cgroup peak %.0f MB", float64(cg.peak())/1e6)
		}
		fmt.Printf("%s round %d: raw %.0f IOPS (%s, %d KB, %d readers, p50 %v, p99 %v)  slob %.0f physical reads/s, device %s read IOPS, served from %s%s  ratio %.2f\n",
			e.name, i+1, raw.IOPS, raw.Method, e.block/1024, o.users, raw.LatencyP50, raw.LatencyP99, *io.PhysicalReads, device, io.ServedFrom, peak, ratio)
	}
	lo, med, hi := spread(ratios)
	fmt.Printf("%s: slob physical reads per raw read, median of %d rounds: %.2f (range %.2f-%.2f)", e.name, len(ratios), med, lo, hi)
	if len(devRatios) == len(ratios) {
		lo, med, hi := spread(devRatios)
		fmt.Printf("; device read IOPS per raw read %.2f (%.2f-%.2f)", med, lo, hi)
	}
	fmt.Println()
	return nil
}

// startProfile starts a CPU profile in a new file named after path (one
// per round: go tool pprof merges them); the function it returns stops it.
func startProfile(path string) (func(), error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// spread is the smallest, median and largest of xs.
func spread(xs []float64) (lo, median, hi float64) {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	return s[0], (s[(n-1)/2] + s[n/2]) / 2, s[n-1]
}

// tableFiles are the files of the loaded tables and indexes: everything
// under PostgreSQL's base/, InnoDB's file-per-table .ibd files.
func tableFiles(e engine, data string) []string {
	var files []string
	root := data
	if e.name == "postgres" {
		root = filepath.Join(data, "base")
	}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && (e.name == "postgres" || strings.HasSuffix(path, ".ibd")) {
			files = append(files, path)
		}
		return nil
	})
	return files
}

func sizeOf(files []string) int64 {
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func dropAll(files []string) {
	for _, f := range files {
		rawio.DropCache(f)
	}
}

// evictEvery drops files' clean pages from the OS page cache every
// interval, until stop closes.
func evictEvery(files []string, every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			dropAll(files)
		}
	}
}
