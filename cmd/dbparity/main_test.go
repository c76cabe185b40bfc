package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/target"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dbparity-bin-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "dbparity")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// dbparity runs the binary in dir and returns its exit code and output.
func dbparity(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// Every bad input gets exit code 2 and a single line naming what to fix.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"run", "--workload", "tpch"}, "unknown workload"},
		{[]string{"run", "--target", "oracle://db/x"}, "unknown scheme"},
		{[]string{"run", "--target", "postgres://u:hunter2@h:99999999/db"}, "target"},
		{[]string{"load", "--warehouses", "0"}, "--warehouses"},
		{[]string{"run", "--users", "-1"}, "--users"},
		{[]string{"run", "--managed", "postgres", "--target", "sqlite://a.db", "--target", "sqlite://b.db"}, "--managed starts one server"},
		{[]string{"ab", "--target", "sqlite://a.db", "--target", "sqlite://b.db"}, "ab takes one --target"},
		{[]string{"run", "--workload", "slob", "--think-time", "5"}, "--think-time"},
		{[]string{"run", "--workload", "slob", "--redo-stress", "extreme"}, "--redo-stress"},
		{[]string{"run", "--target", "sqlite://a.db", "--pg-preset", "small-cache"}, "--pg-preset"},
		{[]string{"run", "--managed", "postgres", "--pg-preset", "huge-cache"}, "--pg-preset"},
		{[]string{"run", "--bogus"}, "flag provided but not defined"},
		{[]string{"run", "--duration", "soon"}, "duration"},
		{[]string{"run", "--managed", "postgres", "--pg-set", "no-equals"}, "--pg-set"},
		{[]string{"replay", "--capture", "x.capture"}, "replay writes to its target"},
		{[]string{"replay", "--target", "postgres://u@h/db"}, "--capture FILE is required"},
		{[]string{"replay", "--target", "postgres://u@h/db", "--capture", "missing.capture"}, "missing.capture"},
		{[]string{"replay", "--target", "postgres://u@h/db", "--capture", "x", "--speed", "fast"}, "--speed"},
		{[]string{"replay", "--target", "postgres://u@h/db", "--capture", "x", "--order", "random"}, "--order"},
		{[]string{"replay", "--target", "postgres://u@h/db", "--capture", "x", "--map-user", "nobody"}, "FROM=TO"},
		{[]string{"capture"}, "name the log files"},
		{[]string{"capture", "--from", "missing.log", "--out", "x.capture"}, "missing.log"},
		{[]string{"capture", "--from", "missing.log"}, "--out"},
		{[]string{"show"}, "name one result file"},
		{[]string{"compare", "one.json"}, "at least two result files"},
		{[]string{"compare", "--format", "pdf", "a.json", "b.json"}, "--format"},
		{[]string{"compare", "a.json", "b.json"}, "no such file"},
		{[]string{"show", "missing.json"}, "no such file"},
	} {
		code, _, stderr := dbparity(t, dir, tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, stderr)
		}
		if lines := strings.Count(strings.TrimSpace(stderr), "\n"); lines != 0 {
			t.Errorf("%v: %d lines of error, want one: %q", tc.args, lines+1, stderr)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: error %q does not mention %q", tc.args, stderr, tc.want)
		}
		if strings.Contains(stderr, "hunter2") {
			t.Errorf("%v: error shows the password", tc.args)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "dbparity-data", "results")); len(entries) > 0 {
		t.Errorf("failed commands left result files: %v", entries)
	}
}

func TestShowRejectsForeignFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{"hello": 1}`), 0o644)
	code, _, stderr := dbparity(t, dir, "show", "x.json")
	if code != 2 || !strings.Contains(stderr, "not a dbparity result file") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// The README's first command, shortened: run --load on the embedded default,
// then show --json on its result.
func TestRunLoadShowOnDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a warehouse")
	}
	dir := t.TempDir()
	code, stdout, stderr := dbparity(t, dir, "run", "--load", "--duration", "2s", "--warmup", "1s",
		"--users", "2", "--label", "default", "--out", "r.json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "NOPM") || !strings.Contains(stdout, "result written to r.json") {
		t.Errorf("summary missing from output:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "r.json.journal")); !os.IsNotExist(err) {
		t.Errorf("the journal outlived the result file: %v", err)
	}
	code, stdout, stderr = dbparity(t, dir, "show", "--json", "r.json")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, stderr)
	}
	var s struct {
		Label        string  `json:"label"`
		Workload     string  `json:"workload"`
		DurationS    float64 `json:"duration_s"`
		TPS          float64 `json:"tps"`
		NOPM         float64 `json:"nopm"`
		Partial      *bool   `json:"partial"`
		Errors       *int64  `json:"errors"`
		DriverCPUS   float64 `json:"driver_cpu_s"`
		Transactions map[string]struct {
			Count int64    `json:"count"`
			P50   *float64 `json:"p50_ms"`
			P95   *float64 `json:"p95_ms"`
			P99   *float64 `json:"p99_ms"`
		} `json:"transactions"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("show --json is not JSON: %v\n%s", err, stdout)
	}
	if s.Label != "default" || s.Workload != "order-entry" || s.DurationS < 1.9 || s.TPS <= 0 || s.NOPM <= 0 ||
		s.Partial == nil || *s.Partial || s.Errors == nil || s.DriverCPUS <= 0 || len(s.Transactions) != 5 {
		t.Errorf("summary %+v", s)
	}
	for name, tx := range s.Transactions {
		if tx.Count <= 0 || tx.P50 == nil || tx.P95 == nil || tx.P99 == nil || *tx.P95 < *tx.P50 {
			t.Errorf("%s: %+v", name, tx)
		}
	}
	// check passes on what the run left, and a second run without --load
	// finds the schema.
	if code, out, errs := dbparity(t, dir, "check"); code != 0 {
		t.Errorf("check: exit %d\n%s%s", code, out, errs)
	}
}

// A consistency violation makes check exit 3.
func TestCheckFailsOnCorruption(t *testing.T) {
	dir := loadedDir(t)
	tg, err := target.Open("sqlite://" + filepath.Join(dir, "dbparity-data", "dbparity.db"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := tg.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(context.Background(), "UPDATE warehouse SET w_ytd = w_ytd + 1"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	tg.Close()
	code, stdout, _ := dbparity(t, dir, "check")
	if code != 3 || !strings.Contains(stdout, "FAIL  1:") {
		t.Errorf("exit %d, want 3; output:\n%s", code, stdout)
	}
}

// loadedDir returns a directory whose embedded default holds a loaded
// order-entry.
func loadedDir(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("loads a warehouse")
	}
	dir := t.TempDir()
	if code, _, stderr := dbparity(t, dir, "load"); code != 0 {
		t.Fatalf("load: exit %d: %s", code, stderr)
	}
	return dir
}

// startRun starts a minute-long run in dir writing r.json.
func startRun(t *testing.T, dir string, users string, stderr *bytes.Buffer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "run", "--duration", "1m", "--warmup", "0s", "--users", users, "--out", "r.json")
	cmd.Dir = dir
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// Ctrl-C ends a run cleanly: exit 130, and the result is written and
// marked partial.
func TestInterruptWritesPartialResult(t *testing.T) {
	dir := loadedDir(t)
	var stderr bytes.Buffer
	cmd := startRun(t, dir, "2", &stderr)
	time.Sleep(3 * time.Second)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, stderr.String())
	}
	code, stdout, errs := dbparity(t, dir, "show", "--json", "r.json")
	if code != 0 {
		t.Fatalf("show: %s", errs)
	}
	var s struct {
		Partial   bool     `json:"partial"`
		Reason    string   `json:"partial_reason"`
		DurationS float64  `json:"duration_s"`
		Commits   int64    `json:"commits"`
		Warnings  []string `json:"warnings"`
	}
	json.Unmarshal([]byte(stdout), &s)
	if !s.Partial || s.Reason != "interrupted" || s.DurationS < 2 || s.DurationS > 20 || s.Commits == 0 {
		t.Errorf("summary after Ctrl-C: %+v", s)
	}
	if len(s.Warnings) == 0 || !strings.HasPrefix(s.Warnings[0], "no warm-up") {
		t.Errorf("a run without warm-up is not flagged: %q", s.Warnings)
	}
	if code, out, _ := dbparity(t, dir, "check"); code != 0 {
		t.Errorf("check after an interrupted run: exit %d\n%s", code, out)
	}
}

// A run killed outright leaves no result file, but its journal keeps the
// header and every interval but the last.
func TestKilledRunLeavesJournal(t *testing.T) {
	dir := loadedDir(t)
	cmd := startRun(t, dir, "1", &bytes.Buffer{})
	time.Sleep(3500 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, "r.json")); !os.IsNotExist(err) {
		t.Errorf("a killed run left a result file: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.json.journal"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var head struct {
		Schema string `json:"schema"`
		Label  string `json:"label"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &head); err != nil || head.Schema != "dbparity.journal/1" {
		t.Fatalf("journal header %q: %v", lines[0], err)
	}
	if len(lines) < 3 {
		t.Errorf("journal has %d intervals after 3.5 s, want at least 2", len(lines)-1)
	}
	for _, l := range lines[1:] {
		var iv struct {
			Commits int64 `json:"commits"`
		}
		if err := json.Unmarshal([]byte(l), &iv); err != nil || iv.Commits == 0 {
			t.Errorf("interval %q: %v", l, err)
		}
	}
}

// Two groups of real runs on a managed PostgreSQL whose only difference is
// one setting: the baseline makes every commit wait 10 ms (commit_delay,
// with commit_siblings 0), B does not. compare must find B faster, with
// the setting in the disclosure diff. (synchronous_commit off gains only
// about 1.2x on this VM's fast disk, within the noise of short runs.)
func TestCompareCommitDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a managed PostgreSQL twelve times")
	}
	if _, err := exec.LookPath("initdb"); err != nil {
		if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
			if os.Getenv("CI") == "true" {
				t.Fatal("CI=true but no PostgreSQL server binaries")
			}
			t.Skip("no PostgreSQL server binaries (initdb)")
		}
	}
	dir, err := os.MkdirTemp("", "dbparity-compare-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // the server's user must enter it when tests run as root
	t.Cleanup(func() { os.RemoveAll(dir) })
	pg := []string{"--managed", "postgres", "--pg-data", filepath.Join(dir, "pg")}
	if code, _, stderr := dbparity(t, dir, append([]string{"load"}, pg...)...); code != 0 {
		t.Fatalf("load: %s", stderr)
	}
	var files []string
	// Six runs a side: the fewest whose verdict can survive Holm's
	// correction across the eleven metrics.
	for i := range 6 {
		for _, side := range []struct{ label, set string }{{"delayed", "commit_delay=10000"}, {"prompt", "commit_delay=0"}} {
			out := fmt.Sprintf("%s-%d.json", side.label, i)
			args := append([]string{"run", "--label", side.label, "--out", out, "--users", "4", "--duration", "1500ms",
				"--warmup", "500ms", "--pg-set", side.set, "--pg-set", "commit_siblings=0"}, pg...)
			if code, _, stderr := dbparity(t, dir, args...); code != 0 {
				t.Fatalf("run %s: %s", out, stderr)
			}
			files = append(files, out)
		}
	}
	code, stdout, stderr := dbparity(t, dir, append([]string{"compare", "--baseline", "delayed"}, files...)...)
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, stderr)
	}
	var verdict string
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, "throughput (tps)") {
			verdict = line
			break
		}
	}
	f := strings.Fields(verdict)
	if len(f) < 3 || strings.HasPrefix(f[2], "~") || strings.Contains(verdict, "no verdict") {
		t.Fatalf("no verdict of a difference: %q\n%s", verdict, stdout)
	}
	ratio, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSuffix(f[2], ","), "x"), 64)
	if err != nil || ratio <= 1 || !strings.Contains(verdict, "(better)") {
		t.Errorf("commits without delay are not faster: %q", verdict)
	}
	if !strings.Contains(stdout, "disclosure.database.settings.commit_delay") {
		t.Errorf("the setting is not in the disclosure diff:\n%s", stdout)
	}
	code, md, stderr := dbparity(t, dir, append([]string{"compare", "--format", "markdown", "--baseline", "delayed", "--html", "r.html"}, files...)...)
	if code != 0 || !strings.Contains(md, "| throughput (tps) |") {
		t.Errorf("markdown: exit %d %s\n%s", code, stderr, md)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "r.html")); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("HTML report: %v", err)
	}
	t.Logf("%s", verdict)
}

// ab runs both sides once per round and compares the rounds as pairs.
func TestAB(t *testing.T) {
	if testing.Short() {
		t.Skip("loads two warehouses")
	}
	dir := t.TempDir()
	code, stdout, stderr := dbparity(t, dir, "ab", "--a", "sqlite://a.db", "--b", "sqlite://b.db", "--rounds", "2",
		"--duration", "600ms", "--warmup", "0s", "--users", "2", "--load", "--prefix", "ab")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, f := range []string{"ab-a-1.json", "ab-b-1.json", "ab-a-2.json", "ab-b-2.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(stdout, "no verdict: 2 rounds") || !strings.Contains(stderr, "round 2 of 2") {
		t.Errorf("the comparison of 2 rounds should be paired and say it needs more:\n%s", stdout)
	}
	if code, _, stderr := dbparity(t, dir, "ab", "--rounds", "2"); code != 2 || !strings.Contains(stderr, "the same") {
		t.Errorf("ab with one target: exit %d %s", code, stderr)
	}
}

// capture reads real server logs (the capture package's testdata) and
// prints what it captured; --help names the server settings.
func TestCaptureCommand(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	logs, _ := filepath.Glob(filepath.Join(root, "internal", "capture", "testdata", "run1", "*.csv*"))
	if len(logs) == 0 {
		t.Fatal("no csvlog test data")
	}
	// As the shell expands --from *.csv*: one value, then arguments, then
	// more flags.
	args := append(append([]string{"capture", "--from"}, logs...), "--out", "app.capture")
	code, stdout, stderr := dbparity(t, dir, args...)
	if code != 0 || !strings.Contains(stdout, "capture written to app.capture") || !strings.Contains(stdout, "sessions") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if st, err := os.Stat(filepath.Join(dir, "app.capture")); err != nil || st.Size() == 0 {
		t.Fatalf("capture file: %v", err)
	}
	// An existing capture is not replaced without --force.
	if code, _, stderr := dbparity(t, dir, args...); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("second capture: exit %d, %q", code, stderr)
	}
	code, stdout, _ = dbparity(t, dir, "capture", "--help")
	if code != 0 || !strings.Contains(stdout, "log_min_duration_statement") || !strings.Contains(stdout, "log_connections") {
		t.Errorf("capture --help: exit %d\n%s", code, stdout)
	}
}
