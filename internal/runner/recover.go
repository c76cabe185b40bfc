package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
)

// RecoverOptions are the options of `dbparity recover`.
type RecoverOptions struct {
	Journal string // FILE.journal
	Out     string // default: the result file the journal stood for
	Force   bool
	// MaxErrorPct judges the recovered run as run would have.
	MaxErrorPct float64
	Stdout      io.Writer
}

// Recover turns the journal of a run that died into a result file marked
// partial. The journal is kept: it holds the full-resolution series.
func Recover(o RecoverOptions) error {
	if o.Journal == "" {
		return usage("name the journal to recover (usage: dbparity recover FILE.journal)")
	}
	if _, err := os.Stat(o.Journal); err != nil {
		return usage("%s: %v", o.Journal, errors.Unwrap(err))
	}
	if o.Out == "" {
		o.Out = strings.TrimSuffix(o.Journal, ".journal")
		if o.Out == o.Journal {
			o.Out += ".json"
		}
	}
	if st, err := os.Stat(o.Out); err == nil && !st.IsDir() && !o.Force {
		return usage("%s already exists: choose another --out or pass --force to replace it", o.Out)
	}
	r, err := result.Recover(o.Journal)
	if err != nil {
		return UsageError{err}
	}
	r.Judge(o.MaxErrorPct)
	if err := r.Validate(); err != nil {
		return UsageError{fmt.Errorf("%s: %w", o.Journal, err)}
	}
	if err := result.Write(o.Out, r); err != nil {
		return err
	}
	if err := report.Text(o.Stdout, r); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "\nrecovered result written to %s (the journal %s is kept)\n", o.Out, o.Journal)
	return nil
}
