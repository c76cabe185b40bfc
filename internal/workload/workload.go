// Package workload defines what a workload is to the rest of dbparity: a
// struct of typed parameters behind a small interface (its meta, its
// loader, its transactions, its consistency checks) and a registry by name.
// Workloads live in subpackages and register themselves at init; the command
// line only looks them up. Workloads reach the database only through
// engine.Conn, so they run unchanged on every dialect.
package workload

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
)

// Meta describes a workload.
type Meta struct {
	Name        string
	Description string
	// Version changes whenever the schema, the data or the transactions
	// change, so results of different versions are never compared silently.
	Version string
	// Disclaimer is printed with every result (e.g. "TPC-C derived, not
	// TPC-C compliant").
	Disclaimer string
	// LoadParams are the keys of Params that shape the loaded data (a run
	// cannot change them without a new load).
	LoadParams []string
	// RunParams are the keys of Params that change what a run measures
	// (order-entry's execution mode): compare refuses runs that differ in
	// them unless forced.
	RunParams []string
	// TestsIO is set by workloads meant to measure the storage path (slob):
	// a data set that fits in the database's cache makes such a run say
	// nothing about storage, and the run warns of it.
	TestsIO bool
}

// Workload is a named generator with typed parameters.
type Workload interface {
	Meta() Meta
	// Flags binds the workload's parameters to a command's flag set.
	Flags(fs *flag.FlagSet)
	// Validate checks the parameters after flags are parsed.
	Validate() error
	// Params are the parameters as recorded in a result file.
	Params() map[string]any
	// TxTypes names the transaction types; a type's index is its id.
	TxTypes() []string
	// Tables lists the workload's tables with the rows a load of the
	// current parameters writes.
	Tables() []Table
	// Load drops and recreates the schema and loads the initial data.
	Load(ctx context.Context, env *LoadEnv) error
	// Prepare reads the loaded state before a run or a check. It returns an
	// error wrapping ErrNotLoaded when the schema is missing.
	Prepare(ctx context.Context, c engine.Conn, d engine.Dialect) error
	// NewWorker returns the generator of one session. Its randomness is
	// derived from seed and id only, so a run can be repeated exactly.
	NewWorker(id int, seed uint64, d engine.Dialect) Worker
	// Check verifies the workload's consistency conditions.
	Check(ctx context.Context, c engine.Conn, d engine.Dialect) ([]CheckResult, error)
}

// Worker produces and executes the transactions of one session.
type Worker interface {
	// Next draws the next transaction and its inputs; it touches no database.
	Next() (txType int)
	// Run executes the transaction drawn by Next. After an error that the
	// driver retries, Run is called again with the same inputs. Run leaves
	// no transaction open when it returns.
	Run(ctx context.Context, c engine.Conn) (Outcome, error)
}

// Thinker is a Worker that pauses between transactions, as a user
// thinks. The driver asks after every transaction and waits that long
// before the next one; the pause is in no latency.
type Thinker interface {
	Think() time.Duration
}

// Thinking is a Workload whose sessions may pause between transactions
// (Thinker). ThinkFlag names the flag that turned the pauses on ("" when
// they are off), so that a target rate, which schedules the arrivals
// itself, is refused beside it; ThinkScale is what the result records
// (0 when off, 1 for the specification's times).
type Thinking interface {
	ThinkFlag() string
	ThinkScale() float64
}

// Sessions is a Workload whose parameters fix how many sessions a run
// has (slob: schemas × threads per schema) unless --users says otherwise.
// It is asked after Prepare, which may change the parameters, and names
// the flag that sets the count, so that a --users contradicting that flag
// is refused.
type Sessions interface {
	Sessions() (n int, flag string)
}

// Shared is a Workload whose sessions each work on one share of the data
// (order-entry: a home warehouse; slob: a schema): session id's share is
// id mod n. A run split over several driver processes (run --part) gives
// each part whole shares, so that the parts work on disjoint data. n is 0
// when the sessions share everything (order-entry's random home
// warehouses); what names the shares in messages. Asked after Prepare.
type Shared interface {
	Shares() (n int, what string)
}

// Outcome is what one successful Run did.
type Outcome struct {
	// Rollback is set when the transaction rolled back by design (such as
	// New-Order's 1% invalid item): counted, not an error.
	Rollback bool
	// Commit is the latency of the COMMIT statement alone; zero for none.
	Commit time.Duration
}

// Table is one table of a workload.
type Table struct {
	Name         string
	ExpectedRows int64 // approximate where the data is random (order lines)
	// Where, when set, selects the rows ExpectedRows counts (a layout's
	// filler rows left out).
	Where string
}

// CheckResult is one consistency condition.
type CheckResult struct {
	Name   string
	OK     bool
	Detail string // on failure, what was found
}

// ErrNotLoaded is wrapped by Prepare when the schema is missing.
var ErrNotLoaded = errors.New("schema not loaded")

// LoadEnv is what a loader gets.
type LoadEnv struct {
	Target   *engine.Target
	Workers  int // connections to load with
	Seed     uint64
	Progress *Progress
}

// Note keeps a line for the load's report (printed after the progress bar).
func (e *LoadEnv) Note(s string) {
	if e.Progress != nil {
		e.Progress.Note(s)
	}
}

var registry = map[string]func() Workload{}

// Register makes a workload available by name; called from init.
func Register(name string, f func() Workload) {
	if _, dup := registry[name]; dup {
		panic("workload registered twice: " + name)
	}
	registry[name] = f
}

// New returns a fresh workload with default parameters.
func New(name string) (Workload, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown workload %q: choose one of %s", name, strings.Join(Names(), ", "))
	}
	return f(), nil
}

// Names lists the registered workloads.
func Names() []string { return slices.Sorted(maps.Keys(registry)) }
