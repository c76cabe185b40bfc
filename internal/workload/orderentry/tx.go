package orderentry

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/workload"
)

// statements are the SQL texts of the five transactions for one dialect.
// They are built once; the connection prepares each text once.
type statements struct {
	noCustomer, noDistrict, noOrder, noNewOrder, noItem, noLine string
	noStock                                                     [districtsPerWH]string
	// Compact New-Order (--compact): the items of n lines in one SELECT,
	// the n lines in one INSERT; index n.
	noItems, noLines [maxLines + 1]string

	payWarehouse, payDistrict, payByName, payCustomer, payCData, payHistory string

	osCustomer, osLastOrder, osLines string

	dlOldest, dlDelete, dlOrder, dlLines, dlCustomer string

	slNextOrder, slCount string
}

func newStatements(d engine.Dialect) *statements {
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
	for n := 1; n <= maxLines; n++ {
		var in, rows []string
		for k := range n {
			in = append(in, fmt.Sprintf("$%d", k+1))
			var r []string
			for j := range 9 {
				r = append(r, fmt.Sprintf("$%d", 9*k+j+1))
			}
			rows = append(rows, "("+strings.Join(r, ", ")+")")
		}
		s.noItems[n] = "SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN (" + strings.Join(in, ", ") + ")"
		s.noLines[n] = "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id," +
			" ol_quantity, ol_amount, ol_dist_info) VALUES " + strings.Join(rows, ", ")
	}
	return s
}

// maxLines is the most lines a New-Order has (clause 2.4.1.3).
const maxLines = 15

type line struct{ item, supplyW, qty int }

// before orders stock rows by supply warehouse, then item: the order in
// which New-Orders lock them.
func (l line) before(o line) bool {
	return l.supplyW < o.supplyW || l.supplyW == o.supplyW && l.item < o.item
}

type worker struct {
	o      *OrderEntry
	g      *rng
	pause  *rng // think times (--think), apart from the inputs' stream
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
	amountArg       string // amount as the statements take it (decimal)
	carrier         int
	threshold       int

	// b is the batch the transactions' statements go out in; x holds the
	// results they read, with the scan destinations bound once.
	b engine.Batch
	x scratch
	// ids are the customers of a by-name lookup; the functions that fill
	// them are made once.
	ids         []int64
	collectIDFn func(engine.Rows) error
	lineFn      func(engine.Rows) error
	sumFn       [districtsPerWH]func(engine.Rows) error
	// Compact New-Order: the items' ids and the lines' values as the
	// statements take them, the item read's callback, and which lines
	// found their item.
	itemIDs   []any
	lineArgs  []any
	itemFn    func(engine.Rows) error
	itemFound [maxLines]bool
	// Procedure mode: the dialect's procedures, the arguments of a
	// New-Order's call, its lines as PostgreSQL's arrays (number, item,
	// supply warehouse, quantity) or as MySQL's text.
	procs    *procSet
	callArgs []any
	arr      [4][15]int32
	lineText []byte
}

// scratch holds what the transactions read, and each statement's scan
// destinations as slices bound to it once, so that a transaction
// allocates none.
type scratch struct {
	discount, wTax, dTax float64
	oid, next, low       int64
	carrier              *int64
	strs                 [22]string
	num                  [4]float64
	price                [15]float64
	iname, idata         [15]string
	dist, sdata          [15]string
	olItem, olSupply     int64
	olQty                int64
	dlOids, dlCids       [districtsPerWH]int64
	dlSum                [districtsPerWH]float64
	dlFound              [districtsPerWH]int

	noCust [4]any
	noDist [2]any
	item   [15][3]any
	stock  [15][2]any
	payWh  [6]any
	payDi  [6]any
	payCu  [13]any
	osCu   [4]any
	osLast [2]any
	dlOid  [districtsPerWH][1]any
	dlCid  [districtsPerWH][1]any
	slNext [1]any
	slLow  [1]any
}

// bind points the scan destinations at their fields.
func (x *scratch) bind() {
	x.noCust = [4]any{&x.discount, &x.strs[0], &x.strs[1], &x.wTax}
	x.noDist = [2]any{&x.dTax, &x.oid}
	for k := range x.item {
		x.item[k] = [3]any{&x.price[k], &x.iname[k], &x.idata[k]}
		x.stock[k] = [2]any{&x.dist[k], &x.sdata[k]}
	}
	for i := range 6 {
		x.payWh[i], x.payDi[i] = &x.strs[i], &x.strs[6+i]
	}
	for i := range 10 {
		x.payCu[i] = &x.strs[12+i]
	}
	x.payCu[10], x.payCu[11], x.payCu[12] = &x.num[0], &x.num[1], &x.num[2]
	x.osCu = [4]any{&x.num[0], &x.strs[0], &x.strs[1], &x.strs[2]}
	x.osLast = [2]any{&x.oid, &x.carrier}
	for d := range x.dlOid {
		x.dlOid[d] = [1]any{&x.dlOids[d]}
		x.dlCid[d] = [1]any{&x.dlCids[d]}
	}
	x.slNext, x.slLow = [1]any{&x.next}, [1]any{&x.low}
}

func newWorker(o *OrderEntry, id int, seed uint64, d engine.Dialect) *worker {
	wk := &worker{
		o: o, g: newRNG(seed, 1<<40|uint64(id)), pause: newRNG(seed, 2<<40|uint64(id)), k: runConstants(seed, o.loaded), s: newStatements(d), procs: procSets[d],
		fixedW: id%o.Warehouses + 1, fixedD: id/o.Warehouses%districtsPerWH + 1,
	}
	wk.x.bind()
	wk.collectIDFn = wk.collectID
	wk.itemFn = wk.collectItem
	wk.lineFn = func(r engine.Rows) error {
		return r.Scan(&wk.x.olItem, &wk.x.olSupply, &wk.x.olQty, &wk.x.num[1])
	}
	for d := range wk.sumFn {
		wk.sumFn[d] = func(r engine.Rows) error {
			var amount float64
			if err := r.Scan(&amount); err != nil {
				return err
			}
			wk.x.dlSum[d] += amount
			return nil
		}
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
		w.shuffle()
	}
	w.cur = int(w.deck[w.pos])
	w.pos++
	w.draw()
	return w.cur
}

// shuffle starts a new deck.
func (w *worker) shuffle() {
	w.g.r.Shuffle(len(w.deck), func(i, j int) { w.deck[i], w.deck[j] = w.deck[j], w.deck[i] })
	w.pos = 0
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
		w.amountArg = decimal(w.amount)
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

func (w *worker) Run(ctx context.Context, c engine.Conn) (workload.Outcome, error) {
	if w.o.Mode == ModeProcedures {
		return w.runProcedure(ctx, c)
	}
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

// decimal is an amount as the statements take it: text with two decimals,
// which the server reads into its numeric column as it would the float,
// at a fraction of the client's cost of encoding a float as numeric.
func decimal(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

// errNoRow is a statement that found no row where one must be.
func errNoRow(what string) error { return fmt.Errorf("%s: %w", what, engine.ErrNoRows) }

// send sends the worker's batch; what names the step in errors.
func (w *worker) send(ctx context.Context, c engine.Conn, what string) error {
	if err := c.SendBatch(ctx, &w.b); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// newOrder runs New-Order in three round trips (and the COMMIT, on its
// own so that its latency is measured): the customer and the district;
// the order, its new_order row, the items' prices and the stock of each
// line; the order lines. Each is a batch of statements that need no
// result of each other; the statements are those of clause 2.4.2, one
// each, unless --compact reads the items in one statement and inserts the
// lines in one. As in the clause, where the unused item is the last one
// processed, the other lines' stock is updated before the rollback.
func (w *worker) newOrder(ctx context.Context, c engine.Conn) (rollback bool, err error) {
	s, b, x := w.s, &w.b, &w.x
	b.Reset()
	b.Begin(engine.ReadWrite)
	cust := b.QueryRow(s.noCustomer, x.noCust[:], w.w, w.d, w.c)
	dist := b.QueryRow(s.noDistrict, x.noDist[:], w.w, w.d)
	if err := w.send(ctx, c, "new_order customer and district"); err != nil {
		return false, err
	}
	if b.Item(cust).NoRows || b.Item(dist).NoRows {
		return false, errNoRow("new_order customer and district")
	}
	oid := x.oid
	b.Reset()
	b.Exec(s.noOrder, oid, w.d, w.w, w.c, time.Now().UTC(), w.nlines, w.allLocal)
	b.Exec(s.noNewOrder, oid, w.d, w.w)
	first := b.Len()
	if w.o.Compact {
		w.itemIDs = w.itemIDs[:0]
		for _, i := range w.order[:w.nlines] {
			w.itemIDs = append(w.itemIDs, w.lines[i].item)
		}
		w.itemFound = [maxLines]bool{}
		b.Query(s.noItems[w.nlines], w.itemFn, w.itemIDs...)
	} else {
		for k, i := range w.order[:w.nlines] {
			b.QueryRow(s.noItem, x.item[k][:], w.lines[i].item)
		}
	}
	stock := b.Len()
	for k, i := range w.order[:w.nlines] {
		l := w.lines[i]
		remote := 0
		if l.supplyW != w.w {
			remote = 1
		}
		b.QueryRow(s.noStock[w.d-1], x.stock[k][:], l.supplyW, l.item, l.qty, remote)
	}
	if err := w.send(ctx, c, "new_order order, items and stock"); err != nil {
		return false, err
	}
	for k := range w.nlines {
		if w.o.Compact && !w.itemFound[k] || !w.o.Compact && b.Item(first+k).NoRows {
			return true, nil // the 1% by design: roll back everything done so far
		}
	}
	for k := range w.nlines {
		if b.Item(stock + k).NoRows {
			return false, errNoRow("new_order stock")
		}
	}
	b.Reset()
	w.lineArgs = w.lineArgs[:0]
	var total float64
	for k, i := range w.order[:w.nlines] {
		l := w.lines[i]
		amount := round2(float64(l.qty) * x.price[k])
		total += amount
		if w.o.Compact {
			w.lineArgs = append(w.lineArgs, oid, w.d, w.w, i+1, l.item, l.supplyW, l.qty, decimal(amount), x.dist[k])
		} else {
			b.Exec(s.noLine, oid, w.d, w.w, i+1, l.item, l.supplyW, l.qty, decimal(amount), x.dist[k])
		}
	}
	if w.o.Compact {
		b.Exec(s.noLines[w.nlines], w.lineArgs...)
	}
	if err := w.send(ctx, c, "new_order insert order_line"); err != nil {
		return false, err
	}
	_ = total * (1 - x.discount) * (1 + x.wTax + x.dTax) // the order total a terminal would show
	return false, nil
}

// middle is the customer in the middle of those with the last name,
// ordered by first name (clause 2.5.2.2).
func (w *worker) middle(wid, did int) (int, error) {
	if len(w.ids) == 0 {
		return 0, fmt.Errorf("no customer named %s in district %d.%d", w.byName, wid, did)
	}
	return int(w.ids[(len(w.ids)+1)/2-1]), nil
}

// collectItem takes one row of the compact item read to every line that
// ordered that item (an order may list an item twice).
func (w *worker) collectItem(r engine.Rows) error {
	var id int64
	var price float64
	var name, data string
	if err := r.Scan(&id, &price, &name, &data); err != nil {
		return err
	}
	for k, i := range w.order[:w.nlines] {
		if int64(w.lines[i].item) == id {
			w.x.price[k], w.x.iname[k], w.x.idata[k], w.itemFound[k] = price, name, data, true
		}
	}
	return nil
}

// collectID gathers the customers' ids of a by-name query.
func (w *worker) collectID(r engine.Rows) error {
	var id int64
	if err := r.Scan(&id); err != nil {
		return err
	}
	w.ids = append(w.ids, id)
	return nil
}

// payment runs Payment in two round trips (and the COMMIT) when the
// customer is chosen by number: the warehouse, the district and the
// customer; its data (bad credit) and the history row. By last name the
// customer's update waits for the by-name query: three round trips.
func (w *worker) payment(ctx context.Context, c engine.Conn) error {
	s, b, x := w.s, &w.b, &w.x
	b.Reset()
	b.Begin(engine.ReadWrite)
	wh := b.QueryRow(s.payWarehouse, x.payWh[:], w.w, w.amountArg)
	di := b.QueryRow(s.payDistrict, x.payDi[:], w.w, w.d, w.amountArg)
	cid, cu := w.c, -1
	w.ids = w.ids[:0]
	if w.byName != "" {
		b.Query(s.payByName, w.collectIDFn, w.cw, w.cd, w.byName)
	} else {
		cu = b.QueryRow(s.payCustomer, x.payCu[:], w.cw, w.cd, cid, w.amountArg)
	}
	if err := w.send(ctx, c, "payment warehouse, district and customer"); err != nil {
		return err
	}
	if b.Item(wh).NoRows || b.Item(di).NoRows {
		return errNoRow("payment warehouse and district")
	}
	if w.byName != "" {
		var err error
		if cid, err = w.middle(w.cw, w.cd); err != nil {
			return fmt.Errorf("payment customer by name: %w", err)
		}
		b.Reset()
		cu = b.QueryRow(s.payCustomer, x.payCu[:], w.cw, w.cd, cid, w.amountArg)
		if err := w.send(ctx, c, "payment customer"); err != nil {
			return err
		}
	}
	if b.Item(cu).NoRows {
		return errNoRow("payment customer")
	}
	b.Reset()
	if x.strs[21] == "BC" { // c_credit
		info := fmt.Sprintf("%d %d %d %d %d %.2f | ", cid, w.cd, w.cw, w.d, w.w, w.amount)
		b.Exec(s.payCData, w.cw, w.cd, cid, info)
	}
	b.Exec(s.payHistory, cid, w.cd, w.cw, w.d, w.w, time.Now().UTC(), w.amountArg, x.strs[0]+"    "+x.strs[6])
	return w.send(ctx, c, "payment history")
}

// orderStatus runs Order-Status in two round trips (three by last name):
// the customer and its last order; the order's lines.
func (w *worker) orderStatus(ctx context.Context, c engine.Conn) error {
	s, b, x := w.s, &w.b, &w.x
	b.Reset()
	b.Begin(engine.ReadOnly)
	cid := w.c
	if w.byName != "" {
		w.ids = w.ids[:0]
		b.Query(s.payByName, w.collectIDFn, w.w, w.d, w.byName)
		if err := w.send(ctx, c, "order_status customer by name"); err != nil {
			return err
		}
		var err error
		if cid, err = w.middle(w.w, w.d); err != nil {
			return fmt.Errorf("order_status customer by name: %w", err)
		}
		b.Reset()
	}
	cu := b.QueryRow(s.osCustomer, x.osCu[:], w.w, w.d, cid)
	lo := b.QueryRow(s.osLastOrder, x.osLast[:], w.w, w.d, cid)
	if err := w.send(ctx, c, "order_status customer and last order"); err != nil {
		return err
	}
	if b.Item(cu).NoRows || b.Item(lo).NoRows {
		return errNoRow("order_status customer and last order")
	}
	b.Reset()
	b.Query(s.osLines, w.lineFn, w.w, w.d, x.oid)
	return w.send(ctx, c, "order_status lines")
}

// delivery runs Delivery in three round trips (and the COMMIT): the
// oldest new order of each district; for each found, its delete and the
// order's and its lines' updates; each customer's update.
func (w *worker) delivery(ctx context.Context, c engine.Conn) error {
	s, b, x := w.s, &w.b, &w.x
	now := time.Now().UTC()
	b.Reset()
	b.Begin(engine.ReadWrite)
	for d := range districtsPerWH {
		b.QueryRow(s.dlOldest, x.dlOid[d][:], w.w, d+1)
	}
	if err := w.send(ctx, c, "delivery oldest new_order"); err != nil {
		return err
	}
	found := x.dlFound[:0]
	for d := range districtsPerWH {
		if !b.Item(1 + d).NoRows {
			found = append(found, d) // else no undelivered order there (clause 2.7.4.2)
		}
	}
	if len(found) == 0 {
		return nil
	}
	b.Reset()
	for _, d := range found {
		x.dlSum[d] = 0
		b.Exec(s.dlDelete, w.w, d+1, x.dlOid[d][0])
		b.QueryRow(s.dlOrder, x.dlCid[d][:], w.w, d+1, x.dlOid[d][0], w.carrier)
		b.Query(s.dlLines, w.sumFn[d], w.w, d+1, x.dlOid[d][0], now)
	}
	if err := w.send(ctx, c, "delivery new_order, order and lines"); err != nil {
		return err
	}
	for k, d := range found {
		// The oldest new order was locked FOR UPDATE (PostgreSQL) or the
		// write lock is held (SQLite): no one else deleted it. (MySQL's
		// batch does not count the DELETE's rows: Affected is -1.)
		if b.Item(3*k).Affected == 0 || b.Item(3*k+1).NoRows {
			return fmt.Errorf("delivery: new order %d of district %d.%d vanished", x.dlOids[d], w.w, d+1)
		}
	}
	b.Reset()
	for _, d := range found {
		b.Exec(s.dlCustomer, w.w, d+1, x.dlCids[d], decimal(x.dlSum[d]))
	}
	return w.send(ctx, c, "delivery customer")
}

// stockLevel runs Stock-Level in two round trips (and the COMMIT).
func (w *worker) stockLevel(ctx context.Context, c engine.Conn) error {
	s, b, x := w.s, &w.b, &w.x
	b.Reset()
	b.Begin(engine.ReadOnly)
	nx := b.QueryRow(s.slNextOrder, x.slNext[:], w.w, w.d)
	if err := w.send(ctx, c, "stock_level district"); err != nil {
		return err
	}
	if b.Item(nx).NoRows {
		return errNoRow("stock_level district")
	}
	b.Reset()
	b.QueryRow(s.slCount, x.slLow[:], w.w, w.d, x.next, w.threshold)
	return w.send(ctx, c, "stock_level count")
}
