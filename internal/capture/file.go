package capture

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
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
	// ErrorsUnknown: the source records no errors (MySQL's logs).
	ErrorsUnknown bool `json:"errors_unknown,omitempty"`
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
	InsertID  int64      `json:"ai,omitempty"`
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

// reasonOverLimits is the skip of statements Write leaves out because
// Read would refuse them.
const reasonOverLimits = "statements over the capture file's limits (64 MiB of text, 96 MiB a statement)"

// jsonLen is the length of v in JSON as Write writes it.
func jsonLen(v any) int64 {
	var n countWriter
	enc := json.NewEncoder(&n)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return math.MaxInt64
	}
	return int64(n) - 1 // the newline
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// statementTooLong says whether f would take more than MaxStatementBytes
// in the file; JSON writes a byte as 6 at most, base64 as 4/3.
func statementTooLong(f *fileStatement) bool {
	n := len(f.Prepared) + 4*len(f.Types) + len(f.CopyData)*4/3 + 8*len(f.Params)
	for _, p := range f.Params {
		if p != nil {
			n += len(*p)
		}
	}
	if f.Error != nil {
		n += len(f.Error.SQLState) + len(f.Error.Message)
	}
	return n > MaxStatementBytes/6-256 && jsonLen(f) > MaxStatementBytes
}

// Write writes the capture to path atomically: a temporary file beside it,
// synced, then renamed over path, so that path never holds half a file.
func Write(path string, c *Capture) error {
	fc := fileCapture{Format: Format, Engine: c.Engine, Sources: c.Sources, Start: c.Start, End: c.End, Texts: c.Texts,
		Sessions: make([]fileSession, len(c.Sessions)), ErrorsUnknown: c.ErrorsUnknown}
	if fc.Texts == nil {
		fc.Texts = []string{}
	}
	// What Read would refuse is not written: a text or a statement over
	// the file's limits is dropped, and the skip says so.
	tooLong := make([]bool, len(fc.Texts))
	for i, t := range c.Texts {
		if len(t) > MaxTextBytes/6 && jsonLen(t) > MaxTextBytes {
			if !slices.Contains(tooLong, true) {
				fc.Texts = slices.Clone(c.Texts) // the caller's stay whole
			}
			tooLong[i], fc.Texts[i] = true, ""
		}
	}
	over := fileSkip{Reason: reasonOverLimits, Effect: Dropped}
	for i, s := range c.Sessions {
		fs := fileSession{ID: s.ID, PID: s.PID, User: s.User, Database: s.Database, Application: s.Application,
			Host: s.Host, Start: us(s.Start), End: us(s.End), Before: s.StartedBeforeLog, After: s.EndedAfterLog,
			Statements: make([]fileStatement, 0, len(s.Statements))}
		for k, st := range s.Statements {
			f := fileStatement{Offset: us(st.Offset), Duration: us(st.Duration), Text: st.Text, Prepared: st.Prepared,
				Extended: st.Extended, Params: st.Params, Truncated: st.ParamsTruncated, Seq: st.Seq, Rows: st.Rows, Types: st.Types,
				CopyBytes: st.CopyBytes, CopyData: st.CopyData, InsertID: st.InsertID}
			if st.Error != nil {
				f.Error = &fileError{SQLState: st.Error.SQLState, Message: st.Error.Message}
			}
			if (st.Text >= 0 && st.Text < len(tooLong) && tooLong[st.Text]) || statementTooLong(&f) {
				if over.Count++; over.Count == 1 {
					over.First = fmt.Sprintf("session %s statement %d", s.ID, k)
				}
				continue
			}
			fs.Statements = append(fs.Statements, f)
		}
		fc.Sessions[i] = fs
	}
	for _, s := range c.Skipped {
		fc.Skipped = append(fc.Skipped, fileSkip(s))
	}
	if over.Count > 0 {
		fc.Skipped = append(fc.Skipped, over)
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

// Read reads a capture file written by Write. It streams the file, and
// refuses one that passes the limits of read.go (a text, a statement or
// another value too long, a content that expands like a gzip bomb, a
// capture that would take more memory than the machine can give it), an
// engine dbparity does not have, and a null or otherwise impossible
// record, each with one line naming the file and what is wrong.
func Read(path string) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read capture: %w", err)
	}
	defer f.Close()
	return decodeFile(f, path)
}
