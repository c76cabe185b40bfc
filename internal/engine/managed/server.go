package managed

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// findBin returns the directory of initdb, pg_ctl and postgres.
func findBin(dir string) (string, error) {
	if dir != "" {
		if err := hasServerBinaries(dir); err != nil {
			return "", fmt.Errorf("--pg-bin %s: %w: name the directory of initdb, pg_ctl and postgres", dir, err)
		}
		return dir, nil
	}
	// initdb on PATH is often a symlink (/usr/local/bin/initdb); pg_ctl and
	// postgres live beside its target.
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if err := hasServerBinaries(filepath.Dir(p)); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, d := range dirs {
		if hasServerBinaries(d) == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries found (initdb on PATH or in /usr/lib/postgresql/*/bin): install PostgreSQL or pass --pg-bin DIR")
}

func hasServerBinaries(dir string) error {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("no %s there", name)
		}
	}
	return nil
}

// majorOf reads 15 from /usr/lib/postgresql/15/bin.
func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func serverVersion(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "postgres"), "--version").Output()
	if ctx.Err() != nil {
		return "", fmt.Errorf("run postgres --version: %w", ctx.Err())
	}
	if err != nil {
		return "", fmt.Errorf("run %s --version: %w", filepath.Join(bin, "postgres"), err)
	}
	f := strings.Fields(string(out)) // postgres (PostgreSQL) 15.18 (Debian 15.18-1.pgdg12+1)
	if len(f) < 3 {
		return "", fmt.Errorf("unexpected postgres --version output %q", strings.TrimSpace(string(out)))
	}
	return f[2], nil
}

// command runs a PostgreSQL binary as the server's user. It gets its own
// process group so that a Ctrl-C in the terminal reaches only dbparity,
// which cancels ctx or stops the server itself (pg_ctl also puts the
// postmaster in a session of its own). Cancelling ctx sends SIGTERM to the
// group, which initdb answers by removing what it made.
func (i *Instance) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return i.commandAt(ctx, filepath.Join(i.bin, name), args...)
}

// commandAt is command for a program given by its path.
func (i *Instance) commandAt(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	// The caller's working directory (/root, say) may be closed to the
	// server's user; the tools then complain about it on every call.
	cmd.Dir = i.DataDir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "HOME="+i.DataDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: i.cred}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// ensureCluster runs initdb on an empty data directory, checks an existing
// cluster suits the binaries, and makes postgresql.conf read the profile.
func (i *Instance) ensureCluster(ctx context.Context) error {
	if isCluster(i.DataDir) {
		if err := i.checkMajor(); err != nil {
			return err
		}
	} else {
		i.logf("initdb %s (PostgreSQL %s, as user %s)", i.DataDir, i.Version, i.OSUser)
		if err := i.initdb(ctx); err != nil {
			return err
		}
	}
	return i.includeProfile()
}

func (i *Instance) initdb(ctx context.Context) error {
	out, err := i.command(ctx, "initdb", "-D", i.DataDir, "-U", superuser, "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput()
	if err == nil {
		return nil
	}
	emptyDir(i.DataDir)
	if ctx.Err() != nil {
		return fmt.Errorf("initdb: %w", ctx.Err())
	}
	return fmt.Errorf("initdb %s: %s", i.DataDir, reason(out, err))
}

// checkMajor refuses a cluster of another major version up front; the
// server's own message about it is buried in server.log.
func (i *Instance) checkMajor() error {
	b, err := os.ReadFile(filepath.Join(i.DataDir, "PG_VERSION"))
	if err != nil {
		return fmt.Errorf("read cluster version: %w", err)
	}
	major := strings.TrimSpace(string(b))
	rest, ok := strings.CutPrefix(i.Version, major)
	if ok && (rest == "" || rest[0] < '0' || rest[0] > '9') {
		return nil
	}
	return fmt.Errorf("--pg-data %s holds a PostgreSQL %s cluster but the binaries in %s are PostgreSQL %s: choose another --pg-data or --pg-bin",
		i.DataDir, major, i.bin, i.Version)
}

const includeLine = "include_if_exists = '" + profileFile + "'"

// includeProfile appends the include line once, checking every start so
// that a cluster whose first start failed half-way still gets it.
func (i *Instance) includeProfile() error {
	p := filepath.Join(i.DataDir, "postgresql.conf")
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("read postgresql.conf: %w", err)
	}
	if slices.Contains(strings.Split(string(b), "\n"), includeLine) {
		return nil
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("include the profile in postgresql.conf: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n# dbparity: the settings of each start (listen on a unix socket only)\n%s\n", includeLine)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("include the profile in postgresql.conf: %w", err)
	}
	return nil
}

// stopLeftover stops a server still running on the data directory, left
// by a dbparity that was killed: it is ours, and it must restart to take
// this start's settings.
func (i *Instance) stopLeftover() error {
	pid := i.postmaster()
	if pid == 0 {
		return nil
	}
	i.logf("stopping the %s left running on %s (pid %d)", i.Engine, i.DataDir, pid)
	oldSocket := pidFileLine(i.DataDir, 5)
	if err := i.stopPID(pid); err != nil {
		return fmt.Errorf("stop the %s left running: %w", i.Engine, err)
	}
	if filepath.Dir(oldSocket) == "/tmp" && strings.HasPrefix(filepath.Base(oldSocket), "dbparity-sock-") && oldSocket != i.SocketDir {
		os.RemoveAll(oldSocket)
	}
	return nil
}

func (i *Instance) start(ctx context.Context) error {
	i.awaitReaped()
	// Before pg_ctl: the watchdog also covers a dbparity killed while the
	// server starts.
	if err := i.startWatchdog(); err != nil {
		return err
	}
	i.logf("starting postgres on %s", i.DataDir)
	logFile := filepath.Join(i.DataDir, "server.log")
	from := fileSize(logFile) // pg_ctl appends: only this start's lines explain its failure
	out, err := i.command(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", i.DataDir, "-l", logFile).CombinedOutput()
	if ctx.Err() != nil {
		// pg_ctl may have been stopped just after launching the server;
		// find the server so that Start's cleanup can stop it.
		i.PID = i.awaitPostmaster(3 * time.Second)
		return fmt.Errorf("start postgres: %w", ctx.Err())
	}
	i.PID = i.postmaster()
	if err != nil {
		return fmt.Errorf("start postgres: %s", logReason(logFile, from, out, err))
	}
	if i.PID == 0 {
		return errors.New("start postgres: pg_ctl reported success but postmaster.pid names no running server")
	}
	return nil
}

func (i *Instance) createDatabase(ctx context.Context) error {
	c, err := pgx.Connect(ctx, i.url("postgres")+"&application_name=dbparity-managed")
	if err != nil {
		return fmt.Errorf("connect to managed postgres: %w", err)
	}
	defer c.Close(context.Background())
	var exists bool
	if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", database).Scan(&exists); err != nil {
		return fmt.Errorf("look for database %s: %w", database, err)
	}
	if !exists {
		if _, err := c.Exec(ctx, "CREATE DATABASE "+database); err != nil {
			return fmt.Errorf("create database %s: %w", database, err)
		}
	}
	if i.Settings["shared_preload_libraries"] == "pg_stat_statements" {
		// Named as dbparity's own, so that a capture leaves it out.
		dc, err := pgx.Connect(ctx, i.url(database)+"&application_name=dbparity-managed")
		if err != nil {
			return fmt.Errorf("connect to managed postgres: %w", err)
		}
		defer dc.Close(context.Background())
		if _, err := dc.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			return fmt.Errorf("create extension pg_stat_statements: %w", err)
		}
	}
	return nil
}

// stopPID stops the postmaster pid if it still runs here.
func (i *Instance) stopPID(pid int) error {
	if pid == 0 || !i.ours(pid) {
		return nil
	}
	if i.Engine == MariaDB {
		return i.stopMariaDB(pid)
	}
	// A frozen (SIGSTOPped) server would keep pg_ctl waiting its 60 s.
	i.resume()
	out, err := i.command(context.Background(), "pg_ctl", "stop", "-D", i.DataDir, "-m", "fast", "-w", "-t", "60").CombinedOutput()
	if err == nil && gone(pid, 5*time.Second) {
		return nil
	}
	if kerr := i.kill(pid); kerr != nil {
		return fmt.Errorf("stop postgres pid %d: pg_ctl stop: %s; then %w", pid, reason(out, err), kerr)
	}
	return nil
}

// kill is for when pg_ctl could not stop the server. SIGQUIT is an
// immediate shutdown: the postmaster stops its children and exits, and the
// next start runs crash recovery. SIGKILL then goes to every server
// process, so that no backend is left holding the shared memory, which
// would block the next start.
func (i *Instance) kill(pid int) error {
	if !i.ours(pid) {
		return nil
	}
	i.resume()
	syscall.Kill(pid, syscall.SIGQUIT)
	if gone(pid, 10*time.Second) {
		return nil
	}
	return i.killAll()
}

// killAll kills every server process and waits until they are gone.
func (i *Instance) killAll() error {
	pids := i.serverProcesses()
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	end := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		if !gone(pid, time.Until(end)) {
			return fmt.Errorf("pid %d survives SIGKILL", pid)
		}
	}
	return nil
}

// awaitReaped clears the way for a start after a killed postmaster. It
// leaves postmaster.pid and its socket's lock file behind, and the next
// one refuses to start while the PID they name answers signal 0, as a
// dying process or a zombie waiting for its reaper (PID 1, not us) still
// does. Some reapers are slow (seconds on a loaded host) and some never
// reap (dbparity as PID 1 of a container), so once the PID is a zombie
// and no server process is left the files are removed: the interlock they
// stand for (no two servers on one directory or socket, no backend still
// attached to the old shared memory) is then known to hold. A live
// process working elsewhere has reused the PID: the server ignores that.
func (i *Instance) awaitReaped() {
	pid, _ := strconv.Atoi(pidFileLine(i.DataDir, 1))
	if pid <= 0 {
		return
	}
	for end := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil && time.Now().Before(end); {
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		switch {
		case err == nil && cwd != i.DataDir && cwd != i.realDir, errors.Is(err, os.ErrPermission):
			return
		case zombie(pid) && len(i.serverProcesses()) == 0:
			socketLock := filepath.Join(pidFileLine(i.DataDir, 5), ".s.PGSQL."+pidFileLine(i.DataDir, 4)+".lock")
			if b, err := os.ReadFile(socketLock); err == nil && strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]) == strconv.Itoa(pid) {
				os.Remove(socketLock)
			}
			if err := os.Remove(filepath.Join(i.DataDir, "postmaster.pid")); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// zombie tells whether pid has exited and awaits its reaper.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// resume continues a server frozen by SIGSTOP, so that it can obey a stop.
func (i *Instance) resume() {
	for _, pid := range i.serverProcesses() {
		syscall.Kill(pid, syscall.SIGCONT)
	}
}

// serverProcesses lists the postgres processes working in the data
// directory, the postmaster first: it and its children, and children a
// killed postmaster left behind. PostgreSQL makes each child a session
// leader, so no process group holds them all.
func (i *Instance) serverProcesses() []int {
	if !procfs() {
		if pid := i.postmaster(); pid != 0 {
			return []int{pid}
		}
		return nil
	}
	main := i.postmaster()
	var pids []int
	if main != 0 {
		pids = append(pids, main)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == main {
			continue
		}
		// pg_ctl and initdb work in the data directory too.
		if comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm"); strings.TrimSpace(string(comm)) == "postgres" && i.ours(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// postmaster returns the PID in postmaster.pid if that process is alive
// and is a server on this data directory, else 0. A stale file (after a
// crash or reboot) can name a PID since given to an unrelated process.
func (i *Instance) postmaster() int {
	pid, _ := strconv.Atoi(pidFileLine(i.DataDir, 1))
	if pid <= 0 || !i.ours(pid) {
		return 0
	}
	return pid
}

// awaitPostmaster waits for a postmaster launched by a pg_ctl that has
// exited. The process pg_ctl forks works in the data directory from the
// start, so when no process does, none is coming: a Ctrl-C that stopped
// pg_ctl before it forked is not kept waiting.
func (i *Instance) awaitPostmaster(d time.Duration) int {
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if pid := i.postmaster(); pid != 0 || time.Now().After(end) {
			return pid
		}
		if procfs() && !i.anyProcessIn() {
			return 0
		}
	}
}

// anyProcessIn tells whether a live process works in the data directory.
func (i *Instance) anyProcessIn() bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && i.ours(pid) {
			return true
		}
	}
	return false
}

// pidFileLine returns line n (from 1) of postmaster.pid: 1 is the PID, 5
// the socket directory.
func pidFileLine(dataDir string, n int) string {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < n {
		return ""
	}
	return strings.TrimSpace(lines[n-1])
}

// ours tells whether pid is a live process working in the data directory,
// as a postmaster and its children do.
func (i *Instance) ours(pid int) bool {
	if !alive(pid) {
		return false
	}
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil {
		return !procfs() // without procfs, trust postmaster.pid
	}
	return cwd == i.DataDir || cwd == i.realDir
}

// alive is false for a zombie: the postmaster is not our child, but a
// zombie still answers signal 0 until its parent reaps it.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) || !procfs()
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}

func procfs() bool {
	_, err := os.Stat("/proc/self")
	return err == nil
}

// gone waits up to d for process pid to end and says whether it did.
// The process is the one that ran when gone was called: PIDs wrap at
// 32,768 on many hosts, and a busy one may give the PID of a server that
// exited to another process while gone still waits, which must not be
// taken for the server (and then killed).
func gone(pid int, d time.Duration) bool {
	start := procStart(pid)
	same := func() bool { return alive(pid) && (start == "" || procStart(pid) == start) }
	for end := time.Now().Add(d); same(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			return false
		}
	}
	return true
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// reason makes one line of a failed command's output: from its last
// "error:" line on (initdb puts a hint after it), else its last line.
func reason(out []byte, err error) string {
	var lines []string
	for l := range strings.SplitSeq(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return err.Error()
	}
	from := len(lines) - 1
	for k, l := range lines {
		if strings.Contains(l, "error:") {
			from = k
		}
	}
	return strings.Join(lines[from:], "; ")
}

// logPrefix is the default log_line_prefix, '%m [%p] '.
var logPrefix = regexp.MustCompile(`^\d{4}-\d\d-\d\d [0-9:.]+ \S+ \[\d+\] `)

// routine server log lines say nothing about why a start failed.
var routine = []string{"starting PostgreSQL", "listening on ", "database system is shut down",
	"redirecting log output", "ending log output", "database system was shut down"}

// logReason returns the last meaningful lines server.log got from offset
// on, or pg_ctl's own output when the log has none.
func logReason(logFile string, offset int64, out []byte, err error) string {
	f, ferr := os.Open(logFile)
	if ferr != nil {
		return reason(out, err)
	}
	defer f.Close()
	if _, ferr := f.Seek(offset, io.SeekStart); ferr != nil {
		return reason(out, err)
	}
	var keep []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(logPrefix.ReplaceAllString(sc.Text(), ""))
		if l != "" && !slices.ContainsFunc(routine, func(r string) bool { return strings.Contains(l, r) }) {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		return reason(out, err)
	}
	return strings.Join(keep[max(0, len(keep)-3):], "; ")
}
