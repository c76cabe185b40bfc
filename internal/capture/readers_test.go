package capture

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The fast readers (scan.go, csvlog.go, prefixmatch.go) read every input
// as the readers before them did (oldreaders_test.go): the same messages
// with the same fields, the same skips at the same lines, in the same
// order, with lines longer than the limit among them and the buffer
// refilled anywhere.

// recorder is a sink that writes down what it is handed.
type recorder struct{ got []string }

func (r *recorder) add(e *entry) {
	r.got = append(r.got, fmt.Sprintf("%s:%d %s pid=%d s=%q u=%q d=%q a=%q h=%q b=%q %s %s m=%q det=%q ctx=%q st=%q",
		e.file, e.line, e.time.Format("2006-01-02 15:04:05.000000000 -0700 MST"), e.pid, e.session, e.user, e.db, e.app, e.host,
		e.backend, e.severity, e.state, e.message, e.detail, e.context, e.statement))
}

func (r *recorder) skip(effect SkipEffect, reason, where string) {
	r.got = append(r.got, fmt.Sprintf("skip %s %s at %s", effect, reason, where))
}

// withLimits runs f with lineLimit and scanBuffer set.
func withLimits(limit, buffer int, f func()) {
	l, b := lineLimit, scanBuffer
	lineLimit, scanBuffer = limit, buffer
	defer func() { lineLimit, scanBuffer = l, b }()
	f()
}

// limits are the line limits and first buffer sizes the readers are
// compared at: as shipped, and small enough for long lines and refills
// in the middle of everything; the smallest only on small inputs.
var limits = [][2]int{{maxLine, 1 << 20}, {maxLine, 4093}, {200, 64}, {120, 7}, {40, 1}}

func limitsFor(data []byte) [][2]int {
	if len(data) > 64<<10 {
		return limits[:3]
	}
	return limits
}

func compareCSV(t *testing.T, data []byte) {
	for _, lim := range limitsFor(data) {
		withLimits(lim[0], lim[1], func() {
			var old, fast recorder
			errOld := oldReadCSV(newLineReader(bytes.NewReader(data)), "f", &old, newClock(), func(e *entry) bool { old.add(e); return true })
			errNew := readCSV(newScanner(bytes.NewReader(data)), "f", newClock(), &fast, func(e *entry) bool { fast.add(e); return true })
			if fmt.Sprint(errOld) != fmt.Sprint(errNew) || !reflect.DeepEqual(old.got, fast.got) {
				t.Fatalf("limit %d, buffer %d: csvlog read differently:\nbefore (%v):\n%s\nnow (%v):\n%s", lim[0], lim[1],
					errOld, strings.Join(old.got, "\n"), errNew, strings.Join(fast.got, "\n"))
			}
		})
	}
}

func compareJSON(t *testing.T, data []byte) {
	for _, lim := range limitsFor(data) {
		withLimits(lim[0], lim[1], func() {
			var old, fast recorder
			errOld := oldReadJSON(newLineReader(bytes.NewReader(data)), "f", &old, newClock(), func(e *entry) bool { old.add(e); return true })
			errNew := readJSON(newScanner(bytes.NewReader(data)), "f", newClock(), &fast, func(e *entry) bool { fast.add(e); return true })
			if fmt.Sprint(errOld) != fmt.Sprint(errNew) || !reflect.DeepEqual(old.got, fast.got) {
				t.Fatalf("limit %d, buffer %d: jsonlog read differently:\nbefore (%v):\n%s\nnow (%v):\n%s", lim[0], lim[1],
					errOld, strings.Join(old.got, "\n"), errNew, strings.Join(fast.got, "\n"))
			}
		})
	}
}

var comparedPrefixes = []string{DefaultPrefix, pgreplayPrefix, "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ", "%m %-10u %5p %q%c %e ", "%n|%r|%b|%x|%v|%i|%P|%s|%h %p "}

func compareStderr(t *testing.T, data []byte, source string) {
	px, err := compilePrefix(source)
	if err != nil {
		t.Fatal(err)
	}
	for _, lim := range limitsFor(data) {
		withLimits(lim[0], lim[1], func() {
			var old, fast recorder
			g := newGrouper(&old, newClock())
			m1, o1, errOld := g.oldRead(newLineReader(bytes.NewReader(data)), "f", px)
			g.flush()
			g = newGrouper(&fast, newClock())
			m2, o2, errNew := g.read(newScanner(bytes.NewReader(data)), "f", px)
			g.flush()
			if m1 != m2 || o1 != o2 || fmt.Sprint(errOld) != fmt.Sprint(errNew) || !reflect.DeepEqual(old.got, fast.got) {
				t.Fatalf("prefix %q, limit %d, buffer %d: stderr read differently:\nbefore (%d matched, %d not, %v):\n%s\nnow (%d, %d, %v):\n%s",
					source, lim[0], lim[1], m1, o1, errOld, strings.Join(old.got, "\n"), m2, o2, errNew, strings.Join(fast.got, "\n"))
			}
		})
	}
}

// seedPieces adds testdata's logs, in pieces, and made-up ones, whole.
func seedPieces(f *testing.F, patterns ...string) {
	for _, pattern := range patterns {
		seedLog(f, pattern)
	}
}

func TestReadersSameAsBefore(t *testing.T) {
	for _, gc := range genCases {
		o := gc.opt
		o.stmts, o.sessions = 400, 12
		g := generateLog(o)
		compareCSV(t, []byte(g.csv()))
		for _, px := range comparedPrefixes[:2] {
			compareStderr(t, []byte(g.stderr(px)), px)
		}
	}
	for _, pattern := range []string{"run1/*.csv", "both/*.csv", "stmt/*.csv", "hand/edge.csv"} {
		files, _ := filepath.Glob(filepath.Join("testdata", pattern))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			compareCSV(t, b)
		}
	}
	for _, pattern := range []string{"run1/*.json", "both/*.json", "stmt/*.json", "hand/edge.json"} {
		files, _ := filepath.Glob(filepath.Join("testdata", pattern))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			compareJSON(t, b)
		}
	}
	for _, pattern := range []string{"run1/*.log", "both/*.log", "stmt/*.log", "hand/edge.log", "hand/nocid.log"} {
		files, _ := filepath.Glob(filepath.Join("testdata", pattern))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, px := range comparedPrefixes {
				compareStderr(t, b, px)
			}
		}
	}
}

func FuzzCSVReaders(f *testing.F) {
	seedPieces(f, "run1/*.csv*", "both/*.csv", "hand/edge.csv")
	f.Add([]byte("a,\"b\nc\"\"d\",e\r\n\"x\ny\n\n  \n\"unterminated\n1,2,3"))
	f.Fuzz(func(t *testing.T, data []byte) { compareCSV(t, data) })
}

func FuzzJSONReaders(f *testing.F) {
	seedPieces(f, "both/*.json", "hand/edge.json")
	f.Fuzz(func(t *testing.T, data []byte) { compareJSON(t, data) })
}

func FuzzStderrReaders(f *testing.F) {
	seedPieces(f, "run1/*.log*", "both/*.log", "hand/edge.log", "hand/nocid.log")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, px := range comparedPrefixes {
			compareStderr(t, data, px)
		}
	})
}

// The matcher finds the prefix the regular expression finds, with the
// same submatches, on lines of real logs, made-up ones, and lines
// shuffled from their pieces.
func TestPrefixMatcher(t *testing.T) {
	var lines []string
	for _, pattern := range []string{"run1/*.log", "both/*.log", "stmt/*.log", "hand/*.log"} {
		files, _ := filepath.Glob(filepath.Join("testdata", pattern))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, strings.Split(string(b), "\n")...)
		}
	}
	g := generateLog(genOptions{seed: 9, sessions: 10, stmts: 300})
	for _, px := range comparedPrefixes[:2] {
		lines = append(lines, strings.Split(g.stderr(px), "\n")...)
	}
	r := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"2024-05-20 10:00:00.123", " UTC", " CEST", "|", " [", "123", "] ", "664b1f10.1048", " ", "00000", "user=", "db=", "app=", "LOG:  ", "ERROR:  ", "DEBUG1:  ",
		"a b", "ü", "\xff", "1716199200.123", ",", "(", ")", "%", "app", "  ", "[unknown]", "\t", "x|y"}
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(14) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		lines = append(lines, b.String())
	}
	for _, source := range append(comparedPrefixes, "%m%u%d%p ", "%t%a%c%q|%e|", "%-20m [%10p] %q%c ", "é%m ü%p ") {
		px, err := compilePrefix(source)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range lines {
			checkPrefix(t, px, line)
		}
	}
}

func checkPrefix(t *testing.T, px *prefix, line string) {
	t.Helper()
	head := line
	if len(head) > maxPrefix {
		head = head[:maxPrefix]
	}
	want := px.re.FindStringSubmatchIndex(head)
	got := px.m.find(head)
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("prefix %q, line %q: matcher %v, regexp %v", px.source, line, got, want)
	}
}

func FuzzPrefixMatcher(f *testing.F) {
	f.Add(uint8(0), "2024-05-20 10:00:00.123 UTC [4168] 664b1f10.1048 00000 user=app db=shop app=web-1 LOG:  duration: 0.120 ms")
	f.Add(uint8(1), "2024-05-20 10:00:00.123 UTC|app|shop|664b1f10.1048|LOG:  a|b|c|664b1f10.1|LOG:  ")
	f.Fuzz(func(t *testing.T, which uint8, line string) {
		px, err := compilePrefix(comparedPrefixes[int(which)%len(comparedPrefixes)])
		if err != nil {
			t.Fatal(err)
		}
		checkPrefix(t, px, line)
	})
}

// Convert's JSON strings are encoding/json's, byte for byte (HTML
// escaping off, as Write's encoder has it).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" backslash \\", "\b\f\n\r\t\x00\x1f\x7f", "ü ✓ \u2028 \u2029", "\xff\xfe bad \xe2\x82", "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := jsonValue(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: %s, encoding/json %s", s, got, want)
		}
		if got := appendJSONString(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("%q as bytes: %s, encoding/json %s", s, got, want)
		}
	})
}
