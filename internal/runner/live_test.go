package runner

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/live"
	"github.com/dbparity/dbparity/internal/result"
)

// A replay's live metrics count what its result counts: the statements
// it sent (ok and failed) and its divergences by kind. The replay runs
// onto a copy of the starting state that holds a row the capture's
// INSERT then meets: a new error.
func TestReplayLiveMetrics(t *testing.T) {
	t.Parallel()
	psql := pgTool(t, "psql")
	rec := record(t, func(inst *managed.Instance) {
		execSQL(t, Target{URL: inst.URL()}, "CREATE TABLE k(id int PRIMARY KEY, v int)")
	}, func(inst *managed.Instance) {
		script := "INSERT INTO k VALUES (1, 1);\nINSERT INTO k VALUES (1, 2);\nINSERT INTO k VALUES (2, 2);\nUPDATE k SET v = v + 1;\nSELECT count(*) FROM k;\n"
		for range 3 {
			cmd := exec.Command(psql, "-X", "-q", "-h", inst.SocketDir, "-p", strconv.Itoa(inst.Port), "-U", inst.User, "-d", inst.Database)
			cmd.Stdin = strings.NewReader(script)
			cmd.CombinedOutput() // the duplicate keys fail, as meant
			script = "DELETE FROM k WHERE id = 2;\n" + script[strings.Index(script, "INSERT INTO k VALUES (2"):]
		}
	})
	dir := rec.start + "-live"
	if out, err := exec.Command("cp", "-a", rec.start, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the starting state: %v\n%s", err, out)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	inst, err := managed.Start(context.Background(), managed.Options{DataDir: dir, Settings: []string{"fsync=off"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	execSQL(t, Target{URL: inst.URL()}, "INSERT INTO k VALUES (2, 0)") // the capture's first INSERT of 2 now fails
	srv, err := live.Listen("127.0.0.1:0", live.Labels{RunID: "replay-test"}, live.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	var out bytesBuffer
	path := filepath.Join(t.TempDir(), "replay.json")
	if err := Replay(context.Background(), ReplayOptions{Common: Common{Target: Target{URL: inst.URL()}, Stdout: &out, Stderr: &out},
		Capture: rec.capture, Speed: 0, Label: "live", Out: path, Collect: CollectOptions{Off: true}, Live: srv}); err != nil {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	rp := r.Replay
	resp, err := http.Get("http://" + srv.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	value := func(prefix string) float64 {
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, prefix) {
				v, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
				return v
			}
		}
		return 0
	}
	ok := value(`dbparity_replay_statements_total{label="live",outcome="ok"`)
	failed := value(`dbparity_replay_statements_total{label="live",outcome="failed"`)
	var div float64
	for _, o := range rp.Outcomes {
		if o.Kind != "expected error" {
			div += value(`dbparity_replay_divergent_total{kind="` + o.Kind + `",label="live"`)
		}
	}
	if ok+failed != float64(rp.Replayed) || failed != float64(rp.Errors) || div != float64(rp.Divergent()) || rp.Divergent() == 0 {
		t.Errorf("live: %g ok, %g failed, %g divergent; the result: %d replayed, %d failed, %d divergent\n%s",
			ok, failed, div, rp.Replayed, rp.Errors, rp.Divergent(), body)
	}
}
