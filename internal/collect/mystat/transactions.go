package mystat

import "maps"

// ExtraClientTx is the transactions the driver committed or rolled back
// in the window, merged into the window's deltas when the driver's counts
// cover it.
const ExtraClientTx = "client.transactions"

// transactions are the load profile's Transactions line, its
// per-transaction divisor, first available first. Only performance_schema
// counts every transaction, autocommit statements included: one for each
// transaction that read or wrote a transactional table (InnoDB's), none
// for a statement that touches none, such as the collectors' readings.
// COMMIT and ROLLBACK statements leave autocommit transactions out;
// Handler_commit counts each statement of an explicit transaction besides
// its COMMIT (measured on MariaDB 10.11: docs/metrics.md).
var transactions = alts{
	a("performance_schema transactions, committed or rolled back (autocommit statements included)", 1, KeyTransactions),
	a("transactions the driver committed or rolled back: the server counted no autocommit transactions"+
		" (performance_schema's transaction instrument off, or sessions it does not instrument)", 1, ExtraClientTx),
	a("COMMIT + ROLLBACK statements only: autocommit transactions are not counted", 1, st("Com_commit"), st("Com_rollback")),
}

// countable is d without performance_schema's transactions when they fall
// short of the COMMIT and ROLLBACK statements (by more than the few that
// the two readings of an edge, a moment apart, can differ by): sessions
// that performance_schema does not instrument (setup_actors,
// threads.INSTRUMENTED) ran transactions it missed.
func countable(d map[string]float64) map[string]float64 {
	ps, ok := d[KeyTransactions]
	explicit := d[st("Com_commit")] + d[st("Com_rollback")]
	if !ok || ps+max(4, 0.05*explicit) >= explicit {
		return d
	}
	d = maps.Clone(d)
	delete(d, KeyTransactions)
	return d
}

// transactionCount is the window's transactions by the first alternative
// of the Transactions line that d has; 0 with none.
func transactionCount(d map[string]float64) float64 {
	for _, alt := range transactions {
		total, ok := 0.0, true
		for _, k := range alt.Keys {
			v, has := d[k]
			ok = ok && has
			total += v
		}
		if ok {
			return total * alt.Scale
		}
	}
	return 0
}
