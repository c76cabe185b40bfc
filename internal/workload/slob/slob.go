// Package slob is the slob workload, after SLOB and pgio: per schema a
// table whose every row fills one database block, and sessions that read
// WORK_UNIT rows at a random key through the index, updating them in
// UPDATE_PCT of the operations and committing after each update. Its
// purpose is the IO path the database sees; the method is written afresh
// from its published description.
package slob

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/workload"
)

const (
	name    = "slob"
	version = "2"
	chunk   = 10000 // rows per load unit
)

// Transaction types.
const (
	opRead = iota
	opUpdate
)

func init() {
	workload.Register(name, func() workload.Workload {
		return &Slob{Schemas: 1, Scale: 10000, WorkUnit: 64, UpdatePct: 25, ThreadsPerSchema: 1,
			RedoStress: "lite", ThinkEvery: 1}
	})
}

// Slob holds the parameters (named after slob.conf's).
type Slob struct {
	Schemas   int // schemas (tables)
	Scale     int // SCALE: rows per schema
	WorkUnit  int // WORK_UNIT: rows per operation
	UpdatePct int // UPDATE_PCT: share of operations that update
	// ThreadsPerSchema (THREADS_PER_SCHEMA): sessions per schema when
	// --users is not given.
	ThreadsPerSchema int
	// HotSchema (HOT_SCHEMA_FREQUENCY): every HotSchema-th operation of
	// every session goes to slob_1; 0 is off.
	HotSchema int
	// RedoStress (REDO_STRESS): "lite" updates a counter, "heavy" rewrites
	// the whole row, so every update logs a block's worth of redo.
	RedoStress string
	// Think time (THINK_TM_MIN, THINK_TM_MAX) after every ThinkEvery-th
	// operation (THINK_TM_FREQUENCY), uniform in [ThinkMin, ThinkMax].
	ThinkTime          string
	ThinkMin, ThinkMax time.Duration
	ThinkEvery         int
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
	fs.IntVar(&s.ThreadsPerSchema, "threads-per-schema", s.ThreadsPerSchema, "slob: THREADS_PER_SCHEMA, sessions per schema (users = schemas × this unless --users is given)")
	fs.IntVar(&s.HotSchema, "hot-schema", s.HotSchema, "slob: HOT_SCHEMA_FREQUENCY, every Nth operation of every session goes to slob_1 (0: off)")
	fs.StringVar(&s.RedoStress, "redo-stress", s.RedoStress, "slob: REDO_STRESS, lite (update a counter) or heavy (rewrite the whole row)")
	fs.StringVar(&s.ThinkTime, "think-time", s.ThinkTime, "slob: THINK_TM_MIN[:THINK_TM_MAX], pause between operations, e.g. 5ms or 1ms:10ms (none by default)")
	fs.IntVar(&s.ThinkEvery, "think-every", s.ThinkEvery, "slob: THINK_TM_FREQUENCY, think after every Nth operation")
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
	case s.ThreadsPerSchema < 1 || s.ThreadsPerSchema > 1024:
		return fmt.Errorf("--threads-per-schema %d: must be between 1 and 1024", s.ThreadsPerSchema)
	case s.HotSchema < 0:
		return fmt.Errorf("--hot-schema %d: must be 0 (off) or more", s.HotSchema)
	case s.RedoStress != "lite" && s.RedoStress != "heavy":
		return fmt.Errorf("--redo-stress %q: must be lite or heavy", s.RedoStress)
	case s.ThinkEvery < 1:
		return fmt.Errorf("--think-every %d: must be at least 1", s.ThinkEvery)
	}
	var err error
	s.ThinkMin, s.ThinkMax, err = parseThink(s.ThinkTime)
	return err
}

// parseThink reads MIN or MIN:MAX.
func parseThink(v string) (lo, hi time.Duration, err error) {
	if v == "" {
		return 0, 0, nil
	}
	a, b, ranged := strings.Cut(v, ":")
	if lo, err = time.ParseDuration(a); err == nil && ranged {
		hi, err = time.ParseDuration(b)
	} else {
		hi = lo
	}
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("--think-time %q: give a duration or MIN:MAX, e.g. 5ms or 1ms:10ms", v)
	case lo < 0 || hi < lo:
		return 0, 0, fmt.Errorf("--think-time %q: need 0 <= MIN <= MAX", v)
	}
	return lo, hi, nil
}

func (s *Slob) Params() map[string]any {
	return map[string]any{"schemas": s.Schemas, "scale": s.Scale, "work_unit": s.WorkUnit, "update_pct": s.UpdatePct,
		"threads_per_schema": s.ThreadsPerSchema, "hot_schema": s.HotSchema, "redo_stress": s.RedoStress,
		"think_time": s.ThinkTime, "think_every": s.ThinkEvery}
}

// Sessions: SLOB runs THREADS_PER_SCHEMA sessions on every schema.
func (s *Slob) Sessions() (int, string) { return s.Schemas * s.ThreadsPerSchema, "threads-per-schema" }

// Shares: session id works on schema id mod schemas + 1.
func (s *Slob) Shares() (int, string) { return s.Schemas, "schemas" }

func (s *Slob) TxTypes() []string { return []string{"read", "update"} }

func (s *Slob) Tables() []workload.Table {
	var ts []workload.Table
	for i := 1; i <= s.Schemas; i++ {
		ts = append(ts, workload.Table{Name: table(i), ExpectedRows: int64(s.Scale), Where: engine.Workload})
	}
	return ts
}

func table(schema int) string { return fmt.Sprintf("slob_%d", schema) }

func (s *Slob) Load(ctx context.Context, env *workload.LoadEnv) error {
	d := env.Target.Dialect
	var names, ddl []string
	var layouts []engine.BlockTable
	for i := 1; i <= s.Schemas; i++ {
		l := d.BlockTable(table(i))
		layouts = append(layouts, l)
		names = append(names, l.Name)
		ddl = append(ddl, l.Create...)
	}
	c, err := workload.Recreate(ctx, env, name, names, ddl)
	if err != nil {
		return err
	}
	defer c.Close()
	var units []workload.Unit
	for sc := 1; sc <= s.Schemas; sc++ {
		l := layouts[sc-1]
		for from := 1; from <= s.Scale; from += chunk {
			to := min(from+chunk-1, s.Scale)
			units = append(units, workload.Unit{Name: fmt.Sprintf("%s rows %d-%d", l.Name, from, to), Rows: int64(to - from + 1),
				Load: func(ctx context.Context, c engine.Conn) (int64, error) {
					g := rand.New(rand.NewPCG(env.Seed, uint64(sc)<<32|uint64(from)))
					p := newPermutation(uint64(s.Scale), env.Seed^uint64(sc))
					rows := make([][]any, 0, to-from+1)
					for pos := from; pos <= to; pos++ {
						id := int64(p.at(uint64(pos-1))) + 1
						rows = l.AppendRow(rows, int64(pos), id, pad(g, l.Pad))
					}
					// The workload's rows, fillers not counted.
					if _, err := c.CopyFrom(ctx, l.Name, l.Columns, rows); err != nil {
						return 0, err
					}
					return int64(to - from + 1), nil
				}})
		}
	}
	if err := workload.RunUnits(ctx, env, units); err != nil {
		return err
	}
	var idx []workload.Unit
	for _, l := range layouts {
		if len(l.Keys) > 0 {
			idx = append(idx, workload.Unit{Name: "index " + l.Name, Load: func(ctx context.Context, c engine.Conn) (int64, error) {
				return 0, l.BuildKeys(ctx, c)
			}})
		}
	}
	restore, err := layouts[0].PrepareKeys(ctx, c)
	if err != nil {
		return err
	}
	err = workload.RunUnits(ctx, env, idx)
	if rerr := restore(); rerr != nil && err == nil {
		err = rerr
	} else if rerr != nil {
		err = fmt.Errorf("%w (and %v)", err, rerr)
	}
	if err != nil {
		return err
	}
	idx = idx[:0]
	for _, l := range layouts {
		if len(l.Index) > 0 {
			idx = append(idx, workload.Unit{Name: "index " + l.Name + " on id", Load: func(ctx context.Context, c engine.Conn) (int64, error) {
				return 0, l.BuildIndex(ctx, c)
			}})
		}
	}
	if err := workload.RunUnits(ctx, env, idx); err != nil {
		return err
	}
	if err := settle(ctx, env, layouts); err != nil {
		return err
	}
	if cp := d.Checkpoint(); cp != "" {
		// Write the load's dirty blocks now, not during the first run. It
		// needs superuser or pg_checkpoint; without, the server's own
		// checkpoint will do it later.
		if _, err := c.Exec(ctx, cp); err != nil {
			env.Note(fmt.Sprintf("%s after the load: %v (the first run may write the load's blocks)", cp, err))
		}
	}
	// One row per block of the table, counted where the engine can tell
	// (the rows' own blocks): a load that does not achieve it is refused,
	// as the method's reads would not be one block each.
	for _, l := range layouts {
		var total string
		if blocks := d.TableBytes(ctx, c, l.Name) / int64(l.BlockSize); blocks > 0 {
			total = fmt.Sprintf(", %d blocks with its index", blocks)
		}
		per, err := l.RowsPerBlock(ctx, c, d)
		switch {
		case errors.Is(err, engine.ErrNoBlockCount):
			env.Note(fmt.Sprintf("%s: %d rows%s (blocks per row not countable here)", l.Name, s.Scale, total))
		case err != nil:
			return fmt.Errorf("%s: count its rows per block: %w", l.Name, err)
		case per > 1.0001:
			return fmt.Errorf("%s: %.2f rows per block of %d KB after the load: SLOB's method needs one row per block, so that each read is one block",
				l.Name, per, l.BlockSize/1024)
		default:
			env.Note(fmt.Sprintf("%s: %d rows, %.2f per block of %d KB (the method's one row per block)%s",
				l.Name, s.Scale, per, l.BlockSize/1024, total))
		}
	}
	return workload.WriteMeta(ctx, c, s.Meta(), s.Params())
}

// settle runs each table's Settle statement (VACUUM FREEZE on
// PostgreSQL) on up to env.Workers connections: VACUUM runs outside a
// transaction, so not as load units.
func settle(ctx context.Context, env *workload.LoadEnv, layouts []engine.BlockTable) error {
	next := make(chan engine.BlockTable, len(layouts))
	for _, l := range layouts {
		if l.Settle != "" {
			next <- l
		}
	}
	close(next)
	errs := make(chan error, len(layouts))
	var wg sync.WaitGroup
	for range max(1, min(env.Workers, len(next))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := env.Target.Connect(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for l := range next {
				if _, err := c.Exec(ctx, l.Settle); err != nil {
					errs <- fmt.Errorf("%s: %w", l.Settle, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
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

func (s *Slob) Prepare(ctx context.Context, c engine.Conn, d engine.Dialect) error {
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

// Check verifies that every schema holds its rows, one per block where
// the dialect can count blocks.
func (s *Slob) Check(ctx context.Context, c engine.Conn, d engine.Dialect) ([]workload.CheckResult, error) {
	if err := s.Prepare(ctx, c, d); err != nil {
		return nil, err
	}
	var out []workload.CheckResult
	for i := 1; i <= s.Schemas; i++ {
		var n int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM "+table(i)+" WHERE "+engine.Workload).Scan(&n); err != nil {
			return nil, err
		}
		r := workload.CheckResult{Name: fmt.Sprintf("%s holds %d rows", table(i), s.Scale), OK: n == int64(s.Scale)}
		if !r.OK {
			r.Detail = fmt.Sprintf("%d rows", n)
		}
		out = append(out, r)
		per, err := d.BlockTable(table(i)).RowsPerBlock(ctx, c, d)
		if errors.Is(err, engine.ErrNoBlockCount) {
			continue
		}
		if err != nil {
			return nil, err
		}
		r = workload.CheckResult{Name: table(i) + ": one row per block", OK: per <= 1.0001}
		if !r.OK {
			r.Detail = fmt.Sprintf("%.2f rows per block", per)
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *Slob) NewWorker(id int, seed uint64, d engine.Dialect) workload.Worker {
	g := rand.New(rand.NewPCG(seed, 1<<40|uint64(id)))
	w := &worker{s: s, g: g, own: s.statements(id%s.Schemas + 1), hot: s.statements(1), session: d.BlockTable(table(1)).Session}
	if s.RedoStress == "heavy" {
		n := d.BlockTable(table(1)).Pad
		w.pads = pad(g, 2*n)
		w.padLen = n
	}
	return w
}

// statements are the SQL of one schema's operations.
type statements struct{ read, update, heavy string }

func (s *Slob) statements(schema int) statements {
	t := table(schema)
	return statements{
		read:   "SELECT sum(n) FROM " + t + " WHERE id > $1 AND id <= $2",
		update: "UPDATE " + t + " SET n = n + 1 WHERE id > $1 AND id <= $2",
		heavy:  "UPDATE " + t + " SET n = n + 1, pad = $3 WHERE id > $1 AND id <= $2",
	}
}

type worker struct {
	s        *Slob
	g        *rand.Rand
	own, hot statements
	pads     string // REDO_STRESS=heavy: new row contents are windows of it
	padLen   int
	ops      int // operations drawn so far
	cur, key int
	onHot    bool
	// session are the layout's statements for each new connection, run
	// before its first operation; set is the connection they last ran on.
	session []string
	set     engine.Conn
}

// Next spreads UPDATE_PCT evenly over every 100 operations (as SLOB
// does), sends every HotSchema-th operation to slob_1, and draws a
// uniform random key.
func (w *worker) Next() int {
	i := w.ops % 100
	w.ops++
	w.cur = opRead
	if (i+1)*w.s.UpdatePct/100 > i*w.s.UpdatePct/100 {
		w.cur = opUpdate
	}
	w.onHot = w.s.HotSchema > 0 && w.ops%w.s.HotSchema == 0
	w.key = w.s.WorkUnit + w.g.IntN(w.s.Scale-w.s.WorkUnit+1)
	return w.cur
}

// Think pauses after every ThinkEvery-th operation.
func (w *worker) Think() time.Duration {
	if w.s.ThinkMax == 0 || w.ops%w.s.ThinkEvery != 0 {
		return 0
	}
	return w.s.ThinkMin + time.Duration(w.g.Int64N(int64(w.s.ThinkMax-w.s.ThinkMin)+1))
}

func (w *worker) Run(ctx context.Context, c engine.Conn) (workload.Outcome, error) {
	if w.set != c {
		for _, q := range w.session {
			if _, err := c.Exec(ctx, q); err != nil {
				return workload.Outcome{}, fmt.Errorf("slob session: %s: %w", q, err)
			}
		}
		w.set = c
	}
	lo, hi := w.key-w.s.WorkUnit, w.key
	st := w.own
	if w.onHot {
		st = w.hot
	}
	if w.cur == opRead {
		var sum *int64
		if err := c.QueryRow(ctx, st.read, lo, hi).Scan(&sum); err != nil {
			return workload.Outcome{}, fmt.Errorf("slob read: %w", err)
		}
		return workload.Outcome{}, nil
	}
	if err := c.Begin(ctx, engine.ReadWrite); err != nil {
		return workload.Outcome{}, err
	}
	var err error
	if w.pads != "" {
		// A different window each time: the new row shares no prefix or
		// suffix with the old one, which PostgreSQL would leave out of WAL.
		off := w.g.IntN(w.padLen)
		_, err = c.Exec(ctx, st.heavy, lo, hi, w.pads[off:off+w.padLen])
	} else {
		_, err = c.Exec(ctx, st.update, lo, hi)
	}
	if err != nil {
		c.Rollback(context.WithoutCancel(ctx))
		return workload.Outcome{}, fmt.Errorf("slob update: %w", err)
	}
	start := time.Now()
	err = c.Commit(ctx)
	return workload.Outcome{Commit: time.Since(start)}, err
}

// permutation is a keyed bijection of [0, n): loading rows in the order
// of their positions with id = at(position) scatters neighbouring keys
// over the table, so WORK_UNIT consecutive keys are WORK_UNIT random
// blocks, never a run the OS could read ahead. A four-round Feistel
// network on the smallest even power of two not below n, walking cycles
// back into [0, n), needs no memory and at most a few rounds per value.
type permutation struct {
	n, half uint64 // half: bits of each half
	key     uint64
}

func newPermutation(n, key uint64) permutation {
	bits := uint64(1)
	for uint64(1)<<(2*bits) < n {
		bits++
	}
	return permutation{n: n, half: bits, key: key}
}

func (p permutation) at(x uint64) uint64 {
	for {
		x = p.feistel(x)
		if x < p.n {
			return x
		}
	}
}

func (p permutation) feistel(x uint64) uint64 {
	mask := uint64(1)<<p.half - 1
	l, r := x>>p.half, x&mask
	for round := uint64(0); round < 4; round++ {
		l, r = r, l^(mix(r^p.key+round*0x9e3779b97f4a7c15)&mask)
	}
	return l<<p.half | r
}

// mix is splitmix64's finaliser.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// ThinkFlag names --think-time when it is set: a target rate replaces it.
func (s *Slob) ThinkFlag() string {
	if s.ThinkMax > 0 {
		return "think-time"
	}
	return ""
}

// ThinkScale is 0: slob's pauses are its own parameters (think_time),
// not a specification's times.
func (s *Slob) ThinkScale() float64 { return 0 }
