// Package slob is the slob workload, after SLOB and pgio: per schema a
// table whose every row fills one database block, and sessions that read
// WORK_UNIT rows at a random key through the index, updating them in
// UPDATE_PCT of the operations and committing after each update. Its
// purpose is the IO path the database sees; the method is written afresh
// from its published description.
package slob

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/target"
	"github.com/dbparity/dbparity/internal/workload"
)

const (
	name    = "slob"
	version = "1"
	chunk   = 10000 // rows per load unit
)

// Transaction types.
const (
	opRead = iota
	opUpdate
)

func init() {
	workload.Register(name, func() workload.Workload {
		return &Slob{Schemas: 1, Scale: 10000, WorkUnit: 64, UpdatePct: 25}
	})
}

// Slob holds the parameters (named after slob.conf's).
type Slob struct {
	Schemas   int // schemas (tables)
	Scale     int // SCALE: rows per schema
	WorkUnit  int // WORK_UNIT: rows per operation
	UpdatePct int // UPDATE_PCT: share of operations that update
}

func (s *Slob) Meta() workload.Meta {
	return workload.Meta{
		Name:        name,
		Description: "SLOB method: random single-block reads and updates through an index, one row per block",
		Version:     version,
		LoadParams:  []string{"schemas", "scale"},
		TestsIO:     true,
	}
}

func (s *Slob) Flags(fs *flag.FlagSet) {
	fs.IntVar(&s.Schemas, "schemas", s.Schemas, "slob: schemas (one table each)")
	fs.IntVar(&s.Scale, "scale", s.Scale, "slob: SCALE, rows (blocks) per schema")
	fs.IntVar(&s.WorkUnit, "work-unit", s.WorkUnit, "slob: WORK_UNIT, rows read or updated per operation")
	fs.IntVar(&s.UpdatePct, "update-pct", s.UpdatePct, "slob: UPDATE_PCT, percent of operations that update (0-100)")
}

func (s *Slob) Validate() error {
	switch {
	case s.Schemas < 1 || s.Schemas > 1024:
		return fmt.Errorf("--schemas %d: must be between 1 and 1024", s.Schemas)
	case s.Scale < 1:
		return fmt.Errorf("--scale %d: must be at least 1", s.Scale)
	case s.WorkUnit < 1 || s.WorkUnit > s.Scale:
		return fmt.Errorf("--work-unit %d: must be between 1 and --scale (%d)", s.WorkUnit, s.Scale)
	case s.UpdatePct < 0 || s.UpdatePct > 100:
		return fmt.Errorf("--update-pct %d: must be between 0 and 100", s.UpdatePct)
	}
	return nil
}

func (s *Slob) Params() map[string]any {
	return map[string]any{"schemas": s.Schemas, "scale": s.Scale, "work_unit": s.WorkUnit, "update_pct": s.UpdatePct}
}

func (s *Slob) TxTypes() []string { return []string{"read", "update"} }

func (s *Slob) Tables() []workload.Table {
	var ts []workload.Table
	for i := 1; i <= s.Schemas; i++ {
		ts = append(ts, workload.Table{Name: table(i), ExpectedRows: int64(s.Scale)})
	}
	return ts
}

func table(schema int) string { return fmt.Sprintf("slob_%d", schema) }

// padding makes a row fill a block: on PostgreSQL with fillfactor 10 any
// row over 10% of the 8 KB page is alone on its page; on SQLite (4 KB
// pages) a row over half a page is.
func padding(d target.Dialect) int {
	if d == target.SQLite {
		return 2500
	}
	return 1000
}

func createSQL(d target.Dialect, schema int) string {
	if d == target.SQLite {
		// The rowid is the key: the table's B-tree is its index.
		return "CREATE TABLE " + table(schema) + " (id INTEGER PRIMARY KEY, n int NOT NULL, pad text NOT NULL)"
	}
	return "CREATE TABLE " + table(schema) + " (id bigint NOT NULL, n int NOT NULL, pad text NOT NULL) WITH (fillfactor = 10)"
}

func (s *Slob) Load(ctx context.Context, env *workload.LoadEnv) error {
	d := env.Target.Dialect
	var names, ddl []string
	for i := 1; i <= s.Schemas; i++ {
		names = append(names, table(i))
		ddl = append(ddl, createSQL(d, i))
		if d == target.Postgres {
			// The pad is stored plainly, never compressed or moved out of line.
			ddl = append(ddl, "ALTER TABLE "+table(i)+" ALTER COLUMN pad SET STORAGE PLAIN")
		}
	}
	c, err := workload.Recreate(ctx, env, name, names, ddl)
	if err != nil {
		return err
	}
	defer c.Close()
	var units []workload.Unit
	for sc := 1; sc <= s.Schemas; sc++ {
		for from := 1; from <= s.Scale; from += chunk {
			to := min(from+chunk-1, s.Scale)
			units = append(units, workload.Unit{Name: fmt.Sprintf("%s rows %d-%d", table(sc), from, to), Rows: int64(to - from + 1),
				Load: func(ctx context.Context, c target.Conn) (int64, error) {
					g := rand.New(rand.NewPCG(env.Seed, uint64(sc)<<32|uint64(from)))
					rows := make([][]any, 0, to-from+1)
					for id := from; id <= to; id++ {
						rows = append(rows, []any{id, 0, pad(g, padding(d))})
					}
					return c.CopyFrom(ctx, table(sc), []string{"id", "n", "pad"}, rows)
				}})
		}
	}
	if err := workload.RunUnits(ctx, env, units); err != nil {
		return err
	}
	if d == target.Postgres {
		var idx []workload.Unit
		for i := 1; i <= s.Schemas; i++ {
			idx = append(idx, workload.Unit{Name: "index " + table(i), Load: func(ctx context.Context, c target.Conn) (int64, error) {
				for _, q := range []string{"ALTER TABLE " + table(i) + " ADD PRIMARY KEY (id)", "ANALYZE " + table(i)} {
					if _, err := c.Exec(ctx, q); err != nil {
						return 0, fmt.Errorf("%s: %w", q, err)
					}
				}
				return 0, nil
			}})
		}
		if err := workload.RunUnits(ctx, env, idx); err != nil {
			return err
		}
	}
	return workload.WriteMeta(ctx, c, s.Meta(), s.Params())
}

// pad is random text, so that compressing storage cannot shrink a block.
func pad(g *rand.Rand, n int) string {
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b strings.Builder
	b.Grow(n)
	for range n {
		b.WriteByte(alnum[g.IntN(len(alnum))])
	}
	return b.String()
}

func (s *Slob) Prepare(ctx context.Context, c target.Conn, d target.Dialect) error {
	m, err := workload.ReadMeta(ctx, c, d, name)
	if err != nil {
		return err
	}
	if m.Version != version {
		return fmt.Errorf("slob version %s was loaded, this dbparity runs version %s: load again", m.Version, version)
	}
	sc, ok1 := m.Params["schemas"].(float64)
	scale, ok2 := m.Params["scale"].(float64)
	if !ok1 || !ok2 {
		return fmt.Errorf("slob load record is incomplete: load again")
	}
	s.Schemas, s.Scale = int(sc), int(scale)
	if s.WorkUnit > s.Scale {
		return fmt.Errorf("--work-unit %d is larger than the loaded --scale %d", s.WorkUnit, s.Scale)
	}
	return nil
}

// RowsPerBlock returns how many rows share a block, at most, in a
// schema's table: 1 is the layout the method needs. (PostgreSQL only:
// the ctid names the block.)
func RowsPerBlock(ctx context.Context, c target.Conn, schema int) (float64, error) {
	var rows, blocks int64
	err := c.QueryRow(ctx, "SELECT count(*), count(DISTINCT (ctid::text::point)[0]) FROM "+table(schema)).Scan(&rows, &blocks)
	if err != nil {
		return 0, err
	}
	if blocks == 0 {
		return 0, nil
	}
	return float64(rows) / float64(blocks), nil
}

// Check verifies that every schema holds its rows one per block.
func (s *Slob) Check(ctx context.Context, c target.Conn, d target.Dialect) ([]workload.CheckResult, error) {
	if err := s.Prepare(ctx, c, d); err != nil {
		return nil, err
	}
	var out []workload.CheckResult
	for i := 1; i <= s.Schemas; i++ {
		var n int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM "+table(i)).Scan(&n); err != nil {
			return nil, err
		}
		r := workload.CheckResult{Name: fmt.Sprintf("%s holds %d rows", table(i), s.Scale), OK: n == int64(s.Scale)}
		if !r.OK {
			r.Detail = fmt.Sprintf("%d rows", n)
		}
		out = append(out, r)
		if d == target.Postgres {
			per, err := RowsPerBlock(ctx, c, i)
			if err != nil {
				return nil, err
			}
			r := workload.CheckResult{Name: table(i) + ": one row per block", OK: per <= 1.0001}
			if !r.OK {
				r.Detail = fmt.Sprintf("%.2f rows per block", per)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *Slob) NewWorker(id int, seed uint64, d target.Dialect) workload.Worker {
	sc := id%s.Schemas + 1
	t := table(sc)
	return &worker{s: s, g: rand.New(rand.NewPCG(seed, 1<<40|uint64(id))),
		read:   "SELECT sum(n) FROM " + t + " WHERE id > $1 AND id <= $2",
		update: "UPDATE " + t + " SET n = n + 1 WHERE id > $1 AND id <= $2"}
}

type worker struct {
	s            *Slob
	g            *rand.Rand
	read, update string
	ops          int // operations drawn so far
	cur, key     int
}

// Next spreads UPDATE_PCT evenly over every 100 operations (as SLOB
// does), and draws a uniform random key.
func (w *worker) Next() int {
	i := w.ops % 100
	w.ops++
	w.cur = opRead
	if (i+1)*w.s.UpdatePct/100 > i*w.s.UpdatePct/100 {
		w.cur = opUpdate
	}
	w.key = w.s.WorkUnit + w.g.IntN(w.s.Scale-w.s.WorkUnit+1)
	return w.cur
}

func (w *worker) Run(ctx context.Context, c target.Conn) (workload.Outcome, error) {
	lo, hi := w.key-w.s.WorkUnit, w.key
	if w.cur == opRead {
		var sum *int64
		if err := c.QueryRow(ctx, w.read, lo, hi).Scan(&sum); err != nil {
			return workload.Outcome{}, fmt.Errorf("slob read: %w", err)
		}
		return workload.Outcome{}, nil
	}
	if err := c.Begin(ctx, target.ReadWrite); err != nil {
		return workload.Outcome{}, err
	}
	if _, err := c.Exec(ctx, w.update, lo, hi); err != nil {
		c.Rollback(context.WithoutCancel(ctx))
		return workload.Outcome{}, fmt.Errorf("slob update: %w", err)
	}
	start := time.Now()
	err := c.Commit(ctx)
	return workload.Outcome{Commit: time.Since(start)}, err
}
