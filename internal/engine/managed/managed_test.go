package managed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func needPostgres(t *testing.T) {
	t.Helper()
	if _, err := findBin(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %v", err)
		}
		t.Skipf("managed PostgreSQL cannot be tested: %v", err)
	}
}

// clusterDir is a fresh directory for a cluster. Not t.TempDir: its parents
// are mode 0700, which the server's user cannot enter when tests run as root.
func clusterDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dbparity-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// start starts a cluster that is stopped when the test ends (before its
// directory is removed: cleanups run last registered first).
func start(t *testing.T, o Options) *Instance {
	t.Helper()
	inst, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return inst
}

func connect(t *testing.T, inst *Instance) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), inst.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func show(t *testing.T, c *pgx.Conn, name string) string {
	t.Helper()
	var v string
	if err := c.QueryRow(context.Background(), "SHOW "+name).Scan(&v); err != nil {
		t.Fatalf("SHOW %s: %v", name, err)
	}
	return v
}

// processesIn lists the processes working in dir: a postmaster and its
// children have their data directory as working directory.
func processesIn(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == dir && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// requireGone checks that pid no longer runs. Once it has exited it may
// stay a zombie for a moment: the postmaster is an orphan, reaped by PID 1
// (or a subreaper), not by us, and some init processes reap lazily.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	if alive(pid) {
		t.Fatalf("pid %d still runs", pid)
	}
	for end := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("pid %d exited but is still not reaped after 10s", pid)
		}
	}
}

func processUID(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Uid:"); ok {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("no Uid in /proc/%d/status", pid)
	return ""
}

func TestStartStopRestart(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	dir := clusterDir(t)
	conf := filepath.Join(dir, "extra.conf")
	lines := "# a comment\n\nrandom_page_cost = 1.5   # cheaper\nwork_mem '4MB'\ncluster_name = 'it''s #1 \\\\ok'\n"
	if err := os.WriteFile(conf, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	// The preset comes first: the file overrides its random_page_cost,
	// its seq_page_cost stays.
	o := Options{DataDir: filepath.Join(dir, "data"), ConfFile: conf, Settings: []string{"work_mem=8MB", "fsync=off"}, Log: &log,
		Preset: []string{"random_page_cost=3", "seq_page_cost=2"}}
	t0 := time.Now()
	inst := start(t, o)
	t.Logf("first start (initdb included): %v", time.Since(t0))

	c := connect(t, inst)
	for name, want := range map[string]string{
		"max_connections": "300", "work_mem": "8MB", "random_page_cost": "1.5", "seq_page_cost": "2",
		"listen_addresses": "", "cluster_name": `it's #1 \ok`, "fsync": "off",
	} {
		if got := show(t, c, name); got != want {
			t.Errorf("SHOW %s = %q, want %q", name, got, want)
		}
	}
	if inst.Settings["work_mem"] != "8MB" || inst.Settings["random_page_cost"] != "1.5" || inst.Settings["max_connections"] != "300" {
		t.Errorf("recorded settings %v", inst.Settings)
	}
	if inst.Version == "" || inst.SocketDir != inst.DataDir || inst.Port == 0 {
		t.Errorf("instance %+v", inst)
	}
	if !strings.Contains(log.String(), "initdb ") || !strings.Contains(log.String(), "started postgres "+inst.Version+" pid "+strconv.Itoa(inst.PID)) {
		t.Errorf("progress log %q", log.String())
	}
	if os.Geteuid() == 0 {
		if uid := processUID(t, inst.PID); uid == "0" || inst.OSUser != OSUser {
			t.Errorf("running as root, the server runs as uid %s (OSUser %q)", uid, inst.OSUser)
		}
	}
	if _, err := c.Exec(context.Background(), "CREATE TABLE kept (x int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	c.Close(context.Background())

	pid := inst.PID
	t0 = time.Now()
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stop: %v", time.Since(t0))
	requireGone(t, pid)
	if err := inst.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	// The data directory is kept, and settings of the first start do not
	// linger into the second.
	t0 = time.Now()
	inst2 := start(t, Options{DataDir: o.DataDir})
	t.Logf("second start: %v", time.Since(t0))
	c2 := connect(t, inst2)
	var n int
	if err := c2.QueryRow(context.Background(), "SELECT count(*) FROM kept").Scan(&n); err != nil || n != 1 {
		t.Errorf("table created before the restart: %d rows, %v", n, err)
	}
	if wm := show(t, c2, "work_mem"); wm == "8MB" {
		t.Error("work_mem of the first start lingers into the second")
	}
}

// abandon makes inst look like the instance of a dbparity that died with
// its watchdog: the server runs on, nobody owns the data directory.
func abandon(inst *Instance) {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	inst.stopWatchdog()
	inst.unlock()
}

// A server left running by a dead owner (whose watchdog died too) is
// stopped and replaced.
func TestStartReplacesLeftoverServer(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	data := filepath.Join(clusterDir(t), "data")
	a := start(t, Options{DataDir: data})
	abandon(a)
	b := start(t, Options{DataDir: data, Settings: []string{"work_mem=3MB"}})
	if alive(a.PID) || b.PID == a.PID {
		t.Errorf("old postmaster %d still alive (new %d)", a.PID, b.PID)
	}
	if got := show(t, connect(t, b), "work_mem"); got != "3MB" {
		t.Errorf("work_mem = %q after replacing the server, want 3MB", got)
	}
}

// A start that fails says why in one line, from this start's log lines
// only, and leaves nothing running.
func TestFailedStartReportsServerLog(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	data := filepath.Join(clusterDir(t), "data")
	start(t, Options{DataDir: data}).Stop()
	for _, tc := range []struct{ set, want, notWant string }{
		{"work_mem=lots", `invalid value for parameter "work_mem"`, ""},
		{"no_such_setting=1", `unrecognized configuration parameter "no_such_setting"`, "work_mem"},
	} {
		_, err := Start(context.Background(), Options{DataDir: data, Settings: []string{tc.set}})
		switch {
		case err == nil:
			t.Fatalf("--pg-set %s: started", tc.set)
		case !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n"):
			t.Errorf("--pg-set %s: error %q, want one line containing %q", tc.set, err, tc.want)
		case tc.notWant != "" && strings.Contains(err.Error(), tc.notWant):
			t.Errorf("--pg-set %s: error %q repeats an earlier start's failure", tc.set, err)
		}
		if p := processesIn(data); len(p) > 0 {
			t.Errorf("--pg-set %s: processes %v still run in the data directory", tc.set, p)
		}
	}
	start(t, Options{DataDir: data})
}

// When pg_ctl cannot stop the server, signals do; the data survives by
// crash recovery.
func TestKillFallback(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	data := filepath.Join(clusterDir(t), "data")
	inst := start(t, Options{DataDir: data})
	if _, err := connect(t, inst).Exec(context.Background(), "CREATE TABLE kept (x int)"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := inst.kill(inst.PID); err != nil {
		t.Fatal(err)
	}
	t.Logf("stop by SIGQUIT: %v", time.Since(t0))
	requireGone(t, inst.PID)
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	inst2 := start(t, Options{DataDir: data})
	if _, err := connect(t, inst2).Exec(context.Background(), "SELECT * FROM kept"); err != nil {
		t.Errorf("after crash recovery: %v", err)
	}
}

// Cancelling Start at any point leaves no server behind, and the data
// directory usable (a cancelled initdb leaves no half-made cluster).
func TestCancelledStartLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	data := filepath.Join(clusterDir(t), "data")
	for _, d := range []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond, 900 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(d, cancel)
		inst, err := Start(ctx, Options{DataDir: data})
		cancel()
		t.Logf("cancelled after %v: %v", d, err)
		if err == nil {
			inst.Stop() // the cancel came too late
		} else if !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("cancelled after %v: %v", d, err)
		}
		if p := processesIn(data); len(p) > 0 {
			t.Errorf("cancelled after %v (err %v): processes %v still run in the data directory", d, err, p)
		}
	}
	start(t, Options{DataDir: data})
}

// A data directory too long for a socket path gets a socket directory in
// /tmp, removed by Stop.
func TestLongDataDirUsesTemporarySocketDir(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	data := filepath.Join(clusterDir(t), strings.Repeat("d", 90))
	inst := start(t, Options{DataDir: data})
	if !strings.HasPrefix(inst.SocketDir, "/tmp/dbparity-sock-") {
		t.Fatalf("socket directory %s", inst.SocketDir)
	}
	show(t, connect(t, inst), "port")
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(inst.SocketDir); !os.IsNotExist(err) {
		t.Errorf("socket directory %s left behind: %v", inst.SocketDir, err)
	}
}

func TestUnreachableDataDir(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	if os.Geteuid() != 0 {
		t.Skip("only root runs the server as another user")
	}
	dir := clusterDir(t)
	closed := filepath.Join(dir, "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{DataDir: filepath.Join(closed, "data")})
	want := "cannot enter " + closed + " (mode 0700): choose --pg-data"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(closed, "data")); !os.IsNotExist(err) {
		t.Errorf("the data directory was created anyway: %v", err)
	}
}

// A directory holding something else is refused before it is touched
// (as root it would be chowned).
func TestNonEmptyDataDirRefused(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	dir := clusterDir(t)
	if err := os.WriteFile(filepath.Join(dir, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("got %v, want a refusal of a non-empty directory", err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o755 || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
		t.Errorf("the refused directory was changed: %v %v", st.Mode(), err)
	}
}

func TestBadBinDir(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), Options{BinDir: t.TempDir(), DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "--pg-bin") {
		t.Fatalf("got %v", err)
	}
}

func TestParseSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, name, value string
		wantErr         string
	}{
		{in: "shared_buffers=1GB", name: "shared_buffers", value: "1GB"},
		{in: " work_mem = 8MB ", name: "work_mem", value: "8MB"},
		{in: "pg_stat_statements.track=all", name: "pg_stat_statements.track", value: "all"},
		{in: "search_path=a,b", name: "search_path", value: "a,b"},
		{in: "Work_Mem=1MB", name: "work_mem", value: "1MB"},
		{in: "application_name=", name: "application_name", value: ""},
		{in: "log_line_prefix='%m [%p] '", name: "log_line_prefix", value: "%m [%p] "},
		{in: "cluster_name='it''s'", name: "cluster_name", value: "it's"},
		{in: "cluster_name=it's", name: "cluster_name", value: "it's"},
		{in: "a=b=c", name: "a", value: "b=c"},
		{in: "novalue", wantErr: "want name=value"},
		{in: "=1", wantErr: `"" is not a setting name`},
		{in: "1abc=2", wantErr: "not a setting name"},
		{in: "bad name=2", wantErr: "not a setting name"},
		{in: "bad-name=2", wantErr: "not a setting name"},
		{in: "x;drop=1", wantErr: "not a setting name"},
		{in: "port=5432", wantErr: "set by dbparity"},
		{in: "listen_addresses=*", wantErr: "set by dbparity"},
		{in: "work_mem='1MB", wantErr: "not one quoted string"},
		{in: "work_mem='1MB' x", wantErr: "not one quoted string"},
		{in: "work_mem=1MB\nfsync=off", wantErr: "control character"},
	} {
		name, value, err := ParseSetting(tc.in)
		switch {
		case tc.wantErr == "" && (err != nil || name != tc.name || value != tc.value):
			t.Errorf("ParseSetting(%q) = %q, %q, %v; want %q, %q", tc.in, name, value, err, tc.name, tc.value)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ParseSetting(%q) error %v, want one containing %q", tc.in, err, tc.wantErr)
		case err != nil && err.Error() != strings.ToLower(err.Error()[:1])+err.Error()[1:]:
			t.Errorf("ParseSetting(%q) error %q starts with a capital", tc.in, err)
		}
	}
}

func TestParseConfLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, name, value string
		bad             bool
	}{
		{in: ""},
		{in: "   # comment"},
		{in: "work_mem = 8MB", name: "work_mem", value: "8MB"},
		{in: "work_mem 8MB", name: "work_mem", value: "8MB"},
		{in: "work_mem=8MB# tight", name: "work_mem", value: "8MB"},
		{in: "log_line_prefix = '%m # [%p] '  # keep the hash", name: "log_line_prefix", value: "%m # [%p] "},
		{in: `cluster_name = 'it''s \\ \'x\' \101'`, name: "cluster_name", value: `it's \ 'x' A`},
		{in: "search_path = '\"$user\", public'", name: "search_path", value: `"$user", public`},
		{in: "work_mem =", bad: true},
		{in: "work_mem = 8MB 9MB", bad: true},
		{in: "work_mem = '8MB", bad: true},
		{in: "include 'other.conf'", bad: true},
		{in: "port = 5433", bad: true},
	} {
		name, value, err := parseConfLine(tc.in)
		if (err != nil) != tc.bad || name != tc.name || value != tc.value {
			t.Errorf("parseConfLine(%q) = %q, %q, %v", tc.in, name, value, err)
		}
	}
}

// quote and unquote agree, so any value reaches the server unchanged.
func TestQuoteRoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "8MB", "it's", `back\slash`, `'\''`, "%m # [%p] "} {
		got, rest, err := unquote(quote(v))
		if err != nil || rest != "" || got != v {
			t.Errorf("unquote(quote(%q)) = %q, %q, %v", v, got, rest, err)
		}
	}
}

// Loopback adds 127.0.0.1 to the socket, on the same port; without it the
// server is not on TCP at all.
func TestLoopback(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	inst := start(t, Options{DataDir: filepath.Join(clusterDir(t), "pg"), Loopback: true})
	tcp := fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s", inst.User, inst.Port, inst.Database)
	c, err := pgx.Connect(context.Background(), tcp)
	if err != nil {
		t.Fatalf("connect on loopback: %v", err)
	}
	c.Close(context.Background())
	if got := show(t, connect(t, inst), "listen_addresses"); got != "127.0.0.1" {
		t.Errorf("listen_addresses %q", got)
	}
	plain := start(t, Options{DataDir: filepath.Join(clusterDir(t), "pg")})
	tcp = fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?connect_timeout=2", plain.User, plain.Port, plain.Database)
	if c, err := pgx.Connect(context.Background(), tcp); err == nil {
		c.Close(context.Background())
		t.Error("a server started without Loopback accepts TCP connections")
	}
}
