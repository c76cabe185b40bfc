package managed

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A managed MariaDB runs mariadbd from the local binaries on a data
// directory made by mariadb-install-db, on a unix socket only, with an
// option file dbparity writes on every start (mariadbd --defaults-file,
// so no system option file is read). mariadbd writes its PID to
// postmaster.pid in the data directory, where PostgreSQL's postmaster
// writes its own: the owner lock, the watchdog and the stop of a server
// left running then work for both alike. mariadbd works in its data
// directory, and SIGQUIT, like SIGTERM, shuts it down cleanly.

const mariadbUser = "root" // no password, on the socket only

// myName is a MariaDB option name: letters, digits, '-' and '_'.
var myName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// reservedMy are dbparity's options: the URL depends on them, and the
// server must never listen on the network.
var reservedMy = map[string]bool{
	"datadir": true, "socket": true, "port": true, "bind_address": true, "skip_networking": true,
	"pid_file": true, "user": true, "basedir": true, "log_error": true,
}

// ParseMySetting splits and checks "name=value" as given to --my-set;
// '-' and '_' are the same in option names, and names are written with '_'.
func ParseMySetting(s string) (name, value string, err error) {
	name, value, _ = strings.Cut(s, "=")
	name = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
	value = strings.TrimSpace(value)
	switch {
	case !myName.MatchString(name):
		return "", "", fmt.Errorf("%q is not an option name", name)
	case reservedMy[name]:
		return "", "", fmt.Errorf("%s is set by dbparity (the managed server listens on its own socket only)", name)
	}
	return name, value, nil
}

// mySettings reads the preset, --my-conf (option file lines, [mysqld] or
// none) and then --my-set, in the order they are applied.
func mySettings(o Options) ([]setting, error) {
	var out []setting
	for _, s := range o.Preset {
		name, value, err := ParseMySetting(s)
		if err != nil {
			return nil, fmt.Errorf("preset %s: %w", s, err)
		}
		out = append(out, setting{name, value})
	}
	if o.ConfFile != "" {
		b, err := os.ReadFile(o.ConfFile)
		if err != nil {
			return nil, fmt.Errorf("read --my-conf: %w", err)
		}
		section := "mysqld"
		for n, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			switch {
			case line == "" || line[0] == '#' || line[0] == ';':
				continue
			case line[0] == '[':
				section = strings.Trim(line, "[] ")
				continue
			case section != "mysqld" && section != "mariadb" && section != "server":
				continue
			}
			name, value, err := ParseMySetting(line)
			if err != nil {
				return nil, fmt.Errorf("--my-conf %s line %d: %w", o.ConfFile, n+1, err)
			}
			out = append(out, setting{name, value})
		}
	}
	for _, s := range o.Settings {
		name, value, err := ParseMySetting(s)
		if err != nil {
			return nil, fmt.Errorf("--my-set %s: %w", s, err)
		}
		out = append(out, setting{name, value})
	}
	return out, nil
}

// StartMariaDB starts a managed MariaDB as Start does PostgreSQL: the
// data directory made when empty, the option file written, the server on
// a unix socket (and 127.0.0.1 with Options.Loopback), database dbparity
// created. BinDir is the directory of mariadbd and mariadb-install-db
// ("" finds them on PATH and in /usr/sbin and /usr/bin).
func StartMariaDB(ctx context.Context, o Options) (_ *Instance, err error) {
	wanted, err := mySettings(o)
	if err != nil {
		return nil, err
	}
	i := &Instance{Engine: MariaDB, User: mariadbUser, Database: database, log: o.Log, Loopback: o.Loopback}
	if err := i.locateMariaDB(ctx, o); err != nil {
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
	// A tmpdir of its own: MariaDB names its temporary tables by its PID
	// (#sql-temptable-PID-...), and in the shared /tmp a server in another
	// PID namespace with the same number deleted them ("Error on delete
	// of '/tmp/#sql-temptable-...'", an install that failed on
	// "Could not remove temporary table").
	if i.myTmp, err = os.MkdirTemp("", "dbparity-mytmp-"); err != nil {
		return nil, fmt.Errorf("mariadb tmpdir: %w", err)
	}
	if err := i.own(i.myTmp); err != nil {
		return nil, fmt.Errorf("mariadb tmpdir: %w", err)
	}
	if !i.initialised() {
		i.logf("mariadb-install-db %s (MariaDB %s, as user %s)", i.DataDir, i.Version, i.OSUser)
		if err := i.installDB(ctx); err != nil {
			return nil, err
		}
	}
	if err := i.stopLeftover(); err != nil {
		return nil, err
	}
	if err := i.writeMyProfile(wanted); err != nil {
		return nil, err
	}
	if err := i.startMariaDB(ctx); err != nil {
		return nil, err
	}
	if err := i.createMariaDBDatabase(ctx); err != nil {
		return nil, err
	}
	i.logf("started mariadb %s pid %d as user %s (socket %s)", i.Version, i.PID, i.OSUser, i.socket())
	return i, nil
}

// mariadbBins are the two programs: the server and the installer.
type mariadbBins struct{ server, install string }

func findMariaDB(dir string) (mariadbBins, error) {
	find := func(names ...string) string {
		for _, n := range names {
			if dir != "" {
				if p := filepath.Join(dir, n); fileExists(p) {
					return p
				}
				continue
			}
			if p, err := exec.LookPath(n); err == nil {
				return p
			}
			for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/mysql/bin"} {
				if p := filepath.Join(d, n); fileExists(p) {
					return p
				}
			}
		}
		return ""
	}
	b := mariadbBins{server: find("mariadbd", "mysqld"), install: find("mariadb-install-db", "mysql_install_db")}
	if b.server == "" || b.install == "" {
		if dir != "" {
			return b, fmt.Errorf("--my-bin %s: no mariadbd and mariadb-install-db there: name their directory", dir)
		}
		return b, errors.New("no MariaDB server binaries found (mariadbd and mariadb-install-db on PATH, /usr/sbin or /usr/bin): install mariadb-server or pass --my-bin DIR")
	}
	return b, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (i *Instance) locateMariaDB(ctx context.Context, o Options) error {
	bins, err := findMariaDB(o.BinDir)
	if err != nil {
		return err
	}
	i.bin, i.installBin = bins.server, bins.install
	out, err := exec.CommandContext(ctx, bins.server, "--version").Output()
	if err != nil {
		return fmt.Errorf("run %s --version: %w", bins.server, err)
	}
	// mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64
	f := strings.Fields(string(out))
	for k := 0; k+1 < len(f); k++ {
		if f[k] == "Ver" {
			i.Version, _, _ = strings.Cut(f[k+1], "-")
		}
	}
	if i.Version == "" {
		return fmt.Errorf("unexpected %s --version output %q", bins.server, strings.TrimSpace(string(out)))
	}
	return i.locateUser(o.DataDir, i.bin)
}

func (i *Instance) installDB(ctx context.Context) error {
	out, err := i.commandAt(ctx, i.installBin, "--no-defaults", "--datadir="+i.DataDir, "--tmpdir="+i.myTmp,
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	if err == nil {
		return nil
	}
	emptyDir(i.DataDir)
	if ctx.Err() != nil {
		return fmt.Errorf("mariadb-install-db: %w", ctx.Err())
	}
	return fmt.Errorf("mariadb-install-db %s: %s", i.DataDir, reason(out, err))
}

func (i *Instance) socket() string { return filepath.Join(i.SocketDir, "mysqld.sock") }

// writeMyProfile writes the option file of this start: dbparity's
// options, then the user's (the last word on all but the reserved ones).
func (i *Instance) writeMyProfile(wanted []setting) error {
	port, err := freePort(i.SocketDir)
	if err != nil {
		return err
	}
	i.Port = port
	all := []setting{
		{"datadir", i.DataDir},
		{"socket", i.socket()},
		{"pid_file", filepath.Join(i.DataDir, "postmaster.pid")},
		{"log_error", filepath.Join(i.DataDir, "server.log")},
		{"tmpdir", i.myTmp},
		{"port", strconv.Itoa(port)},
		{"max_connections", "300"},
		{"skip_name_resolve", "1"},
		// The collectors' DB time and timed waits (MariaDB starts it off).
		{"performance_schema", "ON"},
		// Every transaction counted, autocommit statements too: the load
		// profile's per-transaction divisor (MariaDB starts it off).
		{"performance_schema_instrument", "transaction=ON"},
	}
	if i.Loopback {
		all = append(all, setting{"bind_address", "127.0.0.1"})
	} else {
		all = append(all, setting{"skip_networking", "1"})
	}
	all = append(all, wanted...)
	i.Settings = make(map[string]string, len(all))
	var b strings.Builder
	b.WriteString("# written by dbparity on every start of the managed server; edits are lost\n[mysqld]\n")
	for _, s := range all {
		i.Settings[s.name] = s.value
		fmt.Fprintf(&b, "%s = %s\n", s.name, s.value)
	}
	p := filepath.Join(i.DataDir, myProfileFile)
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write option file: %w", err)
	}
	return i.own(p)
}

const myProfileFile = "dbparity.cnf"

// startMariaDB starts mariadbd and waits until it answers on its socket.
func (i *Instance) startMariaDB(ctx context.Context) error {
	if err := i.startWatchdog(); err != nil {
		return err
	}
	i.logf("starting mariadb on %s", i.DataDir)
	logFile := filepath.Join(i.DataDir, "server.log")
	from := fileSize(logFile)
	cmd := i.commandAt(context.WithoutCancel(ctx), i.bin, "--defaults-file="+filepath.Join(i.DataDir, myProfileFile))
	// A session of its own, as pg_ctl gives the postmaster: a Ctrl-C in
	// the terminal reaches dbparity only, which stops the server itself.
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Setsid = false, true
	cmd.Cancel = nil
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start mariadb: %w", err)
	}
	exited := make(chan error, 1)
	go func() { // reaps it whenever it ends, and keeps how for Died
		err := cmd.Wait()
		i.mu.Lock()
		i.exited, i.exitErr = true, err
		i.mu.Unlock()
		exited <- err
	}()
	i.PID = cmd.Process.Pid
	db, err := sql.Open("mysql", i.dsn(""))
	if err != nil {
		return err
	}
	defer db.Close()
	for end := time.Now().Add(60 * time.Second); ; {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err = db.PingContext(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-exited:
			i.PID = 0
			return fmt.Errorf("start mariadb: %s", logReason(logFile, from, nil, werr))
		case <-ctx.Done():
			return fmt.Errorf("start mariadb: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(end) {
			return fmt.Errorf("start mariadb: no answer on %s after 60 s: %s", i.socket(), logReason(logFile, from, nil, err))
		}
	}
}

// dsn is go-sql-driver/mysql's form of the socket connection.
func (i *Instance) dsn(db string) string {
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr, c.DBName = mariadbUser, "unix", i.socket(), db
	return c.FormatDSN()
}

func (i *Instance) mariadbURL(db string) string {
	return "mysql://" + mariadbUser + "@/" + db + "?socket=" + i.socket()
}

func (i *Instance) createMariaDBDatabase(ctx context.Context) error {
	db, err := sql.Open("mysql", i.dsn(""))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+database); err != nil {
		return fmt.Errorf("create database %s: %w", database, err)
	}
	return nil
}

// stopMariaDB shuts mariadbd down (SIGTERM, after SIGCONT for a frozen
// one), then kills it if it is still there after 60 s.
func (i *Instance) stopMariaDB(pid int) error {
	i.resume()
	syscall.Kill(pid, syscall.SIGTERM)
	if gone(pid, 60*time.Second) {
		return nil
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if !gone(pid, 5*time.Second) {
		return fmt.Errorf("stop mariadb pid %d: it survives SIGKILL", pid)
	}
	return nil
}
