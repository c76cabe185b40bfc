package rawio

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// checkFigures checks what holds for every Result.
func checkFigures(t *testing.T, r Result, block int) {
	t.Helper()
	if r.Reads <= 0 || r.Elapsed <= 0 {
		t.Fatalf("reads %d in %v, want some", r.Reads, r.Elapsed)
	}
	if want := float64(r.Reads) / r.Elapsed.Seconds(); math.Abs(r.IOPS-want) > 1e-9*want {
		t.Errorf("IOPS %f, want reads/elapsed %f", r.IOPS, want)
	}
	if want := r.IOPS * float64(block) / 1e6; math.Abs(r.MBps-want) > 1e-9*want {
		t.Errorf("MBps %f, want IOPS × block / 1e6 = %f", r.MBps, want)
	}
	if !(0 < r.LatencyP50 && r.LatencyP50 <= r.LatencyP99 && r.LatencyP99 <= r.LatencyMax) {
		t.Errorf("latencies p50 %v, p99 %v, max %v: want 0 < p50 <= p99 <= max", r.LatencyP50, r.LatencyP99, r.LatencyMax)
	}
}

// checkRemoved fails when the test file is left in dir.
func checkRemoved(t *testing.T, dir string) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(dir, "dbparity-rawio-*"))
	if err != nil || len(left) > 0 {
		t.Errorf("test file left behind: %v %v", left, err)
	}
}

func TestMeasure(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	r, err := Measure(context.Background(), Options{Dir: dir, Size: 16 << 20, Workers: 2, Duration: time.Second, Direct: true,
		Progress: func(s string) { lines = append(lines, s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	checkFigures(t, r, DefaultBlock)
	if r.Elapsed != time.Second {
		t.Errorf("elapsed %v, want the measured 1s", r.Elapsed)
	}
	if r.Direct != (r.Method == "go O_DIRECT pread") || r.Method == "" {
		t.Errorf("method %q with direct %v", r.Method, r.Direct)
	}
	if !r.Direct && !strings.Contains(r.Note, "refused O_DIRECT") {
		t.Errorf("buffered without saying why: note %q", r.Note)
	}
	if writes := strings.Count(strings.Join(lines, "\n"), "writing "); writes != 10 {
		t.Errorf("%d progress lines while writing, want one per 10%%:\n%s", writes, strings.Join(lines, "\n"))
	}
	checkRemoved(t, dir)
}

func TestMeasureFallsBackWhenDirectRefused(t *testing.T) {
	saved := openDirect
	t.Cleanup(func() { openDirect = saved })
	openDirect = func(path string) (*os.File, error) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.EINVAL} // as tmpfs did before Linux 6.6
	}
	dir := t.TempDir()
	// A second, as TestMeasure: beside a second test suite 300 ms once
	// passed without a worker running at all.
	r, err := Measure(context.Background(), Options{Dir: dir, Size: 4 << 20, Block: 4096, Workers: 2, Duration: time.Second, Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	checkFigures(t, r, 4096)
	if r.Direct || r.Method != "go buffered pread" {
		t.Errorf("method %q, direct %v: want go buffered pread", r.Method, r.Direct)
	}
	if !strings.Contains(r.Note, "refused O_DIRECT (invalid argument)") {
		t.Errorf("note %q does not say O_DIRECT was refused", r.Note)
	}
	checkRemoved(t, dir)
}

func TestMeasureStopsOnCancel(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := Measure(ctx, Options{Dir: dir, Size: 4 << 20, Duration: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the context's", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("took %v to stop", d)
	}
	checkRemoved(t, dir)
}

func TestOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no dir", Options{}, "no directory given"},
		{"missing dir", Options{Dir: filepath.Join(dir, "missing")}, "no such file or directory"},
		{"dir is a file", Options{Dir: file}, "is not a directory"},
		{"size not a multiple", Options{Dir: dir, Size: 10000}, "size 10000 is not a multiple of the block size 8192"},
		{"negative size", Options{Dir: dir, Size: -8192}, "size -8192 is negative"},
		{"negative block", Options{Dir: dir, Block: -1}, "block size -1 is negative"},
		{"direct block", Options{Dir: dir, Size: 1000, Block: 1000, Direct: true}, "not a multiple of 512"},
		{"workers", Options{Dir: dir, Workers: -1}, "workers -1: need at least 1 reader"},
		{"duration", Options{Dir: dir, Duration: -time.Second}, "duration -1s is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Measure(context.Background(), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	checkRemoved(t, dir)
}

func TestDefaults(t *testing.T) {
	o, err := Options{Dir: t.TempDir()}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Size != 1<<30 || o.Block != 8192 || o.Workers != 1 || o.Duration != 10*time.Second || o.warmup() != time.Second {
		t.Errorf("defaults %+v, warm-up %v", o, o.warmup())
	}
	if w := (Options{Duration: time.Second}).warmup(); w != 100*time.Millisecond {
		t.Errorf("warm-up of 1s is %v, want 100ms", w)
	}
}

func TestAlignedBuffer(t *testing.T) {
	for _, n := range []int{512, 4096, 8192, 12345} {
		b := alignedBuffer(n)
		if len(b) != n || cap(b) != n {
			t.Errorf("alignedBuffer(%d): len %d cap %d", n, len(b), cap(b))
		}
		if a := addr(b) % directAlign; a != 0 {
			t.Errorf("alignedBuffer(%d) is %d bytes off alignment", n, a)
		}
	}
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

func TestFio(t *testing.T) {
	if _, err := exec.LookPath("fio"); err != nil {
		t.Skip("fio is not on PATH: install fio to compare Measure with it")
	}
	dir := t.TempDir()
	r, ok, err := Fio(context.Background(), Options{Dir: dir, Size: 16 << 20, Workers: 2, Duration: time.Second, Direct: true})
	if err != nil || !ok {
		t.Fatalf("fio: ok %v, %v", ok, err)
	}
	t.Log(r)
	if !(r.Reads > 0 && r.IOPS > 0 && r.LatencyP50 <= r.LatencyP99 && r.LatencyP99 <= r.LatencyMax) {
		t.Errorf("figures %+v", r)
	}
	checkRemoved(t, dir)
}

// Cancelled while the test file is written, it is removed: beside a
// second suite the 300 ms of TestMeasureStopsOnCancel ran out there, and
// the file was left (its removal used the path the failed return had
// cleared).
func TestCreateTestFileCancelledRemoves(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o, err := Options{Dir: dir, Size: 4 << 20}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := createTestFile(ctx, o); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want the context's", err)
	}
	checkRemoved(t, dir)
}
