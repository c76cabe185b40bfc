package engine

import (
	"context"
	"errors"
	"fmt"
)

// BlockTable is how a dialect stores a table with one row per database
// block and reaches its rows through an index on id in an order unrelated
// to where they are stored: the layout of SLOB's method. Rows are loaded
// in Columns' order: pos (where the table is stored in key order, the
// load position, so that neighbouring ids are far apart), id, n, pad.
type BlockTable struct {
	Name string
	// Create makes the empty table; Keys index it once it is loaded;
	// Index are keys built after Keys, with PrepareKeys' settings
	// restored.
	Create, Keys, Index []string
	Columns             []string
	// Pad is the length of the pad text that makes a row fill a block.
	Pad int
	// BlockSize is the block's (page's) size in bytes.
	BlockSize int
	// Settle is the statement run on each table after the load so that
	// the first reads of a run neither dirty nor write blocks and the
	// planner knows the table ("" for none).
	Settle string
	// Session are the statements each session runs once on its
	// connection before its first operation, so that the planner reads
	// a range of keys as the method does: row by row through the index,
	// one block read at a time.
	Session []string
	// fillFactor is InnoDB's innodb_fill_factor while Keys build the
	// index: a sorted index build fills a page only this far.
	fillFactor int
	// fillers: each row is followed in key order by a filler row (the
	// negated id, never read by the workload), so that the two rows
	// InnoDB keeps at least on a page are one of the workload's.
	fillers bool
}

// AppendRow appends the row of id loaded at position pos (from 1) to
// rows in Columns' order, with its filler where the layout has them.
func (b BlockTable) AppendRow(rows [][]any, pos, id int64, pad string) [][]any {
	if b.Columns[0] != "pos" {
		return append(rows, []any{id, 0, pad})
	}
	if !b.fillers {
		return append(rows, []any{pos, id, 0, pad})
	}
	return append(rows, []any{2*pos - 1, id, 0, pad}, []any{2 * pos, -id, 0, pad})
}

// Workload is the condition that selects the workload's rows, fillers
// left out: ids are positive.
const Workload = "id > 0"

// BlockTable is the one-row-per-block layout of table name.
func (d Dialect) BlockTable(name string) BlockTable {
	switch d {
	case SQLite:
		// The rowid is the key: the table's B-tree is its index. A row
		// over half a 4 KB page is alone on its page.
		return BlockTable{Name: name, BlockSize: 4096, Pad: 2500, Columns: []string{"id", "n", "pad"},
			Create: []string{"CREATE TABLE " + name + " (id INTEGER PRIMARY KEY, n int NOT NULL, pad text NOT NULL)"}}
	case MySQL:
		// InnoDB stores a table in its primary key's B-tree and its
		// sorted index build puts at least two rows of any size on a
		// 16 KB page: the key is the load position, built after the load
		// with innodb_fill_factor 10, so that each leaf page holds two
		// 1,000-byte rows: one of the workload's and its filler. Reads go
		// through a secondary index on id, as SLOB's go through Oracle's,
		// built after at the server's fill factor: at 10 its leaves would
		// outgrow a small buffer pool, and each row would cost a read of
		// an index leaf beside its own block.
		return BlockTable{Name: name, BlockSize: 16384, Pad: 1000, Columns: []string{"pos", "id", "n", "pad"}, fillFactor: 10, fillers: true,
			Create: []string{"CREATE TABLE " + name + " (pos bigint NOT NULL, id bigint NOT NULL, n int NOT NULL, pad varchar(1000) NOT NULL)" +
				" ENGINE=InnoDB ROW_FORMAT=DYNAMIC"},
			Keys:   []string{"ALTER TABLE " + name + " ADD PRIMARY KEY (pos)"},
			Index:  []string{"ALTER TABLE " + name + " ADD UNIQUE KEY " + name + "_id (id)"},
			Settle: "ANALYZE TABLE " + name}
	}
	// Fillfactor 10: any row over 10% of the 8 KB page is alone on its
	// page; the pad is stored plainly, never compressed or moved out of
	// line. VACUUM FREEZE sets every row's hint bits now. From about 60
	// keys (on 100,000 rows) the planner reads a range with a bitmap heap
	// scan, which sorts the blocks and prefetches them with posix_fadvise
	// (effective_io_concurrency): more than one read in flight per
	// session. Bitmap scans are off in slob's sessions, so that any
	// WORK_UNIT is an index scan of single-block reads.
	return BlockTable{Session: []string{"SET enable_bitmapscan = off"}, Name: name, BlockSize: 8192, Pad: 1000, Columns: []string{"id", "n", "pad"},
		Create: []string{"CREATE TABLE " + name + " (id bigint NOT NULL, n int NOT NULL, pad text NOT NULL) WITH (fillfactor = 10)",
			"ALTER TABLE " + name + " ALTER COLUMN pad SET STORAGE PLAIN"},
		Keys:   []string{"ALTER TABLE " + name + " ADD PRIMARY KEY (id)"},
		Settle: "VACUUM (FREEZE, ANALYZE) " + name}
}

// PrepareKeys sets what the layout's index builds need on the server
// (InnoDB's fill factor, a global) before any table's BuildKeys; restore
// puts it back once all are built, and says so when it cannot: the
// server would then build every later index, the load's own and any
// other, at the layout's fill factor. restore is never nil.
func (b BlockTable) PrepareKeys(ctx context.Context, c Conn) (restore func() error, err error) {
	none := func() error { return nil }
	if b.fillFactor == 0 {
		return none, nil
	}
	var was int64
	if err := c.QueryRow(ctx, "SELECT @@GLOBAL.innodb_fill_factor").Scan(&was); err != nil {
		return none, fmt.Errorf("read innodb_fill_factor: %w", err)
	}
	if _, err := c.Exec(ctx, fmt.Sprintf("SET GLOBAL innodb_fill_factor = %d", b.fillFactor)); err != nil {
		return none, fmt.Errorf("SET GLOBAL innodb_fill_factor = %d (one row per page needs it while the keys are built; grant SUPER or SYSTEM_VARIABLES_ADMIN): %w", b.fillFactor, err)
	}
	return func() error {
		set := fmt.Sprintf("SET GLOBAL innodb_fill_factor = %d", was)
		if _, err := c.Exec(context.WithoutCancel(ctx), set); err != nil {
			return fmt.Errorf("innodb_fill_factor is still %d on the server after the key builds (run %s): %w", b.fillFactor, set, err)
		}
		return nil
	}, nil
}

// BuildKeys runs b.Keys on c, between PrepareKeys and its restore.
func (b BlockTable) BuildKeys(ctx context.Context, c Conn) error { return execAll(ctx, c, b.Keys) }

// BuildIndex runs b.Index on c, after PrepareKeys' restore.
func (b BlockTable) BuildIndex(ctx context.Context, c Conn) error { return execAll(ctx, c, b.Index) }

func execAll(ctx context.Context, c Conn, stmts []string) error {
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// ErrNoBlockCount is returned where the dialect cannot count a table's
// blocks.
var ErrNoBlockCount = errors.New("the dialect cannot count a table's blocks")

// RowsPerBlock is the table's workload rows over the blocks that hold
// the table: 1 is the layout the method needs. PostgreSQL names each
// row's block (ctid); InnoDB counts its primary key's leaf pages (the
// table's rows, fillers included) after ANALYZE TABLE.
func (b BlockTable) RowsPerBlock(ctx context.Context, c Conn, d Dialect) (float64, error) {
	var rows, blocks int64
	var err error
	switch d {
	case Postgres:
		err = c.QueryRow(ctx, "SELECT count(*), count(DISTINCT (ctid::text::point)[0]) FROM "+b.Name).Scan(&rows, &blocks)
	case MySQL:
		if _, err = c.Exec(ctx, "ANALYZE TABLE "+b.Name); err != nil {
			return 0, err
		}
		if err = c.QueryRow(ctx, "SELECT count(*) FROM "+b.Name+" WHERE "+Workload).Scan(&rows); err != nil {
			return 0, err
		}
		err = c.QueryRow(ctx, "SELECT stat_value FROM mysql.innodb_index_stats WHERE database_name = database()"+
			" AND table_name = $1 AND index_name = 'PRIMARY' AND stat_name = 'n_leaf_pages'", b.Name).Scan(&blocks)
	default:
		return 0, ErrNoBlockCount
	}
	if err != nil || blocks == 0 {
		return 0, err
	}
	return float64(rows) / float64(blocks), nil
}

// Checkpoint is the statement that writes the database's dirty blocks
// now ("" where the dialect has none to give: InnoDB flushes on its own).
func (d Dialect) Checkpoint() string {
	if d == Postgres {
		return "CHECKPOINT"
	}
	return ""
}
