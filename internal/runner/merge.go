package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
)

// MergeOptions are the options of `dbparity merge`.
type MergeOptions struct {
	Files []string // the parts' result files
	Out   string
	Force bool // merge what would be refused, flagged
	// Wait, when above 0, waits up to this long for every file to appear
	// (a merge step started beside the parts, as in Kubernetes).
	Wait   time.Duration
	Stdout io.Writer
	Stderr io.Writer
	// MaxErrorPct judges the merged run as run judges one.
	MaxErrorPct float64
}

// Merge combines the results of the parts of one run (run --part) into
// one result file.
func Merge(ctx context.Context, o MergeOptions) error {
	switch {
	case len(o.Files) == 0:
		return usage("name the parts' result files (usage: dbparity merge --out RUN.json PART.json...)")
	case o.Out == "":
		return usage("--out: name the merged result file")
	}
	if err := result.CheckWritable(o.Out, o.Force); err != nil {
		return UsageError{err}
	}
	if err := waitFiles(ctx, o); err != nil {
		return err
	}
	var parts []*result.Run
	for _, f := range o.Files {
		r, err := result.Read(f)
		if err != nil {
			return UsageError{err}
		}
		parts = append(parts, r)
	}
	r, err := result.Merge(parts, o.Files, o.Force)
	if err != nil {
		return UsageError{err}
	}
	r.Judge(o.MaxErrorPct)
	if err := r.Validate(); err != nil {
		return fmt.Errorf("merge: the merged result is invalid: %w", err)
	}
	if err := result.Write(o.Out, r); err != nil {
		return err
	}
	if err := report.Text(o.Stdout, r); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "\nmerged %d parts into %s\n", len(parts), o.Out)
	if r.Failed {
		return fmt.Errorf("merged run failed: %s (result written to %s, marked failed)", r.FailedReason, o.Out)
	}
	return nil
}

// waitFiles waits, up to o.Wait, until every file exists.
func waitFiles(ctx context.Context, o MergeOptions) error {
	deadline := time.Now().Add(o.Wait)
	shown := -1
	for {
		var missing []string
		for _, f := range o.Files {
			if _, err := os.Stat(f); err != nil {
				missing = append(missing, f)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if o.Wait <= 0 || time.Now().After(deadline) {
			more := ""
			if o.Wait > 0 {
				more = fmt.Sprintf(" after waiting %s", o.Wait)
			}
			return usage("%s: no such file%s (%d of %d parts missing)", missing[0], more, len(missing), len(o.Files))
		}
		if len(missing) != shown {
			fmt.Fprintf(o.Stderr, "waiting for %d of %d parts (%s ...)\n", len(missing), len(o.Files), missing[0])
			shown = len(missing)
		}
		select {
		case <-ctx.Done():
			return ErrInterrupted
		case <-time.After(time.Second):
		}
	}
}
