package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// slug is a heading's anchor as GitHub makes it: lower case, punctuation
// other than hyphens dropped, spaces as hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && r != '…' && r != '—' && r != '–' && r != '→' && r != '×' && r != '·':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the headings' anchors of a Markdown file.
func anchors(t *testing.T, path string) map[string]bool {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fenced := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(l, "#") {
			out[slug(strings.TrimLeft(l, "#"))] = true
		}
	}
	return out
}

// Every relative link in README.md, docs/ and the benches' READMEs
// resolves: the file exists, and a #anchor names one of its headings.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	files := []string{filepath.Join(root, "README.md")}
	for _, glob := range []string{"docs/*.md", "bench/*/README.md"} {
		m, _ := filepath.Glob(filepath.Join(root, glob))
		files = append(files, m...)
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := f
			if file != "" {
				path = filepath.Join(filepath.Dir(f), file)
			}
			rel, _ := filepath.Rel(root, f)
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: no such file", rel, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[anchor] {
				t.Errorf("%s: link %s: no heading has the anchor #%s", rel, target, anchor)
			}
			checked++
		}
	}
	if checked < 30 {
		t.Errorf("only %d relative links checked: the pattern no longer finds them", checked)
	}
}

// inlineCommand is a command in a code span: `dbparity ...`.
var inlineCommand = regexp.MustCompile("`(dbparity [a-z][^`]*)`")

// readmeCommands are the dbparity command lines the README shows
// (indented code, continuation lines joined, and code spans that hold a
// whole command), each as its arguments after "dbparity", without
// comments and placeholders ("...").
func readmeCommands(t *testing.T) [][]string {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	joined := ""
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "    ") && joined == "" {
			continue
		}
		l = strings.TrimSpace(l)
		if c, ok := strings.CutSuffix(l, "\\"); ok {
			joined += c + " "
			continue
		}
		lines = append(lines, joined+l)
		joined = ""
	}
	for _, m := range inlineCommand.FindAllStringSubmatch(string(b), -1) {
		lines = append(lines, m[1])
	}
	var out [][]string
	for _, l := range lines {
		l, _, _ = strings.Cut(l, " #")
		rest, ok := strings.CutPrefix(l, "dbparity ")
		if !ok {
			rest, ok = strings.CutPrefix(l, "go run ./cmd/dbparity ")
		}
		if !ok {
			continue
		}
		var args []string
		for _, f := range strings.Fields(rest) {
			if f != "..." {
				args = append(args, f)
			}
		}
		out = append(out, args)
	}
	return out
}

// Every command the README shows parses: its flags exist and their
// values are of their kinds (each is run with --help appended, which
// stops it after its flags are read).
func TestReadmeCommandsParse(t *testing.T) {
	t.Parallel()
	cmds := readmeCommands(t)
	if len(cmds) < 12 {
		t.Fatalf("%d dbparity commands found in the README", len(cmds))
	}
	dir := t.TempDir()
	for _, args := range cmds {
		code, stdout, stderr := dbparity(t, dir, append(args, "--help")...)
		if code != 0 || !strings.Contains(stdout+stderr, "usage:") {
			t.Errorf("dbparity %s: exit %d: %s", strings.Join(args, " "), code, strings.TrimSpace(stderr))
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a README command did more than parse: it left %d entries in its directory", len(entries))
	}
}
