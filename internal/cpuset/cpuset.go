// Package cpuset owns lists of CPUs: which ones this process may run on,
// which of them a server is given, and the kernel's way of writing a
// list (0-3,6). It is a leaf: it knows nothing of dbparity.
package cpuset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Available lists the CPUs this process may run on.
func Available() ([]int, error) { return Of(0) }

// Of lists the CPUs process pid may run on (0: this process).
func Of(pid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return nil, fmt.Errorf("read the CPUs of process %d: %w", pid, err)
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Last picks n of the available CPUs, the highest numbered: CPU 0
// usually takes the most interrupts, and the driver keeps the rest.
func Last(n int) ([]int, error) {
	all, err := Available()
	if err != nil {
		return nil, err
	}
	if n < 1 || n > len(all) {
		return nil, fmt.Errorf("%d CPU(s) asked, this host lets dbparity use %d (%s)", n, len(all), Format(all))
	}
	return slices.Clone(all[len(all)-n:]), nil
}

// Set confines process pid to cpus. A process that has exited is not an
// error: a backend may end in between.
func Set(pid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if set.Count() == 0 {
		return fmt.Errorf("no CPU to confine process %d to", pid)
	}
	if err := unix.SchedSetaffinity(pid, &set); err != nil && err != unix.ESRCH {
		return fmt.Errorf("confine process %d to CPUs %s: %w", pid, Format(cpus), err)
	}
	return nil
}

// Format writes a sorted CPU list as the kernel does: 0-3,6.
func Format(cpus []int) string {
	var parts []string
	for k := 0; k < len(cpus); {
		j := k
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		p := strconv.Itoa(cpus[k])
		if j > k {
			p += "-" + strconv.Itoa(cpus[j])
		}
		parts = append(parts, p)
		k = j + 1
	}
	return strings.Join(parts, ",")
}
