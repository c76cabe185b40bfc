package managed

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Died says how the server this Instance started ended, when it is no
// longer running and Stop did not stop it: its exit status or signal
// where dbparity is its parent (MariaDB; pg_ctl's postmaster is not our
// child, so its status is not known), the last lines of its log and the
// log's path. nil while it runs, and after Stop.
func (i *Instance) Died() error {
	i.mu.Lock()
	stopped, pid, exit, exited := i.stopped, i.PID, i.exitErr, i.exited
	i.mu.Unlock()
	if stopped || (pid == 0 && !exited) || (!exited && i.ours(pid)) {
		return nil
	}
	how := "its exit status is not known (pg_ctl started it)"
	switch {
	case exited && exit != nil:
		how = exit.Error() // "signal: segmentation fault", "exit status 1"
	case exited:
		how = "exit status 0"
	}
	log := i.LogFile()
	tail := strings.Join(telling(LogTail(log, 200), 3), "; ")
	if tail == "" {
		tail = "(empty)"
	}
	return fmt.Errorf("the managed %s server (pid %d) died during the command: %s; the last lines of its log %s: %s", i.Engine, pid, how, log, tail)
}

// telling are the last n of lines that say what happened (a signal, an
// error, a failed assertion: MariaDB's crash report ends with the
// kernel's version and core pattern), else the last n.
func telling(lines []string, n int) []string {
	var out []string
	for _, l := range lines {
		u := strings.ToUpper(l)
		if strings.Contains(u, "SIGNAL") || strings.Contains(u, "ERROR") || strings.Contains(u, "FATAL") ||
			strings.Contains(u, "PANIC") || strings.Contains(u, "ASSERTION") {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		out = lines
	}
	return out[max(0, len(out)-n):]
}

// LogFile is the server's log.
func (i *Instance) LogFile() string { return filepath.Join(i.DataDir, "server.log") }

// LogTail is the last n lines of a log that are not blank.
func LogTail(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 1<<20 {
		f.Seek(st.Size()-1<<20, 0) // the last MiB holds the last lines
	}
	var keep []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			keep = append(keep, l)
			if len(keep) > 4*n {
				keep = keep[len(keep)-n:]
			}
		}
	}
	return keep[max(0, len(keep)-n):]
}
