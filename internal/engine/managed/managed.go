// Package managed owns the lifecycle of a throw-away PostgreSQL cluster
// started from the local PostgreSQL binaries: initdb into a data directory,
// a settings profile written on every start, the server on a unix socket
// only, and a stop that does not give up (pg_ctl, then signals). One
// Instance at a time owns a data directory, and a watchdog process stops
// its server if dbparity dies without doing so. It knows nothing of
// workloads or runs; callers get a connection URL and the settings that
// were applied, for disclosure.
//
// PostgreSQL refuses to run as root, so when dbparity runs as root the
// cluster runs as the unprivileged OS user dbparity, created if missing.
package managed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// OSUser is the unprivileged account a cluster started by root runs as.
const OSUser = "dbparity"

// superuser and database are what clients of a managed cluster use.
const (
	superuser = "dbparity"
	database  = "dbparity"
)

// Options say where and how to start a cluster.
type Options struct {
	BinDir string // initdb, pg_ctl, postgres; "" = initdb on PATH (symlinks resolved), else the newest /usr/lib/postgresql/*/bin
	// Version, when set, is the major version to run (--pg-version): from
	// BinDir, the local installation, Dist or an archive in DistCache
	// (dist.go).
	Version   int
	Dist      string    // a distribution archive to unpack (--pg-dist)
	DistCache string    // where archives are found and unpacked
	DataDir   string    // cluster directory; initdb runs when it holds no PG_VERSION; kept afterwards
	Settings  []string  // "name=value" (--pg-set), applied last
	ConfFile  string    // file of postgresql.conf lines (--pg-conf), applied before Settings
	Preset    []string  // "name=value" of a named preset, applied first
	Log       io.Writer // one-line progress messages; may be nil
	// Loopback also listens on 127.0.0.1 at Port, for clients that cannot
	// use a unix socket (JDBC); trust authentication, as on the socket.
	Loopback bool
}

// Engine is the server a managed Instance runs.
type Engine string

const (
	Postgres Engine = "postgres"
	MariaDB  Engine = "mariadb"
)

// Instance is a running cluster.
type Instance struct {
	// myTmp is a MariaDB server's own tmpdir (removed at Stop): its
	// temporary tables are named by its PID, and in /tmp a server in
	// another PID namespace with the same number removed them.
	myTmp string

	Engine             Engine
	DataDir, SocketDir string
	Port               int
	User               string // database superuser to connect as
	Database           string // created on first start
	PID                int    // postmaster
	OSUser             string // the OS user the server runs as
	Version            string // from postgres --version, e.g. "15.18"
	Settings           map[string]string
	CPUs               []int // the CPUs the server is confined to (SetCPUs); nil: not confined
	Loopback           bool  // also listens on 127.0.0.1:Port (Options.Loopback)

	bin        string
	installBin string              // MariaDB: mariadb-install-db (bin is mariadbd)
	cred       *syscall.Credential // nil: run as ourselves
	tmpSocket  bool                // SocketDir is ours to remove
	log        io.Writer
	realDir    string // DataDir with symlinks resolved, as /proc/PID/cwd shows it

	lockDir      *os.File  // flocked: this Instance owns the data directory (owner.go)
	watchdog     *exec.Cmd // stops the server if we die (watchdog.go)
	watchdogPipe *os.File  // its stdin's write end

	mu      sync.Mutex // Stop may race with a signal handler's Stop
	stopped bool
	// exited and exitErr are how a server dbparity is the parent of
	// ended (MariaDB's mariadbd), for Died.
	exited  bool
	exitErr error
}

// Start initialises the cluster when the data directory holds none, writes
// the settings profile and starts the server. If ctx is cancelled while
// starting, whatever was started is stopped.
//
// The Instance owns the data directory until Stop, or until the process
// dies: another Start on it (from this process or another) is refused,
// naming the owner. A server still running there was left by a dead
// owner, and is stopped. A watchdog stops the server within 5 s if this
// process dies without calling Stop.
func Start(ctx context.Context, o Options) (_ *Instance, err error) {
	wanted, err := userSettings(o)
	if err != nil {
		return nil, err
	}
	i := &Instance{Engine: Postgres, User: superuser, Database: database, log: o.Log, Loopback: o.Loopback}
	if err := i.locate(ctx, o); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			i.Stop()
		}
	}()
	if err := i.prepareDirs(); err != nil {
		return nil, err
	}
	if err := i.ensureCluster(ctx); err != nil {
		return nil, err
	}
	if err := i.stopLeftover(); err != nil {
		return nil, err
	}
	if err := i.writeProfile(wanted); err != nil {
		return nil, err
	}
	if err := i.start(ctx); err != nil {
		return nil, err
	}
	if err := i.createDatabase(ctx); err != nil {
		return nil, err
	}
	i.logf("started postgres %s pid %d as user %s (socket %s, port %d)", i.Version, i.PID, i.OSUser, i.SocketDir, i.Port)
	return i, nil
}

// URL is a connection URL for the cluster's socket, for pgx.ParseConfig.
func (i *Instance) URL() string {
	if i.Engine == MariaDB {
		return i.mariadbURL(i.Database)
	}
	return i.url(i.Database)
}

func (i *Instance) url(db string) string {
	host := i.SocketDir
	if !plainPath.MatchString(host) {
		host = url.QueryEscape(host)
	}
	return "postgres://" + i.User + "@/" + db + "?host=" + host + "&port=" + strconv.Itoa(i.Port)
}

// plainPath needs no escaping in a URL query; most socket paths are such
// and read better unescaped in logs and result files.
var plainPath = regexp.MustCompile(`^[A-Za-z0-9/._-]+$`)

// Stop stops the server (pg_ctl stop -m fast, then signals; a frozen
// server is resumed first), removes a temporary socket directory and gives
// the data directory up. Calling it again after success does nothing;
// after a failure it tries again.
func (i *Instance) Stop() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopped {
		return nil
	}
	// The watchdog stays until the server is down: it never acts while we
	// run, and it covers a dbparity killed in the middle of a slow stop.
	if err := i.stopPID(i.PID); err != nil {
		return err
	}
	i.stopWatchdog()
	if i.myTmp != "" {
		os.RemoveAll(i.myTmp)
		i.myTmp = ""
	}
	if i.tmpSocket {
		if err := os.RemoveAll(i.SocketDir); err != nil {
			return fmt.Errorf("remove socket directory: %w", err)
		}
	}
	i.unlock()
	i.stopped = true
	return nil
}

// Restart starts the server again after it died or was killed (a server
// still running is stopped first), with the settings, socket directory
// and port of Start, so that URL stays valid; the server runs crash
// recovery if it needs to. It updates PID and replaces the watchdog. It
// is for fault-injection tests; after Stop it fails.
func (i *Instance) Restart(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopped {
		return fmt.Errorf("restart %s: the instance was stopped", i.Engine)
	}
	if err := i.stopPID(i.PID); err != nil {
		return fmt.Errorf("restart %s: %w", i.Engine, err)
	}
	// Backends of a postmaster killed alone may still hold its shared
	// memory, which the new postmaster refuses to share.
	if err := i.killAll(); err != nil {
		return fmt.Errorf("restart %s: %w", i.Engine, err)
	}
	start := i.start
	if i.Engine == MariaDB {
		start = i.startMariaDB
	}
	if err := start(ctx); err != nil {
		if i.PID != 0 {
			i.stopPID(i.PID)
		}
		return err
	}
	i.logf("restarted %s pid %d", i.Engine, i.PID)
	if i.CPUs != nil {
		return i.SetCPUs(i.CPUs)
	}
	return nil
}

// Signal sends sig to every process of the server: the postmaster first
// (a stopped postmaster forks no new child; a killed one restarts none),
// then its children and any it left behind. A signal to the postmaster's
// process group would not do: PostgreSQL makes every child the leader of
// a session of its own. It returns how many processes were signalled; it
// is for fault-injection tests (SIGSTOP to freeze the server, SIGCONT,
// SIGKILL).
func (i *Instance) Signal(sig syscall.Signal) (int, error) {
	done := map[int]bool{}
	// Again until no new process shows up: the postmaster may have forked
	// one since the list was made.
	for range 5 {
		more := false
		for _, pid := range i.serverProcesses() {
			if !done[pid] {
				done[pid], more = true, true
				syscall.Kill(pid, sig)
			}
		}
		if !more {
			break
		}
	}
	if len(done) == 0 {
		return 0, fmt.Errorf("signal %s: no server process runs in %s", i.Engine, i.DataDir)
	}
	if sig == syscall.SIGSTOP {
		// A thread on a CPU stops only when it next enters the kernel: on
		// a busy host a frozen MariaDB answered a query 0.2 ms after the
		// signal. Frozen means every thread stopped (2 s at most).
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && !allStopped(done); time.Sleep(time.Millisecond) {
		}
	}
	return len(done), nil
}

// allStopped is whether every thread of the processes is stopped (state
// T or t in /proc/PID/task/TID/stat); a process gone counts as stopped.
func allStopped(pids map[int]bool) bool {
	for pid := range pids {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			end := bytes.LastIndexByte(b, ')')
			if end < 0 || end+2 >= len(b) {
				continue
			}
			if st := b[end+2]; st != 'T' && st != 't' && st != 'Z' && st != 'X' {
				return false
			}
		}
	}
	return true
}

// Processes lists the server's processes, the postmaster first.
func (i *Instance) Processes() []int { return i.serverProcesses() }

// locate finds the binaries, their version and the OS user to run them as.
func (i *Instance) locate(ctx context.Context, o Options) error {
	var err error
	if i.bin, i.Version, err = binaries(ctx, o, i.logf); err != nil {
		return err
	}
	return i.locateUser(o.DataDir, filepath.Join(i.bin, "postgres"))
}

// locateUser makes the data directory absolute and chooses the OS user
// the server runs as: ours, or, as root, the unprivileged OSUser, who
// must reach the server program.
func (i *Instance) locateUser(dataDir, program string) error {
	var err error
	if i.DataDir, err = filepath.Abs(dataDir); err != nil {
		return fmt.Errorf("data directory %s: %w", dataDir, err)
	}
	if os.Geteuid() != 0 {
		if u, err := user.Current(); err == nil {
			i.OSUser = u.Username
		}
		return nil
	}
	if i.cred, err = serverUser(); err != nil {
		return err
	}
	i.OSUser = OSUser
	return i.reachableBin(program)
}

func (i *Instance) logf(format string, a ...any) {
	if i.log != nil {
		fmt.Fprintf(i.log, format+"\n", a...)
	}
}
