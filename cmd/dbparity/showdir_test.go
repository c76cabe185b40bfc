package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/result"
)

// dbparity show --html PAGE DIR writes one page of every result under
// DIR (exit 0), each run's page and each ab set's comparison beside it,
// and says what it skipped in one line; a directory without a result is
// refused in one line, exit 2, and so is a directory without --html.
func TestShowDir(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	res := filepath.Join(work, "results")
	os.MkdirAll(filepath.Join(res, "week2"), 0o755)
	for round := 1; round <= 2; round++ {
		for _, label := range []string{"a", "b"} {
			writeResult(t, res, "ab-"+label+"-"+string(rune('0'+round))+".json", label, func(r *result.Run) {
				r.Round = round
				r.Command = []string{"dbparity", "ab", "--rounds", "2"}
			})
		}
	}
	writeResult(t, filepath.Join(res, "week2"), "native.json", "native", nil)
	os.WriteFile(filepath.Join(res, "notes.json"), []byte(`{"team": "storage"}`), 0o644)

	code, stdout, stderr := dbparity(t, work, "show", "--html", "index.html", "results")
	if code != 0 {
		t.Fatalf("show --html index.html results: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "HTML index of 5 runs (4 in 1 set of ab or sweep) written to index.html") ||
		!strings.Contains(stderr, "skipped 1 file: 1 not dbparity's (notes.json") || stdout != "" {
		t.Errorf("stdout %q, stderr:\n%s", stdout, stderr)
	}
	page, err := os.ReadFile(filepath.Join(work, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`href="index-dir/run-week2~native.html"`, `href="index-dir/set-ab.html"`, ">native</a>", "week2/native.json"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	for _, f := range []string{"run-ab-a-1.html", "run-ab-b-2.html", "run-week2~native.html", "set-ab.html"} {
		if _, err := os.Stat(filepath.Join(work, "index-dir", f)); err != nil {
			t.Error(err)
		}
	}
	// Again, the page inside the directory: it and its pages are not read.
	if code, _, stderr := dbparity(t, work, "show", "results", "--html", "results/index.html"); code != 0 ||
		!strings.Contains(stderr, "HTML index of 5 runs") || !strings.Contains(stderr, "skipped 1 file") {
		t.Errorf("the page in the directory: exit %d\n%s", code, stderr)
	}

	empty := filepath.Join(work, "empty")
	os.MkdirAll(empty, 0o755)
	os.WriteFile(filepath.Join(empty, "notes.json"), []byte(`[1]`), 0o644)
	code, _, stderr = dbparity(t, work, "show", "--html", "e.html", "empty")
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "empty holds no dbparity result file: skipped 1 file") {
		t.Errorf("a directory without results: exit %d, %q: want exit 2 and one line", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "e.html")); err == nil {
		t.Error("a page was written for a directory without results")
	}
	code, _, stderr = dbparity(t, work, "show", "results")
	if code != 2 || !strings.Contains(stderr, "results is a directory: give --html PAGE") {
		t.Errorf("a directory without --html: exit %d, %q", code, stderr)
	}
}
