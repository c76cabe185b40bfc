package pgstat

import (
	"context"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/engine"
)

// The warning of a role that may not read the database host's files
// (--db-host sql) names the database to make its GRANTs in: EXECUTE on a
// function is granted in one database, so the grants made in psql's
// default database (postgres) leave the role as it was in the target's;
// made where the warning says, they let it read the host.
func TestHostAccessWarningNamesTheDatabase(t *testing.T) {
	t.Parallel()
	inst := cluster(t)
	ctx := context.Background()
	super := connect(t, inst)
	exec(t, super, "CREATE ROLE bench LOGIN")
	exec(t, super, "GRANT pg_read_server_files TO bench")
	as := func(user, db string) engine.Conn {
		t.Helper()
		url := strings.Replace(inst.URL(), "//"+inst.User+"@", "//"+user+"@", 1)
		url = strings.Replace(url, "/"+inst.Database+"?", "/"+db+"?", 1)
		tg, err := engine.Open(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tg.Close() })
		c, err := tg.Connect(ctx)
		if err != nil {
			t.Fatalf("connect as %s to %s: %v", user, db, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	grants := "GRANT EXECUTE ON FUNCTION " + readFileFn + " TO bench; GRANT EXECUTE ON FUNCTION " + lsDirFn + " TO bench"
	// The grants made in another database, as a superuser would from
	// psql without -d.
	other := as(inst.User, "postgres")
	for _, g := range strings.Split(grants, "; ") {
		exec(t, other, g)
	}
	bench := as("bench", inst.Database)
	ok, warning, err := HostAccess(ctx, bench)
	if err != nil {
		t.Fatal(err)
	}
	want := "connected to the target's database (psql -d " + inst.Database + ";"
	if ok || !strings.Contains(warning, want) || !strings.Contains(warning, grants) {
		t.Fatalf("granted in database postgres: ok %v, warning %q; want one naming %q and %q", ok, warning, want, grants)
	}
	t.Logf("warning: %s", warning)
	// Made where it says: the role reads the host.
	for _, g := range strings.Split(grants, "; ") {
		exec(t, super, g)
	}
	if ok, warning, err := HostAccess(ctx, bench); err != nil || !ok || warning != "" {
		t.Errorf("granted in the target's database: ok %v, warning %q, %v", ok, warning, err)
	}
}
