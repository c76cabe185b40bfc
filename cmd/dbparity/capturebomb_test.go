package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gzipMembers writes head, chunk n times and tail as one gzip member each:
// a reader inflates them as one stream, so gigabytes of content take
// megabytes to make.
func gzipMembers(t *testing.T, path, head string, chunk []byte, n int, tail string) {
	t.Helper()
	member := func(b []byte) []byte {
		var out bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	var file bytes.Buffer
	file.Write(member([]byte(head)))
	m := member(chunk)
	for range n {
		file.Write(m)
	}
	file.Write(member([]byte(tail)))
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A capture that is not one replay can hold (a gzip bomb, an engine
// dbparity does not have, a null session, a cut file) is refused as a
// usage error: exit 2, one line naming the file, before memory grows
// (the process's peak RSS is checked) and before any connection (the
// target does not exist).
func TestReplayRefusesHostileCapture(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const head = `{"format":"dbparity.capture/1","sources":["x"],"start":"2024-05-20T10:00:00Z","end":"2024-05-20T10:00:01Z",`
	// 3 GiB of a JSON string in 3 MB of gzip, as in issue 46.
	gzipMembers(t, filepath.Join(dir, "bomb.capture"), head+`"texts":["`, bytes.Repeat([]byte("a"), 1<<20), 3072, `"]}`)
	// 3 GiB of the smallest statements.
	gzipMembers(t, filepath.Join(dir, "statements.capture"), head+`"texts":["SELECT 1"],"sessions":[{"id":"s","statements":[`,
		bytes.Repeat([]byte(`{"o":0,"t":0},`), (1<<20)/14), 3072, `{"o":0,"t":0}]}]}`)
	gzipMembers(t, filepath.Join(dir, "oracle.capture"), head+`"engine":"oracle","texts":["SELECT 1 FROM dual"],"sessions":[{"id":"s","statements":[{"o":0,"t":0}]}]}`, nil, 0, "")
	gzipMembers(t, filepath.Join(dir, "null.capture"), head+`"texts":["SELECT 1"],"sessions":[{"id":"s","statements":[{"o":0,"t":0}]},null]}`, nil, 0, "")
	gzipMembers(t, filepath.Join(dir, "whole.capture"), head+`"texts":["SELECT 1"],"sessions":[{"id":"s","statements":[{"o":0,"t":0}]}]}`, nil, 0, "")
	whole, err := os.ReadFile(filepath.Join(dir, "whole.capture"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cut.capture"), whole[:len(whole)-6], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want, or string }{
		// The text passes its 64 MiB as the content passes 64 MiB at
		// 1,000 times its gzip: either refusal is the file's.
		{"bomb.capture", "bomb.capture: a statement text at byte 116 of its content is longer than the 64 MiB a statement text may have: the file is not a dbparity capture or is damaged",
			"MiB, more than 500 times as much, where captures take 3 to 15 times their gzip: the file is a gzip bomb"},
		{"statements.capture", "MiB of memory, more than 500 times as much, where captures take 3 to 15 times their gzip: the file is a gzip bomb, not a dbparity capture, or is damaged", ""},
		{"oracle.capture", `oracle.capture: engine "oracle": dbparity replays captures of postgresql and mysql: the file is not a dbparity capture or is damaged`, ""},
		{"null.capture", "capture file null.capture is damaged at byte 179 of its content: session 1 is null, not an object", ""},
		{"cut.capture", "capture file cut.capture is damaged at byte ", ""},
	} {
		// Under an address-space limit, so that a dbparity that reads the
		// bomb whole fails here rather than taking the machine's memory.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", `ulimit -v 4194304 && exec "$0" "$@"`, bin,
			"replay", "--capture", tc.file, "--target", "postgres://u@127.0.0.1:1/db", "--statement-timeout", "1s")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
		msg := strings.TrimSpace(stderr.String())
		t.Logf("%s: exit %d in %v, peak RSS %d MiB: %s", tc.file, code, took.Round(time.Millisecond), rss>>20, msg)
		if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) && (tc.or == "" || !strings.Contains(msg, tc.or)) || !strings.HasPrefix(msg, "dbparity replay: ") || !strings.Contains(msg, tc.file) {
			t.Errorf("%s: exit %d, %q; want exit 2 and one line with %q", tc.file, code, msg, tc.want)
		}
		// The decoder's buffer for one value of 64 MiB (256 MiB) and
		// what a capture may hold once it expands like a bomb (64 MiB
		// and the garbage of its arrays); the whole file in memory took
		// 6.8 GB.
		if rss > 512<<20 {
			t.Errorf("%s: peak RSS %d MiB", tc.file, rss>>20)
		}
	}
}
