package runner

import (
	"context"
	"fmt"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/dbparity/dbparity/internal/workload"
)

// LoadOptions are the options of `dbparity load`.
type LoadOptions struct {
	Common
	Workers int // connections to load with; 0 = one per core
}

// Load creates the workload's schema and loads its data, replacing any
// earlier load.
func Load(ctx context.Context, o LoadOptions) error {
	if err := o.Workload.Validate(); err != nil {
		return UsageError{err}
	}
	t, err := openTarget(ctx, o.Target)
	if err != nil {
		return err
	}
	defer t.close()
	return t.explain(load(ctx, t, o.Common, o.Workers), "")
}

func load(ctx context.Context, t *opened, c Common, workers int) error {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	w := c.Workload
	if !t.Dialect.ConcurrentWriters() {
		workers = 1
	}
	fmt.Fprintf(c.Stderr, "loading %s into %s with %d connection(s)\n", w.Meta().Name, t.URL, workers)
	prog := &workload.Progress{}
	p := &progress{w: c.Stderr, tty: c.TTY, interval: c.ProgressInterval}
	start := time.Now()
	stop := make(chan struct{})
	drawn := make(chan struct{})
	go func() {
		defer close(drawn)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				done, total := prog.Done.Load(), prog.Total.Load()
				pct := 0.0
				if total > 0 {
					pct = 100 * float64(done) / float64(total)
				}
				p.show(fmt.Sprintf("load [%s] %3.0f%%  %s/%s rows  %s", bar(done, total, 30), pct,
					count(done), count(total), time.Since(start).Round(time.Second)))
			}
		}
	}()
	err := w.Load(ctx, &workload.LoadEnv{Target: t.Target, Workers: workers, Seed: c.Seed, Progress: prog})
	close(stop)
	<-drawn
	p.clear()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("load %w: the half-finished load is not recorded as loaded (run and check refuse its tables); run load again, which starts over", ErrInterrupted)
		}
		return fmt.Errorf("load %s: %w", w.Meta().Name, err)
	}
	elapsed := time.Since(start)
	done := prog.Done.Load()
	fmt.Fprintf(c.Stdout, "loaded %s: %s rows in %s (%.0f rows/s)\n", w.Meta().Name, count(done),
		elapsed.Round(100*time.Millisecond), float64(done)/elapsed.Seconds())
	if err := tableReport(ctx, t, c); err != nil {
		return err
	}
	for _, n := range prog.Notes() {
		fmt.Fprintf(c.Stdout, "  %s\n", n)
	}
	return nil
}

// tableReport prints each table's rows, the rows the specification
// expects, and its size on disk.
func tableReport(ctx context.Context, t *opened, c Common) error {
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tw := tabwriter.NewWriter(c.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  table\trows\texpected\tsize\t\n")
	var total int64
	for _, tb := range c.Workload.Tables() {
		var n int64
		q := "SELECT count(*) FROM " + tb.Name
		if tb.Where != "" {
			q += " WHERE " + tb.Where
		}
		if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
			return fmt.Errorf("count %s: %w", tb.Name, err)
		}
		size := t.Dialect.TableBytes(ctx, conn, tb.Name)
		if size > 0 {
			total += size
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t\n", tb.Name, n, tb.ExpectedRows, bytesHuman(size))
	}
	if total > 0 {
		fmt.Fprintf(tw, "  total\t\t\t%s\t\n", bytesHuman(total))
	}
	return tw.Flush()
}
