// Package hostfs keeps a private copy of files of another host — its
// /proc and /sys as read through some channel, such as the database's
// connection — so that collectors that read a proc or sys root (ostat,
// disclose) parse them unchanged, by the same code as this host's.
//
// The copy lives in memory (/dev/shm) where there is one, so that a
// driver that shares its host with the database puts no IO on the disks
// it measures; it is removed by Close.
package hostfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Mirror is a directory standing for the root of another host.
type Mirror struct {
	root string
}

// New makes an empty mirror.
func New() (*Mirror, error) {
	parent := os.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		parent = "/dev/shm"
	}
	dir, err := os.MkdirTemp(parent, "dbparity-host-")
	if err != nil {
		return nil, fmt.Errorf("make a copy of the database host's files: %w", err)
	}
	return &Mirror{root: dir}, nil
}

// Root is the directory that stands for the other host's "/".
func (m *Mirror) Root() string { return m.root }

// Path is where the other host's absolute path p is in the mirror.
func (m *Mirror) Path(p string) string {
	return filepath.Join(m.root, filepath.Clean("/"+p))
}

// Put writes files, by their absolute path on the other host. A nil
// content removes the file: it is gone there too. Each file is written
// whole under a temporary name and renamed, so a reader never sees half.
func (m *Mirror) Put(files map[string][]byte) error {
	for p, b := range files {
		dst := m.Path(p)
		if b == nil {
			os.Remove(dst)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		tmp := dst + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
	}
	return nil
}

// Retain removes the entries of the directory dir (a path on the other
// host) that keep rejects: the /proc/PID directories of processes gone.
func (m *Mirror) Retain(dir string, keep func(name string) bool) error {
	es, err := os.ReadDir(m.Path(dir))
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, e := range es {
		if !keep(e.Name()) {
			if err := os.RemoveAll(filepath.Join(m.Path(dir), e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// Symlink makes path (on the other host) a link to target, another path
// there, as sysfs links devices; the link is relative so that it resolves
// inside the mirror.
func (m *Mirror) Symlink(path, target string) error {
	link, to := m.Path(path), m.Path(target)
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(link), to)
	if err != nil {
		return err
	}
	os.Remove(link)
	return os.Symlink(rel, link)
}

// Close removes the mirror.
func (m *Mirror) Close() error {
	if m.root == "" || !strings.Contains(m.root, "dbparity-host-") {
		return nil
	}
	err := os.RemoveAll(m.root)
	m.root = ""
	return err
}
