package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ab --slice with --managed and sides that differ only by a setting: two
// managed servers, one per side, each with its own data directory (B's
// loaded there), and both sides measured. A setting PostgreSQL does not
// know, on either side, is refused before the first round.
func TestABSlicedManaged(t *testing.T) {
	t.Parallel()
	data := managedDataDir(t)
	dir := filepath.Dir(data)
	run := func(args ...string) (int, string, string) {
		return dbparity(t, dir, append([]string{"ab", "--managed", "postgres", "--pg-data", data, "--pg-set", "fsync=off",
			"--users", "2", "--warmup", "0s", "--duration", "1600ms", "--slice", "200ms", "--rounds", "1", "--load", "--force"}, args...)...)
	}
	code, _, stderr := run("--b-pg-set", "synchronus_commit=off", "--prefix", "typo")
	if code != 2 || !strings.Contains(stderr, "synchronus_commit") || strings.Contains(stderr, "round 1") {
		t.Errorf("a misspelled --b-pg-set: exit %d, want 2 before the first round:\n%s", code, stderr)
	}
	code, stdout, stderr := run("--b-pg-set", "synchronous_commit=off", "--prefix", "ab")
	if code != 0 {
		t.Fatalf("ab --slice --managed: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "b runs on its own managed postgres server, in "+data+"-b") {
		t.Errorf("side B's own server is not announced:\n%s", stderr)
	}
	for _, f := range []string{"ab-a-1.json", "ab-b-1.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(data+"-b", "PG_VERSION")); err != nil {
		t.Errorf("side B's data directory: %v", err)
	}
	if code, out, _ := dbparity(t, dir, "compare", "ab-a-1.json", "ab-b-1.json"); code != 0 || !strings.Contains(out, "synchronous_commit") {
		t.Errorf("compare of the sides: exit %d, want synchronous_commit among what differs:\n%s", code, out)
	}
}

// run --help shows every workload's flags, not only the chosen one's.
func TestHelpShowsEveryWorkload(t *testing.T) {
	t.Parallel()
	code, out, _ := dbparity(t, t.TempDir(), "run", "--help")
	if code != 0 || !strings.Contains(out, "flags of --workload slob") || !strings.Contains(out, "-scale") || !strings.Contains(out, "-warehouses") {
		t.Errorf("run --help: exit %d, want order-entry's and slob's flags:\n%s", code, out)
	}
}
