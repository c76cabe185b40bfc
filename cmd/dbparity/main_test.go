package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/metrics"
	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/testpar"
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
	flag.Parse()
	testpar.Default(4)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// dbparity runs the binary in dir and returns its exit code and output.
func dbparity(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	return runIn(t, dir, bin, args...)
}

// runIn runs name with args in dir: its exit code, stdout and stderr.
func runIn(t *testing.T, dir, name string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
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
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"run", "--workload", "tpch"}, "unknown workload"},
		{[]string{"run", "--target", "oracle://db/x"}, "unknown scheme"},
		{[]string{"run", "--target", "postgres://u:hunter2@h:99999999/db"}, "target"},
		{[]string{"run", "--target", "postgres://u:hunter2@h:notaport/db"}, "port is not a number"},
		{[]string{"run", "--target", "host=/tmp user=u password=hunter2 dbname=d port=99999999"}, "invalid port"},
		{[]string{"run", "--target=host=/tmp user=u password='hunter2"}, "no closing quote"},
		{[]string{"load", "--warehouses", "0"}, "--warehouses"},
		{[]string{"run", "--users", "-1"}, "flag -users: must be at least 1"},
		{[]string{"run", "--managed", "postgres", "--target", "sqlite://a.db", "--target", "sqlite://b.db"}, "--managed starts one server"},
		{[]string{"ab", "--target", "sqlite://a.db", "--target", "sqlite://b.db"}, "ab takes one --target"},
		{[]string{"run", "--workload", "slob", "--think-time", "5"}, "--think-time"},
		{[]string{"run", "--workload", "slob", "--redo-stress", "extreme"}, "--redo-stress"},
		{[]string{"run", "--target", "sqlite://a.db", "--pg-preset", "small-cache"}, "--pg-preset"},
		{[]string{"run", "--managed", "postgres", "--pg-preset", "huge-cache"}, "--pg-preset"},
		{[]string{"run", "--bogus"}, "flag provided but not defined"},
		{[]string{"run", "--part", "3/3"}, "--part 3/3"},
		{[]string{"run", "--part", "0/2", "--managed", "postgres"}, "--part with --managed"},
		{[]string{"run", "--run-id", "x"}, "give --part"},
		{[]string{"run", "--part", "0/2", "--load"}, "--part with --load"},
		{[]string{"run", "--part", "0/2", "--start-at", "tomorrow"}, "RFC 3339"},
		{[]string{"merge", "a.json"}, "--out"},
		{[]string{"merge", "--out", "m.json", "missing.json"}, "missing.json"},
		{[]string{"hlog"}, "name one result file"},
		{[]string{"k8s", "--parts", "3", "--image", "i", "--claim", "c", "--", "--users", "x"}, "parts' run flags"},
		{[]string{"k8s", "--parts", "1", "--image", "i", "--claim", "c"}, "--parts 1"},
		{[]string{"k8s", "--parts", "2", "--image", "i", "--claim", "c", "--", "--target", "postgres://u:hunter2@db/x"}, "kubectl create secret generic NAME --from-literal=password=PW"},
		{[]string{"run", "--duration", "soon"}, "duration"},
		{[]string{"run", "--managed", "postgres", "--pg-set", "no-equals"}, "--pg-set"},
		{[]string{"replay", "--capture", "x.capture"}, "replay writes to its target"},
		{[]string{"replay", "--target", "postgres://u@h/db"}, "--capture FILE is required"},
		{[]string{"replay", "--target", "postgres://u@h/db", "--capture", "missing.capture"}, "missing.capture"},
		{[]string{"replay", "--target", "postgres://u@h/db", "--capture", "x", "--speed", "fast"}, "--speed"},
		{[]string{"replay", "--target", "postgres://u@h/db", "--capture", "x", "--order", "random"}, "--order"},
		{[]string{"replay", "--target", "postgres://u@h/db", "--capture", "x", "--order", "session", "--sync", "statement"}, "--order session means --sync none"},
		{[]string{"replay", "--target", "postgres://u@h/db", "--capture", "x", "--sync", "fifo"}, "--sync"},
		{[]string{"replay", "--target", "postgres://u@h/db", "--capture", "x", "--map-user", "nobody"}, "FROM=TO"},
		{[]string{"capture"}, "name the log files"},
		{[]string{"recover", "run.json.journal", "--out", "run.json.journal", "--force"}, "--out run.json.journal is one of the files this command reads"},
		{[]string{"hlog", "--out", "r.json", "--force", "r.json"}, "--out r.json is one of the files this command reads"},
		{[]string{"merge", "--out", "p0.json", "--force", "p0.json", "p1.json"}, "--out p0.json is one of the files"},
		{[]string{"compare", "--html", "./a.json", "a.json", "b.json"}, "--html ./a.json is one of the files"},
		{[]string{"capture", "--from", "pg.csv", "--out", "pg.csv", "--force"}, "--out pg.csv is one of the files"},
		{[]string{"replay", "--target", "postgres://u@h/db", "--capture", "x.capture", "--out", "x.capture", "--force"}, "--out x.capture is one of the files"},
		{[]string{"capture", "--from", "missing.log", "--out", "x.capture"}, "missing.log"},
		{[]string{"capture", "--from", "missing.log"}, "--out"},
		{[]string{"capture", "--proxy", "127.0.0.1:0", "--out", "x.capture"}, "--proxy HOST:PORT and --upstream HOST:PORT go together"},
		{[]string{"capture", "--proxy", "127.0.0.1:0", "--upstream", "127.0.0.1:5432", "pg.csv", "--out", "x.capture"}, "leave out the log files"},
		{[]string{"capture", "--proxy", "127.0.0.1:0", "--upstream", "127.0.0.1:5432"}, "--out CAPTURE is required"},
		{[]string{"capture", "--proxy", "127.0.0.1:99999", "--upstream", "127.0.0.1:5432", "--out", "x.capture"}, "--proxy 127.0.0.1:99999"},
		{[]string{"capture", "--listen-on", "lo", "--out", "x.capture"}, "--listen-on IFACE needs --port"},
		{[]string{"capture", "--proxy", "127.0.0.1:0", "--upstream", "127.0.0.1:5432", "--tls-cert", "c.pem", "--out", "x.capture"}, "--tls-cert and --tls-key go together"},
		{[]string{"capture", "--proxy", "127.0.0.1:0", "--upstream", "127.0.0.1:5432", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--out", "x.capture"}, "--tls-cert c.pem"},
		{[]string{"capture", "--listen-on", "lo", "--port", "5432", "--tls-cert", "c.pem", "--out", "x.capture"}, "go with --proxy"},
		{[]string{"capture", "--proxy", "127.0.0.1:0", "--upstream", "/x.sock", "--protocol", "mysql", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--out", "x.capture"}, "--tls-cert c.pem"},
		{[]string{"capture", "--proxy", "127.0.0.1:0", "--upstream", "/x.sock", "--protocol", "oracle", "--out", "x.capture"}, "--protocol oracle"},
		{[]string{"capture", "--listen-on", "no-such-if0", "--port", "5432", "--out", "x.capture"}, "--listen-on no-such-if0"},
		{[]string{"capture", "--listen-on", "lo", "--port", "5432", "--proxy", "127.0.0.1:0", "--out", "x.capture"}, "not both"},
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
	t.Parallel()
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
	t.Parallel()
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
	var all int64
	for _, tx := range s.Transactions {
		all += tx.Count
	}
	for name, tx := range s.Transactions {
		// A kind of 4% of the mix may be missing from a run of fewer
		// than 125 transactions (0.96^125 is 0.6%): a loaded host's
		// SQLite ran that few.
		if tx.Count == 0 && all < 125 {
			t.Logf("%s: none in %d transactions", name, all)
			continue
		}
		if tx.Count <= 0 || tx.P50 == nil || tx.P95 == nil || tx.P99 == nil || *tx.P95 < *tx.P50 {
			t.Errorf("%s: %+v (of %d transactions)", name, tx, all)
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
	t.Parallel()
	dir := loadedDir(t)
	tg, err := engine.Open("sqlite://" + filepath.Join(dir, "dbparity-data", "dbparity.db"))
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
	t.Parallel()
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
	t.Parallel()
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
	if err := json.Unmarshal([]byte(lines[0]), &head); err != nil || head.Schema != "dbparity.journal/2" {
		t.Fatalf("journal header %q: %v", lines[0], err)
	}
	var intervals, checkpoints int
	for _, l := range lines[1:] {
		var e struct {
			Interval *struct {
				Commits int64 `json:"commits"`
			} `json:"iv"`
			Checkpoint json.RawMessage `json:"checkpoint"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Errorf("journal line %q: %v", l, err)
		}
		if e.Interval != nil {
			intervals++
			if e.Interval.Commits == 0 {
				t.Errorf("interval without commits: %q", l)
			}
		}
		if e.Checkpoint != nil {
			checkpoints++
		}
	}
	if intervals < 2 || checkpoints < 1 {
		t.Errorf("journal has %d intervals and %d checkpoints after 3.5 s, want at least 2 and 1", intervals, checkpoints)
	}

	// recover turns it into a result marked partial, which show and compare read.
	code, stdout, stderr := dbparity(t, dir, "recover", "r.json.journal")
	if code != 0 || !strings.Contains(stdout, "recovered result written to r.json") {
		t.Fatalf("recover: exit %d: %s%s", code, stdout, stderr)
	}
	code, stdout, stderr = dbparity(t, dir, "show", "r.json")
	if code != 0 || !strings.Contains(stdout, "PARTIAL (recovered from r.json.journal") {
		t.Errorf("show of the recovered run: exit %d: %s%s", code, stdout, stderr)
	}
	code, _, stderr = dbparity(t, dir, "run", "--duration", "1s", "--warmup", "0s", "--users", "1", "--label", "other", "--out", "o.json")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = dbparity(t, dir, "compare", "o.json", "r.json")
	if code != 0 || !strings.Contains(stdout, "PARTIAL: 1 of 2 runs were cut short (r.json, recovered") {
		t.Errorf("compare with the recovered run: exit %d: %s%s", code, stdout, stderr)
	}
	// A second recover does not replace the result without --force.
	if code, _, stderr = dbparity(t, dir, "recover", "r.json.journal"); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("recover over a result: exit %d: %s", code, stderr)
	}
}

// Two groups of real runs on one PostgreSQL whose only difference is one
// setting: with commit_delay at its maximum (every WAL flush waits 100 ms;
// commit_siblings 0) on both sides, the baseline commits synchronously,
// so every commit waits for a flush, and the other does not
// (synchronous_commit off: no commit waits for the WAL). compare must find
// the prompt group faster, significantly, with the setting in the
// disclosure diff.
//
// The effect is made far larger than what a busy machine does to a run.
// A prompt commit touches neither the disk nor the delay, so no one
// else's writes stall it behind an fsync. The workload is slob with every
// operation an update of one row: three round trips (BEGIN, UPDATE,
// COMMIT), so that a CPU-starved machine, which adds a scheduling wait to
// every round trip, stretches a prompt operation far less than the delay
// stretches a delayed one. The delayed group cannot pass 40 operations/s
// whatever the machine does (ten flushes a second, each for at most the
// four sessions' commits). Six runs a side allow two inverted pairs
// before the verdict is lost. (The test this replaces, order-entry with
// 21 round trips a transaction and commit_delay 10 ms against 0, gave
// 3.7x on an idle machine and lost its verdict, p=0.29, in a go test ./...
// on a busy one; with 100 ms it still lost it at load 24, and so did
// slob with commit_delay 100 ms against 0, when one prompt run's fsyncs
// stalled behind other processes' writes.) One server serves every run,
// the setting changed by ALTER SYSTEM and a reload, so no run waits for a
// server to start or stop.
func TestCompareCommitDelay(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs PostgreSQL twelve times")
	}
	pgData := managedDataDir(t)
	dir := filepath.Dir(pgData)
	inst, err := managed.Start(context.Background(), managed.Options{DataDir: pgData,
		Settings: []string{"commit_delay=100000", "commit_siblings=0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	slob := []string{"--target", inst.URL(), "--workload", "slob"}
	if code, _, stderr := dbparity(t, dir, append([]string{"load", "--scale", "2000"}, slob...)...); code != 0 {
		t.Fatalf("load: %s", stderr)
	}
	syncCommit := map[string]string{"delayed": "on", "prompt": "off"}
	var files []string
	for i := range 6 {
		// ABBA: drift of the machine falls on both sides alike.
		order := []string{"delayed", "prompt"}
		if i%2 == 1 {
			order = []string{"prompt", "delayed"}
		}
		for _, label := range order {
			setAndWait(t, inst.URL(), "synchronous_commit", syncCommit[label])
			out := fmt.Sprintf("%s-%d.json", label, i)
			args := append([]string{"run", "--label", label, "--out", out, "--update-pct", "100", "--work-unit", "1",
				"--threads-per-schema", "4", "--duration", "1500ms", "--warmup", "250ms"}, slob...)
			if code, _, stderr := dbparity(t, dir, args...); code != 0 {
				t.Fatalf("run %s: %s", out, stderr)
			}
			files = append(files, out)
		}
	}
	// --force: on a 2-core machine shared with the server (and with the
	// other packages' tests) a run's driver may be flagged driver-bound;
	// this test is about the commit delay, which the server alone makes.
	code, stdout, stderr := dbparity(t, dir, append([]string{"compare", "--force", "--baseline", "delayed"}, files...)...)
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
	tps := map[string][]string{}
	for _, f := range files {
		if r, err := result.Read(filepath.Join(dir, f)); err == nil {
			tps[r.Label] = append(tps[r.Label], fmt.Sprintf("%.0f", r.Summarize().TPS))
		}
	}
	t.Logf("%s; tps delayed %v, prompt %v", strings.TrimSpace(verdict), tps["delayed"], tps["prompt"])
	_, headline, _ := strings.Cut(verdict, "prompt throughput = ")
	pctOf, _, _ := strings.Cut(headline, "% of delayed")
	if headline == "" || strings.Contains(verdict, "~ no difference") || strings.Contains(verdict, "no verdict") {
		t.Fatalf("no verdict of a difference: %q\n%s", verdict, stdout)
	}
	if ratio, err := strconv.ParseFloat(pctOf, 64); err != nil || ratio <= 100 {
		t.Errorf("commits that wait for no flush are not faster: %q", verdict)
	}
	if !strings.Contains(stdout, "disclosure.database.settings.synchronous_commit") {
		t.Errorf("the setting is not in the disclosure diff:\n%s", stdout)
	}
	code, md, stderr := dbparity(t, dir, append([]string{"compare", "--force", "--format", "markdown", "--baseline", "delayed", "--html", "r.html"}, files...)...)
	if code != 0 || !strings.Contains(md, "| throughput (tps) |") {
		t.Errorf("markdown: exit %d %s\n%s", code, stderr, md)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "r.html")); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("HTML report: %v", err)
	}
}

// setAndWait sets a server setting with ALTER SYSTEM and returns once a
// new session sees it (a reload reaches the server asynchronously).
func setAndWait(t *testing.T, url, name, value string) {
	t.Helper()
	tg, err := engine.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx := context.Background()
	do := func(sql string) {
		c, err := tg.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	do(fmt.Sprintf("ALTER SYSTEM SET %s = '%s'", name, value))
	do("SELECT pg_reload_conf()")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := tg.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = c.QueryRow(ctx, "SELECT setting FROM pg_settings WHERE name = $1", name).Scan(&got)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got == value {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still %s, 10 s after setting it to %s", name, got, value)
		}
	}
}

// ab runs both sides once per round and compares the rounds as pairs.
func TestAB(t *testing.T) {
	t.Parallel()
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
	if !strings.Contains(stdout, "2 interleaved rounds") || !strings.Contains(stderr, "round 2 of 2") {
		t.Errorf("the comparison of 2 rounds should be paired:\n%s", stdout)
	}
	if code, _, stderr := dbparity(t, dir, "ab", "--rounds", "2"); code != 2 || !strings.Contains(stderr, "the same") {
		t.Errorf("ab with one target: exit %d %s", code, stderr)
	}
}

// capture reads real server logs (the capture package's testdata) and
// prints what it captured; --help names the server settings.
func TestCaptureCommand(t *testing.T) {
	t.Parallel()
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
	// A quoted pattern (no shell expanded it) is expanded by capture.
	pattern := filepath.Join(root, "internal", "capture", "testdata", "run1", "*.csv*")
	code, stdout, stderr = dbparity(t, dir, "capture", "--from", pattern, "--out", "glob.capture")
	if code != 0 || !strings.Contains(stdout, "capture written to glob.capture") {
		t.Errorf("capture --from %q: exit %d\n%s\n%s", pattern, code, stdout, stderr)
	}
	code, _, stderr = dbparity(t, dir, "capture", "--from", filepath.Join(dir, "nothing-*.csv"), "--out", "none.capture")
	if code != 2 || !strings.Contains(stderr, "no file matches") {
		t.Errorf("a pattern matching nothing: exit %d %q", code, stderr)
	}
	// A log without statements writes no capture, and says so once.
	empty := filepath.Join(dir, "empty.csv")
	os.WriteFile(empty, []byte("2026-11-23 10:26:56.561 UTC,,,100,,6b0414f0.1,1,,2026-11-23 10:26:56 UTC,,0,LOG,00000,\"database system is ready to accept connections\",,,,,,,,,\"\",\"postmaster\",,0\n"), 0o644)
	code, stdout, stderr = dbparity(t, dir, "capture", "--from", empty, "--out", "empty.capture")
	if _, err := os.Stat(filepath.Join(dir, "empty.capture")); code != 1 || err == nil || strings.Contains(stdout, "capture written") ||
		!strings.Contains(stderr, "no capture was written") {
		t.Errorf("a log without statements: exit %d, file %v\n%s\n%s", code, err, stdout, stderr)
	}
}

// managedDataDir returns a directory for a managed cluster, or skips when
// there are no PostgreSQL server binaries (fails under CI=true).
func managedDataDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("initdb"); err != nil {
		if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
			if os.Getenv("CI") == "true" {
				t.Fatal("CI=true but no PostgreSQL server binaries")
			}
			t.Skip("no PostgreSQL server binaries (initdb)")
		}
	}
	dir, err := os.MkdirTemp("", "dbparity-owner-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // the server's user must enter it when tests run as root
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "pg")
}

// outputWatch is a command's stderr that hands over the first complete
// line containing marker, as soon as it is written.
type outputWatch struct {
	buf    bytes.Buffer
	marker string
	line   chan string
}

func newOutputWatch(marker string) *outputWatch {
	return &outputWatch{marker: marker, line: make(chan string, 1)}
}

func (w *outputWatch) Write(p []byte) (int, error) {
	seen := strings.Contains(w.buf.String(), w.marker)
	w.buf.Write(p)
	if !seen {
		for _, l := range strings.SplitAfter(w.buf.String(), "\n") {
			if strings.HasSuffix(l, "\n") && strings.Contains(l, w.marker) {
				w.line <- strings.TrimSpace(l)
				break
			}
		}
	}
	return len(p), nil
}

// await returns the marked line, or fails the test after a minute.
func (w *outputWatch) await(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	select {
	case l := <-w.line:
		return l
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no line containing %q within a minute:\n%s", w.marker, w.buf.String())
		return ""
	}
}

// serverAlive tells whether pid runs and is no zombie.
func serverAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// processesIn lists the live processes working in dir, as a server does.
func processesIn(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == dir && serverAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Ctrl-C while the managed server is being made (initdb) or started
// (pg_ctl start) exits 130 and leaves nothing running.
func TestManagedInterruptedWhileStarting(t *testing.T) {
	t.Parallel()
	data := managedDataDir(t)
	// The interrupted initdb leaves the directory empty, so the second run
	// runs initdb again before it starts the server; the third finds the
	// cluster, and its signal comes once pg_ctl has had time to launch
	// the postmaster.
	for _, tc := range []struct {
		marker string
		delay  time.Duration
	}{{"initdb " + data, 0}, {"starting postgres on " + data, 0}, {"starting postgres on " + data, 150 * time.Millisecond}} {
		marker := tc.marker
		cmd := exec.Command(bin, "run", "--managed", "postgres", "--pg-data", data, "--duration", "1s", "--warmup", "0s")
		cmd.Dir = filepath.Dir(data)
		w := newOutputWatch(marker)
		cmd.Stderr = w
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.await(t, cmd)
		time.Sleep(tc.delay)
		cmd.Process.Signal(os.Interrupt)
		t0 := time.Now()
		err := cmd.Wait()
		t.Logf("SIGINT %v after %q: exit after %v: %v", tc.delay, marker, time.Since(t0), err)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
			t.Errorf("SIGINT after %q: %v, want exit 130\n%s", marker, err, w.buf.String())
		}
		if p := processesIn(data); len(p) > 0 {
			t.Errorf("SIGINT after %q: processes %v still run in the data directory", marker, p)
		}
	}
}

// While one dbparity uses a managed data directory, a second is refused
// with the owner's PID; when the owner is killed with SIGKILL its server
// stops within 5 s, and the directory is free again.
func TestManagedDataDirOwner(t *testing.T) {
	t.Parallel()
	data := managedDataDir(t)
	dir := filepath.Dir(data)
	owner := exec.Command(bin, "load", "--managed", "postgres", "--pg-data", data, "--warehouses", "2")
	owner.Dir = dir
	w := newOutputWatch("started postgres ")
	owner.Stderr = w
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	line := w.await(t, owner)
	var version string
	var pid int
	if _, err := fmt.Sscanf(line, "started postgres %s pid %d", &version, &pid); err != nil {
		t.Fatalf("%q: %v", line, err)
	}

	code, _, stderr := dbparity(t, dir, "check", "--managed", "postgres", "--pg-data", data)
	want := fmt.Sprintf("--pg-data %s is in use by pid %d (dbparity load, started ", data, owner.Process.Pid)
	if code != 1 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("second dbparity: exit %d, %q; want exit 1 and one line containing %q", code, stderr, want)
	}
	if !serverAlive(pid) {
		t.Fatal("the second dbparity stopped the owner's server")
	}

	owner.Process.Kill()
	t0 := time.Now()
	owner.Wait()
	for serverAlive(pid) && time.Since(t0) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(t0)
	t.Logf("postmaster %d gone %v after dbparity load was killed", pid, took)
	if took > 5*time.Second {
		t.Errorf("the server outlived its killed dbparity by %v", took)
	}
	code, _, stderr = dbparity(t, dir, "check", "--managed", "postgres", "--pg-data", data)
	if strings.Contains(stderr, "in use") || !strings.Contains(stderr, "started postgres") {
		t.Errorf("after the owner died: exit %d: %s", code, stderr)
	}
	if p := processesIn(data); len(p) > 0 {
		t.Errorf("processes %v still run in the data directory", p)
	}
}

// writeResult writes a small valid result file of label to dir/name,
// changed by edit, and returns its path.
func writeResult(t *testing.T, dir, name, label string, edit func(*result.Run)) string {
	t.Helper()
	h := metrics.NewHistogram()
	for i := 1; i <= 50; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	hist, err := result.NewHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &result.Run{Schema: result.Schema, Label: label, Start: start.Add(-time.Second), End: start.Add(61 * time.Second),
		MeasureStart: start, MeasureEnd: start.Add(time.Minute),
		Workload:     result.Workload{Name: "order-entry", Version: "1", Params: map[string]any{"warehouses": 1}},
		Driver:       result.Driver{Users: 4, DurationS: 60},
		Transactions: []result.Transaction{{Name: "new_order", Committed: 30, Latency: hist}, {Name: "payment", Committed: 20, Latency: hist}},
		Commit:       hist, Statements: 500}
	if edit != nil {
		edit(r)
	}
	p := filepath.Join(dir, name)
	if err := result.Write(p, r); err != nil {
		t.Fatal(err)
	}
	return p
}

// A damaged or hand-edited result file is refused by show and compare
// with exit 2 and one line naming the file and the field.
func TestShowCompareRefuseDamagedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeResult(t, dir, "good.json", "a", nil)
	writeResult(t, dir, "other.json", "b", nil)
	b, _ := os.ReadFile(good)
	os.WriteFile(filepath.Join(dir, "truncated.json"), b[:len(b)/2], 0o644)
	os.WriteFile(filepath.Join(dir, "r.json.journal"), append([]byte(`{"schema":"dbparity.journal/1","label":"a"}`+"\n"), `{"t":1}`...), 0o644)
	writeResult(t, dir, "hdr.json", "b", func(r *result.Run) { r.Transactions[1].Latency.HDR = "not%base64" })
	writeResult(t, dir, "negative.json", "b", func(r *result.Run) { r.Transactions[0].Committed = -30 })
	writeResult(t, dir, "backwards.json", "b", func(r *result.Run) { r.MeasureEnd = r.MeasureStart.Add(-time.Minute) })
	for _, tc := range []struct{ file, want string }{
		{"hdr.json", "hdr.json: field transactions[1].latency.hdr: histogram does not decode"},
		{"negative.json", "negative.json: field transactions[0].committed: -30: a count cannot be negative"},
		{"backwards.json", "backwards.json: field measure_end: 2026-01-02T03:03:05Z is before measure_start"},
		{"truncated.json", "truncated.json is truncated"},
		{"r.json.journal", "r.json.journal: field schema: dbparity.journal/1: this is the journal of a run that did not finish"},
	} {
		for _, args := range [][]string{{"show", tc.file}, {"show", "--json", tc.file}, {"compare", "good.json", tc.file}} {
			code, stdout, stderr := dbparity(t, dir, args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stdout != "" {
				t.Errorf("%v: exit %d, stderr %q, %d bytes of output; want exit 2, one line containing %q", args, code, stderr, len(stdout), tc.want)
			}
		}
	}
	if code, _, stderr := dbparity(t, dir, "show", "good.json"); code != 0 {
		t.Errorf("a good file is refused: exit %d: %s", code, stderr)
	}
	if code, _, stderr := dbparity(t, dir, "compare", "good.json", "other.json"); code != 0 {
		t.Errorf("good files are refused: exit %d: %s", code, stderr)
	}
}

// compare --html replaces only its own earlier report, or any file with
// --force, never dbparity's data, and leaves no temporary file behind.
func TestCompareHTMLTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeResult(t, dir, "a.json", "a", nil)
	writeResult(t, dir, "b.json", "b", nil)
	os.WriteFile(filepath.Join(dir, "notes.html"), []byte("<html>my notes</html>"), 0o644)
	os.WriteFile(filepath.Join(dir, "app.capture"), []byte(`{"format":"dbparity.capture/1"}`), 0o644)
	os.Mkdir(filepath.Join(dir, "dir.html"), 0o755)
	compare := func(html string, extra ...string) (int, string) {
		code, _, stderr := dbparity(t, dir, append(append([]string{"compare", "--html", html}, extra...), "a.json", "b.json")...)
		return code, stderr
	}
	read := func(name string) string { b, _ := os.ReadFile(filepath.Join(dir, name)); return string(b) }

	if code, stderr := compare("r.html"); code != 0 || !strings.Contains(read("r.html"), report.HTMLGenerator) {
		t.Fatalf("new report: exit %d %s", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "r.html"), []byte("<!DOCTYPE html><html><head>"+report.HTMLGenerator+"<title>old</title>"), 0o644)
	if code, stderr := compare("r.html"); code != 0 || strings.Contains(read("r.html"), "<title>old</title>") {
		t.Errorf("its own earlier report is not replaced: exit %d %s", code, stderr)
	}
	for _, tc := range []struct {
		html  string
		force bool
		want  string
	}{
		{"notes.html", false, "--html notes.html: exists and is not a dbparity HTML report: choose another name, or add --force"},
		{"a.json", true, "--html a.json is one of the files this command reads"},
		{"app.capture", true, "holds dbparity data (dbparity.capture/1)"},
		{"dir.html", true, "--html dir.html: is a directory"},
		{filepath.Join("missing", "r.html"), true, "directory missing does not exist"},
	} {
		before := read(tc.html)
		var extra []string
		if tc.force {
			extra = []string{"--force"}
		}
		code, stderr := compare(tc.html, extra...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("--html %s (force %v): exit %d, %q; want exit 2 and %q", tc.html, tc.force, code, stderr, tc.want)
		}
		if read(tc.html) != before {
			t.Errorf("--html %s changed the file", tc.html)
		}
	}
	if code, stderr := compare("notes.html", "--force"); code != 0 || !strings.Contains(read("notes.html"), report.HTMLGenerator) {
		t.Errorf("--force does not replace another file: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("a missing directory was created: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// An interval of 0 or less means nothing, and one shorter than the
// collectors can read makes them read back to back; no users, no
// repetitions and no series points are mistakes: run, ab and sweep
// refuse each, naming the flag, before touching any database.
func TestIntervalFlagsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--interval", "0"}, `invalid value "0" for flag -interval: must be above 0`},
		{[]string{"run", "--interval", "-1s"}, `invalid value "-1s" for flag -interval: must be above 0`},
		{[]string{"run", "--wait-interval", "0s"}, `invalid value "0s" for flag -wait-interval: must be above 0`},
		{[]string{"run", "--wait-interval", "-5ms"}, `flag -wait-interval: must be above 0`},
		{[]string{"run", "--interval", "soon"}, `flag -interval: not a duration`},
		{[]string{"ab", "--a", "sqlite://a.db", "--b", "sqlite://b.db", "--interval", "0"}, `flag -interval: must be above 0`},
		{[]string{"ab", "--a", "sqlite://a.db", "--b", "sqlite://b.db", "--wait-interval", "-1s"}, `flag -wait-interval: must be above 0`},
		{[]string{"run", "--interval", "1ns"}, `flag -interval: must be at least 100ms`},
		{[]string{"run", "--wait-interval", "1ms"}, `flag -wait-interval: must be at least 10ms`},
		{[]string{"run", "--users", "0"}, `flag -users: must be at least 1`},
		{[]string{"run", "--users", "-3"}, `flag -users: must be at least 1`},
		{[]string{"run", "--repeat", "0"}, `flag -repeat: must be at least 1`},
		{[]string{"run", "--series-points", "0"}, `flag -series-points: must be at least 1`},
		{[]string{"sweep", "--over", "users=1..2", "--repeat", "0"}, `flag -repeat: must be at least 1`},
		{[]string{"ab", "--a", "sqlite://a.db", "--b", "sqlite://b.db", "--users", "0"}, `flag -users: must be at least 1`},
	} {
		code, _, stderr := dbparity(t, dir, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused commands left %v", entries)
	}
	code, stdout, _ := dbparity(t, dir, "run", "--help")
	if code != 0 || !strings.Contains(stdout, "-interval duration") || !strings.Contains(stdout, "(default 1s)") {
		t.Errorf("run --help does not show --interval as a duration with its default:\n%s", stdout)
	}
}

// run refuses load parameters that contradict what is loaded, for every
// workload, and names the loaded value and the way out; a flag that
// agrees runs.
func TestRunRefusesOtherLoad(t *testing.T) {
	t.Parallel()
	dir := loadedDir(t) // order-entry, 1 warehouse
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--warehouses", "10"}, "--warehouses 10, but order-entry in sqlite://dbparity-data/dbparity.db is loaded with warehouses 1: run `dbparity load --workload order-entry --warehouses 10` first, or drop --warehouses"},
		{[]string{"run", "--warehouses=2", "--load"}, "is loaded with warehouses 1"},
	} {
		code, _, stderr := dbparity(t, dir, append(tc.args, "--duration", "1s", "--out", "r.json")...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "r.json")); !os.IsNotExist(err) {
			t.Errorf("%v: a refused run wrote a result", tc.args)
		}
	}
	// Accepted: what the run then does is not this test's (beside a
	// second suite its 300 ms once completed no transaction: exit 1).
	if code, _, stderr := dbparity(t, dir, "run", "--warehouses", "1", "--duration", "300ms", "--warmup", "0s", "--users", "1",
		"--no-collect", "--out", "r.json"); code == exitUsage || strings.Contains(stderr, "is loaded with") {
		t.Errorf("--warehouses as loaded: exit %d: %s", code, stderr)
	}

	slob := []string{"--workload", "slob", "--target", "sqlite://slob.db"}
	if code, _, stderr := dbparity(t, dir, append([]string{"load", "--scale", "300"}, slob...)...); code != 0 {
		t.Fatalf("load slob: exit %d: %s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--scale", "1000000"}, "--scale 1000000, but slob in sqlite://slob.db is loaded with scale 300"},
		{[]string{"--schemas", "2"}, "--schemas 2, but slob in sqlite://slob.db is loaded with schemas 1"},
	} {
		code, _, stderr := dbparity(t, dir, append(append([]string{"run", "--work-unit", "8", "--duration", "1s"}, slob...), tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("slob %v: exit %d, %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// A huge sparse file given as a result or a journal is refused at once,
// exit 2, one line naming it: nothing reads it whole.
func TestHugeInputRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"huge.json", "huge.json.journal"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(3 << 30); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for _, args := range [][]string{{"show", "huge.json"}, {"compare", "huge.json", "huge.json"}, {"merge", "--out", "m.json", "huge.json"},
		{"hlog", "huge.json"}, {"recover", "--out", "r.json", "huge.json.journal"}} {
		start := time.Now()
		code, _, stderr := dbparity(t, dir, args...)
		if code != 2 || !strings.Contains(stderr, "huge.json") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%v: took %v", args, d)
		}
	}
}

// A password on the command line gets one warning (once the command has
// done its work, so that an error stays one line); none without one.
func TestPasswordArgsWarned(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	warnPasswordArgs(&b, []string{"--target", "postgres://u:hunter2@db/x", "--users", "4"})
	if strings.Count(b.String(), "\n") != 1 || strings.Contains(b.String(), "hunter2") || !strings.Contains(b.String(), "PGPASSWORD") {
		t.Errorf("warning %q", b.String())
	}
	b.Reset()
	warnPasswordArgs(&b, []string{"--target", "postgres://u@db/x"})
	if b.Len() != 0 {
		t.Errorf("a warning without a password: %q", b.String())
	}
}
