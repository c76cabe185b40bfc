package orderentry

import (
	"context"
	"fmt"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/workload"
)

// Load drops and recreates the nine tables and loads the initial database
// of clause 4.3.3.1, split into units (item and stock in chunks, each
// district on its own) that run in parallel where the dialect allows.
func (o *OrderEntry) Load(ctx context.Context, env *workload.LoadEnv) error {
	d := env.Target.Dialect
	var ddl []string
	for i := range tables {
		ddl = append(ddl, createSQL(d, i))
	}
	c, err := workload.Recreate(ctx, env, name, TableNames(), ddl)
	if err != nil {
		return err
	}
	defer c.Close()
	lc := loadConstants(env.Seed)
	now := time.Now().UTC().Truncate(time.Second)
	if err := workload.RunUnits(ctx, env, o.dataUnits(env.Seed, lc, now)); err != nil {
		return err
	}
	if err := workload.RunUnits(ctx, env, indexUnits(d)); err != nil {
		return err
	}
	if ps := procSets[d]; ps != nil {
		if err := createProcedures(ctx, c, ps); err != nil {
			return err
		}
	}
	params := o.Params()
	params["c_last_load"] = lc.cLast
	return workload.WriteMeta(ctx, c, o.Meta(), params)
}

// expectedRows is the row count of each table after a load of w
// warehouses (clause 4.3.3.1; order_line is about 10 per order: 5 to 15
// lines, uniform).
func expectedRows(w int) map[string]int64 {
	n := int64(w)
	return map[string]int64{
		"warehouse": n, "district": n * districtsPerWH,
		"customer": n * districtsPerWH * customersPerDist, "history": n * districtsPerWH * customersPerDist,
		"orders": n * districtsPerWH * ordersPerDist, "new_order": n * districtsPerWH * (ordersPerDist - firstNewOrder + 1),
		"order_line": n * districtsPerWH * ordersPerDist * 10, "item": numItems, "stock": n * stockPerWarehouse,
	}
}

// TableNames lists the nine tables in load order.
func TableNames() []string {
	var n []string
	for _, t := range tables {
		n = append(n, t.name)
	}
	return n
}

func (o *OrderEntry) Tables() []workload.Table {
	rows := expectedRows(o.Warehouses)
	var ts []workload.Table
	for _, t := range tables {
		ts = append(ts, workload.Table{Name: t.name, ExpectedRows: rows[t.name]})
	}
	return ts
}

const chunk = 10000 // item and stock rows per unit

func (o *OrderEntry) dataUnits(seed uint64, lc constants, now time.Time) []workload.Unit {
	var units []workload.Unit
	for k := 0; k < numItems/chunk; k++ {
		units = append(units, workload.Unit{Name: fmt.Sprintf("item %d", k+1), Rows: chunk,
			Load: func(ctx context.Context, c engine.Conn) (int64, error) {
				return copyRows(ctx, c, tableItem, itemRows(newRNG(seed, stream(0, 1, k)), k*chunk+1, (k+1)*chunk))
			}})
	}
	per := expectedRows(1)
	districtRows := (per["customer"] + per["history"] + per["orders"] + per["new_order"] + per["order_line"]) / districtsPerWH
	for w := 1; w <= o.Warehouses; w++ {
		units = append(units, workload.Unit{Name: fmt.Sprintf("warehouse %d", w), Rows: 1 + districtsPerWH,
			Load: func(ctx context.Context, c engine.Conn) (int64, error) {
				return warehouseUnit(ctx, c, newRNG(seed, stream(w, 2, 0)), w)
			}})
		for k := 0; k < stockPerWarehouse/chunk; k++ {
			units = append(units, workload.Unit{Name: fmt.Sprintf("stock %d.%d", w, k+1), Rows: chunk,
				Load: func(ctx context.Context, c engine.Conn) (int64, error) {
					return copyRows(ctx, c, tableStock, stockRows(newRNG(seed, stream(w, 3, k)), w, k*chunk+1, (k+1)*chunk))
				}})
		}
		for dd := 1; dd <= districtsPerWH; dd++ {
			units = append(units, workload.Unit{Name: fmt.Sprintf("district %d.%d", w, dd), Rows: districtRows,
				Load: func(ctx context.Context, c engine.Conn) (int64, error) {
					return districtUnit(ctx, c, newRNG(seed, stream(w, 4, dd)), lc, now, w, dd)
				}})
		}
	}
	return units
}

// stream numbers a load unit's random sequence: distinct for every
// (warehouse, table kind, chunk).
func stream(w, kind, k int) uint64 { return uint64(w)<<20 | uint64(kind)<<16 | uint64(k) }

// table indexes into tables.
const (
	tableWarehouse = iota
	tableDistrict
	tableCustomer
	tableHistory
	tableOrders
	tableNewOrder
	tableOrderLine
	tableItem
	tableStock
)

func copyRows(ctx context.Context, c engine.Conn, t int, rows [][]any) (int64, error) {
	n, err := c.CopyFrom(ctx, tables[t].name, columnNames(tables[t].columns), rows)
	if err != nil {
		return n, fmt.Errorf("copy into %s: %w", tables[t].name, err)
	}
	return n, nil
}

func itemRows(g *rng, from, to int) [][]any {
	rows := make([][]any, 0, to-from+1)
	for id := from; id <= to; id++ {
		rows = append(rows, []any{id, g.between(1, 10000), g.astring(14, 24), g.money(1, 100), g.data()})
	}
	return rows
}

func stockRows(g *rng, w, from, to int) [][]any {
	rows := make([][]any, 0, to-from+1)
	for id := from; id <= to; id++ {
		r := []any{id, w, g.between(10, 100)}
		for range 10 {
			r = append(r, g.astring(24, 24))
		}
		rows = append(rows, append(r, 0, 0, 0, g.data()))
	}
	return rows
}

func warehouseUnit(ctx context.Context, c engine.Conn, g *rng, w int) (int64, error) {
	n, err := copyRows(ctx, c, tableWarehouse, [][]any{{w, g.astring(6, 10), g.astring(10, 20), g.astring(10, 20),
		g.astring(10, 20), g.state(), g.zip(), g.fraction(2000), 300000.0}})
	if err != nil {
		return n, err
	}
	var rows [][]any
	for d := 1; d <= districtsPerWH; d++ {
		rows = append(rows, []any{d, w, g.astring(6, 10), g.astring(10, 20), g.astring(10, 20),
			g.astring(10, 20), g.state(), g.zip(), g.fraction(2000), 30000.0, ordersPerDist + 1})
	}
	m, err := copyRows(ctx, c, tableDistrict, rows)
	return n + m, err
}

// districtUnit loads one district's customers, history, orders, order lines
// and new orders.
func districtUnit(ctx context.Context, c engine.Conn, g *rng, lc constants, now time.Time, w, d int) (int64, error) {
	var cust, hist [][]any
	for id := 1; id <= customersPerDist; id++ {
		last := id - 1
		if id > 1000 {
			last = g.nurand(255, 0, 999, lc.cLast)
		}
		credit := "GC"
		if g.r.IntN(10) == 0 {
			credit = "BC"
		}
		cust = append(cust, []any{id, d, w, g.astring(8, 16), "OE", lastName(last), g.astring(10, 20), g.astring(10, 20),
			g.astring(10, 20), g.state(), g.zip(), g.nstring(16, 16), now, credit, 50000.0, g.fraction(5000),
			-10.0, 10.0, 1, 0, g.astring(300, 500)})
		hist = append(hist, []any{id, d, w, d, w, now, 10.0, g.astring(12, 24)})
	}
	// o_c_id is a random permutation of the customers (clause 4.3.3.1).
	perm := g.r.Perm(customersPerDist)
	var orders, lines, newOrders [][]any
	for id := 1; id <= ordersPerDist; id++ {
		olCnt := g.between(5, 15)
		var carrier, delivery any
		if id < firstNewOrder {
			carrier, delivery = g.between(1, 10), now
		} else {
			newOrders = append(newOrders, []any{id, d, w})
		}
		orders = append(orders, []any{id, d, w, perm[id-1] + 1, now, carrier, olCnt, 1})
		for n := 1; n <= olCnt; n++ {
			amount := 0.0
			if id >= firstNewOrder {
				amount = g.money(0.01, 9999.99)
			}
			lines = append(lines, []any{id, d, w, n, g.between(1, numItems), w, delivery, 5, amount, g.astring(24, 24)})
		}
	}
	var total int64
	for _, t := range []struct {
		table int
		rows  [][]any
	}{{tableCustomer, cust}, {tableHistory, hist}, {tableOrders, orders}, {tableOrderLine, lines}, {tableNewOrder, newOrders}} {
		n, err := copyRows(ctx, c, t.table, t.rows)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// indexUnits adds primary keys (PostgreSQL) and secondary indexes, then
// refreshes the planner's statistics, one unit per table so they build in
// parallel.
func indexUnits(d engine.Dialect) []workload.Unit {
	var units []workload.Unit
	for i := range tables {
		var stmts []string
		if d.KeysAfterLoad() && tables[i].pk != "" {
			stmts = append(stmts, primaryKeySQL(i))
		}
		for _, ix := range indexes {
			if tableOfIndex(ix) == tables[i].name {
				stmts = append(stmts, ix)
			}
		}
		stmts = append(stmts, d.Analyze(tables[i].name))
		units = append(units, workload.Unit{Name: "index " + tables[i].name,
			Load: func(ctx context.Context, c engine.Conn) (int64, error) {
				for _, s := range stmts {
					if _, err := c.Exec(ctx, s); err != nil {
						return 0, fmt.Errorf("%s: %w", s, err)
					}
				}
				return 0, nil
			}})
	}
	return units
}

func tableOfIndex(ix string) string {
	var idx, tbl string
	fmt.Sscanf(ix, "CREATE INDEX %s ON %s", &idx, &tbl)
	return tbl
}
