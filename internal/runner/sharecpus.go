package runner

import (
	"fmt"
	"os"
	"runtime"
)

// ShareCPUs runs the process on half the CPUs it may use when the
// database a replay waits on is on this host and GOMAXPROCS is not in
// the environment, and says so; restore gives the process its CPUs
// back. A paced replay waits on its server and its schedule far more
// than it computes: on a 2-core host, the Go runtime's threads looking
// for work on a second CPU took 11-25% more of its CPU per statement
// than one CPU did, CPU the server sharing the host goes without, in the
// same time (docs/performance.md). It changes the whole process's
// GOMAXPROCS: a caller running other work in the process does not call
// it.
func ShareCPUs(onThisHost bool) (note string, restore func()) {
	n := runtime.GOMAXPROCS(0)
	if !onThisHost || n < 2 || os.Getenv("GOMAXPROCS") != "" {
		return "", func() {}
	}
	prev := runtime.GOMAXPROCS(n / 2)
	return fmt.Sprintf("on %d of %d CPUs: the target shares this host and a paced replay mostly waits on it (GOMAXPROCS=%d in the environment gives it all)", n/2, n, n),
		func() { runtime.GOMAXPROCS(prev) }
}
