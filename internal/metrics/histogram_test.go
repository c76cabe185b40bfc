package metrics

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Merging per-session histograms gives exactly the histogram of all
// values recorded in one: percentiles are never averaged.
func TestMergeIsExact(t *testing.T) {
	g := rand.New(rand.NewPCG(1, 2))
	all, a, b := NewHistogram(), NewHistogram(), NewHistogram()
	for i := range 100000 {
		d := time.Duration(g.ExpFloat64()*float64(2*time.Millisecond)) + 50*time.Microsecond
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(b)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		if a.Quantile(q) != all.Quantile(q) {
			t.Errorf("q%.3f: merged %s, single %s", q, a.Quantile(q), all.Quantile(q))
		}
	}
	if a.Count() != 100000 {
		t.Errorf("count %d", a.Count())
	}
}

func TestPrecisionAndSaturation(t *testing.T) {
	h := NewHistogram()
	h.Record(1234567 * time.Microsecond)
	if got := h.Quantile(0.5); got < 1233*time.Millisecond || got > 1236*time.Millisecond {
		t.Errorf("1.234567s recorded as %s: worse than 0.1%%", got)
	}
	h.Record(2 * time.Hour)
	if h.Saturated != 1 || h.Max() < 59*time.Minute {
		t.Errorf("2h: saturated %d max %s", h.Saturated, h.Max())
	}
	h.Record(0)
	if h.Min() != time.Microsecond {
		t.Errorf("0 recorded as %s, want the 1µs floor", h.Min())
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 5000; i++ {
		h.Record(time.Duration(i*37) * time.Microsecond)
	}
	h.Saturated = 2
	s, err := h.Encode()
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecodeHistogram(s, h.Saturated)
	if err != nil {
		t.Fatal(err)
	}
	if d.Count() != h.Count() || d.Quantile(0.95) != h.Quantile(0.95) || d.Saturated != 2 {
		t.Errorf("decoded count %d p95 %s, want %d %s", d.Count(), d.Quantile(0.95), h.Count(), h.Quantile(0.95))
	}
	if !strings.HasPrefix(s, "HIST") {
		t.Errorf("encoded %.12s..., want HdrHistogram's own base64 (HIST...)", s)
	}
	// Results written before 2026-11-25 hold it base64 encoded once more.
	old, err := DecodeHistogram(base64.StdEncoding.EncodeToString([]byte(s)), 0)
	if err != nil || old.Count() != h.Count() || old.Quantile(0.99) != h.Quantile(0.99) {
		t.Errorf("the older encoding: %v", err)
	}
	if _, err := DecodeHistogram("not base64!", 0); err == nil {
		t.Error("garbage decoded")
	}
}

// A recorder merged into a histogram gives exactly what recording into the
// histogram gives, in a fraction of the memory.
func TestRecorderMatchesHistogram(t *testing.T) {
	g := rand.New(rand.NewPCG(5, 6))
	h, r := NewHistogram(), NewRecorder()
	for range 200000 {
		d := time.Duration(g.ExpFloat64()*float64(5*time.Millisecond)) + 100*time.Microsecond
		h.Record(d)
		r.Record(d)
	}
	r.Record(3 * time.Hour)
	h.Record(3 * time.Hour)
	m := NewHistogram()
	r.MergeInto(m)
	for _, q := range []float64{0.5, 0.95, 0.99, 0.9999, 1} {
		if m.Quantile(q) != h.Quantile(q) {
			t.Errorf("q%v: recorder %s, histogram %s", q, m.Quantile(q), h.Quantile(q))
		}
	}
	if m.Count() != h.Count() || m.Saturated != 1 {
		t.Errorf("count %d saturated %d", m.Count(), m.Saturated)
	}
	if b := r.Bytes(); b > 64<<10 {
		t.Errorf("recorder holds %d bytes for 200000 latencies", b)
	}
	t.Logf("recorder: %d bytes", r.Bytes())
	r.Reset()
	if r.Count() != 0 {
		t.Error("reset recorder not empty")
	}
}

func BenchmarkRecord(b *testing.B) {
	g := rand.New(rand.NewPCG(1, 1))
	ds := make([]time.Duration, 4096)
	for i := range ds {
		ds[i] = time.Duration(g.ExpFloat64()*float64(5*time.Millisecond)) + 100*time.Microsecond
	}
	b.Run("histogram", func(b *testing.B) {
		h := NewHistogram()
		for i := range b.N {
			h.Record(ds[i&4095])
		}
	})
	b.Run("recorder", func(b *testing.B) {
		r := NewRecorder()
		for i := range b.N {
			r.Record(ds[i&4095])
		}
	})
}

func TestLog2Buckets(t *testing.T) {
	h := NewHistogram()
	for _, us := range []int{1, 3, 3, 5, 7, 100, 130, 4000} {
		h.Record(time.Duration(us) * time.Microsecond)
	}
	got := Log2Buckets(h)
	want := []Bucket{{2, 1, 12.5}, {4, 2, 25}, {8, 2, 25}, {16, 0, 0}, {32, 0, 0}, {64, 0, 0}, {128, 1, 12.5},
		{256, 1, 12.5}, {512, 0, 0}, {1024, 0, 0}, {2048, 0, 0}, {4096, 1, 12.5}}
	if len(got) != len(want) {
		t.Fatalf("buckets %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bucket %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if Log2Buckets(NewHistogram()) != nil {
		t.Error("buckets of an empty histogram")
	}
}
