package counters

import (
	"testing"
	"time"
)

// A reading the server ran late is placed at the server's instant; the
// offset of a server clock that differs is taken from the fastest round
// trip, and the instant never leaves the query's send and answer.
func TestClockPlace(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var c Clock
	// The same clock: a 1 ms round trip, then a reading run 400 ms after
	// its send and answered 10 ms after that.
	if got := c.Place(t0, t0.Add(ms(1)), t0.Add(time.Microsecond*500)); !got.Equal(t0.Add(time.Microsecond * 500)) {
		t.Errorf("quick reading placed at %v", got.Sub(t0))
	}
	if got := c.Place(t0.Add(ms(100)), t0.Add(ms(510)), t0.Add(ms(500))); !got.Equal(t0.Add(ms(500))) {
		t.Errorf("late reading placed at %v, want 500ms", got.Sub(t0))
	}
	// A server clock 2 s ahead: learnt from its fastest reading.
	var d Clock
	ahead := 2 * time.Second
	d.Place(t0, t0.Add(ms(300)), t0.Add(ms(290)+ahead)) // slow: offset off by 140 ms
	d.Place(t0.Add(ms(400)), t0.Add(ms(402)), t0.Add(ms(401)+ahead))
	if got := d.Place(t0.Add(ms(1000)), t0.Add(ms(1600)), t0.Add(ms(1500)+ahead)); got.Sub(t0) != ms(1500) {
		t.Errorf("reading of a clock 2 s ahead placed at %v, want 1.5s", got.Sub(t0))
	}
	// Kept between send and answer, whatever the server says.
	if got := d.Place(t0.Add(ms(2000)), t0.Add(ms(2010)), t0.Add(ahead+ms(9000))); !got.Equal(t0.Add(ms(2010))) {
		t.Errorf("reading placed at %v, outside its query", got.Sub(t0))
	}
	if got := d.Place(t0.Add(ms(3000)), t0.Add(ms(3010)), time.Time{}); !got.Equal(t0.Add(ms(3000))) {
		t.Errorf("reading without the server's time placed at %v, want its send", got.Sub(t0))
	}
}
