package rawio

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
)

// writeChunk is how much is written at a time: large enough that creating
// a 1 GiB file is sequential I/O.
const writeChunk = 4 << 20

// createTestFile writes o.Size bytes of random, incompressible content to a
// new file in o.Dir, so that neither compression nor deduplication in the
// file system or the device can shortcut the reads, makes it durable and
// drops it from the page cache so the first reads are not cached. It
// returns the file's path; the caller removes it.
func createTestFile(ctx context.Context, o Options) (path string, err error) {
	if free, ok := freeBytes(o.Dir); ok && free < o.Size {
		return "", fmt.Errorf("rawio: %s has %d MiB free, the test file needs %d MiB: choose a smaller size", o.Dir, free>>20, o.Size>>20)
	}
	f, err := os.CreateTemp(o.Dir, "dbparity-rawio-*.dat")
	if err != nil {
		return "", fmt.Errorf("rawio: create test file: %w", err)
	}
	path = f.Name()
	// Removed by its own name: a failed return has set path to "".
	name := path
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(name)
		}
	}()

	var seed [32]byte
	copy(seed[:], "dbparity rawio test file content")
	src := rand.NewChaCha8(seed)
	// A tenth of the file at most, so that progress comes every 10%.
	buf := make([]byte, min(writeChunk, (o.Size+9)/10))
	decile := int64(1)
	for written := int64(0); written < o.Size; {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n := min(int64(len(buf)), o.Size-written)
		src.Read(buf[:n])
		if _, err := f.Write(buf[:n]); err != nil {
			return "", fmt.Errorf("rawio: write test file: %w", err)
		}
		written += n
		if written*10 >= decile*o.Size {
			o.progress("rawio: writing %s: %d%% (%d of %d MiB)", path, written*100/o.Size, written>>20, o.Size>>20)
			decile = written*10/o.Size + 1
		}
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("rawio: sync test file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("rawio: close test file: %w", err)
	}
	// Clean pages only now: dropping them is what makes the first reads miss.
	// A failure is reported by Measure, which drops the pages again.
	_ = dropCache(path)
	return path, nil
}

// dropCache asks the kernel to evict the file's pages from the page cache.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return fadvise(f, 0, 0, fadvDontNeed)
}

// DropCache evicts a file's clean pages from the OS page cache, so that
// the next reads of it go to storage.
func DropCache(path string) error { return dropCache(path) }
