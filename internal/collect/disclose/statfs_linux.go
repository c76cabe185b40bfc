package disclose

import "syscall"

// statfs returns the bytes available to an unprivileged user and the file
// system's size, or zeros when statfs fails.
func statfs(path string) (free, total int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0
	}
	// Block counts are in fragment-size units; f_bsize is only the
	// preferred I/O size, and differs from f_frsize on some file systems.
	unit := int64(st.Frsize)
	if unit <= 0 {
		unit = int64(st.Bsize)
	}
	return int64(st.Bavail) * unit, int64(st.Blocks) * unit
}
