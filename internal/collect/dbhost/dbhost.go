// Package dbhost observes the host the database runs on, wherever it
// runs, through one of three sources, and names the source beside every
// figure it gives:
//
//   - local: the database runs on this host; its /proc and /sys are read
//     directly (ostat, disclose).
//   - sql: the database's own connection reads the host's /proc and /sys
//     (PostgreSQL's pg_read_file, for a superuser or a member of
//     pg_read_server_files) into a private copy, which ostat and disclose
//     then parse exactly as they parse this host's.
//   - node-exporter: a Prometheus node_exporter on the database host,
//     whose counters map onto ostat's snapshot, so that every rate comes
//     from the same ostat.Between.
//
// A Source gives cumulative snapshots (rates are the caller's, over any
// interval) and the host's disclosure. The driver's own host is not this
// package's: it is always read locally, for the driver's CPU.
package dbhost

import (
	"context"

	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
)

// The sources' names, as results and reports show them, and as
// --db-host takes them.
const (
	Local        = "local"
	SQL          = "sql"
	NodeExporter = "node-exporter"
	None         = "none"
)

// Source is one way to observe the database host.
type Source interface {
	// Name is one of the names above.
	Name() string
	// Read takes one snapshot of the host's cumulative counters, with the
	// server processes' CPU and run-queue delay when the source sees
	// them. It returns within ctx's deadline.
	Read(ctx context.Context) (*ostat.Snapshot, error)
	// Disclose describes the host and, when dataDir is not "", the file
	// system and device under the database's data directory (a path on
	// the database host). A fact the source cannot see is left empty.
	Disclose(ctx context.Context, dataDir string) (disclose.HostInfo, *disclose.StorageInfo)
	Close() error
}

// localSource reads this host; pid is the server's main process (0:
// unknown).
type localSource struct {
	r   *ostat.Reader
	pid int
}

// NewLocal observes this host; serverPID, when > 0, is the database
// server's main process, whose tree's CPU and run delay are the server's.
func NewLocal(serverPID int) (Source, error) {
	r, err := ostat.New(ostat.Options{ServerPID: serverPID})
	if err != nil {
		return nil, err
	}
	return localSource{r, serverPID}, nil
}

func (localSource) Name() string                                    { return Local }
func (s localSource) Read(context.Context) (*ostat.Snapshot, error) { return s.r.Read() }
func (localSource) Close() error                                    { return nil }

// Disclose describes this host, with the server process's cgroup and
// allowed CPUs when its PID is known (else this process's).
func (s localSource) Disclose(_ context.Context, dataDir string) (disclose.HostInfo, *disclose.StorageInfo) {
	return disclose.Host(disclose.Options{PID: s.pid, Server: s.pid > 0}), disclose.Storage(disclose.Options{}, dataDir)
}

// withServer takes the host's figures from one source and the server
// processes' from another: node_exporter sees no processes, the
// database's connection does.
type withServer struct {
	Source
	procs Source
}

// WithServer returns host with the server processes' CPU and run delay
// of each reading taken from procs (a sql source). A failed reading of
// procs leaves them out of that snapshot, never fails it.
func WithServer(host, procs Source) Source {
	return withServer{host, procs}
}

func (w withServer) Read(ctx context.Context) (*ostat.Snapshot, error) {
	s, err := w.Source.Read(ctx)
	if err != nil {
		return nil, err
	}
	if p, err := w.procs.Read(ctx); err == nil {
		s.ServerCPU, s.ServerProcs, s.ServerRunDelay = p.ServerCPU, p.ServerProcs, p.ServerRunDelay
	}
	return s, nil
}

func (w withServer) Close() error {
	w.procs.Close()
	return w.Source.Close()
}
