// Package benchenv gives the benchmark commands their throw-away managed
// PostgreSQL and an order-entry load on it.
package benchenv

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/runner"
	"github.com/dbparity/dbparity/internal/workload"
	_ "github.com/dbparity/dbparity/internal/workload/orderentry" // registers order-entry
)

// Env is a managed server in a temporary directory.
type Env struct {
	Inst *managed.Instance
	Dir  string // for the benchmark's result files
}

// Start starts the server; Close stops it and removes everything.
func Start(ctx context.Context) (*Env, error) {
	dir, err := os.MkdirTemp("", "dbparity-bench-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755) // the server's user (when run as root) must enter it
	inst, err := managed.Start(ctx, managed.Options{DataDir: filepath.Join(dir, "pg"), Log: os.Stderr})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Env{Inst: inst, Dir: dir}, nil
}

// Close stops the server and removes the directory.
func (e *Env) Close() {
	e.Inst.Stop()
	os.RemoveAll(e.Dir)
}

// LoadOrderEntry loads order-entry with the given warehouses and returns
// the options to run it with.
func (e *Env) LoadOrderEntry(ctx context.Context, warehouses int) (runner.Common, error) {
	w, err := workload.New("order-entry")
	if err != nil {
		return runner.Common{}, err
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	w.Flags(fs)
	fs.Set("warehouses", strconv.Itoa(warehouses))
	c := runner.Common{Target: runner.Target{URL: e.Inst.URL()}, Workload: w, Seed: 1, Stdout: io.Discard, Stderr: io.Discard}
	return c, runner.Load(ctx, runner.LoadOptions{Common: c})
}
