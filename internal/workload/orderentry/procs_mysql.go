package orderentry

import "strconv"

// myProcs are the five transactions as MySQL/MariaDB stored procedures.
// Each runs the statements of its client-side transaction, in the same
// order, with the inputs the client drew, between its own START
// TRANSACTION and COMMIT: a session's autocommit would otherwise commit
// each statement. Any error rolls the whole call back and goes to the
// client unchanged (RESIGNAL keeps the error number, so deadlocks and lock
// wait timeouts are retried as in client mode); New-Order signals
// rollbackState on the unused item. An UPDATE ... RETURNING becomes the
// UPDATE and a SELECT of the row it changed, as client mode sends it.
// MySQL has no arrays: a New-Order's lines come as one text of
// comma-separated numbers, four a line.
var myProcs = &procSet{
	create: []string{
		"DROP PROCEDURE IF EXISTS dbparity_customer_by_name",
		// Payment and Order-Status pick a customer by last name the same
		// way: the one in the middle of those of that name, ordered by
		// first name (one index range read, as PostgreSQL's array_agg).
		`CREATE PROCEDURE dbparity_customer_by_name(p_w INT, p_d INT, p_last VARCHAR(16), OUT p_c INT)
READS SQL DATA
BEGIN
	DECLARE v_ids TEXT;
	DECLARE v_n INT;
	SELECT GROUP_CONCAT(c_id ORDER BY c_first), count(*) INTO v_ids, v_n FROM customer
		WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last;
	IF v_n = 0 THEN
		SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no customer of that last name in the district';
	END IF;
	SET p_c = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(v_ids, ',', (v_n + 1) DIV 2), ',', -1) AS SIGNED);
END`,
		"DROP PROCEDURE IF EXISTS dbparity_new_order",
		`CREATE PROCEDURE dbparity_new_order(p_w INT, p_d INT, p_c INT, p_entry DATETIME, p_all_local INT, p_lines VARCHAR(1024))
MODIFIES SQL DATA
BEGIN
	DECLARE v_discount, v_wtax, v_dtax DECIMAL(4,4);
	DECLARE v_last VARCHAR(16);
	DECLARE v_credit CHAR(2);
	DECLARE v_oid, v_number, v_item, v_supply, v_qty INT;
	DECLARE v_price DECIMAL(5,2);
	DECLARE v_iname VARCHAR(24);
	DECLARE v_idata, v_sdata VARCHAR(50);
	DECLARE v_dist CHAR(24);
	DECLARE n INT DEFAULT (LENGTH(p_lines) - LENGTH(REPLACE(p_lines, ',', '')) + 1) DIV 4;
	DECLARE i INT DEFAULT 0;
	DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
	START TRANSACTION;
	SELECT c_discount, c_last, c_credit, w_tax INTO v_discount, v_last, v_credit, v_wtax
		FROM customer, warehouse WHERE w_id = p_w AND c_w_id = w_id AND c_d_id = p_d AND c_id = p_c;
	UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d;
	SELECT d_tax, d_next_o_id - 1 INTO v_dtax, v_oid FROM district WHERE d_w_id = p_w AND d_id = p_d;
	INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
		VALUES (v_oid, p_d, p_w, p_c, p_entry, NULL, n, p_all_local);
	INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_oid, p_d, p_w);
	WHILE i < n DO
		SET v_number = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_lines, ',', 4 * i + 1), ',', -1) AS SIGNED),
			v_item = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_lines, ',', 4 * i + 2), ',', -1) AS SIGNED),
			v_supply = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_lines, ',', 4 * i + 3), ',', -1) AS SIGNED),
			v_qty = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_lines, ',', 4 * i + 4), ',', -1) AS SIGNED),
			v_price = NULL;
		SELECT i_price, i_name, i_data INTO v_price, v_iname, v_idata FROM item WHERE i_id = v_item;
		IF v_price IS NULL THEN
			SIGNAL SQLSTATE '` + rollbackState + `' SET MESSAGE_TEXT = 'unused item: the New-Order rolls back by design';
		END IF;
		UPDATE stock SET s_quantity = CASE WHEN s_quantity >= v_qty + 10 THEN s_quantity - v_qty
				ELSE s_quantity - v_qty + 91 END, s_ytd = s_ytd + v_qty,
			s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + (v_supply <> p_w)
			WHERE s_w_id = v_supply AND s_i_id = v_item;
		SELECT CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
				WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
				WHEN 9 THEN s_dist_09 ELSE s_dist_10 END, s_data INTO v_dist, v_sdata
			FROM stock WHERE s_w_id = v_supply AND s_i_id = v_item;
		INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
			VALUES (v_oid, p_d, p_w, v_number, v_item, v_supply, v_qty, ROUND(v_qty * v_price, 2), v_dist);
		SET i = i + 1;
	END WHILE;
	COMMIT;
	SELECT v_oid;
END`,
		"DROP PROCEDURE IF EXISTS dbparity_payment",
		`CREATE PROCEDURE dbparity_payment(p_w INT, p_d INT, p_cw INT, p_cd INT, p_c INT, p_last VARCHAR(16),
	p_amount DECIMAL(6,2), p_date DATETIME)
MODIFIES SQL DATA
BEGIN
	DECLARE v_wname, v_dname VARCHAR(10);
	DECLARE v_cid INT DEFAULT p_c;
	DECLARE v_credit CHAR(2);
	DECLARE v_balance DECIMAL(12,2);
	DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
	START TRANSACTION;
	UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w;
	SELECT w_name INTO v_wname FROM warehouse WHERE w_id = p_w;
	UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d;
	SELECT d_name INTO v_dname FROM district WHERE d_w_id = p_w AND d_id = p_d;
	IF p_last IS NOT NULL THEN
		CALL dbparity_customer_by_name(p_cw, p_cd, p_last, v_cid);
	END IF;
	UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
		c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_cid;
	SELECT c_credit, c_balance INTO v_credit, v_balance FROM customer WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_cid;
	IF v_credit = 'BC' THEN
		UPDATE customer SET c_data = SUBSTRING(CONCAT(CONCAT_WS(' ', v_cid, p_cd, p_cw, p_d, p_w, p_amount), ' | ', c_data), 1, 500)
			WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_cid;
	END IF;
	INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
		VALUES (v_cid, p_cd, p_cw, p_d, p_w, p_date, p_amount, CONCAT(v_wname, '    ', v_dname));
	COMMIT;
	SELECT v_cid;
END`,
		"DROP PROCEDURE IF EXISTS dbparity_order_status",
		`CREATE PROCEDURE dbparity_order_status(p_w INT, p_d INT, p_c INT, p_last VARCHAR(16))
READS SQL DATA
BEGIN
	DECLARE v_cid INT DEFAULT p_c;
	DECLARE v_balance DECIMAL(12,2);
	DECLARE v_first VARCHAR(16);
	DECLARE v_middle CHAR(2);
	DECLARE v_last VARCHAR(16);
	DECLARE v_oid, v_carrier, v_item, v_supply, v_qty INT;
	DECLARE v_amount DECIMAL(6,2);
	DECLARE v_lines INT DEFAULT 0;
	DECLARE v_done BOOL DEFAULT FALSE;
	DECLARE c_lines CURSOR FOR SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount FROM order_line
		WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_oid;
	DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_done = TRUE;
	DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
	START TRANSACTION READ ONLY;
	IF p_last IS NOT NULL THEN
		CALL dbparity_customer_by_name(p_w, p_d, p_last, v_cid);
	END IF;
	SELECT c_balance, c_first, c_middle, c_last INTO v_balance, v_first, v_middle, v_last
		FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_cid;
	SELECT o_id, o_carrier_id INTO v_oid, v_carrier FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_cid
		ORDER BY o_id DESC LIMIT 1;
	SET v_done = FALSE;
	OPEN c_lines;
	read_lines: LOOP
		FETCH c_lines INTO v_item, v_supply, v_qty, v_amount;
		IF v_done THEN
			LEAVE read_lines;
		END IF;
		SET v_lines = v_lines + 1;
	END LOOP;
	CLOSE c_lines;
	COMMIT;
	SELECT v_lines;
END`,
		"DROP PROCEDURE IF EXISTS dbparity_delivery",
		`CREATE PROCEDURE dbparity_delivery(p_w INT, p_carrier INT, p_date DATETIME)
MODIFIES SQL DATA
BEGIN
	DECLARE v_d INT DEFAULT 1;
	DECLARE v_oid, v_cid INT;
	DECLARE v_sum DECIMAL(12,2);
	DECLARE v_done INT DEFAULT 0;
	DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
	START TRANSACTION;
	WHILE v_d <= 10 DO
		SET v_oid = NULL;
		SELECT no_o_id INTO v_oid FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d ORDER BY no_o_id LIMIT 1 FOR UPDATE;
		IF v_oid IS NOT NULL THEN
			DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_oid;
			IF ROW_COUNT() > 0 THEN
				UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_oid;
				SELECT o_c_id INTO v_cid FROM orders WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_oid;
				UPDATE order_line SET ol_delivery_d = p_date WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_oid;
				SELECT COALESCE(SUM(ol_amount), 0) INTO v_sum FROM order_line
					WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_oid;
				UPDATE customer SET c_balance = c_balance + v_sum, c_delivery_cnt = c_delivery_cnt + 1
					WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_cid;
				SET v_done = v_done + 1;
			END IF;
		END IF;
		SET v_d = v_d + 1;
	END WHILE;
	COMMIT;
	SELECT v_done;
END`,
		"DROP PROCEDURE IF EXISTS dbparity_stock_level",
		`CREATE PROCEDURE dbparity_stock_level(p_w INT, p_d INT, p_threshold INT)
READS SQL DATA
BEGIN
	DECLARE v_next, v_low INT;
	DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
	START TRANSACTION READ ONLY;
	SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
	SELECT COUNT(DISTINCT s_i_id) INTO v_low FROM order_line, stock WHERE ol_w_id = p_w AND ol_d_id = p_d
		AND ol_o_id < v_next AND ol_o_id >= v_next - 20 AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
	COMMIT;
	SELECT v_low;
END`,
	},
	exists: "SELECT count(*) FROM information_schema.routines WHERE routine_schema = database() AND routine_name IN" +
		" ('dbparity_customer_by_name', 'dbparity_new_order', 'dbparity_payment', 'dbparity_order_status'," +
		" 'dbparity_delivery', 'dbparity_stock_level')",
	names:       6,
	newOrder:    "CALL dbparity_new_order($1, $2, $3, $4, $5, $6)",
	payment:     "CALL dbparity_payment($1, $2, $3, $4, $5, $6, $7, $8)",
	orderStatus: "CALL dbparity_order_status($1, $2, $3, $4)",
	delivery:    "CALL dbparity_delivery($1, $2, $3)",
	stockLevel:  "CALL dbparity_stock_level($1, $2, $3)",
	// "number,item,supply,quantity,number,item,..." in locking order.
	lines: func(w *worker, args []any) []any {
		b := w.lineText[:0]
		for k, i := range w.order[:w.nlines] {
			l := w.lines[i]
			if k > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(i+1), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(l.item), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(l.supplyW), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(l.qty), 10)
		}
		w.lineText = b
		return append(args, string(b))
	},
}
