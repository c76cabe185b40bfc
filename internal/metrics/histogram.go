// Package metrics owns the measurement types of a run: latency histograms that
// merge exactly across sessions, runs and hosts, and the per-interval series.
// It knows nothing of databases or workloads; it only counts and summarises.
package metrics

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds from 1 µs to 1 hour with three
// significant digits (0.1% relative precision). A slower event is recorded as
// the maximum and counted in Saturated, so nothing is silently dropped.
const (
	lowestMicros  = 1
	highestMicros = int64(time.Hour / time.Microsecond)
	sigFigs       = 3
)

// Histogram is a latency histogram in microseconds. It is not safe for
// concurrent use: each session owns its own and they are merged afterwards.
type Histogram struct {
	h         *hdr.Histogram
	Saturated int64
}

// NewHistogram returns an empty histogram with the package's fixed geometry,
// so that any two histograms of dbparity merge without loss.
func NewHistogram() *Histogram {
	return &Histogram{h: hdr.New(lowestMicros, highestMicros, sigFigs)}
}

// micros converts a latency to the histogram's unit, clamped to its range.
func micros(d time.Duration) (us int64, saturated bool) {
	us = int64(d / time.Microsecond)
	if us < lowestMicros {
		return lowestMicros, false
	}
	if us > highestMicros {
		return highestMicros, true
	}
	return us, false
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	us, sat := micros(d)
	if sat {
		h.Saturated++
	}
	_ = h.h.RecordValue(us) // cannot fail: us is within the trackable range
}

// Merge adds every value of o into h.
func (h *Histogram) Merge(o *Histogram) {
	h.h.Merge(o.h)
	h.Saturated += o.Saturated
}

// Reset empties the histogram, keeping its memory.
func (h *Histogram) Reset() { h.h.Reset(); h.Saturated = 0 }

// Count is the number of recorded values.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Quantile returns the latency at q (0..1); zero when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.ValueAtQuantile(q*100)) * time.Microsecond
}

// Max returns the largest recorded latency (to the histogram's precision).
func (h *Histogram) Max() time.Duration { return time.Duration(h.h.Max()) * time.Microsecond }

// Min returns the smallest recorded latency.
func (h *Histogram) Min() time.Duration { return time.Duration(h.h.Min()) * time.Microsecond }

// Mean returns the mean latency.
func (h *Histogram) Mean() time.Duration {
	return time.Duration(h.h.Mean() * float64(time.Microsecond))
}

// Encode returns the histogram in HdrHistogram's standard compressed V2
// format, base64 encoded ("HIST..."): the interchange format of the
// HdrHistogram family (the payload of an .hlog line), so other tools can
// read what dbparity writes.
func (h *Histogram) Encode() (string, error) {
	b, err := h.h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// DecodeHistogram reads what Encode wrote, and what it wrote before
// 2026-11-25: the same, base64 encoded once more.
func DecodeHistogram(s string, saturated int64) (*Histogram, error) {
	b := []byte(s)
	if !strings.HasPrefix(s, "HIST") {
		var err error
		if b, err = base64.StdEncoding.DecodeString(s); err != nil {
			return nil, fmt.Errorf("decode histogram: %w", err)
		}
	}
	h, err := hdr.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	// Re-home into the standard geometry so later merges are exact.
	out := NewHistogram()
	out.h.Merge(h)
	out.Saturated = saturated
	return out, nil
}

// Recorder is what a session records into: the same geometry as
// Histogram, stored sparsely, so its memory follows the latencies actually
// seen (a few KB) rather than the 190 KB of the full counts array; a
// driver with hundreds of sessions and six histograms each stays small.
// It is merged into a Histogram to be read.
type Recorder struct {
	p         *hdr.PackedHistogram
	saturated int64
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{p: hdr.NewPacked(lowestMicros, highestMicros, sigFigs)}
}

// Record adds one latency.
func (r *Recorder) Record(d time.Duration) {
	us, sat := micros(d)
	if sat {
		r.saturated++
	}
	_ = r.p.RecordValue(us) // cannot fail: us is within the trackable range
}

// MergeInto adds every value of r to h.
func (r *Recorder) MergeInto(h *Histogram) {
	r.p.MergeInto(h.h)
	h.Saturated += r.saturated
}

// Reset empties the recorder.
func (r *Recorder) Reset() { r.p.Reset(); r.saturated = 0 }

// Count is the number of recorded values.
func (r *Recorder) Count() int64 { return r.p.TotalCount() }

// Bytes is the memory the recorder's counts take.
func (r *Recorder) Bytes() int { return r.p.GetMemorySize() }

// Bucket is one power-of-two bucket of a latency histogram: the values
// below UpTo microseconds and at or above the previous bucket's bound, the
// way wait-event histograms are printed (<1 µs, <2 µs, <4 µs, ...).
type Bucket struct {
	UpToMicros int64   `json:"lt_us"`
	Count      int64   `json:"count"`
	Pct        float64 `json:"pct"`
}

// Log2Buckets folds h into power-of-two microsecond buckets, from the first
// non-empty one to the last. HdrHistogram's own buckets never straddle a
// power of two, so the folding is exact.
func Log2Buckets(h *Histogram) []Bucket {
	total := h.Count()
	if total == 0 {
		return nil
	}
	var out []Bucket
	for _, bar := range h.h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		upTo := int64(1)
		for upTo <= bar.From {
			upTo <<= 1
		}
		if len(out) == 0 || out[len(out)-1].UpToMicros < upTo {
			// Open the empty buckets between, so gaps show.
			for len(out) > 0 && out[len(out)-1].UpToMicros*2 < upTo {
				out = append(out, Bucket{UpToMicros: out[len(out)-1].UpToMicros * 2})
			}
			out = append(out, Bucket{UpToMicros: upTo})
		}
		out[len(out)-1].Count += bar.Count
	}
	for i := range out {
		out[i].Pct = 100 * float64(out[i].Count) / float64(total)
	}
	return out
}
