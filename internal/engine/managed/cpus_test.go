package managed

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dbparity/dbparity/internal/cpuset"
)

// SetCPUs confines every process of the server, and the backends it
// forks afterwards, to the CPUs given.
func TestSetCPUs(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	avail, err := cpuset.Available()
	if err != nil {
		t.Fatal(err)
	}
	if len(avail) < 2 {
		t.Skipf("this host gives dbparity %d CPU: confining the server to fewer proves nothing", len(avail))
	}
	inst := start(t, Options{DataDir: filepath.Join(clusterDir(t), "data")})
	last, err := cpuset.Last(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.SetCPUs(last); err != nil {
		t.Fatal(err)
	}
	for _, pid := range inst.Processes() {
		if got, err := cpuset.Of(pid); err == nil && !slices.Equal(got, last) {
			t.Errorf("server process %d may run on %v, want %v", pid, got, last)
		}
	}
	// A backend forked after the change inherits the postmaster's set.
	c := connect(t, inst)
	var pid int
	if err := c.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if got, err := cpuset.Of(pid); err != nil || !slices.Equal(got, last) {
		t.Errorf("new backend %d may run on %v (%v), want %v", pid, got, err, last)
	}
	if !slices.Equal(inst.CPUs, last) {
		t.Errorf("instance records CPUs %v", inst.CPUs)
	}
	if _, err := cpuset.Last(len(avail) + 1); err == nil {
		t.Error("more CPUs than the host has were given")
	}
}
