// Package snapshot owns end-state snapshots of a PostgreSQL, MySQL or
// MariaDB database: per table its row count and order-independent
// checksums of its rows and of each column, and the value of every
// sequence (MySQL: AUTO_INCREMENT counter); the snapshot file; and the
// comparison of a database (or another snapshot) with one. It is how a
// replay proves it did what the application did: the same rows in every
// table at the end. It reads through engine.Conn and writes nothing to
// the database.
package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/atomicfile"
	"github.com/dbparity/dbparity/internal/engine"
)

// Format names the file's schema.
const Format = "dbparity.snapshot/1"

// Snapshot is a database's state at one moment.
type Snapshot struct {
	Format    string     `json:"format"`
	Taken     time.Time  `json:"taken"`
	Target    string     `json:"target"` // the URL, password removed
	Database  string     `json:"database"`
	Tables    []Table    `json:"tables"`
	Sequences []Sequence `json:"sequences"`
}

// Table is one table's rows. A checksum is the sum, over the rows, of
// the first 64 bits of the md5 of the row's (or the column's) text, as a
// decimal: order-independent, and equal for equal multisets of rows.
type Table struct {
	Name     string   `json:"name"` // schema.table
	Rows     int64    `json:"rows"`
	Checksum string   `json:"checksum"`
	Columns  []Column `json:"columns"`
}

// Column is one column's checksum, and its type: the clock sets date and
// time columns, so they differ between a capture and its replay by nature.
type Column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Checksum string `json:"checksum"`
}

// Sequence is one sequence's last value (Called false: never used).
type Sequence struct {
	Name   string `json:"name"`
	Value  int64  `json:"value"`
	Called bool   `json:"called"`
}

// Take reads the state of every table and sequence the connection can see
// outside the system schemas (on MySQL: of the connection's database,
// its AUTO_INCREMENT counters as sequences). Each table is read in one
// statement (one scan), under a repeatable-read snapshot so that the
// tables agree with each other.
func Take(ctx context.Context, c engine.Conn, d engine.Dialect, url string) (*Snapshot, error) {
	s := &Snapshot{Format: Format, Taken: time.Now().UTC(), Target: url}
	if d != engine.Postgres && d != engine.MySQL {
		return nil, fmt.Errorf("snapshot reads PostgreSQL, MySQL or MariaDB, not %s", d)
	}
	if err := d.BeginSnapshot(ctx, c); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer c.Rollback(ctx)
	e := readers[d]
	if err := c.QueryRow(ctx, e.database).Scan(&s.Database); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	tables, err := listTables(ctx, c, e.tables)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		if err := t.read(ctx, c, e); err != nil {
			return nil, err
		}
		s.Tables = append(s.Tables, t.Table)
	}
	if s.Sequences, err = sequences(ctx, c, e.sequences); err != nil {
		return nil, err
	}
	return s, nil
}

// reader is how one server is read.
type reader struct {
	database, tables, sequences string
	// sum is the checksum expression of a text; row the text of a whole
	// row (aliased r) from its quoted columns; text a column's value as
	// text.
	sum  func(expr string) string
	row  func(cols []string) string
	text func(col string) string
}

var readers = map[engine.Dialect]reader{
	engine.Postgres: {
		database: "SELECT current_database()", tables: tablesSQL, sequences: sequencesSQL,
		// The sum of the first 64 bits of the md5, as numeric so that it
		// cannot overflow.
		sum: func(expr string) string {
			return "coalesce(sum(('x' || left(md5(" + expr + "), 16))::bit(64)::bigint::numeric), 0)::text"
		},
		row:  func([]string) string { return "r::text" },
		text: func(col string) string { return "r." + col + "::text" },
	},
	engine.MySQL: {
		database: "SELECT database()", tables: myTablesSQL, sequences: mySequencesSQL,
		// The same 64 bits, unsigned: a decimal sum cannot overflow.
		sum: func(expr string) string {
			return "cast(coalesce(sum(cast(conv(left(md5(" + expr + "), 16), 16, 10) AS decimal(20))), 0) AS char)"
		},
		row: func(cols []string) string {
			parts := make([]string, len(cols))
			for i, c := range cols {
				parts[i] = "quote(r." + c + ")" // NULL is the word NULL, a value is quoted
			}
			return "concat_ws(',', " + strings.Join(parts, ", ") + ")"
		},
		text: func(col string) string { return "r." + col },
	},
}

// myTablesSQL lists the base tables of the connection's database; the
// name is the table's alone, so that a replay into a database of
// another name compares.
const myTablesSQL = `SELECT t.TABLE_SCHEMA, t.TABLE_NAME, c.COLUMN_NAME, c.COLUMN_TYPE,
	concat('` + "`" + `', replace(t.TABLE_NAME, '` + "`" + `', '` + "``" + `'), '` + "`" + `'),
	concat('` + "`" + `', replace(c.COLUMN_NAME, '` + "`" + `', '` + "``" + `'), '` + "`" + `')
FROM information_schema.TABLES t JOIN information_schema.COLUMNS c
  ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME
WHERE t.TABLE_SCHEMA = database() AND t.TABLE_TYPE = 'BASE TABLE'
ORDER BY t.TABLE_NAME, c.ORDINAL_POSITION`

const mySequencesSQL = `SELECT concat(TABLE_NAME, '.auto_increment'), AUTO_INCREMENT, true
FROM information_schema.TABLES WHERE TABLE_SCHEMA = database() AND AUTO_INCREMENT IS NOT NULL ORDER BY 1`

// table is a table to read, with its columns' quoted names.
type table struct {
	Table
	quoted string
	cols   []string // quoted
}

const tablesSQL = `SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
	quote_ident(n.nspname) || '.' || quote_ident(c.relname), quote_ident(a.attname)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp\_%'
ORDER BY 1, 2, a.attnum`

func listTables(ctx context.Context, c engine.Conn, q string) ([]*table, error) {
	rows, err := c.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("snapshot: list tables: %w", err)
	}
	defer rows.Close()
	var out []*table
	for rows.Next() {
		var schema, name, col, typ, quoted, qcol string
		if err := rows.Scan(&schema, &name, &col, &typ, &quoted, &qcol); err != nil {
			return nil, fmt.Errorf("snapshot: list tables: %w", err)
		}
		full := schema + "." + name
		if strings.HasPrefix(quoted, "`") {
			full = name // MySQL: the database is the schema
		}
		if len(out) == 0 || out[len(out)-1].Name != full {
			out = append(out, &table{Table: Table{Name: full}, quoted: quoted})
		}
		t := out[len(out)-1]
		t.Columns = append(t.Columns, Column{Name: col, Type: typ})
		t.cols = append(t.cols, qcol)
	}
	return out, rows.Err()
}

func (t *table) read(ctx context.Context, c engine.Conn, e reader) error {
	exprs := []string{"count(*)", e.sum(e.row(t.cols))}
	for _, col := range t.cols {
		// A NULL must differ from every value: values get a prefix.
		exprs = append(exprs, e.sum("CASE WHEN r."+col+" IS NULL THEN 'n' ELSE concat('v', "+e.text(col)+") END"))
	}
	dest := []any{&t.Rows, &t.Checksum}
	for i := range t.Columns {
		dest = append(dest, &t.Columns[i].Checksum)
	}
	q := "SELECT " + strings.Join(exprs, ", ") + " FROM " + t.quoted + " r"
	if err := c.QueryRow(ctx, q).Scan(dest...); err != nil {
		return fmt.Errorf("snapshot: read %s: %w", t.Name, err)
	}
	return nil
}

const sequencesSQL = `SELECT schemaname || '.' || sequencename, coalesce(last_value, start_value), last_value IS NOT NULL
		FROM pg_sequences WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`

func sequences(ctx context.Context, c engine.Conn, q string) ([]Sequence, error) {
	rows, err := c.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("snapshot: sequences: %w", err)
	}
	defer rows.Close()
	var out []Sequence
	for rows.Next() {
		var s Sequence
		if err := rows.Scan(&s.Name, &s.Value, &s.Called); err != nil {
			return nil, fmt.Errorf("snapshot: sequences: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Write stores s at path atomically.
func Write(path string, s *Snapshot) error {
	err := atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		return enc.Encode(s)
	})
	if err != nil {
		return fmt.Errorf("write snapshot %s: %w", path, err)
	}
	return nil
}

// Read loads a snapshot file.
func Read(path string) (*Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s: %w", path, errors.Unwrap(err))
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s is not a snapshot file: %v", path, err)
	}
	if s.Format != Format {
		return nil, fmt.Errorf("%s is not a snapshot file (format %q, want %s)", path, s.Format, Format)
	}
	return &s, nil
}

// Verdicts of a table against the expected state.
const (
	Match     = "match"
	ClockOnly = "match apart from date/time columns" // only columns the clock sets differ
	Differs   = "differs"
	// Explained differs for a cause the replay names (its Cause): data
	// the capture does not hold, values set by the clock or at random.
	Explained = "differs for a named cause"
	Missing   = "missing" // expected, not in the database
	Extra     = "extra"   // in the database, not expected
)

// TableDiff is one table compared with its expected state.
type TableDiff struct {
	Name     string   `json:"name"`
	Verdict  string   `json:"verdict"`
	WantRows int64    `json:"want_rows"`
	GotRows  int64    `json:"got_rows"`
	Columns  []string `json:"columns,omitempty"` // the columns whose checksums differ
	Cause    string   `json:"cause,omitempty"`   // why it differs, when Explained
	// After names what it differs after, when it differs: the replay's
	// divergent statements that wrote it.
	After string `json:"after,omitempty"`
}

// Cause is why a table may end otherwise than expected.
type Cause struct {
	Why string
	// Rows: the cause explains a different number of rows too (rows the
	// capture does not hold), not only different values.
	Rows bool
}

// byName finds a table's entry by its name, schema-qualified or not.
func byName[T any](m map[string]T, name string) (T, bool) {
	v, ok := m[name]
	if _, short, found := strings.Cut(name, "."); !ok && found {
		v, ok = m[short]
	}
	return v, ok
}

// After notes, on each table that differs, what it differs after (by
// table name, schema-qualified or not): it still differs.
func (c *Comparison) After(after map[string]string) {
	for i := range c.Tables {
		t := &c.Tables[i]
		if t.Verdict != Differs {
			continue
		}
		t.After, _ = byName(after, t.Name)
	}
}

// Explain marks the tables that differ for a known cause (by table name,
// schema-qualified or not) as Explained.
func (c *Comparison) Explain(causes map[string]Cause) {
	for i := range c.Tables {
		t := &c.Tables[i]
		if t.Verdict != Differs {
			continue
		}
		cause, ok := byName(causes, t.Name)
		if ok && (cause.Rows || t.GotRows == t.WantRows) {
			t.Verdict, t.Cause = Explained, cause.Why
		}
	}
}

// Comparison is a database's state against an expected one.
type Comparison struct {
	Tables    []TableDiff `json:"tables"`
	Sequences []string    `json:"sequences,omitempty"` // "name: want 120, got 118"
}

// Compare compares got with want, table by table.
func Compare(want, got *Snapshot) Comparison {
	var c Comparison
	have := map[string]Table{}
	for _, t := range got.Tables {
		have[t.Name] = t
	}
	for _, w := range want.Tables {
		g, ok := have[w.Name]
		delete(have, w.Name)
		d := TableDiff{Name: w.Name, WantRows: w.Rows, GotRows: g.Rows}
		switch {
		case !ok:
			d.Verdict = Missing
		case g.Rows == w.Rows && g.Checksum == w.Checksum:
			d.Verdict = Match
		default:
			d.Verdict = Differs
			cols := map[string]Column{}
			for _, col := range g.Columns {
				cols[col.Name] = col
			}
			clock := g.Rows == w.Rows
			for _, col := range w.Columns {
				if gc, ok := cols[col.Name]; !ok || gc.Checksum != col.Checksum {
					d.Columns = append(d.Columns, col.Name)
					clock = clock && ok && isClock(col.Type)
				}
			}
			if clock && len(d.Columns) > 0 {
				d.Verdict = ClockOnly
			}
		}
		c.Tables = append(c.Tables, d)
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		c.Tables = append(c.Tables, TableDiff{Name: name, Verdict: Extra, GotRows: have[name].Rows})
	}
	// Rows alike column by column, paired otherwise, in a table that
	// takes values from a sequence: concurrent sessions took the values
	// in another order than when the expected state was made.
	for i := range c.Tables {
		t := &c.Tables[i]
		if t.Verdict != Differs || t.GotRows != t.WantRows || len(t.Columns) > 0 {
			continue
		}
		if seq := tableSequence(want.Sequences, t.Name); seq != "" {
			t.Verdict = Explained
			t.Cause = "its rows took values from " + seq + " in another order: concurrent sessions' inserts reach the server in any order that their commits allow"
		}
	}
	seqs := map[string]Sequence{}
	for _, s := range got.Sequences {
		seqs[s.Name] = s
	}
	for _, w := range want.Sequences {
		if g, ok := seqs[w.Name]; !ok {
			c.Sequences = append(c.Sequences, fmt.Sprintf("%s: missing", w.Name))
		} else if g.Value != w.Value || g.Called != w.Called {
			c.Sequences = append(c.Sequences, fmt.Sprintf("%s: want %d, got %d", w.Name, w.Value, g.Value))
		}
	}
	return c
}

// tableSequence names the sequence a table takes values from: by
// PostgreSQL's naming of a serial or identity column's sequence
// (schema.table_column_seq), or MySQL's AUTO_INCREMENT (table.auto_increment).
func tableSequence(seqs []Sequence, table string) string {
	_, short, _ := strings.Cut(table, ".")
	for _, q := range seqs {
		if q.Name == short+".auto_increment" || q.Name == table+".auto_increment" ||
			(strings.HasPrefix(q.Name, table+"_") && strings.HasSuffix(q.Name, "_seq")) {
			return q.Name
		}
	}
	return ""
}

// difference says how a table differs: in rows, in some columns' values,
// or only in how values are paired within rows.
func (t TableDiff) difference() string {
	switch {
	case t.GotRows != t.WantRows:
		return fmt.Sprintf("%d rows, want %d", t.GotRows, t.WantRows)
	case len(t.Columns) == 0:
		return fmt.Sprintf("%d rows alike in number, each column holding the same values, paired otherwise within rows", t.GotRows)
	}
	return fmt.Sprintf("%d rows alike in number, content differs in %s", t.GotRows, strings.Join(t.Columns, ", "))
}

// isClock tells whether a column type holds values a clock sets.
func isClock(typ string) bool {
	return strings.HasPrefix(typ, "timestamp") || strings.HasPrefix(typ, "date") || strings.HasPrefix(typ, "time") ||
		strings.HasPrefix(typ, "interval")
}

// Matching counts the tables that match (apart from clock columns too),
// and those that differ for a named cause.
func (c Comparison) Matching() (match, clock, explained, of int) {
	for _, t := range c.Tables {
		switch t.Verdict {
		case Match:
			match++
		case ClockOnly:
			clock++
		case Explained:
			explained++
		}
	}
	return match, clock, explained, len(c.Tables)
}

// Summary is one line: "end state: 9 of 9 tables match", or the tables
// that differ.
func (c Comparison) Summary() string {
	match, clock, explained, of := c.Matching()
	s := fmt.Sprintf("end state: %d of %d tables match", match+clock, of)
	if clock > 0 {
		var names []string
		for _, t := range c.Tables {
			if t.Verdict == ClockOnly {
				names = append(names, t.Name+" ("+strings.Join(t.Columns, ", ")+")")
			}
		}
		s += fmt.Sprintf(" (%d only apart from date/time columns the clock sets: %s)", clock, strings.Join(names, "; "))
	}
	if explained > 0 {
		var names []string
		for _, t := range c.Tables {
			if t.Verdict == Explained {
				names = append(names, t.Name+" ("+t.difference()+"): "+t.Cause)
			}
		}
		s += fmt.Sprintf("; %d differ for a named cause: %s", explained, strings.Join(names, "; "))
	}
	var bad []string
	for _, t := range c.Tables {
		switch t.Verdict {
		case Differs:
			d := t.Name + ": " + t.difference()
			if t.After != "" {
				d += ", " + t.After
			}
			bad = append(bad, d)
		case Missing:
			bad = append(bad, t.Name+": missing")
		case Extra:
			bad = append(bad, fmt.Sprintf("%s: not in the expected state (%d rows)", t.Name, t.GotRows))
		}
	}
	if len(bad) > 0 {
		s += "; differ: " + strings.Join(bad, "; ")
	}
	if len(c.Sequences) > 0 {
		s += "; sequences differ: " + strings.Join(c.Sequences, "; ")
	}
	return s
}
