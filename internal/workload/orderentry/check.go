package orderentry

import (
	"context"
	"fmt"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/workload"
)

// conditions are TPC-C's consistency conditions (clause 3.3.2), each a
// query counting the rows that violate it. Money is compared with a
// tolerance of half a cent because SQLite sums it in floating point.
var conditions = []struct{ name, what, sql string }{
	{"1", "W_YTD = sum(D_YTD) per warehouse", `SELECT count(*) FROM warehouse w
		JOIN (SELECT d_w_id, sum(d_ytd) AS s FROM district GROUP BY d_w_id) d ON d.d_w_id = w.w_id
		WHERE abs(w.w_ytd - d.s) > 0.005`},
	{"2", "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district", `SELECT count(*) FROM district d
		WHERE d.d_next_o_id - 1 <> (SELECT max(o_id) FROM orders WHERE o_w_id = d.d_w_id AND o_d_id = d.d_id)
		OR d.d_next_o_id - 1 <> coalesce((SELECT max(no_o_id) FROM new_order WHERE no_w_id = d.d_w_id AND no_d_id = d.d_id), d.d_next_o_id - 1)`},
	{"3", "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW_ORDER) per district", `SELECT count(*) FROM
		(SELECT max(no_o_id) - min(no_o_id) + 1 AS span, count(*) AS n FROM new_order GROUP BY no_w_id, no_d_id) x
		WHERE span <> n`},
	{"4", "sum(O_OL_CNT) = count(ORDER_LINE) per district", `SELECT count(*) FROM
		(SELECT o_w_id, o_d_id, sum(o_ol_cnt) AS s FROM orders GROUP BY o_w_id, o_d_id) o
		LEFT JOIN (SELECT ol_w_id, ol_d_id, count(*) AS n FROM order_line GROUP BY ol_w_id, ol_d_id) l
		ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id WHERE l.n IS NULL OR o.s <> l.n`},
	{"5", "O_CARRIER_ID is null exactly for orders in NEW_ORDER", `SELECT count(*) FROM orders o
		LEFT JOIN new_order n ON n.no_w_id = o.o_w_id AND n.no_d_id = o.o_d_id AND n.no_o_id = o.o_id
		WHERE (o.o_carrier_id IS NULL) <> (n.no_o_id IS NOT NULL)`},
	{"6", "O_OL_CNT = count(ORDER_LINE) per order", `SELECT count(*) FROM orders o
		LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, count(*) AS n FROM order_line GROUP BY ol_w_id, ol_d_id, ol_o_id) l
		ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id
		WHERE l.n IS NULL OR l.n <> o.o_ol_cnt`},
	{"7", "OL_DELIVERY_D is null exactly when O_CARRIER_ID is null", `SELECT count(*) FROM order_line l
		JOIN orders o ON o.o_w_id = l.ol_w_id AND o.o_d_id = l.ol_d_id AND o.o_id = l.ol_o_id
		WHERE (l.ol_delivery_d IS NULL) <> (o.o_carrier_id IS NULL)`},
	{"8", "W_YTD = sum(H_AMOUNT) per warehouse", `SELECT count(*) FROM warehouse w
		JOIN (SELECT h_w_id, sum(h_amount) AS s FROM history GROUP BY h_w_id) h ON h.h_w_id = w.w_id
		WHERE abs(w.w_ytd - h.s) > 0.005`},
	{"9", "D_YTD = sum(H_AMOUNT) per district", `SELECT count(*) FROM district d
		JOIN (SELECT h_w_id, h_d_id, sum(h_amount) AS s FROM history GROUP BY h_w_id, h_d_id) h
		ON h.h_w_id = d.d_w_id AND h.h_d_id = d.d_id WHERE abs(d.d_ytd - h.s) > 0.005`},
}

// Check runs consistency conditions 1 to 9 in one read-only transaction,
// so they all see the same state.
func (o *OrderEntry) Check(ctx context.Context, c engine.Conn, d engine.Dialect) ([]workload.CheckResult, error) {
	if err := o.Prepare(ctx, c, d); err != nil {
		return nil, err
	}
	if err := d.BeginSnapshot(ctx, c); err != nil {
		return nil, err
	}
	defer c.Rollback(context.WithoutCancel(ctx))
	var out []workload.CheckResult
	for _, cond := range conditions {
		var bad int64
		if err := c.QueryRow(ctx, cond.sql).Scan(&bad); err != nil {
			return nil, fmt.Errorf("consistency condition %s: %w", cond.name, err)
		}
		r := workload.CheckResult{Name: cond.name + ": " + cond.what, OK: bad == 0}
		if bad > 0 {
			r.Detail = fmt.Sprintf("%d rows violate it", bad)
		}
		out = append(out, r)
	}
	return out, nil
}
