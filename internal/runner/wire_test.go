package runner

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/capture/pgwire"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/target/managed"
)

// pgbench captured from the wire, in its three protocols: through the
// capture proxy, with no statement logging on the server. Every
// statement is in the capture with the rows it affected and its
// parameters (prepared ones by name), and replayed onto a copy of the
// starting data it ends as the original run did.
func TestWireCapturePgbench(t *testing.T) {
	pgbench := pgTool(t, "pgbench")
	base := managedTarget(t)
	start := func(dir string) *managed.Instance {
		inst, err := managed.Start(context.Background(), managed.Options{DataDir: dir, Loopback: true,
			Settings: []string{"fsync=off", "autovacuum=off"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inst.Stop() })
		return inst
	}
	inst := start(base.PGData)
	client(t, inst, pgbench, "-i", "-q", "-s", "1")
	inst.Stop()
	snapshot := base.PGData + "-start"
	if out, err := exec.Command("cp", "-a", base.PGData, snapshot).CombinedOutput(); err != nil {
		t.Fatalf("copy the starting state: %v\n%s", err, out)
	}
	inst = start(base.PGData)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := pgwire.NewRecorder("test proxy")
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- pgwire.Serve(ctx, ln, "127.0.0.1:"+strconv.Itoa(inst.Port), rec) }()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	const clients, txs = 3, 40
	for _, mode := range []string{"simple", "extended", "prepared"} {
		cmd := exec.Command(pgbench, "-h", "127.0.0.1", "-p", port, "-U", inst.User, "-n", "-c", strconv.Itoa(clients),
			"-j", "1", "-t", strconv.Itoa(txs), "-M", mode, inst.Database)
		cmd.Env = append(os.Environ(), "PGAPPNAME=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pgbench -M %s through the proxy: %v\n%s", mode, err, out)
		}
	}
	want := pgbenchState(t, Target{URL: inst.URL()})
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	inst.Stop()
	c := rec.Capture()

	// Per mode, clients × txs updates of one account each.
	updates := map[string]int{}
	for _, s := range c.Sessions {
		for _, st := range s.Statements {
			text := c.Texts[st.Text]
			if !strings.HasPrefix(text, "UPDATE pgbench_accounts") {
				continue
			}
			mode := "simple"
			switch {
			case st.Prepared != "":
				mode = "prepared"
			case st.Extended:
				mode = "extended"
			}
			updates[mode]++
			if st.Rows == nil || *st.Rows != 1 || st.Error != nil {
				t.Fatalf("%s update %q: rows %v, error %v", mode, text, st.Rows, st.Error)
			}
			if mode != "simple" && (len(st.Params) != 2 || st.Params[0] == nil || st.ParamsTruncated) {
				t.Fatalf("%s update without its parameters: %+v", mode, st)
			}
		}
	}
	for _, mode := range []string{"simple", "extended", "prepared"} {
		if updates[mode] != clients*txs {
			t.Errorf("%s: %d account updates captured, pgbench ran %d", mode, updates[mode], clients*txs)
		}
	}
	capFile := filepath.Join(t.TempDir(), "wire.capture")
	if err := capture.Write(capFile, c); err != nil {
		t.Fatal(err)
	}
	back, err := capture.Read(capFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := back.Statements(); n != c.Statements() || back.Sessions[1].Statements[0].Rows == nil && c.Sessions[1].Statements[0].Rows != nil {
		t.Errorf("the file holds %d statements of %d, or lost the rows", n, c.Statements())
	}

	replayed := start(snapshot)
	var out bytesBuffer
	path := filepath.Join(t.TempDir(), "replay.json")
	err = Replay(context.Background(), ReplayOptions{Common: Common{Target: Target{URL: replayed.URL()}, Stdout: &out, Stderr: &out},
		Capture: capFile, Speed: 0, Label: "wire", Out: path})
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := pgbenchState(t, Target{URL: replayed.URL()}); got != want {
		t.Errorf("after the replay: %s\nafter the original run: %s", got, want)
	}
	if rp := r.Replay; rp.Replayed != rp.Statements || rp.Divergent() != 0 {
		t.Errorf("replayed %d of %d statements, %d divergent: %+v", rp.Replayed, rp.Statements, rp.Divergent(), rp.Outcomes)
	}
}
