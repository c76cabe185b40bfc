package main

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// hogs are CPU-bound processes, one per core, at this process's
// priority (they inherit its nice value, and the driver runs in this
// process): the machine saturated as a benchmark's host is.
type hogs struct {
	mu    sync.Mutex
	procs []*exec.Cmd
}

// start starts n busy loops. Each is its own process group, killed by
// stop, and by the kernel if this process dies first (Pdeathsig).
func (h *hogs) start(n int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for range n {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			h.stopLocked()
			return fmt.Errorf("start a CPU hog: %w", err)
		}
		h.procs = append(h.procs, c)
	}
	return nil
}

// stop kills every hog started and waits for it; calling it again does
// nothing.
func (h *hogs) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopLocked()
}

func (h *hogs) stopLocked() {
	for _, c := range h.procs {
		// The group is the hog alone (Setpgid): its PID is the group's.
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		c.Wait()
	}
	h.procs = nil
}

// exitOnSignal stops the hogs and the servers when the bench is
// interrupted, then exits.
func exitOnSignal(sig <-chan os.Signal, h *hogs, cleanup func()) {
	s := <-sig
	h.stop()
	cleanup()
	fmt.Fprintf(os.Stderr, "saturated: %v: hogs killed, servers stopped\n", s)
	os.Exit(1)
}
