package disclose

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// mount is one line of /proc/<pid>/mountinfo (proc_pid_mountinfo(5)).
type mount struct {
	major, minor int
	root         string // the part of the source file system mounted here
	point        string
	options      string // per-mount options (rw,relatime)
	fsType       string
	source       string
	super        string // file system options (discard, data=ordered, cgroup controllers)
}

// parseMountinfo returns the mounts in file order, skipping lines that do
// not parse: one odd line must not hide the file systems that do.
func parseMountinfo(r io.Reader) []mount {
	var ms []mount
	eachLine(r, func(line string) {
		if m, err := parseMountLine(line); err == nil {
			ms = append(ms, m)
		}
	})
	return ms
}

// parseMountLine parses
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// The optional fields before " - " vary in number, so the separator is found
// rather than counted.
func parseMountLine(line string) (mount, error) {
	f := strings.Split(line, " ")
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || len(f) < sep+3 {
		return mount{}, fmt.Errorf("mountinfo line %q: want at least 10 fields with a - separator", line)
	}
	majS, minS, ok := strings.Cut(f[2], ":")
	if !ok {
		return mount{}, fmt.Errorf("mountinfo line %q: bad device %q", line, f[2])
	}
	maj, err1 := strconv.Atoi(majS)
	min, err2 := strconv.Atoi(minS)
	if err := errors.Join(err1, err2); err != nil || maj < 0 || min < 0 {
		return mount{}, fmt.Errorf("mountinfo line %q: bad device %q", line, f[2])
	}
	m := mount{
		major:   maj,
		minor:   min,
		root:    unescapeOctal(f[3]),
		point:   unescapeOctal(f[4]),
		options: f[5],
		fsType:  f[sep+1],
		source:  unescapeOctal(f[sep+2]),
	}
	if len(f) > sep+3 {
		m.super = f[sep+3]
	}
	if m.point == "" || m.point[0] != '/' {
		return mount{}, fmt.Errorf("mountinfo line %q: mount point is not absolute", line)
	}
	if m.fsType == "" {
		return mount{}, fmt.Errorf("mountinfo line %q: no file system type", line)
	}
	return m, nil
}

// unescapeOctal undoes the kernel's \ooo escaping of space, tab, newline and
// backslash in paths; anything else is left as written.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			v := (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			if s[i+1] <= '3' { // above \377 is not a byte
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// mountFor returns the mount holding the absolute, clean path p: the longest
// mount point that is p or a parent of it, the last such line when several
// are stacked on one point (the later mount hides the earlier).
func mountFor(ms []mount, p string) (mount, bool) {
	best, found := mount{}, false
	for _, m := range ms {
		if !under(p, m.point) {
			continue
		}
		if !found || len(m.point) >= len(best.point) {
			best, found = m, true
		}
	}
	return best, found
}

// under reports whether p is dir or inside it, by whole path components
// (/data2 is not under /data).
func under(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
