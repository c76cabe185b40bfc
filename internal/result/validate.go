package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// FieldError is a result file that does not hold what its schema
// promises: Field is the JSON path of the first bad value
// (transactions[2].latency.hdr), so that a damaged or hand-edited file is
// refused with the place to look, before any report divides by its
// window or merges its histograms.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return "field " + e.Field + ": " + e.Problem }

// Validate checks what every reader of a result relies on: the schema,
// counts that are not negative, a measured window that does not run
// backwards, series intervals of non-negative length, and histograms that
// decode to the count they state, in the run and in each of its parts.
// Partial runs (even one stopped before its window opened) are valid.
// The replay section's per-statement histograms are not decoded: no
// report merges them, and a long capture holds thousands.
func (r *Run) Validate() error {
	switch {
	case strings.HasPrefix(r.Schema, "dbparity.journal/"):
		return &FieldError{"schema", fmt.Sprintf("%s: this is the journal of a run that did not finish, not a result file", r.Schema)}
	case !strings.HasPrefix(r.Schema, "dbparity.run/"):
		return &FieldError{"schema", fmt.Sprintf("%q: not a dbparity result file (want %s)", r.Schema, Schema)}
	case r.Schema != Schema:
		return &FieldError{"schema", fmt.Sprintf("%s: this dbparity reads %s: use a newer dbparity", r.Schema, Schema)}
	}
	return r.validate("")
}

// validate checks r, whose fields are reported under prefix (a part's).
func (r *Run) validate(prefix string) error {
	v := validator{prefix: prefix}
	v.window(r)
	v.count("statements", r.Statements)
	v.count("driver.users", int64(r.Driver.Users))
	v.count("driver.reconnects", r.Driver.Reconnects)
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		v.count(fmt.Sprintf("errors[%q]", k), r.Errors[k])
	}
	for i, t := range r.Transactions {
		f := fmt.Sprintf("transactions[%d]", i)
		v.count(f+".committed", t.Committed)
		v.count(f+".rollbacks", t.Rollbacks)
		v.count(f+".errors", t.Errors)
		v.count(f+".retries", t.Retries)
		v.histogram(f+".latency", t.Latency)
	}
	v.histogram("commit", r.Commit)
	if r.Driver.Rate != nil {
		v.histogram("driver.rate.queue", r.Driver.Rate.Queue)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Phases)) {
		p, f := r.Phases[name], fmt.Sprintf("phases[%q]", name)
		v.count(f+".statements", p.Statements)
		for _, c := range []struct {
			kind string
			m    map[string]int64
		}{{"committed", p.Committed}, {"rollbacks", p.Rollbacks}, {"errors", p.Errors}} {
			for _, k := range slices.Sorted(maps.Keys(c.m)) {
				v.count(fmt.Sprintf("%s.%s[%q]", f, c.kind, k), c.m[k])
			}
		}
	}
	for i, iv := range r.Series {
		f := fmt.Sprintf("series[%d]", i)
		v.seconds(f+".s", iv.Seconds)
		v.count(f+".commits", iv.Commits)
		v.count(f+".rollbacks", iv.Rollbacks)
		v.count(f+".errors", iv.Errors)
		v.count(f+".retries", iv.Retries)
	}
	for i, iv := range r.DBSeries {
		v.seconds(fmt.Sprintf("db_series[%d].s", i), iv.Seconds)
	}
	if v.err != nil {
		return v.err
	}
	for i, p := range r.Parts {
		f := fmt.Sprintf("%sparts[%d]", prefix, i)
		if p == nil {
			return &FieldError{f, "null: a part must be a run"}
		}
		if err := p.validate(f + "."); err != nil {
			return err
		}
	}
	return nil
}

// validator keeps the first problem found.
type validator struct {
	prefix string
	err    error
}

func (v *validator) fail(field, format string, a ...any) {
	if v.err == nil {
		v.err = &FieldError{v.prefix + field, fmt.Sprintf(format, a...)}
	}
}

func (v *validator) count(field string, n int64) {
	if n < 0 {
		v.fail(field, "%d: a count cannot be negative", n)
	}
}

func (v *validator) seconds(field string, s float64) {
	if !(s >= 0) { // NaN too
		v.fail(field, "%v: an interval cannot last less than 0 seconds", s)
	}
}

// window: a run stopped before its measured window opened has a window
// of length zero (or none at all), and nothing counted in it; any other
// run's window ends after it starts.
func (v *validator) window(r *Run) {
	start, end := r.MeasureStart, r.MeasureEnd
	switch {
	case start.IsZero() != end.IsZero():
		missing := "measure_start"
		if end.IsZero() {
			missing = "measure_end"
		}
		v.fail(missing, "missing while the other end of the measured window is set")
		return
	case end.Before(start):
		v.fail("measure_end", "%s is before measure_start %s", end.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano))
		return
	case end.After(start):
		return
	}
	for i, t := range r.Transactions {
		if t.Committed > 0 || t.Rollbacks > 0 {
			v.fail("measure_end", "the measured window is empty (measure_end equals measure_start) but transactions[%d] counts %d in it",
				i, t.Committed+t.Rollbacks)
			return
		}
	}
}

// histogram checks that h decodes to the count it states. An empty
// histogram may be absent altogether (no hdr).
func (v *validator) histogram(field string, h Histogram) {
	switch {
	case h.Count < 0:
		v.fail(field+".count", "%d: a count cannot be negative", h.Count)
		return
	case h.Saturated < 0:
		v.fail(field+".saturated", "%d: a count cannot be negative", h.Saturated)
		return
	case h.HDR == "" && h.Count == 0:
		return
	case h.HDR == "":
		v.fail(field+".hdr", "missing, but count says %d values were recorded", h.Count)
		return
	}
	d, err := h.Decode()
	if err != nil {
		v.fail(field+".hdr", "histogram does not decode (%v)", err)
		return
	}
	if d.Count() != h.Count {
		v.fail(field+".count", "%d, but its histogram (hdr) holds %d values", h.Count, d.Count())
	}
}

// decodeError says why the JSON of a result file could not be read,
// naming the field when the JSON is well formed but a value has the wrong
// type.
func decodeError(path string, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("%s is truncated: it ends in the middle of its JSON (was its run killed, or its copy cut short?)", path)
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("%s: field %s: a JSON %s where %s belongs", path, te.Field, te.Value, te.Type)
	case errors.As(err, &se):
		return fmt.Errorf("%s is not a dbparity result file: %v (at byte %d)", path, err, se.Offset)
	}
	return fmt.Errorf("%s is not a dbparity result file: %v", path, err)
}
