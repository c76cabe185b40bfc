package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/dbparity/dbparity/internal/driver"
	"github.com/dbparity/dbparity/internal/live"
)

// startLive serves the command's live metrics at addr (--metrics-addr),
// labelled with a run id (the part's, or the label and the start time),
// the part and the workload.
func startLive(addr string, linger time.Duration, label, workload string, part *Part, stderr io.Writer) (*live.Server, error) {
	l := live.Labels{RunID: label + "-" + time.Now().UTC().Format("20060102T150405Z"), Workload: workload}
	if part != nil {
		l.RunID, l.Part = part.RunID, fmt.Sprintf("%d/%d", part.Index, part.Of)
	}
	srv, err := live.Listen(addr, l, live.Options{
		CPU:    func() (time.Duration, time.Duration) { c := driver.ProcessCPU(); return c.User, c.Sys },
		Linger: linger,
	})
	if err != nil {
		return nil, UsageError{err}
	}
	fmt.Fprintf(stderr, "live metrics at http://%s/metrics\n", srv.Addr())
	if srv.Reachable() {
		fmt.Fprintf(stderr, "live metrics are reachable from other hosts (%s): give --metrics-addr 127.0.0.1:PORT to keep them on this one\n", srv.Addr())
	}
	return srv, nil
}
