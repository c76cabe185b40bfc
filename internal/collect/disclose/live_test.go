package disclose

import (
	"encoding/json"
	"os"
	"runtime"
	"testing"
)

// TestLive reads this machine. It asserts only what every Linux host has;
// run with -v to see the disclosure.
func TestLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("disclosure reads /proc and /sys, which only Linux has")
	}
	h := Host(Options{})
	if h.Kernel == "" {
		t.Error("kernel release is empty")
	}
	if h.CPU.Online < 1 {
		t.Errorf("cpus online = %d, want >= 1", h.CPU.Online)
	}
	if h.Memory.TotalBytes <= 0 {
		t.Errorf("memory total = %d, want > 0", h.Memory.TotalBytes)
	}
	if h.Virtualization == "" {
		t.Error("virtualization is empty; want a name or \"none detected\"")
	}
	s := Storage(Options{}, os.TempDir())
	if s == nil || s.FSType == "" {
		t.Errorf("storage of %s: no file system type: %+v", os.TempDir(), s)
	} else if s.TotalBytes <= 0 {
		t.Errorf("storage of %s: total bytes = %d", os.TempDir(), s.TotalBytes)
	}
	b, _ := json.MarshalIndent(struct {
		Host    HostInfo     `json:"host"`
		Storage *StorageInfo `json:"storage"`
	}{h, s}, "", "  ")
	t.Logf("%s", b)
}
