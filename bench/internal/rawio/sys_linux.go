package rawio

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func openDirectFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
}

// fsType is the type of the file system mounted where dir lives, from the
// longest mount point in /proc/self/mounts that contains it.
func fsType(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if p, err := filepath.EvalSymlinks(abs); err == nil {
		abs = p
	}
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return ""
	}
	defer f.Close()
	best, typ := -1, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		mnt := unescapeMount(fields[1])
		if within(abs, mnt) && len(mnt) >= best {
			best, typ = len(mnt), fields[2]
		}
	}
	return typ
}

// within reports whether path is mnt or below it.
func within(path, mnt string) bool {
	return mnt == "/" || path == mnt || strings.HasPrefix(path, mnt+"/")
}

// unescapeMount undoes the octal escapes (\040 for a space) of /proc/mounts.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// freeBytes is the space under dir that an unprivileged writer may use.
func freeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
