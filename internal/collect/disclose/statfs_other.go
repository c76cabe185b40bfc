//go:build !linux

package disclose

// statfs is unimplemented where the disclosure's other sources (/proc,
// /sys) do not exist either; zeros say "not read".
func statfs(string) (free, total int64) { return 0, 0 }
