package orderentry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/workload"
)

// Execution modes.
const (
	// ModeClient sends each statement of a transaction as applications do:
	// a round trip each (pipelined where the inputs allow).
	ModeClient = "client"
	// ModeProcedures calls one server-side function per transaction: one
	// round trip, as HammerDB's stored procedures do. The functions run the
	// same statements with the same inputs, drawn by the same generator.
	ModeProcedures = "procedures"
)

// rollbackState is the SQLSTATE a New-Order function raises on its unused
// item: the 1% rolled back by design, not an error.
const rollbackState = "DBPRB"

// procedures are the five transactions as PL/pgSQL functions. Each runs
// the statements of its client-side transaction, in the same order, with
// the inputs the client drew; New-Order raises rollbackState on the
// unused item, which undoes the whole call.
var procedures = []string{
	// Payment and Order-Status pick a customer by last name the same way:
	// the one in the middle of those of that name, ordered by first name.
	`CREATE OR REPLACE FUNCTION dbparity_customer_by_name(p_w int, p_d int, p_last text) RETURNS int
	LANGUAGE plpgsql STABLE AS $$
DECLARE
	v_ids int[];
BEGIN
	SELECT array_agg(c_id ORDER BY c_first) INTO v_ids FROM customer
		WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last;
	IF v_ids IS NULL THEN
		RAISE EXCEPTION 'no customer named % in district %.%', p_last, p_w, p_d;
	END IF;
	RETURN v_ids[(array_length(v_ids, 1) + 1) / 2];
END $$`,
	`CREATE OR REPLACE FUNCTION dbparity_new_order(p_w int, p_d int, p_c int, p_entry timestamp, p_all_local int,
	p_number int[], p_item int[], p_supply int[], p_qty int[]) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	v_discount numeric; v_last text; v_credit text; v_wtax numeric; v_dtax numeric; v_oid int;
	v_price numeric; v_iname text; v_idata text; v_dist text; v_sdata text;
	n int := array_length(p_item, 1);
BEGIN
	SELECT c_discount, c_last, c_credit, w_tax INTO v_discount, v_last, v_credit, v_wtax
		FROM customer, warehouse WHERE w_id = p_w AND c_w_id = w_id AND c_d_id = p_d AND c_id = p_c;
	UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d
		RETURNING d_tax, d_next_o_id - 1 INTO v_dtax, v_oid;
	INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
		VALUES (v_oid, p_d, p_w, p_c, p_entry, NULL, n, p_all_local);
	INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_oid, p_d, p_w);
	FOR i IN 1..n LOOP
		SELECT i_price, i_name, i_data INTO v_price, v_iname, v_idata FROM item WHERE i_id = p_item[i];
		IF NOT FOUND THEN
			RAISE EXCEPTION 'item % is unused: the New-Order rolls back by design', p_item[i] USING ERRCODE = '` + rollbackState + `';
		END IF;
		UPDATE stock SET s_quantity = CASE WHEN s_quantity >= p_qty[i] + 10 THEN s_quantity - p_qty[i]
				ELSE s_quantity - p_qty[i] + 91 END, s_ytd = s_ytd + p_qty[i],
			s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + (p_supply[i] <> p_w)::int
			WHERE s_w_id = p_supply[i] AND s_i_id = p_item[i]
			RETURNING CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
				WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
				WHEN 9 THEN s_dist_09 ELSE s_dist_10 END, s_data INTO v_dist, v_sdata;
		INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
			VALUES (v_oid, p_d, p_w, p_number[i], p_item[i], p_supply[i], p_qty[i], round(p_qty[i] * v_price, 2), v_dist);
	END LOOP;
	RETURN v_oid;
END $$`,
	`CREATE OR REPLACE FUNCTION dbparity_payment(p_w int, p_d int, p_cw int, p_cd int, p_c int, p_last text,
	p_amount numeric, p_date timestamp) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	v_wname text; v_dname text; v_cid int := p_c; v_credit text; v_row record;
BEGIN
	UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w RETURNING w_name INTO v_wname;
	UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d RETURNING d_name INTO v_dname;
	IF p_last IS NOT NULL THEN
		v_cid := dbparity_customer_by_name(p_cw, p_cd, p_last);
	END IF;
	UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
		c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_cid
		RETURNING c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone,
			c_credit, c_credit_lim, c_discount, c_balance INTO v_row;
	IF v_row.c_credit = 'BC' THEN
		UPDATE customer SET c_data = substr(format('%s %s %s %s %s %s | ', v_cid, p_cd, p_cw, p_d, p_w,
				to_char(p_amount, 'FM999999990.00')) || c_data, 1, 500)
			WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_cid;
	END IF;
	INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
		VALUES (v_cid, p_cd, p_cw, p_d, p_w, p_date, p_amount, v_wname || '    ' || v_dname);
	RETURN v_cid;
END $$`,
	`CREATE OR REPLACE FUNCTION dbparity_order_status(p_w int, p_d int, p_c int, p_last text) RETURNS int
	LANGUAGE plpgsql AS $$
DECLARE
	v_cid int := p_c; v_cust record; v_oid int; v_carrier int; v_lines int := 0; v_line record;
BEGIN
	IF p_last IS NOT NULL THEN
		v_cid := dbparity_customer_by_name(p_w, p_d, p_last);
	END IF;
	SELECT c_balance, c_first, c_middle, c_last INTO v_cust FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_cid;
	SELECT o_id, o_carrier_id INTO v_oid, v_carrier FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_cid
		ORDER BY o_id DESC LIMIT 1;
	FOR v_line IN SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount FROM order_line
		WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_oid LOOP
		v_lines := v_lines + 1;
	END LOOP;
	RETURN v_lines;
END $$`,
	`CREATE OR REPLACE FUNCTION dbparity_delivery(p_w int, p_carrier int, p_date timestamp) RETURNS int
	LANGUAGE plpgsql AS $$
DECLARE
	v_oid int; v_cid int; v_sum numeric; v_n int; v_done int := 0;
BEGIN
	FOR d IN 1..10 LOOP
		SELECT no_o_id INTO v_oid FROM new_order WHERE no_w_id = p_w AND no_d_id = d ORDER BY no_o_id LIMIT 1 FOR UPDATE;
		CONTINUE WHEN NOT FOUND;
		DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = d AND no_o_id = v_oid;
		GET DIAGNOSTICS v_n = ROW_COUNT;
		CONTINUE WHEN v_n = 0;
		UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = d AND o_id = v_oid RETURNING o_c_id INTO v_cid;
		WITH l AS (UPDATE order_line SET ol_delivery_d = p_date WHERE ol_w_id = p_w AND ol_d_id = d AND ol_o_id = v_oid
			RETURNING ol_amount)
		SELECT coalesce(sum(ol_amount), 0) INTO v_sum FROM l;
		UPDATE customer SET c_balance = c_balance + round(v_sum, 2), c_delivery_cnt = c_delivery_cnt + 1
			WHERE c_w_id = p_w AND c_d_id = d AND c_id = v_cid;
		v_done := v_done + 1;
	END LOOP;
	RETURN v_done;
END $$`,
	`CREATE OR REPLACE FUNCTION dbparity_stock_level(p_w int, p_d int, p_threshold int) RETURNS int
	LANGUAGE plpgsql AS $$
DECLARE
	v_next int; v_low int;
BEGIN
	SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
	SELECT count(DISTINCT s_i_id) INTO v_low FROM order_line, stock WHERE ol_w_id = p_w AND ol_d_id = p_d
		AND ol_o_id < v_next AND ol_o_id >= v_next - 20 AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
	RETURN v_low;
END $$`,
}

// procSet is one dialect's procedures: what load creates, what a run
// checks exists, the calls, and how a New-Order's lines go to its call.
type procSet struct {
	create []string
	// exists counts the procedures present: a query taking no argument.
	exists string
	names  int
	// The calls, one round trip a transaction.
	newOrder, payment, orderStatus, delivery, stockLevel string
	// lines appends a New-Order's lines to the call's arguments.
	lines func(w *worker, args []any) []any
}

// procSets are the dialects that have the procedures (SQLite has no
// stored procedures).
var procSets = map[engine.Dialect]*procSet{engine.Postgres: pgProcs, engine.MySQL: myProcs}

var pgProcs = &procSet{
	create: procedures,
	exists: "SELECT count(*) FROM pg_proc WHERE proname IN ('dbparity_customer_by_name', 'dbparity_new_order'," +
		" 'dbparity_payment', 'dbparity_order_status', 'dbparity_delivery', 'dbparity_stock_level')",
	names:       6,
	newOrder:    "SELECT dbparity_new_order($1, $2, $3, $4, $5, $6, $7, $8, $9)",
	payment:     "SELECT dbparity_payment($1, $2, $3, $4, $5, $6, $7, $8)",
	orderStatus: "SELECT dbparity_order_status($1, $2, $3, $4)",
	delivery:    "SELECT dbparity_delivery($1, $2, $3)",
	stockLevel:  "SELECT dbparity_stock_level($1, $2, $3)",
	// Four int arrays: number, item, supply warehouse, quantity.
	lines: func(w *worker, args []any) []any {
		n := w.nlines
		num, item, supply, qty := w.arr[0][:n], w.arr[1][:n], w.arr[2][:n], w.arr[3][:n]
		for k, i := range w.order[:n] {
			l := w.lines[i]
			num[k], item[k], supply[k], qty[k] = int32(i+1), int32(l.item), int32(l.supplyW), int32(l.qty)
		}
		return append(args, num, item, supply, qty)
	},
}

// createProcedures creates (or replaces) the dialect's procedures.
func createProcedures(ctx context.Context, c engine.Conn, ps *procSet) error {
	for _, p := range ps.create {
		if _, err := c.Exec(ctx, p); err != nil {
			return fmt.Errorf("create the transactions' procedures: %w", err)
		}
	}
	return nil
}

// checkProcedures says what to do when the procedures are missing.
func checkProcedures(ctx context.Context, c engine.Conn, ps *procSet) error {
	var n int64
	if err := c.QueryRow(ctx, ps.exists).Scan(&n); err != nil {
		return fmt.Errorf("look for the transactions' procedures: %w", err)
	}
	if int(n) < ps.names {
		return fmt.Errorf("--mode procedures: the transactions' procedures are missing (loaded by an older dbparity): run dbparity load again")
	}
	return nil
}

// runProcedure runs the drawn transaction as one call, which begins and
// ends its own transaction.
func (w *worker) runProcedure(ctx context.Context, c engine.Conn) (workload.Outcome, error) {
	ps := w.procs
	var last *string
	if w.byName != "" {
		last = &w.byName
	}
	var err error
	// A batch of one: the connection's own encoding, the cheapest way
	// to send a call.
	call := func(sql string, args ...any) error {
		w.b.Reset()
		w.b.QueryRow(sql, w.x.slLow[:1:1], args...)
		err := c.SendBatch(ctx, &w.b)
		if err == nil && w.b.Item(0).NoRows {
			err = errNoRow("call")
		}
		return err
	}
	now := time.Now().UTC()
	switch w.cur {
	case txNewOrder:
		w.callArgs = ps.lines(w, append(w.callArgs[:0], w.w, w.d, w.c, now, w.allLocal))
		err = call(ps.newOrder, w.callArgs...)
		if engine.SQLState(err) == rollbackState {
			return workload.Outcome{Rollback: true}, nil
		}
	case txPayment:
		err = call(ps.payment, w.w, w.d, w.cw, w.cd, w.c, last, w.amountArg, now)
	case txOrderStatus:
		err = call(ps.orderStatus, w.w, w.d, w.c, last)
	case txDelivery:
		err = call(ps.delivery, w.w, w.carrier, now)
	case txStockLevel:
		err = call(ps.stockLevel, w.w, w.d, w.threshold)
	}
	if err != nil {
		return workload.Outcome{}, fmt.Errorf("%s procedure: %w", strings.ReplaceAll(txNames[w.cur], "_", "-"), err)
	}
	return workload.Outcome{}, nil
}
