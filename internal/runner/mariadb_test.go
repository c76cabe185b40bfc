package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/result"
)

// managedMariaDB is --managed mariadb in a fresh data directory, or a
// skip (a failure under CI=true) when MariaDB is not installed.
func managedMariaDB(t *testing.T) Target {
	t.Helper()
	for _, p := range []string{"/usr/sbin/mariadbd", "/usr/bin/mariadbd"} {
		if _, err := os.Stat(p); err == nil {
			dir, err := os.MkdirTemp("", "dbparity-my-")
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(dir, 0o755)
			t.Cleanup(func() { os.RemoveAll(dir) })
			return Target{Managed: "mariadb", MyData: filepath.Join(dir, "data")}
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but no MariaDB server (mariadbd) is installed")
	}
	t.Skip("no MariaDB server (mariadbd): apt-get install mariadb-server to run this test")
	return Target{}
}

// order-entry on a managed MariaDB (InnoDB): load, the consistency
// conditions after load and after a run, and the run's New-Orders equal
// to the rows the orders table gained.
func TestOrderEntryManagedMariaDB(t *testing.T) {
	tg := managedMariaDB(t)
	ctx := context.Background()
	c, out := common(t, tg)
	o, err := openTarget(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	// One server for the whole test: the URL of the started instance.
	defer o.close()
	c.Target = Target{URL: o.managed.URL()}
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	if err := Check(ctx, c); err != nil {
		t.Fatalf("check after load: %v\n%s", err, out)
	}
	ordersBefore := countRows(t, c.Target, "SELECT count(*) FROM orders")
	path := filepath.Join(t.TempDir(), "run.json")
	if err := Run(ctx, RunOptions{Common: c, Users: 3, Duration: 3 * time.Second, Warmup: time.Second,
		Label: "maria", Out: path, Force: true}); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if err := Check(ctx, c); err != nil {
		t.Fatalf("check after run: %v\n%s", err, out)
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if grew := countRows(t, c.Target, "SELECT count(*) FROM orders") - ordersBefore; allPhases(r, "new_order") != grew || grew == 0 {
		t.Errorf("result counts %d committed New-Orders; the orders table grew by %d", allPhases(r, "new_order"), grew)
	}
	s := r.Summarize()
	for _, name := range []string{"new_order", "payment", "order_status", "delivery", "stock_level"} {
		if tx := s.Transactions[name]; tx.Count == 0 {
			t.Errorf("%s: none committed", name)
		}
	}
	if r.Target.Dialect != "mysql" || len(r.Errors) != 0 {
		t.Errorf("dialect %q, errors %v %v", r.Target.Dialect, r.Errors, r.ErrorSamples)
	}
	if r.RoundTrips < s.Commits {
		t.Errorf("%d round trips for %d transactions", r.RoundTrips, s.Commits)
	}
	t.Logf("%.0f tps, %.1f statements and %.1f round trips per transaction", s.TPS,
		float64(r.Statements)/float64(s.Commits), float64(r.RoundTrips)/float64(s.Commits))
}
