package orderentry

import "time"

// Keying times (fixed) and mean think times (negative exponential,
// truncated at ten times the mean) of each transaction type, TPC-C
// clause 5.2.5.7, in seconds.
var (
	keyingS = [numTxTypes]float64{txNewOrder: 18, txPayment: 3, txOrderStatus: 2, txDelivery: 2, txStockLevel: 2}
	thinkS  = [numTxTypes]float64{txNewOrder: 12, txPayment: 12, txOrderStatus: 10, txDelivery: 5, txStockLevel: 5}
)

// Think is the pause after the transaction just run: its think time, then
// the keying time of the next one, which it deals now (Next returns it).
// The pause draws from a stream of its own, so the transactions' inputs
// are the same with and without think times.
func (w *worker) Think() time.Duration {
	if !w.o.Think {
		return 0
	}
	if w.pos == len(w.deck) {
		w.shuffle()
	}
	next := int(w.deck[w.pos])
	mean := thinkS[w.cur]
	think := min(w.pause.r.ExpFloat64()*mean, 10*mean)
	return time.Duration((think + keyingS[next]) * w.o.ThinkBy * float64(time.Second))
}
