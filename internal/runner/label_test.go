package runner

import "testing"

// A run given no --label is named by its target's engine and host, never
// by this machine's name alone.
func TestDefaultLabel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		t    Target
		want string
	}{
		{Target{}, "sqlite"},
		{Target{URL: "sqlite://dbparity-data/x.db"}, "sqlite"},
		{Target{Managed: "postgres"}, "postgres@managed"},
		{Target{Managed: "mariadb"}, "mariadb@managed"},
		{Target{URL: "postgres://bench@db1:5432/bench"}, "postgres@db1"},
		{Target{URL: "host=/var/run/postgresql user=bench dbname=bench"}, "postgres@local"},
		{Target{URL: "mariadb://root@db2/sbtest"}, "mariadb@db2"},
		{Target{URL: "mysql://root@/db?socket=/tmp/mysqld.sock"}, "mysql@local"},
	} {
		if got := DefaultLabel(c.t); got != c.want {
			t.Errorf("%+v: %q, want %q", c.t, got, c.want)
		}
	}
}
