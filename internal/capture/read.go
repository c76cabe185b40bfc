package capture

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// The limits of a capture file as Read takes it (docs/capture.md, "The
// capture file"; docs/faults.md). The file is streamed: its gzip is
// inflated as the JSON decoder asks, and the decoder holds one value at a
// time, so what a file can make Read hold is bounded by these, whatever
// the file says; a file that passes one is refused before memory grows
// past it.
const (
	// MaxTextBytes is the most one statement text may take in the file
	// (the JSON string as written, escapes included).
	MaxTextBytes = 64 << 20
	// MaxStatementBytes is the most one statement record may take: its
	// parameters, error and COPY data (a wire capture keeps up to 64 MiB
	// of COPY data, 85.4 MiB in base64). The JSON decoder's buffer
	// doubles to hold a value: to 128 MiB for either, which with the
	// buffer it replaces and the value decoded is the 256 MiB a value
	// may cost while it is read.
	MaxStatementBytes = 96 << 20
	// maxFieldBytes bounds every other value read whole: a key, a
	// session's id, user, database, application or host, a source, a
	// skip, the format, the times, and the whitespace between values.
	maxFieldBytes = 1 << 20
	// MaxExpansion: once ExpansionFloor bytes have been inflated or are
	// held, the content inflated and the memory held may each be at most
	// this many times the compressed bytes read. Captures measured (the
	// test data's, and a pgbench-like one of a million statements)
	// inflate 2.6 to 4 times and hold 11 to 15 times their gzip; gzip
	// inflates at most 1,032 times, and the smallest statements repeated
	// hold 160 bytes for 14 of content, 11,000 times their gzip.
	MaxExpansion   = 500
	ExpansionFloor = 64 << 20
)

// statementSize and sessionSize are what one element of Session.Statements
// and Capture.Sessions holds, before the strings and slices it points to.
const (
	statementSize = int64(unsafe.Sizeof(Statement{}))
	sessionSize   = int64(unsafe.Sizeof(Session{}))
	stringSize    = int64(unsafe.Sizeof(""))
	errorSize     = int64(unsafe.Sizeof(Error{}))
)

// memoryBudget is the most memory the capture Read holds may take, and
// where that figure comes from: a quarter of the machine's memory (or of
// the cgroup's limit, when lower), so that the replay's own structures
// and the garbage collector's slack fit beside it.
var memoryBudget = defaultBudget

func defaultBudget() (int64, string) {
	total, of := memTotal(), "this machine's"
	if lim := cgroupLimit(); lim > 0 && (total <= 0 || lim < total) {
		total, of = lim, "the cgroup's limit of"
	}
	if total <= 0 {
		return 2 << 30, "the default when the machine's memory cannot be read"
	}
	return total / 4, fmt.Sprintf("a quarter of %s %s", of, size(total))
}

// memTotal is /proc/meminfo's MemTotal in bytes, 0 when unknown.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// cgroupLimit is this process's cgroup memory limit in bytes (v2
// memory.max, or v1 memory.limit_in_bytes), 0 when there is none.
func cgroupLimit() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	var paths []string
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			paths = append(paths, filepath.Join("/sys/fs/cgroup", p, "memory.max"), "/sys/fs/cgroup/memory.max")
		} else if f := strings.SplitN(line, ":", 3); len(f) == 3 && strings.Contains(","+f[1]+",", ",memory,") {
			paths = append(paths, filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes"), "/sys/fs/cgroup/memory/memory.limit_in_bytes")
		}
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// "max", or v1's "no limit" of about 2^63 rounded to pages.
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && n < 1<<60 {
			return n
		}
	}
	return 0
}

// size prints a byte count in binary units: 64 MiB, 5.9 GiB.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// gzCounter counts the compressed bytes read.
type gzCounter struct {
	r io.Reader
	n int64
}

func (c *gzCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// fileReader streams a capture file's content into a Capture. It is the
// JSON decoder's reader: it gives the decoder no more than the current
// value's limit past the decoder's position, and nothing once the content
// expands too much, so that the decoder's buffer never holds more than
// one value of bounded size.
type fileReader struct {
	path string
	zr   io.Reader  // the inflated content
	z    *gzCounter // the compressed bytes read
	dec  *json.Decoder

	n     int64  // inflated bytes given to the decoder
	limit int64  // the decoder may be given bytes up to here
	at    int64  // where the value being read starts
	what  string // the value being read, for a refusal
	max   int64  // its limit

	held       int64 // memory the capture holds so far
	budget     int64
	budgetNote string
	in         string // the session being read, for a refusal
	stop       error  // the refusal, once there is one
}

func (r *fileReader) Read(p []byte) (int, error) {
	if r.stop != nil {
		return 0, r.stop
	}
	if r.n >= r.limit {
		r.stop = fmt.Errorf("%s: %s at byte %d of its content is longer than the %s %s may have: the file is not a dbparity capture or is damaged",
			r.path, r.what, r.at, size(r.max), r.what)
		return 0, r.stop
	}
	if r.stop = r.expanded(); r.stop != nil {
		return 0, r.stop
	}
	if rem := r.limit - r.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := r.zr.Read(p)
	r.n += int64(n)
	return n, err
}

// expanded refuses a content, or a capture in memory, that has grown past
// ExpansionFloor and to more than MaxExpansion times the gzip read.
func (r *fileReader) expanded() error {
	grown, what := r.n, "inflate to"
	if r.held > grown {
		grown, what = r.held, "take"
	}
	if grown <= ExpansionFloor || grown <= MaxExpansion*r.z.n {
		return nil
	}
	if what == "take" {
		what += " " + size(grown) + " of memory"
	} else {
		what += " " + size(grown)
	}
	return fmt.Errorf("%s: at byte %d of its content, its first %s of gzip %s, more than %d times as much, where captures take 3 to 15 times their gzip: the file is a gzip bomb, not a dbparity capture, or is damaged",
		r.path, r.dec.InputOffset(), size(r.z.n), what, MaxExpansion)
}

// keep adds n bytes to what the capture holds, and refuses a capture that
// passes the memory budget or expands too much, before it is held.
func (r *fileReader) keep(n int64) error {
	r.held += n
	if r.held > r.budget {
		in := ""
		if r.in != "" {
			in = ", in " + r.in
		}
		r.stop = fmt.Errorf("%s: at byte %d of its content%s, the capture would take more than %s of memory, the most a capture may take here (%s): replay a shorter capture, or on a machine with more memory",
			r.path, r.dec.InputOffset(), in, size(r.budget), r.budgetNote)
		return r.stop
	}
	if err := r.expanded(); err != nil {
		r.stop = err
		return err
	}
	return nil
}

// value starts a value of at most max bytes.
func (r *fileReader) value(what string, max int64) {
	r.at = r.dec.InputOffset()
	r.limit, r.what, r.max = r.at+max, what, max
}

// fail turns a decoder's error into the file's.
func (r *fileReader) fail(err error) error {
	if r.stop != nil {
		return r.stop
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("capture file %s is damaged at byte %d of its content: %v", r.path, r.dec.InputOffset(), err)
}

// damaged refuses a record that cannot be.
func (r *fileReader) damaged(format string, a ...any) error {
	return fmt.Errorf("capture file %s is damaged at byte %d of its content: %s", r.path, r.at, fmt.Sprintf(format, a...))
}

func (r *fileReader) decode(what string, max int64, v any) error {
	r.value(what, max)
	if err := r.dec.Decode(v); err != nil {
		return r.fail(err)
	}
	return nil
}

func (r *fileReader) token(what string) (json.Token, error) {
	r.value(what, maxFieldBytes)
	t, err := r.dec.Token()
	if err != nil {
		return nil, r.fail(err)
	}
	return t, nil
}

func (r *fileReader) more() bool {
	r.value("the space between values", maxFieldBytes)
	return r.dec.More()
}

// key reads an object's key.
func (r *fileReader) key() (string, error) {
	t, err := r.token("a key")
	if err != nil {
		return "", err
	}
	k, _ := t.(string)
	return k, nil
}

// open reads an array's or object's opening delimiter; null is an empty
// one when nullOK, else a damaged record.
func (r *fileReader) open(what string, delim json.Delim, nullOK bool) (bool, error) {
	t, err := r.token(what)
	if err != nil {
		return false, err
	}
	if t == nil && nullOK {
		return false, nil
	}
	if d, ok := t.(json.Delim); ok && d == delim {
		return true, nil
	}
	kind := "an object"
	if delim == '[' {
		kind = "an array"
	}
	return false, r.damaged("%s is %s, not %s", what, describe(t), kind)
}

// close reads the closing delimiter of an array or object whose values
// have been read.
func (r *fileReader) close(what string) error {
	_, err := r.token(what)
	return err
}

func describe(t json.Token) string {
	switch v := t.(type) {
	case nil:
		return "null"
	case json.Delim:
		return strconv.Quote(v.String())
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// skip reads past a value of a key this version does not know.
func (r *fileReader) skip(key string) error {
	var v json.RawMessage
	return r.decode("the value of "+strconv.Quote(key), maxFieldBytes, &v)
}

// decodeFile reads a capture file's content from r (gzip), streaming.
func decodeFile(in io.Reader, path string) (*Capture, error) {
	z := &gzCounter{r: in}
	br := bufio.NewReader(z)
	magic, _ := br.Peek(2)
	if !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return nil, fmt.Errorf("%s is not a dbparity capture file (not gzip-compressed): make one with dbparity capture", path)
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%s is not a dbparity capture file: %w", path, err)
	}
	r := &fileReader{path: path, zr: zr, z: z}
	r.budget, r.budgetNote = memoryBudget()
	r.dec = json.NewDecoder(r)
	return r.capture()
}

func (r *fileReader) capture() (*Capture, error) {
	// The format is checked before anything else is read, so that a file
	// of another version gets a clear error, not a type mismatch. Write
	// puts it first.
	r.value("the document's start", maxFieldBytes)
	t, err := r.dec.Token()
	if err != nil {
		var syntax *json.SyntaxError
		if r.stop != nil || !errors.As(err, &syntax) {
			return nil, r.fail(err) // cut, or its gzip damaged
		}
		return nil, fmt.Errorf("%s is not a dbparity capture file: %v", r.path, err)
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s is not a dbparity capture file (its content is %s, not a JSON object)", r.path, describe(t))
	}
	if !r.more() {
		if err := r.close("the document's end"); err != nil {
			return nil, err // cut
		}
		return nil, fmt.Errorf(`%s is not a dbparity capture file (format "")`, r.path)
	}
	k, err := r.key()
	if err != nil {
		return nil, err
	}
	if k != "format" {
		return nil, fmt.Errorf(`%s is not a dbparity capture file (format ""): its first key is %q, where a capture's is "format"`, r.path, k)
	}
	c := &Capture{}
	if err := r.decode("the format", maxFieldBytes, &c.Format); err != nil {
		return nil, err
	}
	if c.Format != Format {
		if v, ok := strings.CutPrefix(c.Format, "dbparity.capture/"); ok {
			return nil, fmt.Errorf("capture file %s has format version %s; this dbparity reads %s: use the dbparity that wrote it, or capture the logs again", r.path, v, Format)
		}
		return nil, fmt.Errorf("%s is not a dbparity capture file (format %q)", r.path, c.Format)
	}
	seen := map[string]bool{"format": true}
	for r.more() {
		k, err := r.key()
		if err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, r.damaged("%q appears twice", k)
		}
		seen[k] = true
		switch k {
		case "engine":
			err = r.decode("the engine", maxFieldBytes, &c.Engine)
			if err == nil && c.Engine != "" && c.Engine != EnginePostgres && c.Engine != EngineMySQL {
				return nil, fmt.Errorf("%s: engine %q: dbparity replays captures of %s and %s: the file is not a dbparity capture or is damaged",
					r.path, c.Engine, EnginePostgres, EngineMySQL)
			}
		case "sources":
			err = r.strings("sources", "a source", &c.Sources)
		case "start":
			err = r.decode("the start", maxFieldBytes, &c.Start)
		case "end":
			err = r.decode("the end", maxFieldBytes, &c.End)
		case "texts":
			err = r.strings("texts", "a statement text", &c.Texts)
		case "sessions":
			err = r.sessions(c)
		case "skipped":
			err = r.skips(c)
		case "errors_unknown":
			err = r.decode("errors_unknown", maxFieldBytes, &c.ErrorsUnknown)
		default:
			err = r.skip(k)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := r.close("the document's end"); err != nil {
		return nil, err
	}
	// Nothing but space may follow, and the gzip's end is read, so that
	// its checksum and length are checked.
	r.value("what follows the document", maxFieldBytes)
	if _, err := r.dec.Token(); err == nil {
		return nil, r.damaged("more content after the document")
	} else if err != io.EOF {
		return nil, r.fail(err)
	}
	if c.Texts == nil {
		c.Texts = []string{}
	}
	for _, s := range c.Sessions {
		for k, st := range s.Statements {
			if st.Text < 0 || st.Text >= len(c.Texts) {
				return nil, fmt.Errorf("capture file %s is damaged: session %s statement %d names text %d of %d", r.path, s.ID, k, st.Text, len(c.Texts))
			}
		}
	}
	return c, nil
}

// strings reads an array of strings (sources, texts).
func (r *fileReader) strings(key, what string, into *[]string) error {
	if ok, err := r.open(strconv.Quote(key), '[', true); !ok || err != nil {
		return err
	}
	max := int64(maxFieldBytes)
	if key == "texts" {
		max = MaxTextBytes
	}
	var list []string
	for i := 0; r.more(); i++ {
		var s string
		p := &s
		if err := r.decode(what, max, &p); err != nil {
			return err
		}
		if p == nil {
			return r.damaged("%s %d is null, not a string", what, i)
		}
		if err := r.keep(int64(len(s))); err != nil {
			return err
		}
		var err error
		if list, err = grow(r, list, stringSize); err != nil {
			return err
		}
		list = append(list, s)
	}
	*into = list
	return r.close("the end of " + strconv.Quote(key))
}

func (r *fileReader) sessions(c *Capture) error {
	if ok, err := r.open(`"sessions"`, '[', true); !ok || err != nil {
		return err
	}
	for i := 0; r.more(); i++ {
		s, err := r.session(i)
		if err != nil {
			return err
		}
		if c.Sessions, err = grow(r, c.Sessions, sessionSize); err != nil {
			return err
		}
		c.Sessions = append(c.Sessions, s)
	}
	r.in = ""
	return r.close(`the end of "sessions"`)
}

func (r *fileReader) session(i int) (Session, error) {
	var s Session
	what := "session " + strconv.Itoa(i)
	if _, err := r.open(what, '{', false); err != nil {
		return s, err
	}
	r.in = what
	seen := map[string]bool{}
	for r.more() {
		k, err := r.key()
		if err != nil {
			return s, err
		}
		if seen[k] {
			return s, r.damaged("%q appears twice in %s", k, what)
		}
		seen[k] = true
		var us int64
		switch k {
		case "id":
			err = r.decode("a session's id", maxFieldBytes, &s.ID)
			r.in = "session " + strconv.Quote(s.ID)
		case "pid":
			err = r.decode("a session's pid", maxFieldBytes, &s.PID)
		case "user":
			err = r.decode("a session's user", maxFieldBytes, &s.User)
		case "database":
			err = r.decode("a session's database", maxFieldBytes, &s.Database)
		case "application":
			err = r.decode("a session's application", maxFieldBytes, &s.Application)
		case "host":
			err = r.decode("a session's host", maxFieldBytes, &s.Host)
		case "start_us", "end_us":
			if err = r.decode("a session's time", maxFieldBytes, &us); err == nil {
				if us < 0 || us > maxMicros {
					return s, r.damaged("session %s has a time of %d µs", s.ID, us)
				}
				if k == "start_us" {
					s.Start = time.Duration(us) * time.Microsecond
				} else {
					s.End = time.Duration(us) * time.Microsecond
				}
			}
		case "started_before_log":
			err = r.decode("a session's flag", maxFieldBytes, &s.StartedBeforeLog)
		case "ended_after_log":
			err = r.decode("a session's flag", maxFieldBytes, &s.EndedAfterLog)
		case "statements":
			err = r.statements(&s)
		default:
			err = r.skip(k)
		}
		if err != nil {
			return s, err
		}
	}
	if err := r.keep(int64(len(s.ID) + len(s.User) + len(s.Database) + len(s.Application) + len(s.Host))); err != nil {
		return s, err
	}
	return s, r.close("the end of " + what)
}

// maxMicros is the longest time a time.Duration holds, in microseconds.
const maxMicros = math.MaxInt64 / int64(time.Microsecond)

func (r *fileReader) statements(s *Session) error {
	if ok, err := r.open(`a session's "statements"`, '[', true); !ok || err != nil {
		return err
	}
	var f fileStatement
	for k := 0; r.more(); k++ {
		f = fileStatement{}
		p := &f
		if err := r.decode("a statement", MaxStatementBytes, &p); err != nil {
			return err
		}
		if p == nil {
			return r.damaged("session %s statement %d is null, not a statement", s.ID, k)
		}
		if f.Offset < 0 || f.Duration < 0 {
			return fmt.Errorf("capture file %s is damaged: session %s statement %d has a negative time", r.path, s.ID, k)
		}
		if f.Offset > maxMicros || f.Duration > maxMicros {
			return r.damaged("session %s statement %d has a time of more than %d µs", s.ID, k, maxMicros)
		}
		n := int64(len(f.Prepared)) + int64(cap(f.Params))*8 + int64(cap(f.Types))*4 + int64(cap(f.CopyData))
		for _, p := range f.Params {
			if p != nil {
				n += stringSize + int64(len(*p))
			}
		}
		if f.Error != nil {
			n += errorSize + int64(len(f.Error.SQLState)+len(f.Error.Message))
		}
		if f.Rows != nil {
			n += 8
		}
		if err := r.keep(n); err != nil {
			return err
		}
		var err error
		if s.Statements, err = grow(r, s.Statements, statementSize); err != nil {
			return err
		}
		st := Statement{Offset: time.Duration(f.Offset) * time.Microsecond, Duration: time.Duration(f.Duration) * time.Microsecond,
			Text: f.Text, Prepared: f.Prepared, Extended: f.Extended, Params: f.Params, ParamsTruncated: f.Truncated,
			Seq: f.Seq, Rows: f.Rows, Types: f.Types, CopyBytes: f.CopyBytes, CopyData: f.CopyData, InsertID: f.InsertID}
		if f.Error != nil {
			st.Error = &Error{SQLState: f.Error.SQLState, Message: f.Error.Message}
		}
		s.Statements = append(s.Statements, st)
	}
	return r.close(`the end of a session's "statements"`)
}

func (r *fileReader) skips(c *Capture) error {
	if ok, err := r.open(`"skipped"`, '[', true); !ok || err != nil {
		return err
	}
	for i := 0; r.more(); i++ {
		var f fileSkip
		p := &f
		if err := r.decode("a skip", maxFieldBytes, &p); err != nil {
			return err
		}
		if p == nil {
			return r.damaged("skip %d is null", i)
		}
		if err := r.keep(int64(len(f.Reason) + len(f.First) + len(f.Effect))); err != nil {
			return err
		}
		var err error
		if c.Skipped, err = grow(r, c.Skipped, int64(unsafe.Sizeof(Skip{}))); err != nil {
			return err
		}
		c.Skipped = append(c.Skipped, Skip(f))
	}
	return r.close(`the end of "skipped"`)
}

// grow makes room in s for one more element of elem bytes, counting the
// new array before it is made: twice the old up to 1,024 elements, then
// a quarter more (as append does), so that a long session's statements
// waste at most a fifth of their array. The old array is garbage.
func grow[E any](r *fileReader, s []E, elem int64) ([]E, error) {
	if len(s) < cap(s) {
		return s, nil
	}
	n := max(16, 2*cap(s))
	if cap(s) > 1024 {
		n = cap(s) + cap(s)/4
	}
	if err := r.keep(int64(n-cap(s)) * elem); err != nil {
		return nil, err
	}
	ns := make([]E, len(s), n)
	copy(ns, s)
	return ns, nil
}
