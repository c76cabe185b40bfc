package managed

import (
	"fmt"
	"slices"

	"github.com/dbparity/dbparity/internal/cpuset"
)

// SetCPUs confines every process of the server to cpus. Backends forked
// later inherit the postmaster's set, so the whole server stays there.
func (i *Instance) SetCPUs(cpus []int) error {
	pids := i.serverProcesses()
	if len(pids) == 0 {
		return fmt.Errorf("the server has no process to confine to CPUs %s", cpuset.Format(cpus))
	}
	for _, pid := range pids {
		if err := cpuset.Set(pid, cpus); err != nil {
			return err
		}
	}
	i.CPUs = slices.Clone(cpus)
	i.logf("server confined to CPUs %s", cpuset.Format(cpus))
	return nil
}
