package managed

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// The watchdog stops the server when dbparity dies without stopping it
// (SIGKILL, the OOM killer, a crash). pg_ctl makes the postmaster a
// session leader that is not our child, so nothing else ends it. The
// watchdog is a small sh, not a dbparity process, so that it works the
// same from the command and from a test binary. Its stdin is a pipe whose
// write end only dbparity holds (close-on-exec, so no other child has a
// copy): the read returns at end of file, that is when dbparity has
// exited, whatever the reason. A live dbparity stops the watchdog itself.
//
// It runs in a session of its own, so that a Ctrl-C or a hang-up in the
// terminal does not reach it, and it holds a copy of the data directory's
// lock, so that the next owner cannot start until the old server is gone.
// It reads the postmaster's PID from postmaster.pid only when it fires,
// so that it also covers a dbparity killed while pg_ctl was starting the
// server, and it signals a PID only while that process works in the data
// directory, so that a reused PID is never hit.
//
// Every postmaster child is a session leader of its own (PostgreSQL
// makes them so, to signal their groups), so a frozen server is resumed
// process by process; then SIGQUIT is an immediate shutdown, and SIGKILL
// follows if the server is still there 2.5 s later: within 5 s of
// dbparity's death in all.
const watchdogScript = `
read -r _
dir=$1
ours() {
	pid=
	[ -r "$dir/postmaster.pid" ] && read -r pid < "$dir/postmaster.pid" &&
		[ -n "$pid" ] && [ "$(readlink "/proc/$pid/cwd")" = "$dir" ]
}
signal_all() {
	kill -"$1" "$pid"
	for s in /proc/[0-9]*/stat; do
		line=
		read -r line < "$s" || continue
		set -- "$1" ${line##*) }
		if [ "$3" = "$pid" ]; then
			p=${s#/proc/}
			kill -"$1" "${p%/stat}"
		fi
	done
}
n=0
until ours; do
	n=$((n+1))
	[ $n -gt 20 ] && exit 0
	sleep 0.1
done
signal_all CONT
kill -QUIT "$pid"
n=0
while ours && [ $n -lt 25 ]; do
	n=$((n+1))
	sleep 0.1
done
ours && signal_all KILL
exit 0
`

// startWatchdog starts a watchdog for the server about to be started; an
// earlier one is stopped first.
func (i *Instance) startWatchdog() error {
	i.stopWatchdog()
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start the server's watchdog: %w", err)
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "dbparity-watchdog", i.realDir)
	cmd.Stdin = r
	cmd.Dir = "/"
	if i.lockDir != nil {
		cmd.ExtraFiles = []*os.File{i.lockDir}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("start the server's watchdog: %w", err)
	}
	i.watchdog, i.watchdogPipe = cmd, w
	return nil
}

// stopWatchdog ends the watchdog without letting it act: it is killed
// while it still waits on its pipe, which is open as long as we run.
func (i *Instance) stopWatchdog() {
	if i.watchdog == nil {
		return
	}
	syscall.Kill(-i.watchdog.Process.Pid, syscall.SIGKILL) // with its sleep or readlink, if any
	i.watchdog.Wait()
	i.watchdogPipe.Close()
	i.watchdog, i.watchdogPipe = nil, nil
}
