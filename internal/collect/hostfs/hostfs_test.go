package hostfs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMirror(t *testing.T) {
	m, err := New()
	if err != nil {
		t.Fatal(err)
	}
	root := m.Root()
	if err := m.Put(map[string][]byte{"/proc/stat": []byte("cpu 1 2 3\n"), "/proc/12/stat": []byte("12 (postgres) S 1"),
		"/proc/13/stat": []byte("13 (postgres) S 1"), "/sys/devices/x/vda/queue/rotational": []byte("0\n")}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "proc", "stat")); err != nil || string(b) != "cpu 1 2 3\n" {
		t.Fatalf("read back %q, %v", b, err)
	}
	// A path cannot climb out of the mirror.
	if p := m.Path("/../../etc/passwd"); p != filepath.Join(root, "etc", "passwd") {
		t.Errorf("Path escaped the mirror: %s", p)
	}
	if err := m.Retain("/proc", func(name string) bool { return name != "13" }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "proc", "13")); !os.IsNotExist(err) {
		t.Errorf("the directory of a process gone was kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "proc", "12", "stat")); err != nil {
		t.Errorf("a live process's file was removed: %v", err)
	}
	if err := m.Symlink("/sys/dev/block/252:0", "/sys/devices/x/vda"); err != nil {
		t.Fatal(err)
	}
	if r, err := filepath.EvalSymlinks(filepath.Join(root, "sys", "dev", "block", "252:0")); err != nil || r != filepath.Join(root, "sys", "devices", "x", "vda") {
		t.Errorf("link resolves to %q, %v", r, err)
	}
	if err := m.Put(map[string][]byte{"/proc/stat": nil}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "proc", "stat")); !os.IsNotExist(err) {
		t.Error("a file put as nil (gone there) is still here")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("Close left %s", root)
	}
}
