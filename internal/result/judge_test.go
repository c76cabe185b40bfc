package result

import (
	"strings"
	"testing"
)

// A transaction type that failed every time fails the run when it failed
// at least three times; once or twice (order-entry's delivery, run once
// in a short window that an outage cut) is left to the share of failed
// transactions, here lifted to 60% as a test of recovery lifts it.
func TestJudgeNeverCompleted(t *testing.T) {
	for _, c := range []struct {
		delivery int64 // failed deliveries, none completed
		reason   string
	}{
		{1, ""},
		{2, ""},
		{3, "every delivery failed (3), none completed"},
	} {
		r := &Run{Transactions: []Transaction{{Name: "new_order", Committed: 40, Errors: 10}, {Name: "delivery", Errors: c.delivery}}}
		r.Judge(60)
		if got := r.FailedReason; (c.reason == "") != !r.Failed || !strings.HasPrefix(got, c.reason) {
			t.Errorf("%d failed deliveries: failed %v %q, want %q", c.delivery, r.Failed, got, c.reason)
		}
	}
}
