package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A write that fails after its temporary file was made (here the rename,
// onto a directory that holds a file, or the writer's own error) leaves
// the file as it was and no temporary file.
func TestWriteCleansUp(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "r.html")
	os.Mkdir(target, 0o755)
	os.WriteFile(filepath.Join(target, "keep"), []byte("x"), 0o644)
	if err := WriteBytes(target, []byte("<html>")); err == nil {
		t.Fatal("a rename onto a non-empty directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("after a failed write the directory holds %d entries, want 1 (r.html): %v", len(entries), entries)
	}
	if err := WriteBytes(filepath.Join(dir, "no", "r.html"), []byte("<html>")); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
	old := filepath.Join(dir, "old")
	os.WriteFile(old, []byte("before"), 0o644)
	boom := errors.New("boom")
	if err := Write(old, func(w io.Writer) error { w.Write([]byte("half")); return boom }); !errors.Is(err, boom) {
		t.Errorf("the writer's error: %v", err)
	}
	if b, _ := os.ReadFile(old); string(b) != "before" {
		t.Errorf("a failed write changed the file: %q", b)
	}
	if err := WriteBytes(old, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(old); string(b) != "after" {
		t.Errorf("file holds %q", b)
	}
	if st, _ := os.Stat(old); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	entries, _ = os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("temporary files left: %v", entries)
	}
}
