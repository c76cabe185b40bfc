// Package rawio measures what the storage under a directory gives a plain
// reader: random reads of one block (8 KB by default) from a test file, with
// a number of concurrent readers, as reads per second, throughput and
// per-read latency. It is the reference beside which a database's physical
// reads are read as a ratio, as SLOB's storage test does.
//
// The package owns its test file: it creates it in Options.Dir with
// incompressible content, drops it from the page cache before reading, and
// removes it afterwards, also when the context is cancelled. It must not
// touch anything else on the file system, and it knows nothing of databases.
// While it reads, it raises GOMAXPROCS to Workers+1 (and restores it), so
// that Workers reads are really in flight at once.
package rawio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Defaults used for zero fields of Options.
const (
	DefaultSize     = 1 << 30 // 1 GiB
	DefaultBlock    = 8192
	DefaultWorkers  = 1
	DefaultDuration = 10 * time.Second
)

// directAlign is the buffer alignment O_DIRECT is given: a page, which
// covers the logical block size of every device we expect (512 or 4096).
const directAlign = 4096

// Options says what to measure. Zero fields take the defaults above; negative
// ones are errors.
type Options struct {
	Dir      string        // directory on the file system to test; a file is created in it and removed after
	Size     int64         // test file size in bytes; a multiple of Block (default 1 GiB)
	Block    int           // bytes per read (default 8192)
	Workers  int           // concurrent readers, each with one read in flight: the queue depth (default 1)
	Duration time.Duration // measured time, after a warm-up of a tenth of it, at most 1 s (default 10 s)
	// Direct reads with O_DIRECT, bypassing the page cache. When the file
	// system refuses O_DIRECT, reads are buffered instead, after the file's
	// pages are dropped from the cache, and Result.Note says so.
	Direct   bool
	Progress func(string) // optional: one line at a time (file creation, fallback, measuring)
}

// Result is one measurement. MBps counts 10^6 bytes per second (MB, not
// MiB), as IOPS × Block / 1e6.
type Result struct {
	Method     string // "go O_DIRECT pread", "go buffered pread", or "fio …"
	IOPS       float64
	MBps       float64
	Reads      int64         // reads started and completed within the measured time
	Elapsed    time.Duration // measured time
	LatencyP50 time.Duration // per read, to 0.1%
	LatencyP99 time.Duration
	LatencyMax time.Duration // exact
	Direct     bool          // the reads bypassed the page cache
	FileSystem string        // type of the file system under Dir ("ext4", "tmpfs", …); "" when unknown
	Note       string        // what the reader should know about the figures (fallbacks, memory-backed file systems)
}

// String is one line for a report.
func (r Result) String() string {
	s := fmt.Sprintf("%s: %.0f IOPS, %.1f MB/s, p50 %v, p99 %v, max %v (%d reads in %v)",
		r.Method, r.IOPS, r.MBps, r.LatencyP50, r.LatencyP99, r.LatencyMax, r.Reads, r.Elapsed.Round(time.Millisecond))
	if r.FileSystem != "" {
		s += " on " + r.FileSystem
	}
	if r.Note != "" {
		s += "; " + r.Note
	}
	return s
}

// withDefaults fills zero fields and rejects what cannot be measured.
func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, errors.New("rawio: no directory given: set Options.Dir to a directory on the file system to test")
	}
	if fi, err := os.Stat(o.Dir); err != nil {
		return o, fmt.Errorf("rawio: directory %s: %w", o.Dir, err)
	} else if !fi.IsDir() {
		return o, fmt.Errorf("rawio: %s is not a directory", o.Dir)
	}
	if o.Block == 0 {
		o.Block = DefaultBlock
	}
	if o.Size == 0 {
		o.Size = DefaultSize
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	switch {
	case o.Block < 0:
		return o, fmt.Errorf("rawio: block size %d is negative", o.Block)
	case o.Direct && o.Block%512 != 0:
		return o, fmt.Errorf("rawio: block size %d is not a multiple of 512, which O_DIRECT needs", o.Block)
	case o.Size < 0:
		return o, fmt.Errorf("rawio: size %d is negative", o.Size)
	case o.Size%int64(o.Block) != 0:
		return o, fmt.Errorf("rawio: size %d is not a multiple of the block size %d", o.Size, o.Block)
	case o.Workers < 1:
		return o, fmt.Errorf("rawio: workers %d: need at least 1 reader", o.Workers)
	case o.Duration < 0:
		return o, fmt.Errorf("rawio: duration %v is negative", o.Duration)
	}
	return o, nil
}

// warmup is the unmeasured time before Duration: long enough for the
// readers to reach a steady state, short beside the measurement.
func (o Options) warmup() time.Duration { return min(time.Second, o.Duration/10) }

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(format, args...))
	}
}

// Measure creates the test file, reads it at random for the warm-up and
// Duration, removes it and returns the figures. When ctx is cancelled it
// stops, removes the file and returns ctx's error.
func Measure(ctx context.Context, o Options) (Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Result{}, err
	}
	path, err := createTestFile(ctx, o)
	if err != nil {
		return Result{}, err
	}
	defer os.Remove(path)

	r := Result{FileSystem: fsType(o.Dir), Method: "go buffered pread"}
	if o.Direct {
		err := probeDirect(path, o.Block)
		switch {
		case err == nil:
			r.Method, r.Direct = "go O_DIRECT pread", true
		case refusesDirect(err):
			r.Note = fmt.Sprintf("the file system refused O_DIRECT (%v): buffered reads after dropping the file's pages with posix_fadvise(DONTNEED), again every %v", errnoText(err), redropEvery)
			o.progress("rawio: %s", r.Note)
		default:
			return Result{}, fmt.Errorf("rawio: read %s with O_DIRECT: %w", path, err)
		}
	} else {
		r.Note = "buffered reads: pages cached during the run are read from memory"
	}
	if !r.Direct {
		// The file was dropped once after writing; say so if that failed,
		// since the figures are then memory reads.
		if err := dropCache(path); err != nil {
			r.Note = addNote(r.Note, "could not drop the file's cached pages: "+err.Error())
		}
	}
	if memoryBacked(r.FileSystem) {
		r.Note = addNote(r.Note, r.FileSystem+" keeps files in memory: these are memory reads, not storage")
	}

	o.progress("rawio: %d readers, %d-byte random reads of a %d MiB file, %v warm-up then %v measured (%s)",
		o.Workers, o.Block, o.Size>>20, o.warmup(), o.Duration, r.Method)
	m, err := readRandom(ctx, path, o, r.Direct, o.Direct && !r.Direct)
	if err != nil {
		return Result{}, err
	}
	m.fill(&r, o.Block)
	return r, nil
}

// probeDirect opens path with O_DIRECT and reads its first block: some file
// systems accept the open and refuse the reads.
func probeDirect(path string, block int) error {
	f, err := openDirect(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.ReadAt(alignedBuffer(block), 0)
	return err
}

// openDirect opens a file for reading with O_DIRECT; tests replace it to
// play a file system that refuses O_DIRECT.
var openDirect = openDirectFile

// refusesDirect tells a file system's refusal of O_DIRECT from a real error.
func refusesDirect(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported)
}

// errnoText is the system's word for err ("invalid argument"), without the
// path that os adds.
func errnoText(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e.Error()
	}
	return err.Error()
}

// alignedBuffer returns n bytes starting at an address aligned for O_DIRECT.
// The Go heap does not move objects, so the alignment holds.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+directAlign)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) % directAlign); r != 0 {
		off = directAlign - r
	}
	return b[off : off+n : off+n]
}

// memoryBacked reports file systems whose files live in memory, where no
// read reaches a device whatever the flags.
func memoryBacked(fsType string) bool {
	switch fsType {
	case "tmpfs", "ramfs", "devtmpfs":
		return true
	}
	return false
}

func addNote(note, s string) string {
	if note == "" {
		return s
	}
	return note + "; " + s
}
