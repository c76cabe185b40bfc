package runner

import (
	"context"
	"fmt"
	"os"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/snapshot"
)

// SnapshotOptions are the options of `dbparity snapshot`.
type SnapshotOptions struct {
	Common
	Out   string
	Force bool
}

// Snapshot records the target's end state: every table's rows and
// sequence's value (docs/replay.md uses it to verify a replay).
func Snapshot(ctx context.Context, o SnapshotOptions) error {
	if o.Target.URL == "" && (o.Target.Managed == "" || o.Target.PGData == "") {
		return usage("snapshot reads a database you name: --target postgres://... or mysql://... (or --managed postgres --pg-data DIR)")
	}
	if _, err := os.Stat(o.Out); err == nil && !o.Force {
		return usage("--out %s exists: choose another file or pass --force to replace it", o.Out)
	}
	t, err := openTarget(ctx, o.Target)
	if err != nil {
		return err
	}
	defer t.close()
	if t.Dialect == engine.SQLite {
		return usage("snapshot reads PostgreSQL, MySQL or MariaDB (a replay's target); %s is %s", t.URL, t.Dialect)
	}
	// A connection of dbparity's own: a capture of the server's log
	// leaves it out.
	c, err := t.ConnectCollector(ctx, snapshotApp)
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := snapshot.Take(ctx, c, t.Dialect, t.URL)
	if err != nil {
		return err
	}
	if err := snapshot.Write(o.Out, s); err != nil {
		return err
	}
	var rows int64
	for _, tb := range s.Tables {
		rows += tb.Rows
	}
	fmt.Fprintf(o.Stdout, "snapshot of %s: %d tables (%d rows), %d sequences, written to %s\n",
		s.Database, len(s.Tables), rows, len(s.Sequences), o.Out)
	return nil
}

// snapshotApp names the connections that read a database's state.
const snapshotApp = "dbparity-snapshot"
