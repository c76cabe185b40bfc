package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// memCgroup is a memory cgroup made for the slob runs: a child of this
// process's own memory cgroup with a limit, which this process joins
// while a run starts its server, so that the server's processes (which
// inherit it) and the OS page cache their reads fill are held to the
// limit. The kernel charges a cached page to the cgroup of the process
// that read it and reclaims within the cgroup when it is full.
type memCgroup struct {
	dir, parent string // the cgroup's directory and its parent's
	limitFile   string // memory.max (v2) or memory.limit_in_bytes (v1)
	version     int    // 1 or 2
}

// newMemCgroup makes a child of this process's memory cgroup limited to
// limit bytes, or says why it cannot.
func newMemCgroup(limit int64) (*memCgroup, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	var v1, v2 string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				v1 = parts[2]
			}
		}
	}
	var g memCgroup
	switch {
	case v1 != "":
		g = memCgroup{parent: filepath.Join("/sys/fs/cgroup/memory", v1), limitFile: "memory.limit_in_bytes", version: 1}
	case v2 != "":
		root := "/sys/fs/cgroup"
		ctl, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
		if err != nil || !strings.Contains(" "+string(ctl)+" ", " memory") {
			return nil, errors.New("no memory controller in the cgroup v2 hierarchy")
		}
		g = memCgroup{parent: filepath.Join(root, v2), limitFile: "memory.max", version: 2}
		// A v2 cgroup with processes cannot hand controllers to its
		// children: this fails unless the parent is empty of processes.
		if err := os.WriteFile(filepath.Join(g.parent, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
			return nil, fmt.Errorf("enable the memory controller below %s: %w", g.parent, err)
		}
	default:
		return nil, errors.New("this process is in no memory cgroup")
	}
	g.dir = filepath.Join(g.parent, fmt.Sprintf("dbparity-slobiops-%d", os.Getpid()))
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil, fmt.Errorf("make a memory cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(g.dir, g.limitFile), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		os.Remove(g.dir)
		return nil, fmt.Errorf("limit the memory cgroup %s: %w", g.dir, err)
	}
	return &g, nil
}

// join moves this process (all its threads) into the cgroup; the
// processes it starts from now on are born in it.
func (g *memCgroup) join() error { return g.move(g.dir) }

// leave moves this process back to its own cgroup.
func (g *memCgroup) leave() error { return g.move(g.parent) }

func (g *memCgroup) move(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0)
}

// peak is the most memory the cgroup's processes and their cached pages
// have used, in bytes (0 when unknown).
func (g *memCgroup) peak() int64 {
	name := "memory.max_usage_in_bytes"
	if g.version == 2 {
		name = "memory.peak"
	}
	b, err := os.ReadFile(filepath.Join(g.dir, name))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// remove deletes the cgroup once its processes have gone.
func (g *memCgroup) remove() error {
	g.leave()
	return os.Remove(g.dir)
}

func (g *memCgroup) String() string {
	return fmt.Sprintf("cgroup v%d %s", g.version, g.dir)
}
