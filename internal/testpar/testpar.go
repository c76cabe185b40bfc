// Package testpar sets how many of a test binary's parallel tests run at
// once. dbparity's integration tests spend most of their time waiting (a
// measured window of fixed length, a server starting, a headless browser
// rendering) rather than computing, so more of them than the machine has
// cores overlap well; -parallel on the command line wins. Only tests
// import it.
package testpar

import (
	"flag"
	"strconv"
)

// Default makes n the default of -test.parallel unless the command line
// set it. TestMain calls it after flag.Parse. A test that sets the
// environment (t.Setenv), decides on the host's CPU use or needs spare
// capacity does not call t.Parallel, and so runs before the others.
func Default(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}
