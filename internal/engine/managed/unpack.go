package managed

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// UsageError is an input the user can fix on the command line: an
// archive (--pg-dist, or one left in the cache) that is damaged, not a
// PostgreSQL server archive, or refused because an entry would land
// outside its directory. The command exits 2 on it.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// refused is an archive refused for one entry, said in one line.
func refused(name, format string, a ...any) error {
	return UsageError{fmt.Errorf("archive entry %s: %s", name, fmt.Sprintf(format, a...))}
}

// damaged is an archive that cannot be read to its end.
func damaged(err error) error {
	return UsageError{fmt.Errorf("the archive is damaged: %w", err)}
}

// An unpacker writes a tar's entries under one directory and nowhere else,
// whatever the entries. Every path is walked one component at a time from
// a descriptor of that directory (openat with O_NOFOLLOW): the unpacker
// follows symbolic links itself, through the links already made, and a
// ".." never climbs above the directory, whatever the links' targets and
// the order they come in. A file is created only where no name exists
// (O_EXCL), so no entry writes through a link; a link that resolves
// outside the directory is refused when it is made, and every link once
// more at the end (one that pointed at nothing may lead out through a link
// made after it).
type unpacker struct {
	root  int        // the directory unpacked into
	links []madeLink // the symbolic links made
}

type madeLink struct {
	entry string // the archive's name for it
	real  string // where it is, through no link
}

// errLoop, escape and notDir are why a walk stopped.
var errLoop = errors.New("too many levels of links")

type escape struct{ via string } // the link of the entry's own name that leads out

func (e escape) Error() string {
	if e.via == "" {
		return "resolves outside the unpack directory"
	}
	return "resolves outside the unpack directory through the link " + e.via
}

type notDir struct{ name string }

func (e notDir) Error() string { return e.name + " is not a directory" }

// comp is one component of a path to walk; own is set for a component of
// the entry's own name: that name up to it.
type comp struct{ name, own string }

func comps(p, own string) []comp {
	var out []comp
	for i, c := range strings.Split(p, "/") {
		if c == "" || c == "." {
			continue
		}
		o := ""
		if own != "" {
			o = strings.Join(strings.Split(own, "/")[:i+1], "/")
		}
		out = append(out, comp{name: c, own: o})
	}
	return out
}

// maxLinks is how many links one walk follows, as the kernel's limit.
const maxLinks = 40

// walk follows cs from the root and returns a descriptor of the directory
// they name and its path from the root through no link. create makes
// missing directories. check only asks whether the path leads out: a
// component that does not exist or is not a directory ends it with fd -1
// and no error (the kernel stops there too).
func (u *unpacker) walk(cs []comp, create, check bool) (fd int, real string, err error) {
	var stack []int     // directories below the root, the last the current one
	var names []string  // their names
	cur := func() int { // the current directory
		if len(stack) == 0 {
			return u.root
		}
		return stack[len(stack)-1]
	}
	defer func() {
		for _, d := range stack {
			if d != fd {
				unix.Close(d)
			}
		}
	}()
	via, hops := "", 0
	for len(cs) > 0 {
		c := cs[0]
		cs = cs[1:]
		switch c.name {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return -1, "", escape{via}
			}
			unix.Close(stack[len(stack)-1])
			stack, names = stack[:len(stack)-1], names[:len(names)-1]
			continue
		}
		const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		d, err := unix.Openat(cur(), c.name, dirFlags, 0)
		if err == unix.ENOENT && create {
			if err = unix.Mkdirat(cur(), c.name, 0o755); err == nil || err == unix.EEXIST {
				d, err = unix.Openat(cur(), c.name, dirFlags, 0)
			}
		}
		if err == nil {
			stack, names = append(stack, d), append(names, c.name)
			continue
		}
		// Not a directory: a link to follow, or the end.
		var st unix.Stat_t
		if serr := unix.Fstatat(cur(), c.name, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil {
			if check {
				return -1, "", nil
			}
			return -1, "", fmt.Errorf("open %s: %w", path.Join(append(names, c.name)...), err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			if check {
				return -1, "", nil
			}
			return -1, "", notDir{path.Join(append(names, c.name)...)}
		}
		if hops++; hops > maxLinks {
			return -1, "", errLoop
		}
		target, err := readlinkat(cur(), c.name)
		if err != nil {
			return -1, "", err
		}
		if c.own != "" {
			via = c.own
		}
		if strings.HasPrefix(target, "/") {
			return -1, "", escape{via}
		}
		cs = append(comps(target, ""), cs...)
	}
	if len(stack) == 0 {
		d, err := unix.Dup(u.root)
		return d, "", err
	}
	return stack[len(stack)-1], path.Join(names...), nil
}

func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		b := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, b)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(b[:n]), nil
		}
	}
}

// cleanName checks an entry's name (or a hard link's target): relative,
// with no ".." component. It returns the name cleaned ("" for the
// directory itself), or why it is refused.
func cleanName(name string) (string, string) {
	if strings.HasPrefix(name, "/") {
		return "", "an absolute name, outside the unpack directory"
	}
	for _, c := range strings.Split(name, "/") {
		if c == ".." {
			return "", `a name with "..", outside the unpack directory`
		}
	}
	if name = path.Clean(name); name == "." {
		name = ""
	}
	return name, ""
}

// why says how a walk failed for entry name: a refusal of the archive
// (exit 2), or an error of the system's.
func why(name string, err error) error {
	var esc escape
	var nd notDir
	switch {
	case errors.As(err, &esc):
		return refused(name, "%s", esc)
	case errors.As(err, &nd):
		return refused(name, "%s", nd)
	case errors.Is(err, errLoop):
		return refused(name, "%s", err)
	}
	return fmt.Errorf("unpack %s: %w", name, err)
}

// parent walks to the directory entry name goes in; it returns that
// directory's descriptor and the name's last component.
func (u *unpacker) parent(name, entry string, create bool) (int, string, string, error) {
	dir, base := path.Split(name)
	fd, real, err := u.walk(comps(strings.TrimSuffix(dir, "/"), name), create, false)
	if err != nil {
		return -1, "", "", why(entry, err)
	}
	return fd, real, base, nil
}

// untar unpacks tr into the directory of root: regular files, directories,
// symbolic and hard links that stay inside it; other entries are skipped.
func untar(ctx context.Context, tr *tar.Reader, root int) error {
	u := &unpacker{root: root}
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return damaged(err)
		}
		if err := u.entry(h, tr); err != nil {
			return err
		}
	}
	// A link that pointed at nothing when made may lead out through links
	// made after it: each once more, as the tree is now.
	for _, l := range u.links {
		fd, _, err := u.walk(append(comps(path.Dir(l.real), ""), comp{name: path.Base(l.real), own: l.entry}), false, true)
		if err != nil {
			return why(l.entry, err)
		}
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	return nil
}

// entry unpacks one entry whose contents r reads.
func (u *unpacker) entry(h *tar.Header, r io.Reader) error {
	name, bad := cleanName(h.Name)
	if bad != "" {
		return refused(h.Name, "%s", bad)
	}
	if name == unpackedMark {
		return refused(h.Name, "the name of the mark dbparity leaves in an unpacked version")
	}
	switch h.Typeflag {
	case tar.TypeDir:
		fd, _, err := u.walk(comps(name, name), true, false)
		if err != nil {
			return why(h.Name, err)
		}
		unix.Close(fd)
		return nil
	case tar.TypeReg, tar.TypeSymlink, tar.TypeLink:
	default:
		return nil // devices, FIFOs: not in a binaries archive
	}
	if name == "" {
		return refused(h.Name, "names the unpack directory itself")
	}
	dir, real, base, err := u.parent(name, h.Name, true)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	switch h.Typeflag {
	case tar.TypeReg:
		return u.file(dir, base, h, r)
	case tar.TypeSymlink:
		return u.symlink(dir, real, base, h)
	default:
		return u.hardlink(dir, base, h)
	}
}

// vacate makes way in dir for base, which exists: a regular file of an
// earlier entry of the same name is replaced; anything else is refused
// (a link: writing there would write where it points).
func vacate(dir int, base string, h *tar.Header) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("unpack %s: %w", h.Name, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if err := unix.Unlinkat(dir, base, 0); err != nil {
			return fmt.Errorf("unpack %s: %w", h.Name, err)
		}
		return nil
	case unix.S_IFLNK:
		return refused(h.Name, "an earlier entry made a link of that name: it would write through the link")
	case unix.S_IFDIR:
		return refused(h.Name, "an earlier entry made a directory of that name")
	}
	return refused(h.Name, "something of that name exists already")
}

// file creates base in dir, where no name may exist (O_EXCL: a link there
// is never followed), with r's contents.
func (u *unpacker) file(dir int, base string, h *tar.Header, r io.Reader) error {
	mode := uint32(h.Mode&0o755) | 0o644
	const flags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dir, base, flags, mode)
	if err == unix.EEXIST {
		if err := vacate(dir, base, h); err != nil {
			return err
		}
		fd, err = unix.Openat(dir, base, flags, mode)
	}
	if err != nil {
		return fmt.Errorf("unpack %s: %w", h.Name, err)
	}
	w := os.NewFile(uintptr(fd), h.Name)
	ar := &archiveReader{r: r}
	_, err = io.Copy(w, ar)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	switch {
	case ar.err != nil:
		return damaged(ar.err)
	case err != nil:
		return fmt.Errorf("unpack %s: %w", h.Name, err)
	}
	return nil
}

// symlink makes base in dir (real, from the root) a link to h's target:
// one that names an absolute path, or leads outside by its text or through
// the links made so far, is refused.
func (u *unpacker) symlink(dir int, real, base string, h *tar.Header) error {
	target := h.Linkname
	switch {
	case target == "":
		return refused(h.Name, "a link to nothing")
	case strings.HasPrefix(target, "/"):
		return refused(h.Name, "a link to %s, an absolute path outside the unpack directory", target)
	}
	if t := path.Join(path.Dir(path.Join(real, base)), target); t == ".." || strings.HasPrefix(t, "../") {
		return refused(h.Name, "a link to %s, outside the unpack directory", target)
	}
	if err := unix.Symlinkat(target, dir, base); err != nil {
		if err == unix.EEXIST {
			return refused(h.Name, "an earlier entry made something of that name")
		}
		return fmt.Errorf("unpack %s: %w", h.Name, err)
	}
	l := madeLink{entry: h.Name, real: path.Join(real, base)}
	fd, _, err := u.walk(append(comps(real, ""), comp{name: base, own: h.Name}), false, true)
	if err != nil {
		return why(h.Name, err)
	}
	if fd >= 0 {
		unix.Close(fd)
	}
	u.links = append(u.links, l)
	return nil
}

// hardlink makes base in dir a hard link to the regular file an earlier
// entry made, found through the links inside the directory only.
func (u *unpacker) hardlink(dir int, base string, h *tar.Header) error {
	target, bad := cleanName(h.Linkname)
	switch {
	case bad != "":
		return refused(h.Name, "a hard link to %s: %s", h.Linkname, bad)
	case target == "":
		return refused(h.Name, "a hard link to the unpack directory")
	}
	sd, sbase := path.Split(target)
	sdir, _, err := u.walk(comps(strings.TrimSuffix(sd, "/"), target), false, false)
	if err != nil {
		var esc escape
		if errors.As(err, &esc) {
			return refused(h.Name, "a hard link to %s, which %s", h.Linkname, esc)
		}
		return refused(h.Name, "a hard link to %s: %v", h.Linkname, err)
	}
	defer unix.Close(sdir)
	var st unix.Stat_t
	if err := unix.Fstatat(sdir, sbase, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return refused(h.Name, "a hard link to %s, which no earlier entry made", h.Linkname)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return refused(h.Name, "a hard link to %s, which is not a regular file", h.Linkname)
	}
	err = unix.Linkat(sdir, sbase, dir, base, 0)
	if err == unix.EEXIST {
		if err := vacate(dir, base, h); err != nil {
			return err
		}
		err = unix.Linkat(sdir, sbase, dir, base, 0)
	}
	if err != nil {
		return fmt.Errorf("unpack %s: %w", h.Name, err)
	}
	return nil
}

// archiveReader keeps the error of reading the archive, told apart from
// one of writing the file.
type archiveReader struct {
	r   io.Reader
	err error
}

func (a *archiveReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && err != io.EOF {
		a.err = err
	}
	return n, err
}
