package runner

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs up to four of the package's parallel tests at once
// unless -parallel says otherwise: most of their time is windows of a
// fixed length (a warm-up, a measured window) during which a test waits
// on its server rather than on a CPU, so four overlap on two cores. A
// test that sets the environment (t.Setenv), decides on the host's CPU
// use or needs spare capacity (an open-loop rate that must keep up) does
// not call t.Parallel and runs before them.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", "4")
	}
	os.Exit(m.Run())
}
