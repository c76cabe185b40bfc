package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
)

// A run that dies leaves a journal without the OS window, the driver's
// CPU or the database's profiles, and here, its only checkpoint taken in
// the warm-up, without a latency of its measured window. The recovered
// result marks them absent: show prints n/a for them, and compare against
// a whole run prints n/a, leaves them out of the ratios (never "0.00x")
// and gives no verdict on them; the figures it did measure, zeros
// included, stay.
func TestRecoverAbsentFiguresAreNA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, out := slobOnSQLite(t, filepath.Join(dir, "s.db"))
	whole := filepath.Join(dir, "whole.json")
	if err := Run(context.Background(), RunOptions{Common: c, Users: 1, Warmup: time.Second, Duration: 2 * time.Second,
		Label: "whole", Out: whole}); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}

	// The run that dies: its journal is taken as it stands a few seconds
	// into the measured window (as kill -9 would leave it), then the run
	// is stopped.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dying := filepath.Join(dir, "dying.json")
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Common: c, Users: 1, Warmup: 2 * time.Second, Duration: time.Minute, Label: "recovered", Out: dying})
	}()
	journal := filepath.Join(dir, "r.json.journal")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(result.JournalPath(dying))
		if n := bytes.Count(b, []byte(`"phase":"measure"`)); n >= 3 && bytes.Contains(b, []byte(`{"os":`)) && bytes.HasSuffix(b, []byte("\n")) {
			if err := os.WriteFile(journal, b, 0o644); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the journal has no 3 measured intervals and an OS reading after 30 s:\n%s\n%s", b, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, ErrInterrupted) {
		t.Fatalf("the stopped run: %v\n%s", err, out)
	}

	var rec bytes.Buffer
	if err := Recover(RecoverOptions{Journal: journal, MaxErrorPct: 1, Stdout: &rec}); err != nil {
		t.Fatalf("recover: %v", err)
	}
	rpath := strings.TrimSuffix(journal, ".journal")
	r, err := result.Read(rpath)
	if err != nil {
		t.Fatal(err)
	}
	a, err := result.Read(whole)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Recovered || r.OS == nil || r.Summarize().Commits == 0 {
		t.Fatalf("recovered %v, OS series %v, commits %d: not the run this test needs", r.Recovered, r.OS != nil, r.Summarize().Commits)
	}
	if r.Commit.Count != 0 {
		t.Fatalf("the recovered run has %d COMMIT latencies: its checkpoint was not the warm-up's", r.Commit.Count)
	}

	// The file: absent, not zero.
	raw, err := os.ReadFile(rpath)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"window"`, `"cpu_user_s"`, `"total_cpu_s"`} {
		if bytes.Contains(raw, []byte(k)) {
			t.Errorf("the recovered result holds %s, which its journal did not have", k)
		}
	}

	// show, as text and as JSON.
	var show bytes.Buffer
	if err := report.Text(&show, r); err != nil {
		t.Fatal(err)
	}
	text := show.String()
	for _, want := range []string{"driver CPU   n/a", "database host os (measured window): n/a", "errors       0"} {
		if !strings.Contains(text, want) {
			t.Errorf("show lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "cpu         user") || strings.Contains(text, "driver CPU   0") {
		t.Errorf("show prints zeros for the OS window or the driver's CPU:\n%s", text)
	}
	// name, count, errors (none for COMMIT), p50, p95, p99, max.
	for _, name := range []string{"read", "update", "(commit)"} {
		f := fieldsOf(text, name)
		if len(f) < 4 || strings.Join(f[len(f)-4:], " ") != "n/a n/a n/a n/a" || strings.Contains(strings.Join(f, " "), "0.00") {
			t.Errorf("show's %s latencies %q, want n/a:\n%s", name, f, text)
		}
	}
	var js bytes.Buffer
	if err := report.JSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var sum struct {
		DriverCPUS   *float64 `json:"driver_cpu_s"`
		OS           any      `json:"os"`
		Transactions map[string]struct {
			P95 *float64 `json:"p95_ms"`
		} `json:"transactions"`
	}
	if err := json.Unmarshal(js.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.DriverCPUS != nil || sum.OS != nil || sum.Transactions["read"].P95 != nil {
		t.Errorf("show --json gives absent figures a value:\n%s", js.String())
	}

	// compare whole.json r.json, and with the recovered run as baseline.
	for _, files := range [][]string{{whole, rpath}, {rpath, whole}} {
		runs := map[string]*result.Run{whole: a, rpath: r}
		gs, err := compare.Groups([]*result.Run{runs[files[0]], runs[files[1]]}, files, "")
		if err != nil {
			t.Fatal(err)
		}
		var cmp bytes.Buffer
		if err := report.CompareText(&cmp, report.NewComparison(gs)); err != nil {
			t.Fatal(err)
		}
		text := cmp.String()
		if strings.Contains(text, "0.00x") {
			t.Errorf("compare gives an absent figure a ratio of 0:\n%s", text)
		}
		if strings.Contains(text, "p95 (ms)") || strings.Contains(text, "no platform-side wait differs") {
			t.Errorf("compare judges figures the recovered run does not have:\n%s", text)
		}
		// Each row: the recovered group's column says n/a, and there is
		// no ratio.
		at := 1
		if files[0] == rpath {
			at = 0
		}
		for _, name := range []string{"read p95 ms", "update p99 ms", "host (all CPUs busy)", "driver", "cpu busy %", "DB CPU (s)"} {
			f := fieldsOf(text, name)
			n := len(strings.Fields(name))
			width := 2
			if name == "DB CPU (s)" {
				width = 4 // the load profile: per second, then per transaction
			}
			if len(f) != n+width || f[n+at] != "n/a" || (width == 4 && f[n+2+at] != "n/a") {
				t.Errorf("compare's %q row %q: want the recovered group n/a and no ratio\n%s", name, f, text)
			}
		}
		if f := fieldsOf(text, "errors"); strings.Join(f, " ") != "errors 0 0" {
			t.Errorf("measured zeros: errors row %q", f)
		}
		if f := fieldsOf(text, "<"); len(f) != 7 || f[3+2*at] != "n/a" || f[4+2*at] != "n/a" {
			t.Errorf("compare's latency buckets %q: want n/a for the recovered group\n%s", f, text)
		}
	}
}

// fieldsOf is the fields of the first line of text whose fields begin
// with those of name.
func fieldsOf(text, name string) []string {
	want := strings.Fields(name)
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) >= len(want) && strings.Join(f[:len(want)], " ") == name {
			return f
		}
	}
	return nil
}
