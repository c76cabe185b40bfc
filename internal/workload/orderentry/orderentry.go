// Package orderentry is the order-entry workload: a TPC-C derived OLTP
// benchmark (nine tables, five transactions, the standard mix, NURand keys,
// 1% New-Order rollbacks, remote warehouses). It is not TPC-C compliant and
// its results are not TPC-C results; every report says so.
//
// It owns its schema, its deterministic loader, its transactions and the
// TPC-C consistency conditions it checks. It reaches the database only
// through engine.Conn.
package orderentry

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/workload"
)

const (
	name = "order-entry"
	// version changes with the schema, the data or the transactions.
	version = "1"

	numItems          = 100000
	districtsPerWH    = 10
	customersPerDist  = 3000
	ordersPerDist     = 3000
	firstNewOrder     = 2101 // orders from here on are undelivered at load
	stockPerWarehouse = numItems
)

// Transaction types; the index is the type id.
const (
	txNewOrder = iota
	txPayment
	txOrderStatus
	txDelivery
	txStockLevel
	numTxTypes
)

var txNames = [numTxTypes]string{"new_order", "payment", "order_status", "delivery", "stock_level"}

// mix is the standard mix in cards per deck of 100 (clause 5.2.3 minimums
// for Payment, Order-Status, Delivery, Stock-Level; New-Order the rest).
var mix = [numTxTypes]int{45, 43, 4, 4, 4}

func init() {
	workload.Register(name, func() workload.Workload {
		return &OrderEntry{Warehouses: 1, HomeWarehouse: "fixed", ThinkBy: 1, Mode: ModeClient}
	})
}

// OrderEntry holds the parameters of the workload.
type OrderEntry struct {
	Warehouses int
	// HomeWarehouse is "fixed" (session i keeps warehouse i mod W + 1, as a
	// TPC-C terminal does) or "random" (a new home warehouse for every
	// transaction).
	HomeWarehouse string
	// Think turns on the specification's keying and think times (clause
	// 5.2.5.7), scaled by ThinkBy: terminals instead of batch mode.
	Think   bool
	ThinkBy float64
	// Mode is ModeClient (statements as applications send them) or
	// ModeProcedures (one function call a transaction).
	Mode string
	// Compact sends New-Order's item reads as one SELECT ... IN and its
	// order lines as one multi-row INSERT, as go-tpc does: fewer
	// statements than the specification's one per line (client mode).
	Compact bool

	// Set by Prepare from what was loaded.
	loaded constants
}

func (o *OrderEntry) Meta() workload.Meta {
	return workload.Meta{
		Name:        name,
		Description: "OLTP order entry: 9 tables, 5 transactions, standard mix, batch mode (no think time) unless --think",
		Version:     version,
		Disclaimer:  "TPC-C derived, not TPC-C compliant: results are not TPC-C results",
		LoadParams:  []string{"warehouses"},
		RunParams:   []string{"execution"},
	}
}

func (o *OrderEntry) Flags(fs *flag.FlagSet) {
	fs.IntVar(&o.Warehouses, "warehouses", o.Warehouses, "order-entry: warehouses to load (about 100 MB each)")
	fs.StringVar(&o.HomeWarehouse, "home-warehouse", o.HomeWarehouse, "order-entry: fixed (session i keeps warehouse i mod W + 1) or random (new one per transaction)")
	fs.StringVar(&o.Mode, "mode", o.Mode, "order-entry: client (the statements as applications send them, those that need no result of each other pipelined in one round trip) or procedures (one server-side procedure call a transaction, as HammerDB does; PostgreSQL, MySQL, MariaDB)")
	fs.BoolVar(&o.Compact, "compact", o.Compact, "order-entry client mode: New-Order reads its items in one SELECT ... IN and inserts its lines in one multi-row INSERT, as go-tpc does (fewer statements than one per line: the server does less work, and results say so)")
	fs.BoolVar(&o.Think, "think", o.Think, "order-entry: terminals, not batch: each session takes the specification's keying time before and think time after every transaction (means in seconds: new_order 18+12, payment 3+12, order_status 2+10, delivery 2+5, stock_level 2+5)")
	fs.Float64Var(&o.ThinkBy, "think-scale", o.ThinkBy, "order-entry: with --think, multiply the keying and think times by this (0.01 makes them 100 times shorter)")
}

func (o *OrderEntry) Validate() error {
	if o.Warehouses < 1 || o.Warehouses > 100000 {
		return fmt.Errorf("--warehouses %d: must be between 1 and 100000", o.Warehouses)
	}
	if o.HomeWarehouse != "fixed" && o.HomeWarehouse != "random" {
		return fmt.Errorf("--home-warehouse %q: must be fixed or random", o.HomeWarehouse)
	}
	if o.Mode != ModeClient && o.Mode != ModeProcedures {
		return fmt.Errorf("--mode %q: choose %s or %s", o.Mode, ModeClient, ModeProcedures)
	}
	if o.Compact && o.Mode == ModeProcedures {
		return fmt.Errorf("--compact shapes client mode's statements: --mode procedures has none to shape")
	}
	if !(o.ThinkBy > 0 && o.ThinkBy <= 100) {
		return fmt.Errorf("--think-scale %g: must be above 0 and at most 100", o.ThinkBy)
	}
	return nil
}

// ThinkFlag names the flag that turned think times on, if any.
func (o *OrderEntry) ThinkFlag() string {
	if o.Think {
		return "think"
	}
	return ""
}

// ThinkScale is the scale of the specification's times, 0 in batch mode.
func (o *OrderEntry) ThinkScale() float64 {
	if o.Think {
		return o.ThinkBy
	}
	return 0
}

func (o *OrderEntry) Params() map[string]any {
	return map[string]any{
		"warehouses":     o.Warehouses,
		"home_warehouse": o.HomeWarehouse,
		"mix":            "new_order 45, payment 43, order_status 4, delivery 4, stock_level 4",
		"mode":           o.mode(),
		"execution":      o.execution(),
	}
}

// execution is how the transactions reach the server, as recorded.
func (o *OrderEntry) execution() string {
	if o.Mode == ModeProcedures {
		return "server-side procedures (one call a transaction)"
	}
	if o.Compact {
		return "client-side statements, pipelined where independent; compact New-Order (items in one SELECT ... IN, lines in one INSERT)"
	}
	return "client-side statements, pipelined where independent"
}

// mode is how the sessions pace their transactions, as recorded.
func (o *OrderEntry) mode() string {
	if o.Think {
		return fmt.Sprintf("terminals (keying and think times of clause 5.2.5.7 × %g)", o.ThinkBy)
	}
	return "batch (no keying or think time)"
}

func (o *OrderEntry) TxTypes() []string { return txNames[:] }

// Shares: a session keeps its home warehouse (id mod W + 1) unless home
// warehouses are drawn at random.
func (o *OrderEntry) Shares() (int, string) {
	if o.HomeWarehouse != "fixed" {
		return 0, ""
	}
	return o.Warehouses, "home warehouses"
}

// Prepare reads the warehouse count and the load's NURand constants from
// the load record; a run always uses what is really in the database.
func (o *OrderEntry) Prepare(ctx context.Context, c engine.Conn, d engine.Dialect) error {
	m, err := workload.ReadMeta(ctx, c, d, name)
	if err != nil {
		return err
	}
	if m.Version != version {
		return fmt.Errorf("order-entry schema version %s was loaded, this dbparity runs version %s: load again", m.Version, version)
	}
	w, ok1 := m.Params["warehouses"].(float64)
	cl, ok2 := m.Params["c_last_load"].(float64)
	if !ok1 || !ok2 {
		return errors.New("order-entry load record is incomplete: load again")
	}
	o.Warehouses = int(w)
	o.loaded = constants{cLast: int(cl)}
	if o.Mode == ModeProcedures {
		ps := procSets[d]
		if ps == nil {
			return fmt.Errorf("--mode procedures needs PostgreSQL, MySQL or MariaDB: %s has no stored procedures (use --mode client)", d)
		}
		return checkProcedures(ctx, c, ps)
	}
	return nil
}

func (o *OrderEntry) NewWorker(id int, seed uint64, d engine.Dialect) workload.Worker {
	return newWorker(o, id, seed, d)
}
