package main

import (
	"strings"
	"testing"
)

// Off a terminal, progress is a plain line every --progress-interval,
// never the terminal's redrawn line.
func TestProgressOffTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, stderr := dbparity(t, dir, "load", "--warehouses", "1"); code != 0 {
		t.Fatalf("load: exit %d\n%s", code, stderr)
	}
	code, _, stderr := dbparity(t, dir, "run", "--users", "2", "--warmup", "1s", "--duration", "4s", "--progress-interval", "1s", "--out", "p.json")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	n := strings.Count(stderr, " tps  p95 ")
	if n < 4 || n > 7 || strings.ContainsAny(stderr, "\r\033") {
		t.Errorf("%d progress lines in 5 s at one a second (redrawn: %v):\n%s", n, strings.ContainsAny(stderr, "\r\033"), stderr)
	}
}
