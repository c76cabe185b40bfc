package capture

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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
