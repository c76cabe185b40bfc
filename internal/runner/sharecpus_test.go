package runner

import (
	"runtime"
	"strings"
	"testing"
)

func TestShareCPUs(t *testing.T) {
	n := runtime.GOMAXPROCS(0)
	if note, restore := ShareCPUs(false); note != "" || runtime.GOMAXPROCS(0) != n {
		restore()
		t.Fatalf("a database on another host: %q, GOMAXPROCS %d (was %d)", note, runtime.GOMAXPROCS(0), n)
	}
	note, restore := ShareCPUs(true)
	got := runtime.GOMAXPROCS(0)
	restore()
	if runtime.GOMAXPROCS(0) != n {
		t.Fatalf("restore left GOMAXPROCS %d, was %d", runtime.GOMAXPROCS(0), n)
	}
	if n < 2 {
		if note != "" || got != n {
			t.Fatalf("on 1 CPU: %q, GOMAXPROCS %d", note, got)
		}
		return
	}
	if got != n/2 || !strings.Contains(note, "paced replay") || !strings.Contains(note, "GOMAXPROCS=") {
		t.Fatalf("on this host with %d CPUs: GOMAXPROCS %d, note %q", n, got, note)
	}
	t.Setenv("GOMAXPROCS", "2")
	if note, restore := ShareCPUs(true); note != "" || runtime.GOMAXPROCS(0) != n {
		restore()
		t.Fatalf("GOMAXPROCS in the environment is the user's: %q, GOMAXPROCS %d", note, runtime.GOMAXPROCS(0))
	}
}
