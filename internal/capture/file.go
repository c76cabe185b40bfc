package capture

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/atomicfile"
)

// The file is gzip-compressed JSON (docs/capture.md). Its types are kept
// apart from the API's so that either can change without the other, and
// times are whole microseconds (the server logs milliseconds and durations
// in microseconds): offsets from the capture's start, so that the numbers
// stay short.

type fileCapture struct {
	Format   string        `json:"format"`
	Engine   string        `json:"engine,omitempty"`
	Sources  []string      `json:"sources"`
	Start    time.Time     `json:"start"`
	End      time.Time     `json:"end"`
	Texts    []string      `json:"texts"`
	Sessions []fileSession `json:"sessions"`
	Skipped  []fileSkip    `json:"skipped,omitempty"`
}

type fileSession struct {
	ID          string          `json:"id"`
	PID         int             `json:"pid"`
	User        string          `json:"user,omitempty"`
	Database    string          `json:"database,omitempty"`
	Application string          `json:"application,omitempty"`
	Host        string          `json:"host,omitempty"`
	Start       int64           `json:"start_us"`
	End         int64           `json:"end_us"`
	Before      bool            `json:"started_before_log,omitempty"`
	After       bool            `json:"ended_after_log,omitempty"`
	Statements  []fileStatement `json:"statements"`
}

// fileStatement has one-letter keys: it is repeated millions of times.
type fileStatement struct {
	Offset    int64      `json:"o"`
	Duration  int64      `json:"d,omitempty"`
	Text      int        `json:"t"`
	Prepared  string     `json:"n,omitempty"`
	Extended  bool       `json:"x,omitempty"`
	Params    []*string  `json:"p,omitempty"`
	Truncated bool       `json:"pt,omitempty"`
	Error     *fileError `json:"e,omitempty"`
	Seq       int64      `json:"q,omitempty"`
	Rows      *int64     `json:"r,omitempty"`
	Types     []uint32   `json:"ty,omitempty"`
	CopyBytes int64      `json:"cb,omitempty"`
	CopyData  []byte     `json:"cd,omitempty"`
}

type fileError struct {
	SQLState string `json:"s,omitempty"`
	Message  string `json:"m"`
}

type fileSkip struct {
	Reason string     `json:"reason"`
	Effect SkipEffect `json:"effect"`
	Count  int        `json:"count"`
	First  string     `json:"first"`
}

func us(d time.Duration) int64 { return int64(d / time.Microsecond) }

// Write writes the capture to path atomically: a temporary file beside it,
// synced, then renamed over path, so that path never holds half a file.
func Write(path string, c *Capture) error {
	fc := fileCapture{Format: Format, Engine: c.Engine, Sources: c.Sources, Start: c.Start, End: c.End, Texts: c.Texts,
		Sessions: make([]fileSession, len(c.Sessions))}
	if fc.Texts == nil {
		fc.Texts = []string{}
	}
	for i, s := range c.Sessions {
		fs := fileSession{ID: s.ID, PID: s.PID, User: s.User, Database: s.Database, Application: s.Application,
			Host: s.Host, Start: us(s.Start), End: us(s.End), Before: s.StartedBeforeLog, After: s.EndedAfterLog,
			Statements: make([]fileStatement, len(s.Statements))}
		for k, st := range s.Statements {
			f := fileStatement{Offset: us(st.Offset), Duration: us(st.Duration), Text: st.Text, Prepared: st.Prepared,
				Extended: st.Extended, Params: st.Params, Truncated: st.ParamsTruncated, Seq: st.Seq, Rows: st.Rows, Types: st.Types,
				CopyBytes: st.CopyBytes, CopyData: st.CopyData}
			if st.Error != nil {
				f.Error = &fileError{SQLState: st.Error.SQLState, Message: st.Error.Message}
			}
			fs.Statements[k] = f
		}
		fc.Sessions[i] = fs
	}
	for _, s := range c.Skipped {
		fc.Skipped = append(fc.Skipped, fileSkip(s))
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
		zw, _ := gzip.NewWriterLevel(w, gzip.DefaultCompression)
		enc := json.NewEncoder(zw)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&fc); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return fmt.Errorf("write capture %s: %w", path, err)
	}
	return nil
}

// Read reads a capture file written by Write.
func Read(path string) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read capture: %w", err)
	}
	defer f.Close()
	return decode(f, path)
}

func decode(r io.Reader, path string) (*Capture, error) {
	br := bufio.NewReader(r)
	magic, _ := br.Peek(2)
	if !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return nil, fmt.Errorf("%s is not a dbparity capture file (not gzip-compressed): make one with dbparity capture", path)
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%s is not a dbparity capture file: %w", path, err)
	}
	// The format is checked before the whole document is decoded, so that
	// a file of another version gets a clear error, not a type mismatch.
	var head struct {
		Format string `json:"format"`
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("read capture %s: %w", path, err)
	}
	if err := json.Unmarshal(body, &head); err != nil {
		// Write puts the format first, so a cut file still shows it.
		if bytes.HasPrefix(body, []byte(`{"format":"dbparity.capture/`)) {
			return nil, fmt.Errorf("capture file %s is damaged: %v", path, err)
		}
		return nil, fmt.Errorf("%s is not a dbparity capture file: %v", path, err)
	}
	if head.Format != Format {
		if v, ok := strings.CutPrefix(head.Format, "dbparity.capture/"); ok {
			return nil, fmt.Errorf("capture file %s has format version %s; this dbparity reads %s: use the dbparity that wrote it, or capture the logs again", path, v, Format)
		}
		return nil, fmt.Errorf("%s is not a dbparity capture file (format %q)", path, head.Format)
	}
	var fc fileCapture
	if err := json.Unmarshal(body, &fc); err != nil {
		return nil, fmt.Errorf("capture file %s is damaged: %v", path, err)
	}
	c := &Capture{Format: fc.Format, Engine: fc.Engine, Sources: fc.Sources, Start: fc.Start, End: fc.End, Texts: fc.Texts,
		Sessions: make([]Session, len(fc.Sessions))}
	for i, fs := range fc.Sessions {
		s := Session{ID: fs.ID, PID: fs.PID, User: fs.User, Database: fs.Database, Application: fs.Application,
			Host: fs.Host, Start: time.Duration(fs.Start) * time.Microsecond, End: time.Duration(fs.End) * time.Microsecond,
			StartedBeforeLog: fs.Before, EndedAfterLog: fs.After, Statements: make([]Statement, len(fs.Statements))}
		for k, f := range fs.Statements {
			if f.Text < 0 || f.Text >= len(fc.Texts) {
				return nil, fmt.Errorf("capture file %s is damaged: session %s statement %d names text %d of %d", path, fs.ID, k, f.Text, len(fc.Texts))
			}
			if f.Offset < 0 || f.Duration < 0 {
				return nil, fmt.Errorf("capture file %s is damaged: session %s statement %d has a negative time", path, fs.ID, k)
			}
			st := Statement{Offset: time.Duration(f.Offset) * time.Microsecond, Duration: time.Duration(f.Duration) * time.Microsecond,
				Text: f.Text, Prepared: f.Prepared, Extended: f.Extended, Params: f.Params, ParamsTruncated: f.Truncated,
				Seq: f.Seq, Rows: f.Rows, Types: f.Types, CopyBytes: f.CopyBytes, CopyData: f.CopyData}
			if f.Error != nil {
				st.Error = &Error{SQLState: f.Error.SQLState, Message: f.Error.Message}
			}
			s.Statements[k] = st
		}
		c.Sessions[i] = s
	}
	for _, s := range fc.Skipped {
		c.Skipped = append(c.Skipped, Skip(s))
	}
	if c.Texts == nil {
		c.Texts = []string{}
	}
	return c, nil
}
