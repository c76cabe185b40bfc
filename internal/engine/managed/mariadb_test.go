package managed

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func needMariaDB(t *testing.T) {
	t.Helper()
	if _, err := findMariaDB(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %v", err)
		}
		t.Skipf("managed MariaDB cannot be tested: %v", err)
	}
}

// StartMariaDB starts a MariaDB server as the unprivileged user (as
// root), on its socket only, with the settings given; Stop stops it, a
// second start finds the data kept and the first start's settings gone,
// and SIGKILL of dbparity's side is covered by the same watchdog.
func TestMariaDBStartStop(t *testing.T) {
	t.Parallel()
	needMariaDB(t)
	dir := clusterDir(t)
	conf := filepath.Join(dir, "extra.cnf")
	if err := os.WriteFile(conf, []byte("[client]\nuser=x\n[mysqld]\n# a comment\ninnodb-buffer-pool-size = 64M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	// The preset comes first: the file overrides its buffer pool, its
	// max_allowed_packet stays.
	o := Options{DataDir: filepath.Join(dir, "data"), ConfFile: conf, Settings: []string{"max_connections=77"}, Log: &log,
		Preset: []string{"innodb_buffer_pool_size=16M", "max_allowed_packet=8M"}}
	t0 := time.Now()
	inst, err := StartMariaDB(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	t.Logf("first start (install included): %v", time.Since(t0))
	db, err := sql.Open("mysql", inst.dsn(inst.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, want := range map[string]string{"max_connections": "77", "innodb_buffer_pool_size": "67108864", "skip_networking": "ON",
		"max_allowed_packet": "8388608"} {
		var n, v string
		if err := db.QueryRow("SHOW GLOBAL VARIABLES LIKE '"+name+"'").Scan(&n, &v); err != nil || v != want {
			t.Errorf("%s = %q (%v), want %q", name, v, err, want)
		}
	}
	if inst.Engine != MariaDB || inst.Version == "" || !strings.Contains(log.String(), "started mariadb "+inst.Version) {
		t.Errorf("instance %+v, log %q", inst, log.String())
	}
	if os.Geteuid() == 0 {
		if uid := processUID(t, inst.PID); uid == "0" || inst.OSUser != OSUser {
			t.Errorf("running as root, the server runs as uid %s (OSUser %q)", uid, inst.OSUser)
		}
	}
	if got := inst.Processes(); len(got) != 1 || got[0] != inst.PID {
		t.Errorf("processes %v, want [%d]", got, inst.PID)
	}
	if _, err := db.Exec("CREATE TABLE kept (x int)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	pid := inst.PID
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	requireGone(t, pid)

	inst2, err := StartMariaDB(context.Background(), Options{DataDir: o.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst2.Stop() })
	db2, _ := sql.Open("mysql", inst2.dsn(inst2.Database))
	defer db2.Close()
	var n int
	if err := db2.QueryRow("SELECT count(*) FROM kept").Scan(&n); err != nil {
		t.Errorf("table of the first start: %v", err)
	}
	var v string
	db2.QueryRow("SELECT @@max_connections").Scan(&v)
	if v == "77" {
		t.Error("max_connections of the first start lingers into the second")
	}
	// A frozen server is stopped all the same (resumed, then shut down).
	if _, err := inst2.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if err := inst2.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stop of a frozen server: %v", time.Since(t0))
}

func TestParseMySetting(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"innodb-buffer-pool-size=1G": "innodb_buffer_pool_size=1G",
		"skip_log_bin":               "skip_log_bin=",
		" Max_Connections = 10 ":     "max_connections=10",
	} {
		n, v, err := ParseMySetting(in)
		if err != nil || n+"="+v != want {
			t.Errorf("%q: %s=%s, %v; want %s", in, n, v, err, want)
		}
	}
	for _, bad := range []string{"socket=/tmp/x", "bind-address=0.0.0.0", "datadir=/", "a b=1", "=1"} {
		if _, _, err := ParseMySetting(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
