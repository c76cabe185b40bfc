package managed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

func needPostgres(t *testing.T) {
	t.Helper()
	if _, err := findBin(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %v", err)
		}
		t.Skip(err.Error())
	}
}

func TestParseSetting(t *testing.T) {
	for _, tc := range []struct {
		in, name, value string
		ok              bool
	}{
		{"shared_buffers=1GB", "shared_buffers", "1GB", true},
		{" work_mem = 8MB ", "work_mem", "8MB", true},
		{"pg_stat_statements.track=all", "pg_stat_statements.track", "all", true},
		{"search_path=a,b", "search_path", "a,b", true},
		{"Work_Mem=1MB", "work_mem", "1MB", true},
		{"novalue", "", "", false},
		{"=1", "", "", false},
		{"1abc=2", "", "", false},
		{"bad name=2", "", "", false},
		{"x;drop=1", "", "", false},
	} {
		name, value, err := ParseSetting(tc.in)
		if (err == nil) != tc.ok || name != tc.name || value != tc.value {
			t.Errorf("ParseSetting(%q) = %q, %q, %v", tc.in, name, value, err)
		}
	}
}

func TestStartStopRestart(t *testing.T) {
	needPostgres(t)
	dir, err := os.MkdirTemp("", "dbparity-pg-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // the server's user must be able to enter it when tests run as root
	t.Cleanup(func() { os.RemoveAll(dir) })
	conf := filepath.Join(dir, "extra.conf")
	os.WriteFile(conf, []byte("# a comment\nrandom_page_cost = 1.5\nwork_mem = '4MB'\n"), 0o644)
	ctx := context.Background()
	o := Options{DataDir: filepath.Join(dir, "data"), ConfFile: conf, Settings: []string{"work_mem=8MB", "fsync=off"}}

	inst, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	c, err := pgx.Connect(ctx, inst.URL())
	if err != nil {
		t.Fatal(err)
	}
	show := func(name string) string {
		var v string
		if err := c.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for name, want := range map[string]string{"max_connections": "300", "work_mem": "8MB", "random_page_cost": "1.5", "listen_addresses": ""} {
		if got := show(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if inst.Settings["work_mem"] != "8MB" || inst.Settings["random_page_cost"] != "1.5" {
		t.Errorf("recorded settings %v", inst.Settings)
	}
	if os.Geteuid() == 0 {
		st, _ := os.Stat(inst.DataDir)
		if st.Sys().(*syscall.Stat_t).Uid == 0 {
			t.Error("running as root, but the data directory is owned by root")
		}
	}
	if _, err := c.Exec(ctx, "CREATE TABLE kept (x int)"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	pid := inst.PID
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("postgres pid %d still runs after Stop", pid)
	}
	if err := inst.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	// The data directory is kept: a second start finds the table.
	inst2, err := Start(ctx, Options{DataDir: o.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer inst2.Stop()
	c2, err := pgx.Connect(ctx, inst2.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	var n int
	if err := c2.QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n); err != nil {
		t.Errorf("table created before the restart: %v", err)
	}
	var wm string
	c2.QueryRow(ctx, "SHOW work_mem").Scan(&wm)
	if wm == "8MB" {
		t.Error("settings of the first start leaked into the second")
	}
}

// A postmaster left running (dbparity killed) is stopped and replaced.
func TestStartReplacesLeftoverServer(t *testing.T) {
	needPostgres(t)
	dir, _ := os.MkdirTemp("", "dbparity-pg-")
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx := context.Background()
	a, err := Start(ctx, Options{DataDir: filepath.Join(dir, "d")})
	if err != nil {
		t.Fatal(err)
	}
	old := a.PID
	b, err := Start(ctx, Options{DataDir: filepath.Join(dir, "d")}) // a is never stopped
	if err != nil {
		a.Stop()
		t.Fatal(err)
	}
	defer b.Stop()
	if alive(old) || b.PID == old {
		t.Errorf("old postmaster %d still alive (new %d)", old, b.PID)
	}
}

func TestUnreachableDataDir(t *testing.T) {
	needPostgres(t)
	if os.Geteuid() != 0 {
		t.Skip("only root starts the server as another user")
	}
	dir, _ := os.MkdirTemp("", "dbparity-closed-") // mode 0700, owned by root
	t.Cleanup(func() { os.RemoveAll(dir) })
	_, err := Start(context.Background(), Options{DataDir: filepath.Join(dir, "data")})
	if err == nil || !strings.Contains(err.Error(), "cannot enter") || !strings.Contains(err.Error(), "--pg-data") {
		t.Fatalf("got %v, want an error naming the directory and --pg-data", err)
	}
}

func TestBadBinDir(t *testing.T) {
	_, err := Start(context.Background(), Options{BinDir: t.TempDir(), DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "--pg-bin") {
		t.Fatalf("got %v", err)
	}
}
