package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine/managed"
)

// A server frozen (SIGSTOP) before a command starts: every command that
// connects ends within 2 × --statement-timeout, exit 1, with one line
// naming the flag. The kernel still accepts the socket; only the
// server's handshake never comes.
func TestFrozenBeforeStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	logs, _ := filepath.Glob(filepath.Join(root, "internal", "capture", "testdata", "run1", "*.csv*"))
	if code, _, stderr := dbparity(t, dir, append(append([]string{"capture", "--from"}, logs...), "--out", "app.capture")...); code != 0 {
		t.Fatalf("capture: exit %d %s", code, stderr)
	}
	servers := map[string]*managed.Instance{"postgres": secretsServer(t)}
	if my := mariadbServer(t); my != nil {
		servers["mariadb"] = my
	}
	const timeout = 2 * time.Second
	for name, inst := range servers {
		u := inst.URL()
		if _, err := inst.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inst.Signal(syscall.SIGCONT) })
		to := "--statement-timeout=" + timeout.String()
		cmds := [][]string{
			{"check", "--target", u, to},
			{"load", "--target", u, to, "--warehouses", "1"},
			{"run", "--target", u, to, "--duration", "2s", "--warmup", "0s", "--out", name + "-run.json"},
			{"run", "--target", u, to, "--part", "0/2", "--run-id", "frozen", "--duration", "2s", "--out", name + "-part.json"},
			{"snapshot", "--target", u, to, "--out", name + ".snap"},
			{"ab", "--a", u, "--b", u + sep(u) + "x=1", to, "--duration", "1s", "--warmup", "0s", "--prefix", name + "-ab"},
			{"sweep", "--target", u, to, "--over", "users=1,2", "--duration", "1s", "--warmup", "0s", "--prefix", name + "-sweep"},
		}
		if name == "postgres" {
			cmds = append(cmds, []string{"replay", "--target", u, to, "--capture", "app.capture", "--out", name + "-replay.json"})
		}
		var wg sync.WaitGroup
		for _, args := range cmds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				began := time.Now()
				code, _, stderr := dbparity(t, dir, args...)
				took := time.Since(began)
				t.Logf("%s %s: exit %d after %.1f s", name, args[0], code, took.Seconds())
				// Progress lines may come first; the error is the last line.
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				last := lines[len(lines)-1]
				if code != 1 || !strings.HasPrefix(last, "dbparity ") || !strings.Contains(last, "--statement-timeout") {
					t.Errorf("%s %s on a frozen server: exit %d, want 1 and a last line naming --statement-timeout:\n%s", name, strings.Join(args, " "), code, stderr)
				}
				if took > 2*timeout+time.Second {
					t.Errorf("%s %s on a frozen server took %s, want at most 2 × %s", name, args[0], took.Round(100*time.Millisecond), timeout)
				}
			}()
		}
		wg.Wait()
		inst.Signal(syscall.SIGCONT)
	}
}

// sep is the separator before one more URL query parameter.
func sep(u string) string {
	if strings.Contains(u, "?") {
		return "&"
	}
	return "?"
}

// mariadbServer starts a managed MariaDB (with these option lines) for
// the length of the test; nil
// (the test goes on without it) when none is installed, except under
// CI=true.
func mariadbServer(t *testing.T, settings ...string) *managed.Instance {
	t.Helper()
	found := false
	for _, p := range []string{"/usr/sbin/mariadbd", "/usr/bin/mariadbd"} {
		if _, err := os.Stat(p); err == nil {
			found = true
		}
	}
	if !found {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but no MariaDB server (mariadbd) is installed")
		}
		t.Log("no MariaDB server (mariadbd): only PostgreSQL tested; apt-get install mariadb-server to test both")
		return nil
	}
	dir, err := os.MkdirTemp("", "dbparity-my-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	inst, err := managed.StartMariaDB(context.Background(), managed.Options{DataDir: filepath.Join(dir, "data"), Settings: settings})
	if err != nil {
		t.Fatal(fmt.Errorf("managed mariadb: %w", err))
	}
	t.Cleanup(func() { inst.Stop() })
	return inst
}
