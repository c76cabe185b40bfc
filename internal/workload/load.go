package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
)

// Progress counts the rows a load has written, for a progress bar, and
// keeps the loader's notes to print once the bar is gone.
type Progress struct {
	Done  atomic.Int64
	Total atomic.Int64

	mu    sync.Mutex
	notes []string
}

// Note keeps a line for the load's report.
func (p *Progress) Note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, s)
}

// Notes returns the lines kept by Note.
func (p *Progress) Notes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.notes...)
}

// Unit is one independent piece of a load: it generates its rows from the
// load's seed alone, so units can run on any worker in any order.
type Unit struct {
	Name string
	Rows int64 // expected rows, for progress
	Load func(ctx context.Context, c engine.Conn) (rows int64, err error)
}

// RunUnits loads units on up to workers connections, each unit in its own
// transaction. The first error stops the load.
func RunUnits(ctx context.Context, env *LoadEnv, units []Unit) error {
	workers := max(1, min(env.Workers, len(units)))
	if !env.Target.Dialect.ConcurrentWriters() {
		workers = 1
	}
	if env.Progress != nil {
		var total int64
		for _, u := range units {
			total += u.Rows
		}
		env.Progress.Total.Add(total)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan Unit)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- loadWorker(ctx, env, next)
		}()
	}
feed:
	for _, u := range units {
		select {
		case next <- u:
		case <-ctx.Done():
			break feed
		case err := <-errs: // a worker failed: stop feeding
			errs <- err
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

func loadWorker(ctx context.Context, env *LoadEnv, units <-chan Unit) error {
	c, err := env.Target.Connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	for u := range units {
		if err := c.Begin(ctx, engine.ReadWrite); err != nil {
			return fmt.Errorf("load %s: %w", u.Name, err)
		}
		n, err := u.Load(ctx, c)
		if err == nil {
			err = c.Commit(ctx)
		}
		if err != nil {
			c.Rollback(context.Background())
			return fmt.Errorf("load %s: %w", u.Name, err)
		}
		if env.Progress != nil {
			// Correct the estimate with what the unit really wrote.
			env.Progress.Total.Add(n - u.Rows)
			env.Progress.Done.Add(n)
		}
	}
	return nil
}

// MetaTable records which workload was loaded, with which parameters, so
// that run and check use what is really in the database.
const MetaTable = "dbparity_meta"

// LoadedMeta is a row of MetaTable.
type LoadedMeta struct {
	Workload string
	Version  string
	Params   map[string]any
	LoadedAt time.Time
}

// WriteMeta records a finished load; call it last, so that a load that
// failed halfway leaves no record and run refuses to use its tables.
func WriteMeta(ctx context.Context, c engine.Conn, m Meta, params map[string]any) error {
	if _, err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+MetaTable+
		" (workload varchar(64) PRIMARY KEY, version varchar(32), params text, loaded_at varchar(40))"); err != nil {
		return fmt.Errorf("create %s: %w", MetaTable, err)
	}
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	if _, err := c.Exec(ctx, "DELETE FROM "+MetaTable+" WHERE workload = $1", m.Name); err != nil {
		return fmt.Errorf("update %s: %w", MetaTable, err)
	}
	_, err = c.Exec(ctx, "INSERT INTO "+MetaTable+" (workload, version, params, loaded_at) VALUES ($1, $2, $3, $4)",
		m.Name, m.Version, string(p), time.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("update %s: %w", MetaTable, err)
	}
	return nil
}

// ForgetMeta removes a workload's record before its tables are dropped.
func ForgetMeta(ctx context.Context, c engine.Conn, d engine.Dialect, name string) error {
	ok, err := d.TableExists(ctx, c, MetaTable)
	if err != nil || !ok {
		return err
	}
	_, err = c.Exec(ctx, "DELETE FROM "+MetaTable+" WHERE workload = $1", name)
	return err
}

// ReadMeta returns the record of a finished load, or an error wrapping
// ErrNotLoaded.
func ReadMeta(ctx context.Context, c engine.Conn, d engine.Dialect, name string) (*LoadedMeta, error) {
	ok, err := d.TableExists(ctx, c, MetaTable)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, ErrNotLoaded)
	}
	var m LoadedMeta
	var params, at string
	err = c.QueryRow(ctx, "SELECT workload, version, params, loaded_at FROM "+MetaTable+" WHERE workload = $1", name).
		Scan(&m.Workload, &m.Version, &params, &at)
	if err == engine.ErrNoRows {
		return nil, fmt.Errorf("%s: %w", name, ErrNotLoaded)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", MetaTable, err)
	}
	if err := json.Unmarshal([]byte(params), &m.Params); err != nil {
		return nil, fmt.Errorf("read %s: bad params: %w", MetaTable, err)
	}
	m.LoadedAt, _ = time.Parse(time.RFC3339, at)
	return &m, nil
}

// Recreate starts a load: it forgets the workload's earlier load first (so
// a load that fails halfway is never measured), drops its tables and runs
// the DDL. It returns the connection, for WriteMeta when the load is done.
func Recreate(ctx context.Context, env *LoadEnv, workload string, tables, ddl []string) (engine.Conn, error) {
	c, err := env.Target.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := ForgetMeta(ctx, c, env.Target.Dialect, workload); err != nil {
		c.Close()
		return nil, err
	}
	for _, t := range tables {
		if _, err := c.Exec(ctx, "DROP TABLE IF EXISTS "+t); err != nil {
			c.Close()
			return nil, fmt.Errorf("drop %s: %w", t, err)
		}
	}
	for _, q := range ddl {
		if _, err := c.Exec(ctx, q); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", strings.Join(strings.Fields(q)[:min(3, len(strings.Fields(q)))], " "), err)
		}
	}
	return c, nil
}
