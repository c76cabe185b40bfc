// Package collect samples and describes what a run ran on: for now the
// basic host facts of the disclosure (kernel, CPU model, cores, memory).
// It reads /proc and the like; it never talks to a database and never
// changes anything it reads.
package collect

import (
	"bufio"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/dbparity/dbparity/internal/result"
)

// Host returns the host facts; a fact that cannot be read is left empty
// rather than failing the run.
func Host() result.Host {
	h := result.Host{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU()}
	h.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		h.CPUModel = parseCPUModel(f)
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		h.MemoryBytes = parseMemTotal(f)
		f.Close()
	}
	return h
}

// parseCPUModel returns the first "model name" of /proc/cpuinfo.
func parseCPUModel(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// parseMemTotal returns MemTotal of /proc/meminfo in bytes.
func parseMemTotal(r io.Reader) int64 {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}
