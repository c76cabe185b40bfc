package mystat

import "testing"

// The load profile's transactions come from performance_schema when it
// counts them, else from the driver, else from the COMMIT and ROLLBACK
// statements; the per-transaction figures divide by the line used.
func TestLoadProfileTransactions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d      map[string]float64
		source string
		txs    float64
	}{
		{"performance_schema", map[string]float64{KeyTransactions: 1000, ExtraClientTx: 990, st("Com_commit"): 200, st("Com_rollback"): 2}, KeyTransactions, 1000},
		{"instrument off", map[string]float64{ExtraClientTx: 990, st("Com_commit"): 200, st("Com_rollback"): 2}, ExtraClientTx, 990},
		{"driver's counts cover part of the window", map[string]float64{st("Com_commit"): 200, st("Com_rollback"): 2},
			st("Com_commit") + " + " + st("Com_rollback"), 202},
		// Sessions performance_schema does not instrument: fewer
		// transactions than COMMIT statements.
		{"uninstrumented sessions", map[string]float64{KeyTransactions: 150, ExtraClientTx: 990, st("Com_commit"): 200, st("Com_rollback"): 2}, ExtraClientTx, 990},
		// An edge's two readings a moment apart: a few short is still whole.
		{"explicit transactions only", map[string]float64{KeyTransactions: 198, ExtraClientTx: 202, st("Com_commit"): 200, st("Com_rollback"): 2}, KeyTransactions, 198},
	} {
		tc.d[st("Questions")] = 5000
		p := LoadProfile("mariadb 10.11", tc.d, 10)
		tx := p.Line("Transactions")
		if tx == nil || tx.Source != tc.source || tx.Total == nil || *tx.Total != tc.txs || p.Transactions != tc.txs {
			t.Errorf("%s: transactions %+v, divisor %.0f; want %.0f from %s", tc.name, tx, p.Transactions, tc.txs, tc.source)
			continue
		}
		if tx.Note == "" {
			t.Errorf("%s: the source's note is empty", tc.name)
		}
		if ex := p.Line("Executes"); ex == nil || ex.PerTx == nil || *ex.PerTx != 5000/tc.txs {
			t.Errorf("%s: executes %+v, want %.2f per transaction", tc.name, ex, 5000/tc.txs)
		}
	}
}
