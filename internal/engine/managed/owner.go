package managed

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The owner of a data directory is the process holding an exclusive
// flock(2) on the directory itself. Nothing is created inside it (initdb
// wants it empty) and no lock file beside it is needed, so a directory
// whose parent dbparity cannot write to works too; a symlinked path locks
// the same directory. The kernel drops the lock when the last descriptor
// of its open file description closes: at Stop, or when dbparity dies and
// its watchdog (which holds a copy so that nobody else takes the directory
// while it is still stopping the server) has exited. Each Start opens the
// directory anew, so a second Start in the same process is refused too.
//
// Who owns it, for the refusal message, is written best effort to a file
// beside the directory (ownerPath); it may be missing or stale, the lock
// decides.

// deadOwnerWait bounds the wait for a dead owner's watchdog, which needs
// at most about 5 s to stop the server it left.
const deadOwnerWait = 10 * time.Second

// ownerPath is .BASE.dbparity-owner beside the data directory; given
// the resolved path, every path to the directory finds it.
func ownerPath(dataDir string) string {
	return filepath.Join(filepath.Dir(dataDir), "."+filepath.Base(dataDir)+".dbparity-owner")
}

// lock makes this Instance the owner of the data directory or says who is.
func (i *Instance) lock() error {
	f, err := os.Open(i.DataDir) // close-on-exec: pg_ctl and postgres must not hold the lock
	if err != nil {
		return fmt.Errorf("lock data directory: %w", err)
	}
	for end := time.Now().Add(deadOwnerWait); ; time.Sleep(50 * time.Millisecond) {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		o, ok := readOwner(ownerPath(i.realDir))
		if !errors.Is(err, syscall.EWOULDBLOCK) || !ok || o.alive() || time.Now().After(end) {
			f.Close()
			if !errors.Is(err, syscall.EWOULDBLOCK) {
				return fmt.Errorf("lock %s %s: %w", i.flag("data"), i.DataDir, err)
			}
			return o.inUse(i.flag("data"), i.DataDir, ok)
		}
		// The owner named has exited: its watchdog is stopping its server.
	}
	i.lockDir = f
	i.writeOwner()
	return nil
}

// unlock gives the data directory up; the server must be stopped.
func (i *Instance) unlock() {
	if i.lockDir == nil {
		return
	}
	if o, ok := readOwner(ownerPath(i.realDir)); ok && o.pid == os.Getpid() && o.start == procStart(o.pid) {
		os.Remove(ownerPath(i.realDir))
	}
	i.lockDir.Close()
	i.lockDir = nil
}

// owner is what ownerPath holds.
type owner struct {
	pid     int
	start   string // /proc/PID/stat starttime, to tell a reused PID
	since   string // when it took the directory, local time
	command string // the program and its subcommand, "dbparity run"
}

func (i *Instance) writeOwner() {
	cmd := filepath.Base(os.Args[0])
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		cmd += " " + os.Args[1]
	}
	body := fmt.Sprintf("pid %d\nstart %s\nsince %s\ncommand %s\n",
		os.Getpid(), procStart(os.Getpid()), time.Now().Format(time.DateTime), strings.Join(strings.Fields(cmd), " "))
	p := ownerPath(i.realDir)
	// Through a rename, so that a refused Start never reads half a file.
	if os.WriteFile(p+".tmp", []byte(body), 0o644) == nil && os.Rename(p+".tmp", p) != nil {
		os.Remove(p + ".tmp")
	}
}

func readOwner(path string) (owner, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return owner{}, false
	}
	var o owner
	for l := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(l, " ")
		switch k {
		case "pid":
			o.pid, _ = strconv.Atoi(v)
		case "start":
			o.start = v
		case "since":
			o.since = v
		case "command":
			o.command = v
		}
	}
	return o, o.pid > 0
}

// alive tells whether the process named still runs (and is the same one).
func (o owner) alive() bool {
	return alive(o.pid) && (o.start == "" || o.start == procStart(o.pid))
}

// inUse is the error for a data directory (given with flag) owned by o.
func (o owner) inUse(flag, dir string, known bool) error {
	fix := "wait for it to finish or choose another " + flag
	if !known || !o.alive() {
		return fmt.Errorf("%s %s is in use by another dbparity: %s", flag, dir, fix)
	}
	return fmt.Errorf("%s %s is in use by pid %d (%s, started %s): %s", flag, dir, o.pid, o.command, o.since, fix)
}

// procStart is field 22 of /proc/PID/stat, the process's start time in
// clock ticks since boot; "" without procfs.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
