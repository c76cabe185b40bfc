// Package managed owns the lifecycle of a throw-away PostgreSQL cluster
// started from the local PostgreSQL binaries: initdb into a data directory,
// a settings profile, start on a unix socket only, stop by pg_ctl or by
// PID. It knows nothing of workloads or runs. PostgreSQL refuses to run as
// root, so as root the cluster runs as the unprivileged user dbparity.
package managed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// OSUser is the unprivileged account a root-started cluster runs as.
const OSUser = "dbparity"

// superuser and database are what clients of a managed cluster use.
const (
	superuser = "dbparity"
	database  = "dbparity"
)

// Options say where and how to start a cluster.
type Options struct {
	BinDir   string   // initdb, pg_ctl, postgres; "" = found on PATH, else the newest /usr/lib/postgresql/*/bin
	DataDir  string   // initdb runs when it holds no cluster; kept afterwards
	Settings []string // "name=value", applied last
	ConfFile string   // postgresql.conf lines, applied before Settings
	Log      io.Writer
}

// Instance is a running cluster.
type Instance struct {
	DataDir, SocketDir string
	Port               int
	User               string // database superuser to connect as
	Database           string
	PID                int
	OSUser             string
	Version            string
	Settings           map[string]string // what this start applied, for disclosure

	bin       string
	cred      *syscall.Credential
	tmpSocket bool
	stopped   bool
}

var settingName = regexp.MustCompile(`^[a-z_][a-z0-9_.]*$`)

// ParseSetting splits "name=value".
func ParseSetting(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(strings.ToLower(name))
	if !ok {
		return "", "", errors.New("want name=value, for example shared_buffers=1GB")
	}
	if !settingName.MatchString(name) {
		return "", "", fmt.Errorf("%q is not a setting name", name)
	}
	return name, strings.TrimSpace(value), nil
}

// Start initialises the cluster if needed and starts it. If ctx is
// cancelled while starting, whatever was started is stopped.
func Start(ctx context.Context, o Options) (inst *Instance, err error) {
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", a...)
		}
	}
	bin, err := findBin(o.BinDir)
	if err != nil {
		return nil, err
	}
	data, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	i := &Instance{DataDir: data, User: superuser, Database: database, bin: bin}
	if i.Version, err = serverVersion(bin); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		if i.cred, err = unprivileged(); err != nil {
			return nil, err
		}
		i.OSUser = OSUser
	} else if u, err := user.Current(); err == nil {
		i.OSUser = u.Username
	}
	if err := i.prepareDirs(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		logf("initdb %s (PostgreSQL %s)", data, i.Version)
		if err := i.initdb(ctx); err != nil {
			return nil, err
		}
	}
	if pid := i.runningPID(); pid > 0 {
		logf("stopping the postgres left running on %s (pid %d)", data, pid)
		i.PID = pid
		if err := i.stopServer(); err != nil {
			return nil, err
		}
	}
	if err := i.writeProfile(o); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			i.Stop()
		}
	}()
	if err := i.start(ctx); err != nil {
		return nil, err
	}
	if err := i.createDatabase(ctx); err != nil {
		return nil, err
	}
	logf("started postgres %s pid %d on socket %s port %d", i.Version, i.PID, i.SocketDir, i.Port)
	return i, nil
}

// URL is a pgx connection URL for the cluster's socket.
func (i *Instance) URL() string {
	host := i.SocketDir
	if !plainPath.MatchString(host) {
		host = url.QueryEscape(host)
	}
	return "postgres://" + i.User + "@/" + i.Database + "?host=" + host + "&port=" + strconv.Itoa(i.Port)
}

// plainPath needs no escaping in a URL query; most socket paths are such,
// and they read better unescaped.
var plainPath = regexp.MustCompile(`^[A-Za-z0-9/._-]+$`)

// Stop stops the server: pg_ctl stop -m fast, then signals to the PID if
// that fails. It is safe to call more than once.
func (i *Instance) Stop() error {
	if i.stopped {
		return nil
	}
	i.stopped = true
	err := i.stopServer()
	if i.tmpSocket {
		os.RemoveAll(i.SocketDir)
	}
	return err
}

func (i *Instance) stopServer() error {
	if i.PID == 0 {
		return nil
	}
	cmd := i.command(context.Background(), "pg_ctl", "stop", "-D", i.DataDir, "-m", "fast", "-w", "-t", "30")
	out, err := cmd.CombinedOutput()
	if err == nil && !alive(i.PID) {
		i.PID = 0
		return nil
	}
	// pg_ctl failed or timed out: stop the postmaster by its PID.
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGKILL} {
		syscall.Kill(i.PID, sig)
		for range 50 {
			if !alive(i.PID) {
				i.PID = 0
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return fmt.Errorf("postgres pid %d does not stop: %s", i.PID, lastLine(string(out)))
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	// A zombie child still answers signal 0; it is gone all the same.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}

// findBin returns the directory of the PostgreSQL server binaries.
func findBin(dir string) (string, error) {
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err != nil {
			return "", fmt.Errorf("--pg-bin %s has no initdb: name the directory of initdb, pg_ctl and postgres", dir)
		}
		return dir, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(a, b int) bool { return majorOf(dirs[a]) < majorOf(dirs[b]) })
	for k := len(dirs) - 1; k >= 0; k-- {
		if _, err := os.Stat(filepath.Join(dirs[k], "initdb")); err == nil {
			return dirs[k], nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries found (initdb): install PostgreSQL or pass --pg-bin DIR")
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func serverVersion(bin string) (string, error) {
	out, err := exec.Command(filepath.Join(bin, "postgres"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("run %s/postgres --version: %v", bin, err)
	}
	f := strings.Fields(string(out)) // "postgres (PostgreSQL) 15.18 (Debian ...)"
	if len(f) < 3 {
		return "", fmt.Errorf("unexpected postgres --version output %q", out)
	}
	return f[2], nil
}

// unprivileged returns the credential of OSUser, creating the account when
// it does not exist.
func unprivileged() (*syscall.Credential, error) {
	u, err := user.Lookup(OSUser)
	if err != nil {
		out, cerr := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OSUser).CombinedOutput()
		if cerr != nil {
			return nil, fmt.Errorf("postgres cannot run as root and creating user %s failed (%s): create it yourself or run dbparity as an ordinary user",
				OSUser, lastLine(string(out)))
		}
		if u, err = user.Lookup(OSUser); err != nil {
			return nil, fmt.Errorf("look up user %s: %v", OSUser, err)
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// prepareDirs creates the data directory and picks the socket directory,
// both owned by the user the server runs as.
func (i *Instance) prepareDirs() error {
	if err := os.MkdirAll(i.DataDir, 0o700); err != nil {
		return fmt.Errorf("create %s: %v", i.DataDir, err)
	}
	// A unix socket path must fit in about 107 bytes.
	i.SocketDir = i.DataDir
	if len(i.DataDir)+len("/.s.PGSQL.65535") >= 100 {
		d, err := os.MkdirTemp("/tmp", "dbparity-sock-")
		if err != nil {
			return err
		}
		i.SocketDir, i.tmpSocket = d, true
	}
	if i.cred == nil {
		return nil
	}
	if err := reachable(i.DataDir, i.cred); err != nil {
		return err
	}
	for _, d := range []string{i.DataDir, i.SocketDir} {
		if err := chownTree(d, i.cred); err != nil {
			return err
		}
	}
	return os.Chmod(i.DataDir, 0o700)
}

// reachable checks that the server's user can enter every ancestor of dir.
func reachable(dir string, c *syscall.Credential) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err != nil {
			return fmt.Errorf("stat %s: %v", d, err)
		}
		mode := st.Mode & 0o777
		ok := mode&0o001 != 0 || st.Uid == c.Uid && mode&0o100 != 0 || st.Gid == c.Gid && mode&0o010 != 0
		if !ok {
			return fmt.Errorf("managed postgres runs as user %s, which cannot enter %s (mode %04o): choose --pg-data under a directory it can reach (for example /var/tmp/dbparity-pg)",
				OSUser, d, mode)
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}

func chownTree(root string, c *syscall.Credential) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(c.Uid), int(c.Gid))
	})
}

func (i *Instance) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(i.bin, name), args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "HOME="+i.DataDir)
	// Its own process group: a Ctrl-C in the terminal reaches dbparity,
	// which then stops the server itself after the run has ended cleanly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: i.cred}
	return cmd
}

func (i *Instance) initdb(ctx context.Context) error {
	out, err := i.command(ctx, "initdb", "-D", i.DataDir, "-U", superuser, "--auth=trust", "-E", "UTF8",
		"--locale=C", "--no-sync").CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb %s: %v: %s", i.DataDir, err, lastLine(string(out)))
	}
	f, err := os.OpenFile(filepath.Join(i.DataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString("\n# dbparity: the settings of each start\ninclude_if_exists = 'dbparity.conf'\n")
	return err
}

// runningPID returns the PID of a live postmaster on the data directory.
func (i *Instance) runningPID() int {
	b, err := os.ReadFile(filepath.Join(i.DataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if pid > 0 && alive(pid) {
		return pid
	}
	return 0
}

// writeProfile writes dbparity.conf: the profile, then the conf file, then
// the --pg-set settings, so the last word is the user's.
func (i *Instance) writeProfile(o Options) error {
	port, err := i.freePort()
	if err != nil {
		return err
	}
	i.Port = port
	i.Settings = map[string]string{}
	var lines []string
	set := func(name, value string) {
		i.Settings[name] = value
		lines = append(lines, name+" = '"+strings.ReplaceAll(value, "'", "''")+"'")
	}
	set("listen_addresses", "") // unix socket only: never reachable from the network
	set("unix_socket_directories", i.SocketDir)
	set("port", strconv.Itoa(port))
	set("max_connections", "300")
	if o.ConfFile != "" {
		b, err := os.ReadFile(o.ConfFile)
		if err != nil {
			return fmt.Errorf("--pg-conf: %v", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			if k := strings.IndexByte(l, '#'); k >= 0 {
				l = strings.TrimSpace(l[:k])
			}
			if l == "" {
				continue
			}
			name, value, err := ParseSetting(l)
			if err != nil {
				return fmt.Errorf("--pg-conf %s: line %q: %v", o.ConfFile, l, err)
			}
			set(name, strings.Trim(value, "'"))
		}
	}
	for _, s := range o.Settings {
		name, value, err := ParseSetting(s)
		if err != nil {
			return fmt.Errorf("--pg-set %s: %v", s, err)
		}
		set(name, value)
	}
	p := filepath.Join(i.DataDir, "dbparity.conf")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	if i.cred != nil {
		return os.Chown(p, int(i.cred.Uid), int(i.cred.Gid))
	}
	return nil
}

// freePort returns a loopback port no one listens on and whose socket file
// is not in the socket directory.
func (i *Instance) freePort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if _, err := os.Stat(filepath.Join(i.SocketDir, fmt.Sprintf(".s.PGSQL.%d", port))); errors.Is(err, os.ErrNotExist) {
			return port, nil
		}
	}
	return 0, errors.New("find a free port: every port tried has a socket file")
}

func (i *Instance) start(ctx context.Context) error {
	logFile := filepath.Join(i.DataDir, "server.log")
	out, err := i.command(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", i.DataDir, "-l", logFile).CombinedOutput()
	i.PID = i.runningPID()
	if err != nil {
		return fmt.Errorf("start postgres: %s", lastLines(logFile, string(out)))
	}
	if i.PID == 0 {
		return fmt.Errorf("start postgres: no postmaster.pid after pg_ctl start: %s", lastLines(logFile, string(out)))
	}
	return nil
}

func (i *Instance) createDatabase(ctx context.Context) error {
	q := url.Values{"host": {i.SocketDir}, "port": {strconv.Itoa(i.Port)}}
	c, err := pgx.Connect(ctx, "postgres://"+superuser+"@/postgres?"+q.Encode())
	if err != nil {
		return fmt.Errorf("connect to managed postgres: %v", err)
	}
	defer c.Close(context.Background())
	var exists bool
	if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", database).Scan(&exists); err != nil {
		return fmt.Errorf("look for database %s: %v", database, err)
	}
	if !exists {
		if _, err := c.Exec(ctx, "CREATE DATABASE "+database); err != nil {
			return fmt.Errorf("create database %s: %v", database, err)
		}
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// lastLines returns the last meaningful lines of the server log (where
// the reason a start failed is), or of pg_ctl's own output.
func lastLines(logFile, fallback string) string {
	f, err := os.Open(logFile)
	if err != nil {
		return lastLine(fallback)
	}
	defer f.Close()
	var keep []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.Contains(l, "FATAL") || strings.Contains(l, "ERROR") || strings.Contains(l, "LOG:  invalid") {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		return lastLine(fallback)
	}
	if len(keep) > 2 {
		keep = keep[len(keep)-2:]
	}
	return strings.Join(keep, "; ")
}
