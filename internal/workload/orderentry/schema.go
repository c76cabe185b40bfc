package orderentry

import (
	"strings"

	"github.com/dbparity/dbparity/internal/engine"
)

// tables lists the nine tables in load order with their columns (clause
// 1.3) and primary keys. Money is numeric with two decimals; SQLite stores
// it with numeric affinity.
var tables = []struct {
	name    string
	columns string
	pk      string
}{
	{"warehouse", "w_id int NOT NULL, w_name varchar(10), w_street_1 varchar(20), w_street_2 varchar(20), w_city varchar(20), w_state char(2), w_zip char(9), w_tax numeric(4,4), w_ytd numeric(12,2)", "w_id"},
	{"district", "d_id int NOT NULL, d_w_id int NOT NULL, d_name varchar(10), d_street_1 varchar(20), d_street_2 varchar(20), d_city varchar(20), d_state char(2), d_zip char(9), d_tax numeric(4,4), d_ytd numeric(12,2), d_next_o_id int", "d_w_id, d_id"},
	{"customer", "c_id int NOT NULL, c_d_id int NOT NULL, c_w_id int NOT NULL, c_first varchar(16), c_middle char(2), c_last varchar(16), c_street_1 varchar(20), c_street_2 varchar(20), c_city varchar(20), c_state char(2), c_zip char(9), c_phone char(16), c_since timestamp, c_credit char(2), c_credit_lim numeric(12,2), c_discount numeric(4,4), c_balance numeric(12,2), c_ytd_payment numeric(12,2), c_payment_cnt int, c_delivery_cnt int, c_data varchar(500)", "c_w_id, c_d_id, c_id"},
	{"history", "h_c_id int, h_c_d_id int, h_c_w_id int, h_d_id int, h_w_id int, h_date timestamp, h_amount numeric(6,2), h_data varchar(24)", ""},
	{"orders", "o_id int NOT NULL, o_d_id int NOT NULL, o_w_id int NOT NULL, o_c_id int, o_entry_d timestamp, o_carrier_id int, o_ol_cnt int, o_all_local int", "o_w_id, o_d_id, o_id"},
	{"new_order", "no_o_id int NOT NULL, no_d_id int NOT NULL, no_w_id int NOT NULL", "no_w_id, no_d_id, no_o_id"},
	{"order_line", "ol_o_id int NOT NULL, ol_d_id int NOT NULL, ol_w_id int NOT NULL, ol_number int NOT NULL, ol_i_id int, ol_supply_w_id int, ol_delivery_d timestamp, ol_quantity int, ol_amount numeric(6,2), ol_dist_info char(24)", "ol_w_id, ol_d_id, ol_o_id, ol_number"},
	{"item", "i_id int NOT NULL, i_im_id int, i_name varchar(24), i_price numeric(5,2), i_data varchar(50)", "i_id"},
	{"stock", "s_i_id int NOT NULL, s_w_id int NOT NULL, s_quantity int, s_dist_01 char(24), s_dist_02 char(24), s_dist_03 char(24), s_dist_04 char(24), s_dist_05 char(24), s_dist_06 char(24), s_dist_07 char(24), s_dist_08 char(24), s_dist_09 char(24), s_dist_10 char(24), s_ytd int, s_order_cnt int, s_remote_cnt int, s_data varchar(50)", "s_w_id, s_i_id"},
}

// indexes are the secondary indexes the transactions need: customers by
// last name (Payment, Order-Status) and a customer's latest order.
var indexes = []string{
	"CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first)",
	"CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
}

// columnNames returns the column names of a table's definition.
func columnNames(def string) []string {
	var cols []string
	for _, c := range strings.Split(def, ",") {
		f := strings.Fields(c)
		if len(f) > 0 && !strings.Contains(f[0], ")") {
			cols = append(cols, f[0])
		}
	}
	return cols
}

// createSQL returns the CREATE TABLE statement.
func createSQL(d engine.Dialect, t int) string {
	return d.CreateTable(tables[t].name, tables[t].columns, tables[t].pk)
}

func primaryKeySQL(t int) string {
	return "ALTER TABLE " + tables[t].name + " ADD PRIMARY KEY (" + tables[t].pk + ")"
}
