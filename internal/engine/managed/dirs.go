package managed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// serverUser returns the credential of OSUser, creating the account when
// it does not exist: PostgreSQL refuses to run as root.
func serverUser() (*syscall.Credential, error) {
	u, err := user.Lookup(OSUser)
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) {
		out, cerr := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OSUser).CombinedOutput()
		if cerr != nil {
			return nil, fmt.Errorf("postgres refuses to run as root and creating user %s failed (%s): create it (useradd --system --no-create-home --shell /usr/sbin/nologin %s) or run dbparity as an ordinary user",
				OSUser, reason(out, cerr), OSUser)
		}
		u, err = user.Lookup(OSUser)
	}
	if err != nil {
		return nil, fmt.Errorf("look up user %s: %w", OSUser, err)
	}
	uid, uerr := strconv.ParseUint(u.Uid, 10, 32)
	gid, gerr := strconv.ParseUint(u.Gid, 10, 32)
	switch {
	case uerr != nil || gerr != nil:
		return nil, fmt.Errorf("user %s has uid %q and gid %q, which are not numbers", OSUser, u.Uid, u.Gid)
	case uid == 0:
		return nil, fmt.Errorf("user %s has uid 0, and postgres refuses to run as root", OSUser)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// blockedAncestor returns the first existing directory above path that the
// credential cannot search, or "". Missing directories are skipped: they
// are created searchable. The supplementary groups are not checked because
// the server runs without any (Credential.Groups is empty).
func blockedAncestor(path string, c *syscall.Credential) (dir string, mode uint32, err error) {
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		var st syscall.Stat_t
		err := syscall.Stat(d, &st)
		switch {
		case errors.Is(err, syscall.ENOENT):
		case err != nil:
			return "", 0, fmt.Errorf("check access to %s: %w", d, err)
		case !canSearch(&st, c):
			return d, st.Mode & 0o7777, nil
		}
		if d == filepath.Dir(d) {
			return "", 0, nil
		}
	}
}

// canSearch applies the permission class that really decides: the owner
// bits for the owner even when "other" could enter, then group, then other.
func canSearch(st *syscall.Stat_t, c *syscall.Credential) bool {
	switch {
	case st.Uid == c.Uid:
		return st.Mode&0o100 != 0
	case st.Gid == c.Gid:
		return st.Mode&0o010 != 0
	}
	return st.Mode&0o001 != 0
}

// flag names the command-line flag of this engine's name option: --pg-data
// or --my-data.
func (i *Instance) flag(name string) string {
	if i.Engine == MariaDB {
		return "--my-" + name
	}
	return "--pg-" + name
}

func (i *Instance) reachableData() error {
	d, mode, err := blockedAncestor(i.DataDir, i.cred)
	if err != nil || d == "" {
		return err
	}
	example := "/var/tmp/dbparity-pg"
	if i.Engine == MariaDB {
		example = "/var/tmp/dbparity-mariadb"
	}
	return fmt.Errorf("managed %s runs as user %s, which cannot enter %s (mode %04o): choose %s under a directory it can reach (for example %s)",
		i.Engine, OSUser, d, mode, i.flag("data"), example)
}

// reachableBin checks the server's user can reach the server program.
func (i *Instance) reachableBin(program string) error {
	d, mode, err := blockedAncestor(program, i.cred)
	if err != nil || d == "" {
		return err
	}
	return fmt.Errorf("managed %s runs as user %s, which cannot enter %s (mode %04o): install the server binaries where it can reach them and name them with %s",
		i.Engine, OSUser, d, mode, i.flag("bin"))
}

// prepareDirs creates the data directory, picks the socket directory and
// hands both to the user the server runs as.
func (i *Instance) prepareDirs() error {
	if i.cred != nil {
		if err := i.reachableData(); err != nil {
			return err
		}
	}
	if err := makeDirs(i.DataDir); err != nil {
		return err
	}
	var err error
	if i.realDir, err = filepath.EvalSymlinks(i.DataDir); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	// Before anything is changed in it: it may be another dbparity's.
	if err := i.lock(); err != nil {
		return err
	}
	if err := i.checkReusable(); err != nil {
		return err
	}
	if err := i.pickSocketDir(); err != nil {
		return err
	}
	if i.cred != nil {
		for _, d := range []string{i.DataDir, i.SocketDir} {
			if err := chownTree(d, i.cred); err != nil {
				return fmt.Errorf("hand %s to user %s: %w", d, OSUser, err)
			}
		}
	}
	// The server refuses a data directory that others can read.
	if err := os.Chmod(i.DataDir, 0o700); err != nil {
		return fmt.Errorf("restrict data directory: %w", err)
	}
	return nil
}

// makeDirs creates dir with mode 0700 and any missing parents with 0755,
// whatever the umask, so that the server's user can reach dir.
func makeDirs(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		_, err := os.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("create data directory: %w", err)
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for k := len(missing) - 1; k >= 0; k-- {
		mode := fs.FileMode(0o755)
		if k == 0 {
			mode = 0o700
		}
		if err := os.Mkdir(missing[k], mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create data directory: %w", err)
		}
		if err := os.Chmod(missing[k], mode); err != nil {
			return fmt.Errorf("create data directory: %w", err)
		}
	}
	return nil
}

// checkReusable refuses a directory that holds something other than a
// cluster: initdb would refuse it too, and as root the tree is chowned.
func (i *Instance) checkReusable() error {
	if i.initialised() {
		return nil
	}
	entries, err := os.ReadDir(i.DataDir)
	if err != nil {
		return fmt.Errorf("read data directory: %w", err)
	}
	if len(entries) > 0 {
		what := "PostgreSQL cluster"
		if i.Engine == MariaDB {
			what = "MariaDB data directory"
		}
		return fmt.Errorf("%s %s is not empty and holds no %s: name a new or empty directory", i.flag("data"), i.DataDir, what)
	}
	return nil
}

// initialised tells whether the data directory holds the engine's files.
func (i *Instance) initialised() bool {
	if i.Engine == MariaDB {
		_, err := os.Stat(filepath.Join(i.DataDir, "mysql"))
		return err == nil
	}
	return isCluster(i.DataDir)
}

func isCluster(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "PG_VERSION"))
	return err == nil
}

// pickSocketDir uses the data directory unless the socket's path would be
// too long: sun_path holds about 107 bytes.
func (i *Instance) pickSocketDir() error {
	if len(i.DataDir)+len("/.s.PGSQL.65535") < 100 {
		i.SocketDir = i.DataDir
		return nil
	}
	d, err := os.MkdirTemp("/tmp", "dbparity-sock-")
	if err != nil {
		return fmt.Errorf("create socket directory: %w", err)
	}
	i.SocketDir, i.tmpSocket = d, true
	return nil
}

// chownTree gives root to the credential, touching only what differs so
// that a large existing cluster costs a walk and no writes.
func chownTree(root string, c *syscall.Credential) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Uid == c.Uid && st.Gid == c.Gid {
			return nil
		}
		return os.Lchown(p, int(c.Uid), int(c.Gid))
	})
}

// own hands a file dbparity wrote to the server's user.
func (i *Instance) own(path string) error {
	if i.cred == nil {
		return nil
	}
	return os.Lchown(path, int(i.cred.Uid), int(i.cred.Gid))
}

// emptyDir removes what a failed initdb left: a half-made cluster would
// look like a cluster on the next start.
func emptyDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
