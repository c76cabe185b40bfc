package k8s

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// imageDir holds the image's Dockerfile and build script.
const imageDir = "../../deploy/image"

// dockerfile is what the image test reads of deploy/image/Dockerfile.
type dockerfile struct {
	from       []string // every FROM's image
	path       []string // ENV PATH, split
	user       string
	entrypoint string
	copies     []string // COPY's arguments
	run        bool     // a RUN instruction
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(imageDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var d dockerfile
	// Instructions, their continuation lines joined.
	var lines []string
	cont := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if cont {
			lines[len(lines)-1] += " " + strings.TrimSuffix(l, `\`)
		} else {
			lines = append(lines, strings.TrimSuffix(l, `\`))
		}
		cont = strings.HasSuffix(l, `\`)
	}
	for _, l := range lines {
		op, arg, _ := strings.Cut(l, " ")
		arg = strings.TrimSpace(arg)
		switch strings.ToUpper(op) {
		case "FROM":
			d.from = append(d.from, strings.Fields(arg)[0])
		case "ENV":
			if v, ok := strings.CutPrefix(arg, "PATH="); ok {
				d.path = strings.Split(v, ":")
			}
		case "USER":
			d.user = arg
		case "ENTRYPOINT":
			d.entrypoint = arg
		case "COPY":
			d.copies = append(d.copies, arg)
		case "RUN":
			d.run = true
		}
	}
	return d
}

// programs are the programs a container runs: its command's first word,
// or, for sh -c SCRIPT, sh and the first word of each of the script's
// simple commands. A script with what this reading cannot follow (a
// substitution, a redirection to a program, a subshell) is an error, so
// that the test is changed with the manifest.
func programs(command, args []string) ([]string, error) {
	if len(command) == 0 {
		return nil, fmt.Errorf("no command: the image's ENTRYPOINT would run")
	}
	if command[0] != "sh" || len(command) < 2 || command[1] != "-c" {
		return command[:1], nil
	}
	script := ""
	switch {
	case len(command) > 2:
		script = command[2]
	case len(args) > 0:
		script = args[0]
	default:
		return nil, fmt.Errorf("sh -c without a script")
	}
	if strings.ContainsAny(script, "`(){}<>\n") || strings.Contains(script, "$(") {
		return nil, fmt.Errorf("sh -c %q: a script this test cannot read: extend programs()", script)
	}
	out := []string{"sh"}
	for _, simple := range regexp.MustCompile(`&&|\|\||[;|&]`).Split(script, -1) {
		words := strings.Fields(simple)
		// Leading NAME=value assignments are not the program.
		for len(words) > 0 && regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(words[0]) {
			words = words[1:]
		}
		if len(words) == 0 {
			return nil, fmt.Errorf("sh -c %q: an empty command", script)
		}
		if !slices.Contains(out, words[0]) {
			out = append(out, words[0])
		}
	}
	return out, nil
}

// manifestPrograms are the programs the manifest's pods run, and tar when
// its procedure copies the results out with kubectl cp (which runs tar in
// the container).
func manifestPrograms(t *testing.T, m []byte) []string {
	t.Helper()
	var need []string
	for _, u := range docs(t, m) {
		var job batchv1.Job
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, &job, true); err != nil {
			t.Fatal(err)
		}
		cs := append(job.Spec.Template.Spec.InitContainers, job.Spec.Template.Spec.Containers...)
		for _, c := range cs {
			ps, err := programs(c.Command, c.Args)
			if err != nil {
				t.Fatalf("Job %s, container %s: %v", job.Name, c.Name, err)
			}
			for _, p := range ps {
				if !slices.Contains(need, p) {
					need = append(need, p)
				}
			}
		}
	}
	if regexp.MustCompile(`kubectl( -n \S+)? cp `).Match(m) {
		need = append(need, "tar")
	}
	return need
}

// The reading of a manifest's commands can fail: a program the image
// lacks is found, and a script it cannot follow is refused.
func TestManifestProgramsReading(t *testing.T) {
	ps, err := programs([]string{"sh", "-c"}, []string{"dbparity merge --wait 1h --out /r/run.json /r/p0.json && X=1 mkdir -p /r || sleep 5; cat /r/x | gzip"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sh", "dbparity", "mkdir", "sleep", "cat", "gzip"}; !slices.Equal(ps, want) {
		t.Errorf("programs %q, want %q", ps, want)
	}
	if _, err := programs([]string{"sh", "-c"}, []string{"dbparity merge $(ls /r)"}); err == nil {
		t.Error("a command substitution was read as if it were plain")
	}
	if ps, _ := programs([]string{"dbparity"}, []string{"run", "--part", "0/2"}); !slices.Equal(ps, []string{"dbparity"}) {
		t.Errorf("programs of the parts' container: %q", ps)
	}
}

// The image fits the manifest dbparity k8s writes: built from nothing a
// registry holds (FROM scratch, no RUN: a build runs no container), as a
// user that is not root, with dbparity as its entry point; and the root
// file system deploy/image/build stages holds every program the Jobs' pods
// and kubectl cp run, on the Dockerfile's PATH, statically linked (there
// is no libc in the image), and the merge Job's own command line, run
// with the staged shell and only the staged PATH, reaches the staged
// dbparity.
func TestImageFitsManifest(t *testing.T) {
	d := readDockerfile(t)
	if len(d.from) == 0 || slices.ContainsFunc(d.from, func(s string) bool { return s != "scratch" }) {
		t.Errorf("Dockerfile FROM %q: the image is built from scratch only (nothing is pulled from a registry)", d.from)
	}
	if d.run {
		t.Error("the Dockerfile has a RUN: building the image must not need to run a container")
	}
	if u, _, _ := strings.Cut(d.user, ":"); u == "" || u == "0" || u == "root" {
		t.Errorf("Dockerfile USER %q: the pods run as a user that is not root", d.user)
	}
	if d.entrypoint != `["dbparity"]` {
		t.Errorf("Dockerfile ENTRYPOINT %s, want [\"dbparity\"]", d.entrypoint)
	}
	if !slices.Contains(d.copies, "rootfs/ /") {
		t.Errorf("Dockerfile COPY %q: the staged rootfs/ is the image's root (the test reads the staging so)", d.copies)
	}
	if len(d.path) == 0 {
		t.Fatal("the Dockerfile sets no PATH: the parts' command is dbparity by name")
	}

	o := Options{Name: "oe", Image: "registry.example/dbparity:dev", Parts: 2, Claim: "results", RunID: "oe-1",
		RunArgs: []string{"--users", "8"}, Secret: "db", MetricsPort: 9464, MergeWait: time.Second, Hold: time.Second}
	m, err := Manifest(o)
	if err != nil {
		t.Fatal(err)
	}
	jobs := strings.Split(string(m), "\n---\n")[:2] // the PodMonitor runs nothing
	need := manifestPrograms(t, []byte(strings.Join(jobs, "\n---\n")))
	for _, p := range []string{"dbparity", "sh", "tar"} {
		if !slices.Contains(need, p) {
			t.Errorf("the manifest's programs %q lack %s: has the manifest changed? (docs/parts.md says the image needs dbparity, sh and tar)", need, p)
		}
	}
	t.Logf("the manifest's pods and kubectl cp run %q", need)

	if testing.Short() {
		t.Skip("-short: the image's root file system is not staged (it builds dbparity)")
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but /bin/busybox is missing (.ci/run installs busybox-static)")
		}
		t.Skip("no /bin/busybox: apt-get install busybox-static")
	}
	dir := filepath.Join(t.TempDir(), "ctx")
	cmd := exec.Command("bash", filepath.Join(imageDir, "build"), "--stage", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("busybox-static")) && os.Getenv("CI") != "true" {
			t.Skipf("%s", bytes.TrimSpace(out))
		}
		t.Fatalf("deploy/image/build --stage: %v\n%s", err, out)
	}
	rootfs := filepath.Join(dir, "rootfs")
	var hostPath []string
	for _, p := range d.path {
		hostPath = append(hostPath, filepath.Join(rootfs, p))
	}
	// lookup finds name on the image's PATH, following links inside the
	// image (a link's target is read as the image would: from its root):
	// the file the name stands for, and the name's own path to run it by
	// (busybox tells its applets by the name it is run as).
	lookup := func(name string) (file, run string, err error) {
		for _, dir := range d.path {
			p := filepath.Join(dir, name)
			run = filepath.Join(rootfs, p)
			for range 8 {
				fi, err := os.Lstat(filepath.Join(rootfs, p))
				if err != nil {
					break
				}
				if fi.Mode()&os.ModeSymlink == 0 {
					if fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
						return filepath.Join(rootfs, p), run, nil
					}
					break
				}
				target, _ := os.Readlink(filepath.Join(rootfs, p))
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(p), target)
				}
				p = target
			}
		}
		return "", "", fmt.Errorf("%s is not on the image's PATH %s", name, strings.Join(d.path, ":"))
	}
	for _, p := range need {
		file, _, err := lookup(p)
		if err != nil {
			t.Errorf("the manifest runs %s: %v", p, err)
			continue
		}
		if why := notStatic(file); why != "" {
			t.Errorf("%s (%s) %s: the image has no libc", p, strings.TrimPrefix(file, rootfs), why)
		}
	}
	// A program nobody put in the image is not found: the lookup can fail.
	if _, _, err := lookup("mkdir"); err == nil {
		t.Error("mkdir found in the image, which links only what the Jobs run")
	}
	for _, want := range []struct {
		path string
		mode os.FileMode
	}{{"tmp", os.ModeDir | os.ModeSticky | 0o777}, {"etc/passwd", 0o644}} {
		fi, err := os.Stat(filepath.Join(rootfs, want.path))
		if err != nil || fi.Mode()&(os.ModeType|os.ModeSticky|os.ModePerm) != want.mode {
			t.Errorf("/%s in the image: %v %v, want mode %v", want.path, fi.Mode(), err, want.mode)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "results")); err != nil || !fi.IsDir() {
		t.Errorf("the staged results/ (the image's /results): %v", err)
	}

	// The merge Job's command line, with the image's shell and only the
	// image's PATH: dbparity merge runs (and, with no parts there, says
	// so after its --wait), never "not found".
	var merge batchv1.Job
	ds := docs(t, []byte(jobs[1]))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(ds[0].Object, &merge, true); err != nil {
		t.Fatal(err)
	}
	mc := merge.Spec.Template.Spec.Containers[0]
	_, sh, err := lookup(mc.Command[0])
	if err != nil {
		t.Fatal(err)
	}
	run := exec.Command(sh, append(mc.Command[1:], mc.Args...)...)
	run.Env = []string{"PATH=" + strings.Join(hostPath, ":"), "HOME=" + t.TempDir()}
	out, err := run.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "dbparity merge: ") || strings.Contains(string(out), "not found") {
		t.Errorf("the merge Job's command in the image's shell: %v\n%s", err, out)
	}
	// kubectl cp: tar writes an archive of the results out.
	_, tar, err := lookup("tar")
	if err != nil {
		t.Fatal(err)
	}
	arch, err := exec.Command(tar, "-C", rootfs, "-cf", "-", "etc/passwd").Output()
	if err != nil || len(arch) < 512 || string(arch[257:262]) != "ustar" {
		t.Errorf("the image's tar -cf: %v, %d bytes", err, len(arch))
	}
}

// notStatic says why an executable is not statically linked (it names an
// interpreter, or libraries to load), or "" when it is.
func notStatic(file string) string {
	f, err := elf.Open(file)
	if err != nil {
		return "is not an ELF executable: " + err.Error()
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "is dynamically linked (it names an interpreter)"
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Sprintf("needs %s", strings.Join(libs, ", "))
	}
	return ""
}
