package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// report prints the table, dbparity's ratios to each peer and the targets
// of the engine's issue (16 for PostgreSQL, 33 for MariaDB).
func (b *bench) report(drivers []driver, skipped []string, samples map[string][]sample, loads map[string]time.Duration) {
	o := b.o
	fmt.Printf("\npeers, %s: %d warehouses, %d sessions, %d interleaved rounds of %s windows after %s, %s over loopback TCP, %d cores\n\n",
		time.Now().Format("2006-01-02"), o.warehouses, o.users, o.rounds, o.duration, o.warmup, b.srv.name(), runtime.NumCPU())
	// The server's count of client requests, where it has one (MariaDB).
	requests := false
	for _, ss := range samples {
		requests = requests || len(ss) > 0 && ss[0].a.requests >= 0
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "driver (medians)\tkind\ttransactions/s\tclient CPU µs/tx\twrites/tx (round trips)\t")
	if requests {
		fmt.Fprint(tw, "statements/tx (Questions)\t")
	}
	fmt.Fprintln(tw, "server CPU µs/tx\tserver transactions/tx\t")
	med := func(name string, f func(sample) float64) float64 {
		var v []float64
		for _, s := range samples[name] {
			v = append(v, f(s))
		}
		return median(v)
	}
	for _, d := range drivers {
		writes := fmt.Sprintf("%.1f", med(d.name, sample.writesPerTx))
		switch {
		case d.trips != nil:
			writes = fmt.Sprintf("%.1f (counted)", med(d.name, sample.roundTrips))
		case med(d.name, sample.writesPerTx) < 0.5: // under one a transaction: its sends are not counted
			writes = "n/a (send)"
		}
		share := fmt.Sprintf("%.2f", med(d.name, sample.serverPerDriverTx))
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%s\t", d.name, d.kind, med(d.name, sample.tps), med(d.name, sample.clientPerTx), writes)
		if requests {
			fmt.Fprintf(tw, "%.1f\t", med(d.name, sample.requestsPerTx))
		}
		fmt.Fprintf(tw, "%.0f\t%s\t\n", med(d.name, sample.serverPerTx), share)
	}
	tw.Flush()
	for _, n := range b.srv.notes() {
		fmt.Println("  " + n)
	}
	for _, s := range skipped {
		fmt.Printf("  (%s)\n", s)
	}

	// Ratios, round by round: the rounds pair the drivers.
	ratio := func(a, p string, f func(sample) float64) float64 {
		var v []float64
		for r := range min(len(samples[a]), len(samples[p])) {
			v = append(v, f(samples[a][r])/f(samples[p][r]))
		}
		return median(v)
	}
	fmt.Println("\ndbparity against each driver (median of the rounds' ratios)")
	tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tagainst\ttransactions/s\tclient CPU per transaction\t")
	for _, mode := range []string{"dbparity client", "dbparity client --compact", "dbparity procedures"} {
		for _, d := range drivers {
			if strings.HasPrefix(d.name, "dbparity") {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%.2fx\t%.2fx\t\n", mode, d.name, ratio(mode, d.name, sample.tps), ratio(mode, d.name, sample.clientPerTx))
		}
	}
	tw.Flush()

	floor := fmt.Sprintf("pgbench: scale %d", o.pgbenchScale)
	if o.engine == "mariadb" {
		floor = fmt.Sprintf("sysbench: 4 tables of %d rows", o.sysbenchRows)
	}
	fmt.Printf("\nload of %d warehouses (%s)\n", o.warehouses, floor)
	var fastestPeer time.Duration
	for _, d := range drivers {
		if l, ok := loads[d.name]; ok {
			fmt.Printf("  %-24s %6.1f s\n", d.name, l.Seconds())
			if d.kind != kindFloor && !strings.HasPrefix(d.name, "dbparity") && (fastestPeer == 0 || l < fastestPeer) {
				fastestPeer = l
			}
		}
	}

	fmt.Printf("\ntargets (%s)\n", b.srv.issue())
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	pr := med("dbparity procedures", sample.clientPerTx)
	best, bestName := 0.0, ""
	for _, d := range drivers {
		if d.kind == kindClient && !strings.HasPrefix(d.name, "dbparity") {
			if c := med(d.name, sample.clientPerTx); bestName == "" || c < best {
				best, bestName = c, d.name
			}
		}
	}
	for _, mode := range []string{"dbparity client", "dbparity client --compact"} {
		cl := med(mode, sample.clientPerTx)
		if bestName == "" {
			fmt.Printf("  %s's CPU against the best client-SQL peer: no client-SQL peer ran\n", mode)
		} else {
			fmt.Printf("  %s: client CPU %.0f µs/tx ≤ 0.5 × %s's %.0f µs: %s (%.2fx)\n", mode, cl, bestName, best, verdict(cl <= 0.5*best), cl/best)
		}
		for _, d := range drivers {
			if d.kind == kindClient && !strings.HasPrefix(d.name, "dbparity") {
				r := ratio(mode, d.name, sample.tps)
				fmt.Printf("  %s: transactions/s ≥ %s's: %s (%.2fx)\n", mode, d.name, verdict(r >= 1), r)
			}
		}
		if o.engine == "mariadb" {
			w := med(mode, sample.roundTrips)
			fmt.Printf("  %s: round trips per transaction (counted at its sockets) ≤ 8: %s (%.1f)\n", mode, verdict(w > 0 && w <= 8), w)
		}
	}
	procPeer := false
	for _, d := range drivers {
		if d.kind == kindProcedures && !strings.HasPrefix(d.name, "dbparity") {
			procPeer = true
			c := ratio("dbparity procedures", d.name, sample.clientPerTx)
			r := ratio("dbparity procedures", d.name, sample.tps)
			fmt.Printf("  procedure mode: client CPU %.0f µs/tx ≤ %s's: %s (%.2fx); transactions/s ≥ its: %s (%.2fx)\n",
				pr, d.name, verdict(c <= 1), c, verdict(r >= 1), r)
		}
	}
	if !procPeer {
		fmt.Printf("  procedure mode's client CPU %.0f µs/tx against a procedure peer: none ran (set $HAMMERDB)\n", pr)
	}
	if l, ok := loads["dbparity client"]; ok && o.engine == "mariadb" {
		if fastestPeer > 0 {
			fmt.Printf("  (load, no target here: %.1f s, %.2fx the fastest peer's %.1f s)\n", l.Seconds(), l.Seconds()/fastestPeer.Seconds(), fastestPeer.Seconds())
		}
	} else if ok {
		fmt.Printf("  load ≤ 7.4 s: %s (%.1f s)", verdict(l <= 7400*time.Millisecond), l.Seconds())
		if fastestPeer > 0 {
			fmt.Printf("; ≤ 0.5 × the fastest peer's %.1f s: %s (%.2fx)", fastestPeer.Seconds(), verdict(l <= fastestPeer/2), l.Seconds()/fastestPeer.Seconds())
		}
		fmt.Println()
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if n := len(v); n%2 == 1 {
		return v[n/2]
	} else {
		return (v[n/2-1] + v[n/2]) / 2
	}
}

// procWrites is the write system calls a process made (/proc/PID/io
// syscw), all its threads.
func procWrites(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscw: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
