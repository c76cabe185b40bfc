package observe

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/collect/dbhost"
	"github.com/dbparity/dbparity/internal/collect/nodeexp"
	"github.com/dbparity/dbparity/internal/collect/pgstat"
	"github.com/dbparity/dbparity/internal/engine"
)

// DBHostModes are the values --db-host takes.
var DBHostModes = []string{"auto", dbhost.Local, dbhost.SQL, dbhost.NodeExporter, dbhost.None}

// Validate checks --db-host and --db-host-metrics together; its errors
// are UsageErrors.
func (o Options) Validate() error {
	switch o.DBHost {
	case "", "auto", dbhost.Local, dbhost.SQL, dbhost.None:
	case dbhost.NodeExporter:
		if o.DBHostMetrics == "" {
			return usage("--db-host node-exporter needs --db-host-metrics http://HOST:9100/metrics")
		}
	default:
		return usage("--db-host %q: use one of %s", o.DBHost, strings.Join(DBHostModes, ", "))
	}
	if o.DBHostMetrics != "" && !strings.HasPrefix(o.DBHostMetrics, "http://") && !strings.HasPrefix(o.DBHostMetrics, "https://") {
		return usage("--db-host-metrics %q: give the node_exporter's URL, for example http://dbhost:9100/metrics", nodeexp.Redact(o.DBHostMetrics))
	}
	return nil
}

// HostChoice is how the database host is observed in one run.
type HostChoice struct {
	Source dbhost.Source // nil: the database host cannot be seen
	Name   string        // Source's name, or "none"
	// Local is true when Source reads this host, which is then the
	// driver's host as well.
	Local bool
	// KeepConn is true when Source reads through the connection given to
	// ChooseHost, which must then stay open.
	KeepConn bool
	// Warning says why the database host is not seen, or only in part.
	Warning string
}

// ChooseHost picks the database host's source: local when the database
// runs on this host, else node_exporter when given, else the database's
// own connection when its role may read the host's files; --db-host
// forces one, but never local for a database on another host (a usage
// error naming the sql and node-exporter sources). pg is a collector
// connection of a PostgreSQL target for the sql source alone (nil for
// SQLite). serverPID is the server's main process on this host, 0 when
// unknown.
func ChooseHost(ctx context.Context, t Target, o Options, pg engine.Conn, serverPID int) (HostChoice, error) {
	onHost := t.OnThisHost() || t.Managed || o.DBPID > 0
	mode := o.DBHost
	if mode == "" || mode == "auto" {
		switch {
		case onHost:
			mode = dbhost.Local
		case o.DBHostMetrics != "":
			mode = dbhost.NodeExporter
		default:
			mode = dbhost.SQL
		}
	}
	switch mode {
	case dbhost.Local:
		if !onHost {
			// This host's /proc would be the driver's host's figures
			// under the database host's name.
			return HostChoice{}, UsageError{notHere(t)}
		}
		src, err := dbhost.NewLocal(serverPID)
		if err != nil {
			return HostChoice{}, UsageError{fmt.Errorf("os collector: %w (check --db-pid)", err)}
		}
		hc := HostChoice{Source: src, Name: dbhost.Local, Local: true}
		if o.DBHostMetrics != "" {
			hc.Warning = "--db-host-metrics was not read: the database runs on this host, whose /proc is read directly (--db-host node-exporter forces the exporter)"
		}
		return hc, nil
	case dbhost.NodeExporter:
		src, err := dbhost.NewNodeExporter(o.DBHostMetrics, o.StatementTimeout)
		if err != nil {
			return HostChoice{}, UsageError{fmt.Errorf("--db-host-metrics: %w", err)}
		}
		rctx, cancel := context.WithTimeout(ctx, o.StatementTimeout)
		_, err = src.Read(rctx)
		cancel()
		if err != nil {
			src.Close()
			return HostChoice{}, UsageError{fmt.Errorf("--db-host-metrics: %w (is node_exporter running there?)", err)}
		}
		hc := HostChoice{Source: src, Name: dbhost.NodeExporter}
		// node_exporter sees no processes: the server's CPU comes from the
		// database's connection when its role may read the host's files.
		if why, sq := trySQL(ctx, t, o, pg); sq.Source != nil {
			hc.Source, hc.KeepConn = dbhost.WithServer(src, sq.Source), true
		} else {
			hc.Warning = "no DB CPU: " + why
		}
		return hc, nil
	case dbhost.SQL:
		why, hc := trySQL(ctx, t, o, pg)
		if hc.Source == nil {
			return HostChoice{Name: dbhost.None, Warning: why}, nil
		}
		return hc, nil
	}
	return HostChoice{Name: dbhost.None, Warning: "--db-host none: the database host's OS figures and disclosure are not collected"}, nil
}

// notHere is why --db-host local cannot serve a database on another
// host (an address that is neither a unix socket nor loopback), and what
// can.
func notHere(t Target) error {
	host := t.Host()
	sql := "--db-host sql (the database host's /proc and /sys read through the database's connection, for a role with pg_read_server_files)"
	if t.Dialect != engine.Postgres {
		sql = "--db-host sql (PostgreSQL targets only)"
	}
	return fmt.Errorf("--db-host local: the database at %s is not on this host (neither a unix socket nor a loopback address): "+
		"this host's /proc cannot see its server, and its figures would be the driver's host's; read the database host with %s "+
		"or --db-host node-exporter --db-host-metrics http://%s/metrics (a node_exporter on that host), or give --db-pid when its server does run here",
		host, sql, net.JoinHostPort(host, "9100"))
}

// trySQL opens the sql source when the target is PostgreSQL and its
// role may read the host's files; otherwise why says what would enable it.
func trySQL(ctx context.Context, t Target, o Options, pg engine.Conn) (why string, hc HostChoice) {
	switch {
	case t.Dialect != engine.Postgres:
		return fmt.Sprintf("the database host cannot be read through a %s target: give --db-host-metrics (node_exporter)", t.Dialect), HostChoice{}
	case pg == nil:
		return "the database host's files need a connection to the database: give --db-host-metrics (node_exporter)", HostChoice{}
	}
	ok, warning, err := pgstat.HostAccess(ctx, pg)
	switch {
	case err != nil:
		return fmt.Sprintf("cannot tell whether the role may read the database host's files: %v", err), HostChoice{}
	case !ok:
		return warning, HostChoice{}
	}
	src, err := dbhost.NewSQL(ctx, pg)
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, o.StatementTimeout)
		_, err = src.Read(rctx)
		cancel()
		if err != nil {
			src.Close()
		}
	}
	if err != nil {
		return fmt.Sprintf("the database host's files cannot be read through the database: %v", err), HostChoice{}
	}
	return "", HostChoice{Source: src, Name: dbhost.SQL, KeepConn: true}
}

// localServerPID finds the main process of a PostgreSQL server on this
// host from the backend that serves c: its parent, when it is a postgres
// process here (a server in a container with its own PID namespace has
// another PID here, and is not found). 0 when not found.
func localServerPID(ctx context.Context, c engine.Conn) int {
	var backend int
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.QueryRow(qctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil || backend <= 0 {
		return 0
	}
	comm, ppid, ok := procStat(backend)
	if !ok || comm != "postgres" {
		return 0
	}
	if pcomm, _, ok := procStat(ppid); !ok || (pcomm != "postgres" && pcomm != "postmaster") {
		return 0
	}
	return ppid
}

// localMySQLPID finds a MySQL or MariaDB server on this host from the
// PID file it names (@@pid_file), when that process is a mysqld or
// mariadbd here. 0 when not found.
func localMySQLPID(ctx context.Context, c engine.Conn) int {
	var file string
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.QueryRow(qctx, "SELECT @@pid_file").Scan(&file); err != nil || file == "" {
		return 0
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	if comm, _, ok := procStat(pid); !ok || (comm != "mariadbd" && comm != "mysqld") {
		return 0
	}
	return pid
}

// procStat reads a process's command name and parent from /proc/PID/stat.
func procStat(pid int) (comm string, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return s[open+1 : end], ppid, err == nil
}

// serverDataDir is the server's data directory as it reports it (on its
// own host), or "" when the role may not read it.
func serverDataDir(ctx context.Context, c engine.Conn) string {
	var dir string
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.QueryRow(qctx, "SELECT current_setting('data_directory')").Scan(&dir); err != nil {
		return ""
	}
	return dir
}
