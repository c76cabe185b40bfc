package counters

import (
	"testing"
	"time"
)

// A reading the server ran late is placed at the server's instant; a
// server clock that differs is corrected by the least offset every
// reading allows, and the instant never leaves the query's send and
// answer.
func TestClockPlace(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var c Clock
	// One clock: a quick round trip; a reading run 400 ms after its send
	// and answered 10 ms after that; one the server ran at once and whose
	// answer reached its client 600 ms later (a saturated client: its
	// round trip's midpoint is 300 ms late).
	if got := c.Place(t0, t0.Add(ms(1)), t0.Add(time.Microsecond*500)); !got.Equal(t0.Add(time.Microsecond * 500)) {
		t.Errorf("quick reading placed at %v", got.Sub(t0))
	}
	if got := c.Place(t0.Add(ms(100)), t0.Add(ms(510)), t0.Add(ms(500))); !got.Equal(t0.Add(ms(500))) {
		t.Errorf("late reading placed at %v, want 500ms", got.Sub(t0))
	}
	var slow Clock
	if got := slow.Place(t0, t0.Add(ms(600)), t0.Add(ms(2))); !got.Equal(t0.Add(ms(2))) {
		t.Errorf("a reading answered late on the client's side placed at %v, want 2ms", got.Sub(t0))
	}
	// A server clock 2 s ahead: bounded by each reading, the tightest
	// bound its quickest.
	var d Clock
	ahead := 2 * time.Second
	d.Place(t0, t0.Add(ms(300)), t0.Add(ms(290)+ahead))
	d.Place(t0.Add(ms(400)), t0.Add(ms(402)), t0.Add(ms(401)+ahead))
	if got := d.Place(t0.Add(ms(1000)), t0.Add(ms(1600)), t0.Add(ms(1500)+ahead)); got.Sub(t0) < ms(1499) || got.Sub(t0) > ms(1501) {
		t.Errorf("reading of a clock 2 s ahead placed at %v, want 1.5s", got.Sub(t0))
	}
	// Kept between send and answer whatever the server says: a clock
	// stepped 7 s starts afresh.
	if got := d.Place(t0.Add(ms(2000)), t0.Add(ms(2010)), t0.Add(ahead+ms(9000))); !got.Equal(t0.Add(ms(2010))) {
		t.Errorf("reading placed at %v, outside its query", got.Sub(t0))
	}
	// (The step's two readings bound the new offset to 8.995-9 s.)
	if got := d.Place(t0.Add(ms(3000)), t0.Add(ms(3010)), t0.Add(ahead+ms(10005))); got.Sub(t0) < ms(3005) || got.Sub(t0) > ms(3010) {
		t.Errorf("reading after the step placed at %v, want 3.005-3.01s", got.Sub(t0))
	}
	if got := d.Place(t0.Add(ms(4000)), t0.Add(ms(4010)), time.Time{}); !got.Equal(t0.Add(ms(4000))) {
		t.Errorf("reading without the server's time placed at %v, want its send", got.Sub(t0))
	}
}
