package orderentry

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/dbparity/dbparity/internal/target"
	"github.com/dbparity/dbparity/internal/workload"
)

// statements are the SQL texts of the five transactions for one dialect.
// They are built once; the connection prepares each text once.
type statements struct {
	noCustomer, noDistrict, noOrder, noNewOrder, noItem, noLine string
	noStock                                                     [districtsPerWH]string

	payWarehouse, payDistrict, payByName, payCustomer, payCData, payHistory string

	osCustomer, osLastOrder, osLines string

	dlOldest, dlDelete, dlOrder, dlLines, dlCustomer string

	slNextOrder, slCount string
}

func newStatements(d target.Dialect) *statements {
	s := &statements{
		noCustomer: "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse" +
			" WHERE w_id = $1 AND c_w_id = w_id AND c_d_id = $2 AND c_id = $3",
		noDistrict: "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2" +
			" RETURNING d_tax, d_next_o_id - 1",
		noOrder: "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)" +
			" VALUES ($1, $2, $3, $4, $5, NULL, $6, $7)",
		noNewOrder: "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)",
		noItem:     "SELECT i_price, i_name, i_data FROM item WHERE i_id = $1",
		noLine: "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id," +
			" ol_quantity, ol_amount, ol_dist_info) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",

		payWarehouse: "UPDATE warehouse SET w_ytd = w_ytd + $2 WHERE w_id = $1" +
			" RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip",
		payDistrict: "UPDATE district SET d_ytd = d_ytd + $3 WHERE d_w_id = $1 AND d_id = $2" +
			" RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip",
		payByName: "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY c_first",
		payCustomer: "UPDATE customer SET c_balance = c_balance - $4, c_ytd_payment = c_ytd_payment + $4," +
			" c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3" +
			" RETURNING c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone," +
			" c_credit, c_credit_lim, c_discount, c_balance",
		payCData: "UPDATE customer SET c_data = substr($4 || c_data, 1, 500) WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
		payHistory: "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)" +
			" VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",

		osCustomer: "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
		osLastOrder: "SELECT o_id, o_carrier_id FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3" +
			" ORDER BY o_id DESC LIMIT 1",
		osLines: "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount FROM order_line" +
			" WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",

		dlOldest: "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id LIMIT 1" + d.ForUpdate(),
		dlDelete: "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3",
		dlOrder:  "UPDATE orders SET o_carrier_id = $4 WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3 RETURNING o_c_id",
		dlLines: "UPDATE order_line SET ol_delivery_d = $4 WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3" +
			" RETURNING ol_amount",
		dlCustomer: "UPDATE customer SET c_balance = c_balance + $4, c_delivery_cnt = c_delivery_cnt + 1" +
			" WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",

		slNextOrder: "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2",
		slCount: "SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = $1 AND ol_d_id = $2" +
			" AND ol_o_id < $3 AND ol_o_id >= $3 - 20 AND s_w_id = $1 AND s_i_id = ol_i_id AND s_quantity < $4",
	}
	// New-Order updates stock and reads the district's S_DIST_xx in one
	// statement; one text per district column.
	for i := range s.noStock {
		s.noStock[i] = fmt.Sprintf("UPDATE stock SET s_quantity = CASE WHEN s_quantity >= $3 + 10"+
			" THEN s_quantity - $3 ELSE s_quantity - $3 + 91 END, s_ytd = s_ytd + $3,"+
			" s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + $4"+
			" WHERE s_w_id = $1 AND s_i_id = $2 RETURNING s_dist_%02d, s_data", i+1)
	}
	return s
}

type line struct{ item, supplyW, qty int }

// before orders stock rows by supply warehouse, then item: the order in
// which New-Orders lock them.
func (l line) before(o line) bool {
	return l.supplyW < o.supplyW || l.supplyW == o.supplyW && l.item < o.item
}

type worker struct {
	o      *OrderEntry
	g      *rng
	k      constants
	s      *statements
	fixedW int // home warehouse when HomeWarehouse is fixed
	fixedD int // the terminal's district for Stock-Level

	deck [100]uint8
	pos  int
	cur  int

	// Inputs of the current transaction, kept so a retry repeats it exactly.
	w, d, c, cw, cd int
	byName          string
	lines           [15]line
	nlines          int
	order           [15]int // processing order of lines: by supply warehouse and item, invalid item last
	rollback        bool
	allLocal        int
	amount          float64
	carrier         int
	threshold       int

	// Scratch for results the transactions read.
	ids  []int64
	strs [14]string
	num  [4]float64
}

func newWorker(o *OrderEntry, id int, seed uint64, d target.Dialect) *worker {
	wk := &worker{
		o: o, g: newRNG(seed, 1<<40|uint64(id)), k: runConstants(seed, o.loaded), s: newStatements(d),
		fixedW: id%o.Warehouses + 1, fixedD: id/o.Warehouses%districtsPerWH + 1,
	}
	i := 0
	for t, n := range mix {
		for range n {
			wk.deck[i] = uint8(t)
			i++
		}
	}
	wk.pos = len(wk.deck)
	return wk
}

// Next deals the next card of a shuffled deck of 100: the standard mix holds
// exactly over every 100 transactions, not just on average.
func (w *worker) Next() int {
	if w.pos == len(w.deck) {
		w.g.r.Shuffle(len(w.deck), func(i, j int) { w.deck[i], w.deck[j] = w.deck[j], w.deck[i] })
		w.pos = 0
	}
	w.cur = int(w.deck[w.pos])
	w.pos++
	w.draw()
	return w.cur
}

// remote returns a warehouse other than home, or home when there is one.
func (w *worker) remote(home int) int {
	if w.o.Warehouses == 1 {
		return home
	}
	r := w.g.between(1, w.o.Warehouses-1)
	if r >= home {
		r++
	}
	return r
}

// customer draws the customer of Payment and Order-Status: by last name
// 60% of the time, by id otherwise (clauses 2.5.1.2, 2.6.1.2).
func (w *worker) customer() {
	w.byName = ""
	if w.g.between(1, 100) <= 60 {
		w.byName = lastName(w.g.nurand(255, 0, 999, w.k.cLast))
	} else {
		w.c = w.g.nurand(1023, 1, customersPerDist, w.k.cID)
	}
}

func (w *worker) draw() {
	g := w.g
	w.w, w.d = w.fixedW, g.between(1, districtsPerWH)
	if w.o.HomeWarehouse == "random" {
		w.w = g.between(1, w.o.Warehouses)
	}
	switch w.cur {
	case txNewOrder: // clause 2.4.1
		w.c = g.nurand(1023, 1, customersPerDist, w.k.cID)
		w.nlines = g.between(5, 15)
		w.rollback = g.between(1, 100) == 1
		w.allLocal = 1
		for i := 0; i < w.nlines; i++ {
			l := line{item: g.nurand(8191, 1, numItems, w.k.olIID), supplyW: w.w, qty: g.between(1, 10)}
			if g.between(1, 100) == 1 {
				l.supplyW = w.remote(w.w)
			}
			if l.supplyW != w.w {
				w.allLocal = 0
			}
			w.lines[i] = l
			w.order[i] = i
		}
		if w.rollback {
			w.lines[w.nlines-1].item = numItems + 1 // an unused item number
		}
		// Lock stock rows in one global order so concurrent New-Orders do
		// not deadlock on each other; the invalid item stays last.
		n := w.nlines
		if w.rollback {
			n--
		}
		// Insertion sort: at most 15 lines, and no allocation per transaction.
		for i := 1; i < n; i++ {
			for j := i; j > 0 && w.lines[w.order[j]].before(w.lines[w.order[j-1]]); j-- {
				w.order[j], w.order[j-1] = w.order[j-1], w.order[j]
			}
		}
	case txPayment: // clause 2.5.1
		w.cw, w.cd = w.w, w.d
		if g.between(1, 100) > 85 && w.o.Warehouses > 1 {
			w.cw, w.cd = w.remote(w.w), g.between(1, districtsPerWH)
		}
		w.customer()
		w.amount = g.money(1, 5000)
	case txOrderStatus: // clause 2.6.1
		w.customer()
	case txDelivery: // clause 2.7.1
		w.carrier = g.between(1, 10)
	case txStockLevel: // clause 2.8.1: the terminal's own district
		if w.o.HomeWarehouse == "fixed" {
			w.d = w.fixedD
		}
		w.threshold = g.between(10, 20)
	}
}

func (w *worker) Run(ctx context.Context, c target.Conn) (workload.Outcome, error) {
	var err error
	var rolledBack bool
	switch w.cur {
	case txNewOrder:
		rolledBack, err = w.newOrder(ctx, c)
	case txPayment:
		err = w.payment(ctx, c)
	case txOrderStatus:
		err = w.orderStatus(ctx, c)
	case txDelivery:
		err = w.delivery(ctx, c)
	case txStockLevel:
		err = w.stockLevel(ctx, c)
	}
	if err != nil {
		// The connection may be broken or the context cancelled: roll back
		// on a context that cannot be cancelled, and report the first error.
		c.Rollback(context.WithoutCancel(ctx))
		return workload.Outcome{}, err
	}
	if rolledBack {
		return workload.Outcome{Rollback: true}, c.Rollback(ctx)
	}
	start := time.Now()
	err = c.Commit(ctx)
	return workload.Outcome{Commit: time.Since(start)}, err
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

func (w *worker) newOrder(ctx context.Context, c target.Conn) (rollback bool, err error) {
	s := w.s
	if err := c.Begin(ctx, target.ReadWrite); err != nil {
		return false, err
	}
	var discount, wTax, dTax float64
	var oid int64
	if err := c.QueryRow(ctx, s.noCustomer, w.w, w.d, w.c).Scan(&discount, &w.strs[0], &w.strs[1], &wTax); err != nil {
		return false, fmt.Errorf("new_order customer: %w", err)
	}
	if err := c.QueryRow(ctx, s.noDistrict, w.w, w.d).Scan(&dTax, &oid); err != nil {
		return false, fmt.Errorf("new_order district: %w", err)
	}
	if _, err := c.Exec(ctx, s.noOrder, oid, w.d, w.w, w.c, time.Now().UTC(), w.nlines, w.allLocal); err != nil {
		return false, fmt.Errorf("new_order insert order: %w", err)
	}
	if _, err := c.Exec(ctx, s.noNewOrder, oid, w.d, w.w); err != nil {
		return false, fmt.Errorf("new_order insert new_order: %w", err)
	}
	var total float64
	for _, i := range w.order[:w.nlines] {
		l := w.lines[i]
		var price float64
		err := c.QueryRow(ctx, s.noItem, l.item).Scan(&price, &w.strs[2], &w.strs[3])
		if err == target.ErrNoRows {
			return true, nil // the 1% by design: roll back everything done so far
		}
		if err != nil {
			return false, fmt.Errorf("new_order item: %w", err)
		}
		remote := 0
		if l.supplyW != w.w {
			remote = 1
		}
		if err := c.QueryRow(ctx, s.noStock[w.d-1], l.supplyW, l.item, l.qty, remote).Scan(&w.strs[4], &w.strs[5]); err != nil {
			return false, fmt.Errorf("new_order stock: %w", err)
		}
		amount := round2(float64(l.qty) * price)
		total += amount
		if _, err := c.Exec(ctx, s.noLine, oid, w.d, w.w, i+1, l.item, l.supplyW, l.qty, amount, w.strs[4]); err != nil {
			return false, fmt.Errorf("new_order insert order_line: %w", err)
		}
	}
	_ = total * (1 - discount) * (1 + wTax + dTax) // the order total a terminal would show
	return false, nil
}

// customerByName returns the customer in the middle of those with the last
// name, ordered by first name (clause 2.5.2.2).
func (w *worker) customerByName(ctx context.Context, c target.Conn, wid, did int) (int, error) {
	rows, err := c.Query(ctx, w.s.payByName, wid, did, w.byName)
	if err != nil {
		return 0, err
	}
	w.ids = w.ids[:0]
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		w.ids = append(w.ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(w.ids) == 0 {
		return 0, fmt.Errorf("no customer named %s in district %d.%d", w.byName, wid, did)
	}
	return int(w.ids[(len(w.ids)+1)/2-1]), nil
}

func (w *worker) payment(ctx context.Context, c target.Conn) error {
	s, st := w.s, &w.strs
	if err := c.Begin(ctx, target.ReadWrite); err != nil {
		return err
	}
	if err := c.QueryRow(ctx, s.payWarehouse, w.w, w.amount).Scan(&st[0], &st[1], &st[2], &st[3], &st[4], &st[5]); err != nil {
		return fmt.Errorf("payment warehouse: %w", err)
	}
	wName := st[0]
	if err := c.QueryRow(ctx, s.payDistrict, w.w, w.d, w.amount).Scan(&st[1], &st[2], &st[3], &st[4], &st[5], &st[6]); err != nil {
		return fmt.Errorf("payment district: %w", err)
	}
	dName := st[1]
	cid := w.c
	if w.byName != "" {
		var err error
		if cid, err = w.customerByName(ctx, c, w.cw, w.cd); err != nil {
			return fmt.Errorf("payment customer by name: %w", err)
		}
	}
	n := &w.num
	if err := c.QueryRow(ctx, s.payCustomer, w.cw, w.cd, cid, w.amount).Scan(&st[2], &st[3], &st[4], &st[5], &st[6],
		&st[7], &st[8], &st[9], &st[10], &st[11], &n[0], &n[1], &n[2]); err != nil {
		return fmt.Errorf("payment customer: %w", err)
	}
	if st[11] == "BC" {
		info := fmt.Sprintf("%d %d %d %d %d %.2f | ", cid, w.cd, w.cw, w.d, w.w, w.amount)
		if _, err := c.Exec(ctx, s.payCData, w.cw, w.cd, cid, info); err != nil {
			return fmt.Errorf("payment customer data: %w", err)
		}
	}
	if _, err := c.Exec(ctx, s.payHistory, cid, w.cd, w.cw, w.d, w.w, time.Now().UTC(), w.amount, wName+"    "+dName); err != nil {
		return fmt.Errorf("payment history: %w", err)
	}
	return nil
}

func (w *worker) orderStatus(ctx context.Context, c target.Conn) error {
	s, st, n := w.s, &w.strs, &w.num
	if err := c.Begin(ctx, target.ReadOnly); err != nil {
		return err
	}
	cid := w.c
	if w.byName != "" {
		var err error
		if cid, err = w.customerByName(ctx, c, w.w, w.d); err != nil {
			return fmt.Errorf("order_status customer by name: %w", err)
		}
	}
	if err := c.QueryRow(ctx, s.osCustomer, w.w, w.d, cid).Scan(&n[0], &st[0], &st[1], &st[2]); err != nil {
		return fmt.Errorf("order_status customer: %w", err)
	}
	var oid int64
	var carrier *int64
	if err := c.QueryRow(ctx, s.osLastOrder, w.w, w.d, cid).Scan(&oid, &carrier); err != nil {
		return fmt.Errorf("order_status last order: %w", err)
	}
	rows, err := c.Query(ctx, s.osLines, w.w, w.d, oid)
	if err != nil {
		return fmt.Errorf("order_status lines: %w", err)
	}
	for rows.Next() {
		var item, supply, qty int64
		if err := rows.Scan(&item, &supply, &qty, &n[1]); err != nil {
			rows.Close()
			return fmt.Errorf("order_status lines: %w", err)
		}
	}
	rows.Close()
	return rows.Err()
}

func (w *worker) delivery(ctx context.Context, c target.Conn) error {
	s := w.s
	if err := c.Begin(ctx, target.ReadWrite); err != nil {
		return err
	}
	now := time.Now().UTC()
	for d := 1; d <= districtsPerWH; d++ {
		var oid int64
		err := c.QueryRow(ctx, s.dlOldest, w.w, d).Scan(&oid)
		if err == target.ErrNoRows {
			continue // no undelivered order in this district (clause 2.7.4.2)
		}
		if err != nil {
			return fmt.Errorf("delivery oldest new_order: %w", err)
		}
		n, err := c.Exec(ctx, s.dlDelete, w.w, d, oid)
		if err != nil {
			return fmt.Errorf("delivery delete new_order: %w", err)
		}
		if n == 0 {
			continue // a concurrent Delivery took it
		}
		var cid int64
		if err := c.QueryRow(ctx, s.dlOrder, w.w, d, oid, w.carrier).Scan(&cid); err != nil {
			return fmt.Errorf("delivery order: %w", err)
		}
		rows, err := c.Query(ctx, s.dlLines, w.w, d, oid, now)
		if err != nil {
			return fmt.Errorf("delivery order lines: %w", err)
		}
		var sum float64
		for rows.Next() {
			var amount float64
			if err := rows.Scan(&amount); err != nil {
				rows.Close()
				return fmt.Errorf("delivery order lines: %w", err)
			}
			sum += amount
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("delivery order lines: %w", err)
		}
		if _, err := c.Exec(ctx, s.dlCustomer, w.w, d, cid, round2(sum)); err != nil {
			return fmt.Errorf("delivery customer: %w", err)
		}
	}
	return nil
}

func (w *worker) stockLevel(ctx context.Context, c target.Conn) error {
	if err := c.Begin(ctx, target.ReadOnly); err != nil {
		return err
	}
	var next, low int64
	if err := c.QueryRow(ctx, w.s.slNextOrder, w.w, w.d).Scan(&next); err != nil {
		return fmt.Errorf("stock_level district: %w", err)
	}
	if err := c.QueryRow(ctx, w.s.slCount, w.w, w.d, next, w.threshold).Scan(&low); err != nil {
		return fmt.Errorf("stock_level count: %w", err)
	}
	return nil
}
