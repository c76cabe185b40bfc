package runner

import (
	"strings"
	"testing"
	"time"
)

// Off a terminal, lines keep to their schedule: ticks late and early by
// up to 400 ms still give one line a second, a 10 s interval one line in
// ten ticks, and a tick seconds late one line, not a burst.
func TestProgressSchedule(t *testing.T) {
	t0 := time.Unix(0, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	count := func(every time.Duration, ticks []int) int {
		var b strings.Builder
		p := &progress{w: &b, interval: every}
		for _, at := range ticks {
			p.showAt(ms(at), "x")
		}
		return strings.Count(b.String(), "x")
	}
	// Ticks of a busy host: the second one 400 ms late, the third early.
	if n := count(time.Second, []int{1000, 2400, 2950, 4000, 5000}); n != 5 {
		t.Errorf("%d lines for 5 ticks at one a second", n)
	}
	var ticks []int
	for k := 1; k <= 30; k++ {
		ticks = append(ticks, 1000*k+(k%3)*150)
	}
	if n := count(10*time.Second, ticks); n != 3 {
		t.Errorf("%d lines for 30 ticks at one each 10 s", n)
	}
	if n := count(time.Second, []int{1000, 5000, 5100, 6000}); n != 3 {
		t.Errorf("%d lines after a tick 3 s late, want 3 (no burst)", n)
	}
}
