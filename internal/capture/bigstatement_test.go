package capture

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// insertRows is an INSERT of n rows of three values, about 30 bytes each.
func insertRows(n int, tail string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO t (a,b,c) VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "(%d,'abc%d',%d.5)", i, i, i)
	}
	return b.String() + tail
}

// A statement of megabytes is fingerprinted from its first megabyte (its
// list collapses as a short one's does) and scanned for volatile calls in
// pieces: an 11 MB INSERT of 400,000 rows allocated 1,721 MiB in all
// before (934 MiB of it the fingerprint), and a replay of it 1.4 GB.
func TestBigStatement(t *testing.T) {
	big := insertRows(400_000, "")
	if want := Fingerprint(insertRows(3, "")) + " …"; Fingerprint(big) != want {
		t.Errorf("fingerprint %q, want %q", Fingerprint(big), want)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	Fingerprint(big)
	Volatile(big)
	runtime.ReadMemStats(&after)
	if mib := (after.TotalAlloc - before.TotalAlloc) >> 20; mib > 1000 {
		t.Errorf("fingerprint and volatile scan of %d MB allocated %d MiB", len(big)>>20, mib)
	}
	// A volatile call past the first piece, and one across two pieces.
	if v := Volatile(insertRows(120_000, ", (random(), 'x', 1)")); v != "random()" {
		t.Errorf("a call at the end of %d MB: %q", len(insertRows(120_000, ""))>>20, v)
	}
	pre := "SELECT " + strings.Repeat("1,", maxLexed/2-len("SELECT ")/2)
	if v := Volatile(pre[:maxLexed-3] + " clock_timestamp() FROM t"); v != "clock_timestamp()" {
		t.Errorf("a call across two pieces: %q", v)
	}
}
