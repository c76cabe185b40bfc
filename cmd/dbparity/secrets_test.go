package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

// A password given in a target never reaches stderr, whether the target is
// refused before connecting (exit 2) or the connection fails (exit 1).
// hun and ter2 are the halves of a password split by a character that
// needed quoting or escaping.
func TestPasswordsNotOnStderr(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"check", "--target", "host=127.0.0.1 port=1 user=u password=hunter2 dbname=d connect_timeout=2"}, 1},
		{[]string{"check", "--target", "postgres://u:hunter2@127.0.0.1:1/d?connect_timeout=2"}, 1},
		{[]string{"check", "--target", "postgres://u@127.0.0.1:1/d?connect_timeout=2&password=hunter2"}, 1},
		{[]string{"load", "--target", "host=/tmp user=u password=hunter2 dbname=d port=99999999"}, 2},
		{[]string{"load", "--target", "postgres://u:hunter2@h:99999999/db"}, 2},
		{[]string{"load", "--target", "postgres://u:hun/ter2@h/db"}, 2},
		{[]string{"load", "--target", "postgres://u:hun@ter2@h/db"}, 2},
		{[]string{"run", "--target", "postgres://u:hun%zzter2@h/db"}, 2},
		{[]string{"run", "--target", "postgres://u@h/db?password=hun&ter2"}, 2},
		{[]string{"run", "--target", "host=/tmp user=u password=hun ter2 dbname=d"}, 2},
		{[]string{"run", "--target=host=/tmp user=u password = 'hun ter2"}, 2},
	} {
		code, stdout, stderr := dbparity(t, dir, tc.args...)
		if code != tc.code || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and one line", tc.args, code, stderr, tc.code)
		}
		for _, part := range []string{"hunter2", "hun", "ter2"} {
			if strings.Contains(stdout+stderr, part) {
				t.Errorf("%q: output shows %q: %s%s", tc.args, part, stdout, stderr)
			}
		}
		if !strings.Contains(stderr, "xxxxx") {
			t.Errorf("%q: the error does not show the target redacted: %q", tc.args, stderr)
		}
	}
}

// Real runs whose password is also the user's name, the database's name,
// "postgres" or "1", given in a URL, a ?password= parameter and a
// keyword/value string: each finishes and writes its result (no check can
// refuse it for holding a word that the password also is); the result's
// target and command hold xxxxx where the password was; and neither the
// result, the journal, stdout nor stderr holds the password in a
// password's form. The managed server trusts every local connection, so
// the passwords are not checked by it: what matters is what dbparity
// stores and prints. A password from PGPASSWORD or a password file is
// not stored or printed either.
func TestRunWithPasswordsLikeOtherParts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a managed PostgreSQL fourteen times")
	}
	inst := secretsServer(t)
	dir := t.TempDir()
	db := inst.Database
	roles := []struct{ name, password string }{
		{"same", "same"}, // the user's name
		{"dbpw", db},     // the database's name
		{"pgpw", "postgres"},
		{"one", "1"},
	}
	for _, r := range roles {
		execOn(t, inst.URL(), fmt.Sprintf("CREATE ROLE %s LOGIN SUPERUSER PASSWORD '%s'", r.name, r.password))
	}
	if code, _, stderr := dbparity(t, dir, "load", "--workload", "slob", "--scale", "2000", "--target", inst.URL()); code != 0 {
		t.Fatalf("load: exit %d: %s", code, stderr)
	}
	sock := fmt.Sprintf("host=%s&port=%d", inst.SocketDir, inst.Port)
	type run struct {
		name, target, shown, password string
		env                           []string
	}
	var runs []run
	for k, r := range roles {
		u, pw := r.name, r.password
		// Half of the keyword/value strings quote the password, with
		// spaces around '='.
		kv := fmt.Sprintf("host=%s port=%d user=%s password=%%s dbname=%s", inst.SocketDir, inst.Port, u, db)
		given, shown := fmt.Sprintf(kv, pw), fmt.Sprintf(kv, "xxxxx")
		if k%2 == 1 {
			kv = strings.Replace(kv, "password=%s", "password = '%s'", 1)
			given, shown = fmt.Sprintf(kv, pw), fmt.Sprintf(kv, "xxxxx")
		}
		runs = append(runs,
			run{u + "/url", "postgres://" + u + ":" + pw + "@/" + db + "?" + sock,
				"postgres://" + u + ":xxxxx@/" + db + "?" + sock, pw, nil},
			run{u + "/parameter", "postgres://" + u + "@/" + db + "?" + sock + "&password=" + pw,
				"postgres://" + u + "@/" + db + "?" + sock + "&password=xxxxx", pw, nil},
			run{u + "/keyword-value", given, shown, pw, nil})
	}
	passfile := filepath.Join(dir, "pgpass")
	if err := os.WriteFile(passfile, []byte("*:*:*:*:pgpassfilesecret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := "postgres://same@/" + db + "?" + sock
	runs = append(runs,
		run{"PGPASSWORD", plain, plain, "pgpasswordsecret", []string{"PGPASSWORD=pgpasswordsecret"}},
		run{"PGPASSFILE", plain, plain, "pgpassfilesecret", []string{"PGPASSFILE=" + passfile}})

	for i, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			out := fmt.Sprintf("r%d.json", i)
			targetArgs := []string{"--target", r.target}
			if i%2 == 1 { // both spellings of the flag reach the recorded command
				targetArgs = []string{"--target=" + r.target}
			}
			args := append([]string{"run", "--workload", "slob", "--users", "1", "--duration", "1s", "--warmup", "0s",
				"--label", "secret", "--out", out}, targetArgs...)
			code, stdout, stderr, journal := runWatchingJournal(t, dir, r.env, out, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			res, err := result.Read(filepath.Join(dir, out))
			if err != nil {
				t.Fatalf("the run finished but its result is not readable: %v", err)
			}
			if res.Target.URL != r.shown {
				t.Errorf("result target %q, want %q", res.Target.URL, r.shown)
			}
			if want := targetArgs[len(targetArgs)-1]; !slices.Contains(res.Command, strings.Replace(want, r.target, r.shown, 1)) {
				t.Errorf("command %q does not hold the target redacted", res.Command)
			}
			file, _ := os.ReadFile(filepath.Join(dir, out))
			if journal == "" {
				t.Error("never saw the journal's header while the run went on")
			}
			for what, text := range map[string]string{"result": string(file), "journal": journal, "stdout": stdout, "stderr": stderr} {
				for _, form := range passwordForms(r.password, r.env != nil) {
					if strings.Contains(text, form) {
						t.Errorf("the %s holds %q", what, form)
					}
				}
			}
		})
	}
}

// passwordForms are how a password appears where it was given: after
// "password=" (quoted or not, with spaces or not) or between ':' and '@'.
// A password from the environment has no form: it must not appear at all.
func passwordForms(pw string, anywhere bool) []string {
	if anywhere {
		return []string{pw}
	}
	return []string{":" + pw + "@", "password=" + pw, "password='" + pw, "password = " + pw, "password = '" + pw}
}

// runWatchingJournal runs the binary in dir with env added and returns its
// exit code, its output, and the journal's header line as read while the
// run went on (the journal is removed once the result is written).
func runWatchingJournal(t *testing.T, dir string, env []string, out string, args ...string) (int, string, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	journal := ""
	var err error
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-time.After(10 * time.Millisecond):
			if journal == "" {
				b, _ := os.ReadFile(result.JournalPath(filepath.Join(dir, out)))
				if head, _, ok := strings.Cut(string(b), "\n"); ok {
					journal = head
				}
			}
		}
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String(), journal
}

// secretsServer starts a managed PostgreSQL for the length of the test.
// Skipped when no PostgreSQL is installed, except under CI=true.
func secretsServer(t *testing.T) *managed.Instance {
	t.Helper()
	if _, err := exec.LookPath("initdb"); err != nil {
		if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
			if os.Getenv("CI") == "true" {
				t.Fatal("CI=true but no PostgreSQL server binaries (initdb)")
			}
			t.Skip("no PostgreSQL server binaries (initdb) on PATH or in /usr/lib/postgresql: install PostgreSQL to run this test")
		}
	}
	// Not t.TempDir: its parent is mode 0700, which the unprivileged
	// server user (when tests run as root) cannot enter.
	dir, err := os.MkdirTemp("", "dbparity-secrets-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	inst, err := managed.Start(context.Background(), managed.Options{DataDir: filepath.Join(dir, "pg"),
		Settings: []string{"fsync=off", "autovacuum=off"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	return inst
}

func execOn(t *testing.T, url, sql string) {
	t.Helper()
	tg, err := engine.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	c, err := tg.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
