//go:build !(linux && (amd64 || arm64))

package rawio

import (
	"errors"
	"os"
)

const (
	fadvRandom   = 1
	fadvDontNeed = 4
)

// fadvise is not wired up here (32-bit Linux splits the offsets; other
// systems have no posix_fadvise syscall number in package syscall), so
// buffered figures may include cached reads, and Measure says so.
func fadvise(f *os.File, off, length int64, advice int) error { return errors.ErrUnsupported }
