package runner

import (
	"slices"
	"testing"
)

// A --db-host-metrics URL is recorded without its user info and query,
// given as --flag URL or --flag=URL; a target keeps its masked password
// and the rest of the command line is as given.
func TestRedactArgsMetricsURL(t *testing.T) {
	t.Parallel()
	got := RedactArgs([]string{"run", "--db-host-metrics", "http://u:pw@db1:9100/metrics?token=s3cret#x",
		"-db-host-metrics=https://db2:9100/metrics?collect[]=cpu", "--target", "postgres://u:pw@db1/oe?sslmode=disable", "--label", "a?b"})
	want := []string{"run", "--db-host-metrics", "http://db1:9100/metrics", "-db-host-metrics=https://db2:9100/metrics",
		"--target", "postgres://u:xxxxx@db1/oe?sslmode=disable", "--label", "a?b"}
	if !slices.Equal(got, want) {
		t.Errorf("RedactArgs:\n got %q\nwant %q", got, want)
	}
}
