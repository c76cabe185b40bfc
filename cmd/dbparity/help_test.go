package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/report"
)

// helpOf runs realMain with args in this process and returns its exit
// code and what it wrote to standard output.
func helpOf(t *testing.T, args ...string) (int, string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdout := os.Stdout
	os.Stdout = f
	code := realMain(args)
	os.Stdout = stdout
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}

var (
	flagLine    = regexp.MustCompile(`^  --?([a-z0-9-]+)(?: \S+)?$`)
	twoDefaults = regexp.MustCompile(`\(default ([^)]*)\)\s*\(default `)
)

// Every command's --help lists each of its flags once, each with its
// default at most once, within a terminal's width, and ends with
// examples of the command; run, ab and sweep also with another workload
// chosen, and through dbparity help COMMAND.
func TestHelpEveryCommand(t *testing.T) {
	t.Parallel()
	var cases [][]string
	for _, c := range commands {
		cases = append(cases, []string{c.name, "--help"})
	}
	cases = append(cases, []string{"run", "--workload", "slob", "--help"}, []string{"ab", "-h", "--workload=slob"},
		[]string{"sweep", "--help", "--workload", "slob"}, []string{"help", "ab"})
	settings := map[string]bool{}
	for _, l := range strings.Split(capture.ServerSettings, "\n") {
		settings[l] = true // capture's own text, printed as it is
	}
	for _, args := range cases {
		code, out := helpOf(t, args...)
		if code != 0 {
			t.Errorf("%v: exit %d", args, code)
			continue
		}
		name := args[0]
		if name == "help" {
			name = args[1]
		}
		if !strings.HasPrefix(out, "usage: dbparity "+name) {
			t.Errorf("%v: the help does not begin with its usage:\n%s", args, out)
		}
		seen := map[string]int{}
		var entry string // the current flag's lines
		check := func() {
			if n := strings.Count(entry, "(default"); n > 1 || twoDefaults.MatchString(entry) {
				t.Errorf("%v: a default shown %d times:\n%s", args, n, entry)
			}
		}
		for _, l := range strings.Split(out, "\n") {
			if utf8.RuneCountInString(l) > helpWidth && !settings[l] {
				t.Errorf("%v: a line wider than %d: %q", args, helpWidth, l)
			}
			switch m := flagLine.FindStringSubmatch(l); {
			case m != nil:
				check()
				seen[m[1]]++
				entry = l + "\n"
			case entry != "" && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")):
				entry += l + "\n"
			default:
				check()
				entry = ""
			}
		}
		for f, n := range seen {
			if n != 1 {
				t.Errorf("%v: --%s listed %d times", args, f, n)
			}
		}
		if len(seen) == 0 && name != "version" {
			t.Errorf("%v: no flags listed:\n%s", args, out)
		}
		_, examples, _ := strings.Cut(out, "\nexamples:\n")
		if n := strings.Count(examples, "  dbparity "+name); n < 2 && name != "version" || n < 1 {
			t.Errorf("%v: %d examples:\n%s", args, n, out)
		}
	}

	// The flags of show, and those of ab's run, workload and output.
	_, show := helpOf(t, "show", "--help")
	for _, f := range []string{"--json", "--show-literals", "--html", "--force"} {
		if !strings.Contains(show, "\n  "+f+"\n") && !strings.Contains(show, "\n  "+f+" ") {
			t.Errorf("show --help does not list %s:\n%s", f, show)
		}
	}
	_, ab := helpOf(t, "ab", "--help")
	for _, want := range []string{"\ntarget:\n  --target URL\n", "\nworkload:\n", "\nrun:\n", "\nab:\n", "\noutput:\n",
		"  --series-points N\n", "(default 1440)", "  --html file\n", "  --scale int\n"} {
		if strings.Count(ab, want) != 1 {
			t.Errorf("ab --help has %q %d times, want once:\n%s", want, strings.Count(ab, want), ab)
		}
	}
	if _, usage := helpOf(t, "help"); strings.Contains(usage, "(default") {
		t.Errorf("dbparity help: %s", usage)
	}
}

// ab and sweep write the comparison they print as the HTML report too
// (--html, as compare's); a path it cannot be written to, or that must
// not be replaced, is refused before any run, exit 2.
func TestABSweepHTML(t *testing.T) {
	t.Parallel()
	dir := loadedDir(t) // order-entry, 1 warehouse, in the default SQLite database
	db := "sqlite://dbparity-data/dbparity.db"
	short := []string{"--duration", "1s", "--warmup", "0s"}
	ab := func(extra ...string) []string {
		return append(append([]string{"ab", "--a", db, "--b", "sqlite://./dbparity-data/dbparity.db", "--rounds", "2", "--users", "1"}, short...), extra...)
	}
	sweep := func(extra ...string) []string {
		return append(append([]string{"sweep", "--target", db, "--over", "users=1,2"}, short...), extra...)
	}
	os.WriteFile(filepath.Join(dir, "notes.html"), []byte("<html>my notes</html>"), 0o644)
	os.Mkdir(filepath.Join(dir, "dir.html"), 0o755)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{ab("--prefix", "bad", "--html", filepath.Join("missing", "r.html")), "directory missing does not exist"},
		{ab("--prefix", "bad", "--html", "notes.html"), "--html notes.html: exists and is not a dbparity HTML report"},
		{ab("--prefix", "bad", "--html", "dir.html", "--force"), "--html dir.html: is a directory"},
		{ab("--prefix", "bad", "--html", "bad-b-2.json", "--force"), "--html bad-b-2.json is one of the files"},
		{sweep("--prefix", "bad", "--html", "notes.html"), "--html notes.html: exists and is not a dbparity HTML report"},
		{sweep("--prefix", "bad", "--label", "s", "--html", "bad-s-users=2-1.json", "--force"), "--html bad-s-users=2-1.json is one of the files"},
	} {
		code, stdout, stderr := dbparity(t, dir, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stdout != "" {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q, before any run", tc.args[len(tc.args)-3:], code, stderr, tc.want)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "bad*")); len(m) > 0 {
		t.Errorf("refused commands wrote %v", m)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.html")); string(b) != "<html>my notes</html>" {
		t.Errorf("notes.html was replaced: %s", b)
	}

	for _, args := range [][]string{ab("--prefix", "ab", "--html", "ab.html"), sweep("--prefix", "sw", "--html", "sweep.html")} {
		html := args[len(args)-1]
		code, stdout, stderr := dbparity(t, dir, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", args[0], code, stderr)
		}
		b, err := os.ReadFile(filepath.Join(dir, html))
		if err != nil || !strings.Contains(string(b), report.HTMLGenerator) {
			t.Errorf("%s --html %s: no HTML report (%v)", args[0], html, err)
		}
		if !strings.Contains(stderr, "HTML report written to "+html) || !strings.Contains(stdout, "throughput") {
			t.Errorf("%s: the report is not announced, or the comparison not printed:\n%s\n%s", args[0], stderr, stdout)
		}
	}
	// An earlier report of dbparity's own is replaced without --force.
	if code, _, stderr := dbparity(t, dir, ab("--prefix", "ab2", "--html", "ab.html")...); code != 0 {
		t.Errorf("ab --html over its earlier report: exit %d %s", code, stderr)
	}
}
