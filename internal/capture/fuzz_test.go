package capture

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedLog adds a log file as seeds: whole when small, else in pieces of a
// few dozen lines, so that fuzzing starts from real server output.
func seedLog(f *testing.F, pattern string) {
	files, _ := filepath.Glob(filepath.Join("testdata", pattern))
	if len(files) == 0 {
		f.Fatalf("no seeds match %s", pattern)
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				f.Fatal(err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				f.Fatal(err)
			}
		}
		lines := strings.SplitAfter(string(b), "\n")
		for i := 0; i < len(lines); i += 8 {
			end := min(i+8, len(lines))
			f.Add([]byte(strings.Join(lines[i:end], "")))
		}
	}
}

func fuzzParse(t *testing.T, data []byte, format string, opt Options) {
	c, err := parseReader(bytes.NewReader(data), "fuzz", format, opt)
	if err != nil {
		if format != FormatStderr || !strings.Contains(err.Error(), "matches log_line_prefix") {
			t.Fatalf("%s: %v", format, err)
		}
		return
	}
	checkInvariants(t, c)
	if c.Statements() > 0 && len(c.Texts) == 0 {
		t.Fatal("statements without texts")
	}
	for _, s := range c.Sessions {
		for _, st := range s.Statements {
			if st.Offset < 0 {
				t.Fatalf("negative offset %v", st.Offset)
			}
			if st.Prepared != "" && !st.Extended {
				t.Fatalf("prepared statement %q not extended", st.Prepared)
			}
		}
	}
}

func FuzzCSVLog(f *testing.F) {
	seedLog(f, "run1/*.csv*")
	seedLog(f, "both/*.csv")
	seedLog(f, "stmt/*.csv")
	seedLog(f, "hand/edge.csv")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, FormatCSV, Options{}) })
}

func FuzzJSONLog(f *testing.F) {
	seedLog(f, "run1/*.json*")
	seedLog(f, "both/*.json")
	seedLog(f, "hand/edge.json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, FormatJSON, Options{ParamMaxLength: 10}) })
}

func FuzzStderr(f *testing.F) {
	seedLog(f, "run1/*.log*")
	seedLog(f, "both/*.log")
	seedLog(f, "stmt/*.log")
	seedLog(f, "hand/edge.log")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, FormatStderr, Options{}) })
}

// FuzzPrefix compiles any log_line_prefix and matches any line with it.
func FuzzPrefix(f *testing.F) {
	f.Add(DefaultPrefix, "2024-05-20 10:00:00.123 UTC [42] 664b1f10.2a 22012 user=a db=b app=c ERROR:  x")
	f.Add("%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ", "2024-05-20 10:00:00 UTC [9]: [3-1] user=u,db=d,app=psql,client=x LOG:  y")
	f.Add("%n|%c|%-10u|%10d|%r|%b|%x|%v|%i|%P|%s|%Z %% %q%", "1716199200.250|664b1f10.2b|b|s|h(1)|client backend|0|3/7|idle||2024-05-20 09:00:00 UTC| % LOG:  z")
	f.Fuzz(func(t *testing.T, prefix, line string) {
		px, err := compilePrefix(prefix)
		if err != nil {
			return
		}
		m, ok := px.match(line, newClock())
		if ok && (m.time.IsZero() || m.pid < 0 || !strings.HasSuffix(line, m.rest)) {
			t.Fatalf("match %+v", m)
		}
	})
}

func FuzzFingerprint(f *testing.F) {
	for _, pattern := range []string{"run1/*.log", "both/*.log"} {
		files, _ := filepath.Glob(filepath.Join("testdata", pattern))
		for _, path := range files {
			b, _ := os.ReadFile(path)
			for _, line := range strings.Split(string(b), "\n") {
				if _, sql, ok := strings.Cut(line, "statement: "); ok {
					f.Add(sql)
				}
			}
		}
	}
	for _, s := range []string{"SELECT 'a''b', E'\\'', $$x$$, $t$ $$ $t$, 1.5e-3, -1, x-1, $1", "/* /* */", "IN (1, 2", "VALUES (1), (", "U&'x' U&\"y\"", "a?-1", "'", "$", "\x80\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		fp := Fingerprint(sql)
		if again := Fingerprint(fp); again != fp {
			t.Fatalf("not idempotent: %q -> %q -> %q", sql, fp, again)
		}
		if !strings.Contains(sql, `"`) && strings.Contains(fp, "'") {
			t.Fatalf("a string survived: %q -> %q", sql, fp)
		}
		if !strings.Contains(sql, `"`) && (strings.HasPrefix(fp, " ") || strings.HasSuffix(fp, " ") || strings.Contains(fp, "  ") || strings.ContainsAny(fp, "\n\t")) {
			t.Fatalf("spacing not collapsed: %q -> %q", sql, fp)
		}
	})
}
