//go:build linux && (amd64 || arm64)

package rawio

import (
	"os"
	"syscall"
)

// posix_fadvise advice values of Linux's generic ABI.
const (
	fadvRandom   = 1 // POSIX_FADV_RANDOM: no read-ahead on this open file
	fadvDontNeed = 4 // POSIX_FADV_DONTNEED: evict the range's clean pages
)

// fadvise is posix_fadvise(2) on f; a length of 0 means to the end of the
// file. On 64-bit Linux the syscall takes its arguments in that order.
func fadvise(f *os.File, off, length int64, advice int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(syscall.SYS_FADVISE64, fd, uintptr(off), uintptr(length), uintptr(advice), 0, 0)
	}); err != nil {
		return err
	}
	if errno != 0 {
		return os.NewSyscallError("posix_fadvise", errno)
	}
	return nil
}
