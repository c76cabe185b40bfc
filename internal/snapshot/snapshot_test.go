package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tbl(name string, rows int64, sum string, cols ...Column) Table {
	return Table{Name: name, Rows: rows, Checksum: sum, Columns: cols}
}

// Compare tells a match, a table whose only differing columns are the
// clock's, a table that differs in rows or content, missing and extra
// tables, and sequences; Summary says it in one line.
func TestCompare(t *testing.T) {
	want := &Snapshot{Format: Format, Tables: []Table{
		tbl("public.a", 10, "1"),
		tbl("public.h", 5, "2", Column{"id", "integer", "7"}, Column{"mtime", "timestamp without time zone", "8"}),
		tbl("public.b", 3, "3", Column{"v", "integer", "9"}),
		tbl("public.c", 4, "4", Column{"v", "integer", "5"}),
		tbl("public.gone", 1, "5"),
	}, Sequences: []Sequence{{"public.s", 120, true}}}
	got := &Snapshot{Format: Format, Tables: []Table{
		tbl("public.a", 10, "1"),
		tbl("public.h", 5, "20", Column{"id", "integer", "7"}, Column{"mtime", "timestamp without time zone", "80"}),
		tbl("public.b", 3, "30", Column{"v", "integer", "90"}),
		tbl("public.c", 0, "0", Column{"v", "integer", "0"}),
		tbl("public.new", 2, "6"),
	}, Sequences: []Sequence{{"public.s", 118, true}}}
	c := Compare(want, got)
	verdicts := map[string]string{}
	for _, d := range c.Tables {
		verdicts[d.Name] = d.Verdict
	}
	wantV := map[string]string{"public.a": Match, "public.h": ClockOnly, "public.b": Differs, "public.c": Differs,
		"public.gone": Missing, "public.new": Extra}
	for n, v := range wantV {
		if verdicts[n] != v {
			t.Errorf("%s: %q, want %q", n, verdicts[n], v)
		}
	}
	if m, clock, _, of := c.Matching(); m != 1 || clock != 1 || of != 6 {
		t.Errorf("matching %d+%d of %d", m, clock, of)
	}
	s := c.Summary()
	for _, part := range []string{"end state: 2 of 6 tables match", "public.h (mtime)", "public.b: 3 rows alike in number, content differs in v",
		"public.c: 0 rows, want 4", "public.gone: missing", "public.new: not in the expected state (2 rows)", "public.s: want 120, got 118"} {
		if !strings.Contains(s, part) {
			t.Errorf("summary lacks %q:\n%s", part, s)
		}
	}
	if c := Compare(want, want); !strings.HasPrefix(c.Summary(), "end state: 5 of 5 tables match") || strings.Contains(c.Summary(), "differ") {
		t.Errorf("a snapshot against itself: %s", c.Summary())
	}
}

// Write and Read round-trip; Read refuses another file with one line.
func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "end.snap")
	s := &Snapshot{Format: Format, Database: "db", Tables: []Table{tbl("public.a", 1, "2")}}
	if err := Write(p, s); err != nil {
		t.Fatal(err)
	}
	r, err := Read(p)
	if err != nil || r.Database != "db" || len(r.Tables) != 1 || r.Tables[0].Checksum != "2" {
		t.Fatalf("read back %+v, %v", r, err)
	}
	other := filepath.Join(dir, "result.json")
	os.WriteFile(other, []byte(`{"schema":"dbparity.result/1"}`), 0o644)
	if _, err := Read(other); err == nil || !strings.Contains(err.Error(), "not a snapshot file") || strings.Contains(err.Error(), "\n") {
		t.Errorf("reading a result as a snapshot: %v", err)
	}
}

// A table whose rows hold the same values per column but paired
// otherwise says so; causes explain the tables they name, a different row
// count only when the cause says it can.
func TestExplainAndPairing(t *testing.T) {
	c := Comparison{Tables: []TableDiff{
		{Name: "public.events", Verdict: Differs, WantRows: 714, GotRows: 0},
		{Name: "public.t", Verdict: Differs, WantRows: 5, GotRows: 5, Columns: []string{"v"}},
		{Name: "public.pairs", Verdict: Differs, WantRows: 2, GotRows: 2},
		{Name: "public.u", Verdict: Differs, WantRows: 3, GotRows: 4},
	}}
	c.Explain(map[string]Cause{"events": {Why: "COPY rows not captured", Rows: true}, "public.t": {Why: "random()"}, "u": {Why: "random()"}})
	match, clock, explained, of := c.Matching()
	if match != 0 || clock != 0 || explained != 2 || of != 4 {
		t.Errorf("matching %d %d %d %d", match, clock, explained, of)
	}
	s := c.Summary()
	for _, want := range []string{"2 differ for a named cause: public.events (0 rows, want 714): COPY rows not captured",
		"public.t (5 rows alike in number, content differs in v): random()",
		"public.pairs: 2 rows alike in number, each column holding the same values, paired otherwise within rows",
		"public.u: 4 rows, want 3"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// Rows alike column by column but paired otherwise, in a table with a
// serial column's sequence, are explained by the order concurrent
// inserts took its values; without a sequence they differ.
func TestPairingBySequence(t *testing.T) {
	tables := func(names ...string) []Table {
		var out []Table
		for _, n := range names {
			out = append(out, Table{Name: n, Rows: 2, Checksum: "a", Columns: []Column{{Name: "id", Type: "bigint", Checksum: "x"}}})
		}
		return out
	}
	want := &Snapshot{Tables: tables("public.transfers", "public.plain"), Sequences: []Sequence{{Name: "public.transfers_id_seq", Value: 2, Called: true}}}
	got := &Snapshot{Tables: tables("public.transfers", "public.plain"), Sequences: want.Sequences}
	for i := range got.Tables {
		got.Tables[i].Checksum = "b" // same columns, rows paired otherwise
	}
	c := Compare(want, got)
	if c.Tables[0].Verdict != Explained || !strings.Contains(c.Tables[0].Cause, "public.transfers_id_seq") || c.Tables[1].Verdict != Differs {
		t.Errorf("%+v", c.Tables)
	}
}
