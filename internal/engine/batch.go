package engine

import (
	"context"
	"errors"
	"fmt"
)

// Batch is statements a transaction sends together because none needs
// another's result: PostgreSQL gets them in one round trip (pipeline
// mode), SQLite one after another. Each statement is sent as it is, so
// the server does the same work as when they go one by one. A worker
// keeps one Batch and resets it: the items' storage is reused.
type Batch struct {
	items []BatchItem
}

// BatchItem is one statement of a batch and what came back.
type BatchItem struct {
	SQL  string
	Args []any
	// Dest, when set, receives the first row (a QueryRow); NoRows is set
	// when there was none.
	Dest   []any
	NoRows bool
	// Each, when set, is called for every row (a Query).
	Each func(Rows) error
	// Affected is the rows an Exec changed; -1 where the dialect does not
	// report it (MySQL's batch that also returns rows, read by the driver:
	// mysqlConn.SendBatch).
	Affected int64
	// begin opens a transaction in this mode (Begin).
	begin *TxMode
}

var readWrite, readOnly = ReadWrite, ReadOnly

// Reset empties the batch, keeping its storage.
func (b *Batch) Reset() {
	clear(b.items)
	b.items = b.items[:0]
}

// Len is the number of statements queued.
func (b *Batch) Len() int { return len(b.items) }

// Item returns the i-th statement queued, with its result once sent.
func (b *Batch) Item(i int) *BatchItem { return &b.items[i] }

func (b *Batch) add(it BatchItem) int {
	b.items = append(b.items, it)
	return len(b.items) - 1
}

// Begin queues the start of a transaction.
func (b *Batch) Begin(mode TxMode) int {
	m := &readWrite
	if mode == ReadOnly {
		m = &readOnly
	}
	return b.add(BatchItem{begin: m})
}

// Exec queues a statement whose rows are not read.
func (b *Batch) Exec(sql string, args ...any) int { return b.add(BatchItem{SQL: sql, Args: args}) }

// QueryRow queues a statement whose first row goes into dest.
func (b *Batch) QueryRow(sql string, dest []any, args ...any) int {
	return b.add(BatchItem{SQL: sql, Args: args, Dest: dest})
}

// Query queues a statement whose every row goes to each.
func (b *Batch) Query(sql string, each func(Rows) error, args ...any) int {
	return b.add(BatchItem{SQL: sql, Args: args, Each: each})
}

// SendBatch runs b's statements one after another: SQLite is in the
// process, there is no round trip to save.
func (s *sqliteConn) SendBatch(ctx context.Context, b *Batch) error { return b.runEach(ctx, s) }

// runEach runs b's statements one after another on c.
func (b *Batch) runEach(ctx context.Context, c Conn) error {
	for i := range b.items {
		it := &b.items[i]
		var err error
		switch {
		case it.begin != nil:
			err = c.Begin(ctx, *it.begin)
		case it.Dest != nil:
			if err = c.QueryRow(ctx, it.SQL, it.Args...).Scan(it.Dest...); errors.Is(err, ErrNoRows) {
				it.NoRows, err = true, nil
			}
		case it.Each != nil:
			var rows Rows
			if rows, err = c.Query(ctx, it.SQL, it.Args...); err == nil {
				for err == nil && rows.Next() {
					err = it.Each(rows)
				}
				if err == nil {
					err = rows.Err()
				}
				rows.Close()
			}
		default:
			it.Affected, err = c.Exec(ctx, it.SQL, it.Args...)
		}
		if err != nil {
			return fmt.Errorf("statement %d of the batch: %w", i+1, err)
		}
	}
	return nil
}
