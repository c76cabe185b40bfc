package result

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/metrics"
)

// valid is a run with every histogram filled and a part, as a
// multi-target run writes it.
func valid(t *testing.T) *Run {
	t.Helper()
	h := metrics.NewHistogram()
	for _, d := range []time.Duration{time.Millisecond, 3 * time.Millisecond, 40 * time.Millisecond} {
		h.Record(d)
	}
	hist, err := NewHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	r := sample()
	r.Transactions[0].Latency = hist
	r.Commit = hist
	r.Series = []metrics.Interval{{At: 1, Seconds: 1, Phase: "measure", Commits: 10}}
	r.Phases = map[string]Phase{"measure": {Committed: map[string]int64{"new_order": 900}, Statements: 20000}}
	part := *r
	r.Parts = []*Run{&part}
	return r
}

func writeRaw(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadValidates(t *testing.T) {
	notHistogram := base64.StdEncoding.EncodeToString([]byte("not a histogram at all"))
	other := metrics.NewHistogram()
	other.Record(time.Millisecond)
	oneValue, _ := other.Encode()
	for _, tc := range []struct {
		name  string
		edit  func(r *Run)
		field string // "" = valid
		want  string
	}{
		{"good", func(r *Run) {}, "", ""},
		{"partial, stopped in its warm-up", func(r *Run) {
			r.Partial, r.PartialReason = true, "interrupted"
			r.MeasureEnd = r.MeasureStart
			for i := range r.Transactions {
				r.Transactions[i].Committed, r.Transactions[i].Rollbacks = 0, 0
			}
			r.Parts = nil
		}, "", ""},
		{"never started", func(r *Run) {
			r.MeasureStart, r.MeasureEnd, r.Transactions, r.Commit, r.Parts = time.Time{}, time.Time{}, nil, Histogram{}, nil
		}, "", ""},
		{"bad base64", func(r *Run) { r.Transactions[0].Latency.HDR = "@@not base64@@" },
			"transactions[0].latency.hdr", "histogram does not decode"},
		{"base64 of something else", func(r *Run) { r.Commit.HDR = notHistogram },
			"commit.hdr", "histogram does not decode"},
		{"count edited", func(r *Run) { r.Transactions[0].Latency.Count = 7 },
			"transactions[0].latency.count", "7, but its histogram (hdr) holds 3 values"},
		{"hdr of another histogram", func(r *Run) { r.Commit.HDR = oneValue },
			"commit.count", "holds 1 values"},
		{"hdr removed", func(r *Run) { r.Commit.HDR = "" }, "commit.hdr", "missing"},
		{"negative histogram count", func(r *Run) { r.Commit.Count = -1 }, "commit.count", "negative"},
		{"negative committed", func(r *Run) { r.Transactions[1].Committed = -300 },
			"transactions[1].committed", "-300: a count cannot be negative"},
		{"negative retries", func(r *Run) { r.Transactions[0].Retries = -1 }, "transactions[0].retries", "negative"},
		{"negative statements", func(r *Run) { r.Statements = -1 }, "statements", "negative"},
		{"negative error class", func(r *Run) { r.Errors["deadlock"] = -4 }, `errors["deadlock"]`, "negative"},
		{"negative phase count", func(r *Run) { r.Phases["measure"].Committed["new_order"] = -1 },
			`phases["measure"].committed["new_order"]`, "negative"},
		{"window backwards", func(r *Run) { r.MeasureEnd = r.MeasureStart.Add(-time.Second) },
			"measure_end", "is before measure_start"},
		{"window empty with commits", func(r *Run) { r.MeasureEnd = r.MeasureStart },
			"measure_end", "the measured window is empty"},
		{"window start removed", func(r *Run) { r.MeasureStart = time.Time{} }, "measure_start", "missing"},
		{"negative interval", func(r *Run) { r.Series[0].Seconds = -1 }, "series[0].s", "less than 0 seconds"},
		{"negative db interval", func(r *Run) { r.DBSeries = []DBInterval{{At: 1, Seconds: -2}} }, "db_series[0].s", "less than 0"},
		{"bad part", func(r *Run) {
			p := *r.Parts[0]
			p.Transactions = append([]Transaction(nil), p.Transactions...)
			p.Transactions[0].Latency.HDR = "AAAA"
			r.Parts = []*Run{r.Parts[0], &p}
		}, "parts[1].transactions[0].latency.hdr", "histogram does not decode"},
		{"other schema", func(r *Run) { r.Schema = "dbparity.run/9" }, "schema", "use a newer dbparity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := valid(t)
			tc.edit(r)
			p := filepath.Join(t.TempDir(), "r.json")
			if err := Write(p, r); err != nil {
				t.Fatal(err)
			}
			_, err := Read(p)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("a valid file is refused: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("error %v, want one naming field %s", err, tc.field)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, p+": field "+tc.field+": ") || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want %q naming the file and the field", msg, tc.want)
			}
		})
	}
}

// Files that are not well-formed JSON of the schema are refused with the
// file named, and the field when the JSON names one.
func TestReadRefusesDamagedJSON(t *testing.T) {
	var good bytes.Buffer
	p := filepath.Join(t.TempDir(), "good.json")
	if err := Write(p, valid(t)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	good.Write(b)
	journal := filepath.Join(t.TempDir(), "r.json")
	j, err := OpenJournal(journal, valid(t))
	if err != nil {
		t.Fatal(err)
	}
	j.Close(false)
	for _, tc := range []struct {
		name string
		path string
		want string
	}{
		{"truncated", writeRaw(t, good.Bytes()[:good.Len()/2]), "is truncated"},
		{"empty", writeRaw(t, nil), "is truncated"},
		{"string for a count", writeRaw(t, bytes.Replace(good.Bytes(), []byte(`"committed":900`), []byte(`"committed":"900"`), 1)),
			"field transactions.committed: a JSON string where int64 belongs"},
		{"not JSON", writeRaw(t, []byte("label: native\n")), "not a dbparity result file"},
		{"journal", JournalPath(journal), "field schema: " + JournalSchema + ": this is the journal of a run that did not finish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(tc.path)
			if err == nil || !strings.HasPrefix(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q naming %s", err, tc.want, tc.path)
			}
		})
	}
}

// A huge file is refused by its size, and one that does not begin like
// a result or a journal by its first byte, before either is read: a
// sparse file of gigabytes costs nothing.
func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	huge, zeros := filepath.Join(dir, "huge.json"), filepath.Join(dir, "zeros.json")
	for p, size := range map[string]int64{huge: MaxFileBytes + 1, zeros: 100 << 20} {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for path, want := range map[string]string{huge: "refused above 256 MiB", zeros: "does not begin with a JSON object"} {
		start := time.Now()
		_, err := Read(path)
		if err == nil || !strings.HasPrefix(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Errorf("Read: %v, want %q", err, want)
		}
		_, _, _, err = ReadJournal(path)
		if path == zeros && (err == nil || !strings.Contains(err.Error(), "not a dbparity journal")) {
			t.Errorf("ReadJournal: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s refused after %v: it was read", path, d)
		}
	}
}
