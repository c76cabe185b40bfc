package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine/managed"
)

// --users far above what the server accepts (max_connections 20): the
// sessions open in bounded waves and the first refusal that says the
// server is full ends the run within seconds, naming max_connections,
// with no pile of connection attempts behind it.
func TestConnectionStormStops(t *testing.T) {
	t.Parallel()
	servers := map[string]*managed.Instance{}
	pgDir, err := os.MkdirTemp("", "dbparity-storm-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(pgDir, 0o755)
	t.Cleanup(func() { os.RemoveAll(pgDir) })
	secretsServer(t) // skips (or fails under CI) without PostgreSQL
	pg, err := managed.Start(context.Background(), managed.Options{DataDir: filepath.Join(pgDir, "pg"),
		Settings: []string{"max_connections=20", "fsync=off"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() })
	servers["postgres"] = pg
	if my := mariadbServer(t, "max_connections=20"); my != nil {
		servers["mariadb"] = my
	}
	dir := t.TempDir()
	open := regexp.MustCompile(`with (\d+) open`)
	for name, inst := range servers {
		if code, _, stderr := dbparity(t, dir, "load", "--target", inst.URL(), "--warehouses", "1"); code != 0 {
			t.Fatalf("%s load: exit %d %s", name, code, stderr)
		}
		began := time.Now()
		code, _, stderr := dbparity(t, dir, "run", "--target", inst.URL(), "--users", "100000", "--duration", "2s",
			"--warmup", "0s", "--no-collect", "--out", name+".json")
		took := time.Since(began)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		m := open.FindStringSubmatch(last)
		t.Logf("%s: exit %d after %.1f s: %s", name, code, took.Seconds(), last)
		if code != 1 || !strings.Contains(last, "max_connections") || m == nil {
			t.Fatalf("%s --users 100000 against max_connections 20: exit %d, want 1 and a line naming max_connections:\n%s", name, code, stderr)
		}
		if n, _ := strconv.Atoi(m[1]); n > 21 {
			t.Errorf("%s: %d sessions open at the refusal, above max_connections 20", name, n)
		}
		if took > 15*time.Second {
			t.Errorf("%s: the refused run took %s, want seconds", name, took.Round(time.Second))
		}
		if _, err := os.Stat(filepath.Join(dir, name+".json")); !os.IsNotExist(err) {
			t.Errorf("%s: a run that never started wrote its result: %v", name, err)
		}
	}
}
