package capture

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	for _, pattern := range []string{"run1/*.csv*", "hand/edge.log", "both/*.json"} {
		c := parseFiles(t, glob(t, pattern), Options{})
		path := filepath.Join(dir, "capture.dbpc")
		if err := Write(path, c); err != nil {
			t.Fatal(err)
		}
		got, err := Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Start.Equal(c.Start) || !got.End.Equal(c.End) {
			t.Errorf("%s: span %v..%v, want %v..%v", pattern, got.Start, got.End, c.Start, c.End)
		}
		got.Start, got.End = c.Start, c.End
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%s: read back differs:\n%+v\n%+v", pattern, got, c)
		}
		checkInvariants(t, got)
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Errorf("%s: %d files in the directory, want only the capture", pattern, len(entries))
		}
	}
	// A capture is much smaller than its logs.
	files := glob(t, "run1/*.json*")
	var logBytes int64
	for _, f := range files {
		st, _ := os.Stat(f)
		logBytes += st.Size()
	}
	path := filepath.Join(dir, "size.dbpc")
	if err := Write(path, parseFiles(t, files, Options{})); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Size()*5 > logBytes {
		t.Errorf("capture of %d bytes for %d bytes of jsonlog", st.Size(), logBytes)
	}
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"log.csv", []byte("2024-05-20 10:00:00.000 UTC,,,1"), "is not a dbparity capture file (not gzip-compressed)"},
		{"other.gz", gzipped(`{"schema":"dbparity.run/1"}`), `is not a dbparity capture file (format "")`},
		{"notjson.gz", gzipped(`hello`), "is not a dbparity capture file"},
		{"future.gz", gzipped(`{"format":"dbparity.capture/9","sessions":"new"}`), "has format version 9; this dbparity reads dbparity.capture/1"},
		{"badtext.gz", gzipped(`{"format":"dbparity.capture/1","texts":["a"],"sessions":[{"id":"x","statements":[{"o":1,"t":1}]}]}`), "is damaged: session x statement 0 names text 1 of 1"},
		{"negative.gz", gzipped(`{"format":"dbparity.capture/1","texts":["a"],"sessions":[{"id":"x","statements":[{"o":-1,"t":0}]}]}`), "negative time"},
		{"cut.gz", gzipped(`{"format":"dbparity.capture/1","texts":["a"]`), "is damaged"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, tc.content, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing")); err == nil {
		t.Error("read a missing file")
	}
	if err := Write(filepath.Join(dir, "no", "such", "dir"), &Capture{}); err == nil {
		t.Error("wrote into a missing directory")
	}
}

// bombFile writes head, then chunk n times, then tail, as a gzip file of
// one member each (a reader inflates them as one stream): n copies of a
// chunk cost its compressed size n times, so gigabytes of content take
// megabytes and milliseconds to make.
func bombFile(t testing.TB, path, head string, chunk []byte, n int, tail string) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	member := func(b []byte) []byte {
		var out bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	f.Write(member([]byte(head)))
	m := member(chunk)
	for range n {
		f.Write(m)
	}
	f.Write(member([]byte(tail)))
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// lettersBlock is 1 MiB of a random 1 KiB block of letters repeated: it
// compresses about 150 times, under MaxExpansion, so that only a value's
// own limit stops it.
func lettersBlock() []byte {
	rng := rand.New(rand.NewSource(1))
	block := make([]byte, 1024)
	for i := range block {
		block[i] = 'a' + byte(rng.Intn(26))
	}
	return bytes.Repeat(block, 1024)
}

// guard fails the reads past max bytes of the file, so that a reader that
// inflates a bomb whole fails at once instead of taking gigabytes.
type guard struct {
	r   io.Reader
	n   int64
	max int64
}

func (g *guard) Read(p []byte) (int, error) {
	if g.n >= g.max {
		return 0, fmt.Errorf("read %d bytes of the file, more than a refusal needs", g.n)
	}
	n, err := g.r.Read(p)
	g.n += int64(n)
	return n, err
}

// A capture file is streamed and every value it holds is bounded: a gzip
// bomb of gigabytes, a text or a statement over its limit, is refused
// after reading at most the limit's worth, in a bounded heap.
func TestReadBombs(t *testing.T) {
	dir := t.TempDir()
	const head = `{"format":"dbparity.capture/1","sources":["x"],"start":"2024-05-20T10:00:00Z","end":"2024-05-20T10:00:01Z",`
	a := bytes.Repeat([]byte("a"), 1<<20)
	spaces := bytes.Repeat([]byte(" "), 1<<20)
	small := bytes.Repeat([]byte(`{"o":0,"t":0},`), (1<<20)/14)
	for _, tc := range []struct {
		name, head string
		chunk      []byte
		n          int // MiB of chunk
		tail       string
		want       []string // one of
		read       int64    // the most of the file a refusal reads
	}{
		// 3 GiB of one byte: not JSON, at its first byte.
		{"bytes", "", a, 3072, "", []string{"is not a dbparity capture file: invalid character 'a'"}, 256 << 10},
		// a text of 3 GiB of one byte: inflated at 1,000 times its gzip.
		{"text", head + `"texts":["`, a, 3072, `"]}`, []string{"a statement text at byte 116 of its content is longer than the 64 MiB", "gzip bomb"}, 256 << 10},
		// 3 GiB of the smallest statements: 11,000 times their gzip in memory.
		{"statements", head + `"texts":["SELECT 1"],"sessions":[{"id":"s","statements":[`, small, 3072, `{"o":0,"t":0}]}]}`,
			[]string{"MiB of memory, more than 500 times as much, where captures take 3 to 15 times their gzip: the file is a gzip bomb"}, 256 << 10},
		// 3 GiB of space between two values.
		{"spaces", head, spaces, 3072, `"texts":[]}`, []string{"a key at byte 106 of its content is longer than the 1 MiB a key may have"}, 256 << 10},
		// a text of 400 MiB that compresses 180 times: its own limit.
		{"long text", head + `"texts":["`, lettersBlock(), 400, `"]}`, []string{"a statement text at byte 116 of its content is longer than the 64 MiB a statement text may have: the file is not a dbparity capture or is damaged"}, 1 << 20},
		// a statement with a parameter of 400 MiB.
		{"long statement", head + `"texts":["SELECT $1"],"sessions":[{"id":"s","statements":[{"o":0,"t":0,"x":true,"p":["`, lettersBlock(), 400, `"]}]}]}`,
			[]string{`a statement at byte 165 of its content is longer than the 96 MiB a statement may have: the file is not a dbparity capture or is damaged`}, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".capture")
			fileSize := bombFile(t, path, tc.head, tc.chunk, tc.n, tc.tail)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// A refusal reads the gzip of at most a limit's worth
			// (96 MiB of the statement, 550 KiB of gzip here), and
			// never the whole file.
			g := &guard{r: f, max: tc.read}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			c, err := decodeFile(g, path)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %d MiB of content in %d KiB of gzip refused in %v after reading %d KiB of it, %d MiB allocated: %v",
				tc.name, tc.n, fileSize>>10, took.Round(time.Millisecond), g.n>>10, alloc>>20, err)
			if err == nil {
				t.Fatalf("read a capture of %d sessions", len(c.Sessions))
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || strings.Contains(msg, "\n") {
				t.Errorf("the error does not name the file in one line: %q", msg)
			}
			if !slices.ContainsFunc(tc.want, func(w string) bool { return strings.Contains(msg, w) }) {
				t.Errorf("error %q, want %q", msg, tc.want)
			}
			if strings.Contains(msg, "more than a refusal needs") {
				t.Errorf("read %d of the file's %d bytes", g.n, fileSize)
			}
			// What the decoder buffers for a value of up to 96 MiB
			// (its buffer doubles to 128 MiB), and what was inflated:
			// the whole file in memory took 6 GiB of a 3 GiB bomb.
			if alloc > 320<<20 {
				t.Errorf("allocated %d MiB to refuse it", alloc>>20)
			}
		})
	}
}

// A capture whose records cannot be is refused by what is wrong, never
// read into a capture that a replay trips over later.
func TestReadRefusesImpossible(t *testing.T) {
	dir := t.TempDir()
	const head = `{"format":"dbparity.capture/1","sources":["x"],"start":"2024-05-20T10:00:00Z","end":"2024-05-20T10:00:01Z",`
	for _, tc := range []struct{ name, content, want string }{
		{"oracle", head + `"engine":"oracle","texts":["SELECT 1 FROM dual"],"sessions":[{"id":"s","statements":[{"o":0,"t":0}]}]}`,
			`engine "oracle": dbparity replays captures of postgresql and mysql: the file is not a dbparity capture or is damaged`},
		{"null session", head + `"texts":["SELECT 1"],"sessions":[null]}`, "is damaged at byte 140 of its content: session 0 is null, not an object"},
		{"session not an object", head + `"texts":["SELECT 1"],"sessions":[{"id":"s","statements":[]},7]}`, "session 1 is a number, not an object"},
		{"null statement", head + `"texts":["SELECT 1"],"sessions":[{"id":"s","statements":[{"o":0,"t":0},null]}]}`, "session s statement 1 is null, not a statement"},
		{"null text", head + `"texts":["SELECT 1",null],"sessions":[]}`, "a statement text 1 is null, not a string"},
		{"statements not an array", head + `"texts":["SELECT 1"],"sessions":[{"id":"s","statements":{"o":0}}]}`, `a session's "statements" is "{", not an array`},
		{"time out of range", head + `"texts":["SELECT 1"],"sessions":[{"id":"s","statements":[{"o":9223372036854775807,"t":0}]}]}`, "session s statement 0 has a time of more than"},
		{"session time", head + `"texts":["SELECT 1"],"sessions":[{"id":"s","start_us":-5,"statements":[]}]}`, "session s has a time of -5 µs"},
		{"twice", head + `"texts":["SELECT 1"],"texts":["SELECT 2"],"sessions":[]}`, `"texts" appears twice`},
		{"two documents", head + `"texts":["SELECT 1"],"sessions":[]}{"format":"dbparity.capture/1"}`, "more content after the document"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".capture")
		if err := os.WriteFile(path, gzipped(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Read(path)
		if err == nil {
			t.Errorf("%s: read %d sessions", tc.name, len(c.Sessions))
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// A capture cut anywhere, in its gzip trailer or in its content, is
	// damaged; the file as written reads.
	c := parseFiles(t, glob(t, "run1/*.csv*"), Options{})
	path := filepath.Join(dir, "whole.capture")
	if err := Write(path, c); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{len(whole) - 4, len(whole) - 9, len(whole) / 2, 12} {
		p := filepath.Join(dir, fmt.Sprintf("cut-%d.capture", cut))
		os.WriteFile(p, whole[:cut], 0o644)
		_, err := Read(p)
		if err == nil || !strings.Contains(err.Error(), "capture file "+p+" is damaged at byte ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("cut at %d of %d bytes: %v", cut, len(whole), err)
		}
	}
}

// The capture Read holds is counted as it is read, and refused before it
// passes the memory budget.
func TestReadMemoryBudget(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(`{"format":"dbparity.capture/1","texts":["SELECT $1"],"sessions":[{"id":"s","statements":[`)
	for i := range 20000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"o":%d,"t":0,"x":true,"p":["%d"],"q":%d}`, i, i*7919%100003, i+1)
	}
	b.WriteString(`]}]}`)
	path := filepath.Join(dir, "app.capture")
	if err := os.WriteFile(path, gzipped(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Read(path)
	if err != nil || c.Statements() != 20000 {
		t.Fatalf("%v", err)
	}
	defer func(f func() (int64, string)) { memoryBudget = f }(memoryBudget)
	memoryBudget = func() (int64, string) { return 1 << 20, "a test's" }
	_, err = Read(path)
	if err == nil || !strings.Contains(err.Error(), `in session "s", the capture would take more than 1 MiB of memory, the most a capture may take here (a test's)`) {
		t.Errorf("%v", err)
	}
	// The machine's budget: a quarter of its memory.
	if n, note := defaultBudget(); n <= 0 || !strings.Contains(note, "a quarter of") && !strings.Contains(note, "default") {
		t.Errorf("budget %d (%s)", n, note)
	}
}

// Write leaves out what Read would refuse, and says so: a text over
// MaxTextBytes (from a log line of up to 256 MiB, or the wire).
func TestWriteLeavesOutOverLimits(t *testing.T) {
	dir := t.TempDir()
	long := "SELECT '" + strings.Repeat("x", MaxTextBytes) + "'"
	c := &Capture{Format: Format, Start: time.Unix(0, 0).UTC(), End: time.Unix(1, 0).UTC(), Texts: []string{"SELECT 1", long},
		Sessions: []Session{{ID: "s", End: time.Second, Statements: []Statement{{Text: 0}, {Text: 1, Offset: time.Millisecond}, {Text: 0, Offset: 2 * time.Millisecond}}}}}
	path := filepath.Join(dir, "app.capture")
	if err := Write(path, c); err != nil {
		t.Fatal(err)
	}
	if c.Texts[1] != long || len(c.Sessions[0].Statements) != 3 {
		t.Error("Write changed its capture")
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Sessions[0].Statements); n != 2 || got.Texts[1] != "" {
		t.Errorf("%d statements read back, text 1 of %d bytes", n, len(got.Texts[1]))
	}
	want := Skip{Reason: reasonOverLimits, Effect: Dropped, Count: 1, First: "session s statement 1"}
	if len(got.Skipped) != 1 || got.Skipped[0] != want {
		t.Errorf("skipped %+v, want %+v", got.Skipped, want)
	}
}
