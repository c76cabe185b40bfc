package capture

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Options say how to read the logs.
type Options struct {
	// Format is "auto" (or ""): each file by its content; or "csvlog",
	// "jsonlog", "stderr" for every file.
	Format string
	// Prefix is the server's log_line_prefix, needed for stderr logs;
	// "" means DefaultPrefix.
	Prefix string
	// ParamMaxLength is the server's log_parameter_max_length when the log
	// was written: values cut to that many bytes end in "..." and their
	// statements are flagged. 0 means unknown: then any value ending in
	// "..." counts as cut (real values that end so are flagged too); -1
	// says values were logged whole.
	ParamMaxLength int
	// Progress, when set, is called now and then while a file is read,
	// with the bytes read so far of the file as stored (compressed or not)
	// and its size.
	Progress func(file string, done, total int64)
	// KeepOwn keeps dbparity's own sessions (collectors, replay
	// monitors, snapshots: application names starting "dbparity-"),
	// which are left out and counted otherwise. Its workload sessions
	// (application "dbparity") are an application like any other and are
	// always kept.
	KeepOwn bool
	// Stop, once closed, ends Convert's writing of the capture file
	// early: the file is not written, and its temporary files go.
	Stop <-chan struct{}
}

// Log formats.
const (
	FormatAuto   = "auto"
	FormatCSV    = "csvlog"
	FormatJSON   = "jsonlog"
	FormatStderr = "stderr"
)

// Parse reads the log files as one stream, in the order of their first
// timestamps (rotation order), and rebuilds the sessions. It fails only
// when a file cannot be read, the options are wrong, files of different
// formats are mixed, or a stderr log matches the prefix nowhere; bad lines
// are counted in Capture.Skipped.
func Parse(files []string, opt Options) (*Capture, error) {
	files, opt, mysql, err := checkFiles(files, opt)
	if err != nil {
		return nil, err
	}
	if mysql != "" {
		return parseMySQL(files, mysql, opt)
	}
	p, logs, err := plan(files, opt)
	if err != nil {
		return nil, err
	}
	if err := p.readAll(logs); err != nil {
		return nil, err
	}
	return p.b.capture(sourcesOf(logs)), nil
}

// checkFiles checks Parse's and Convert's arguments, drops files named
// twice, and tells MySQL's and MariaDB's logs (their format, or "").
func checkFiles(files []string, opt Options) ([]string, Options, string, error) {
	switch opt.Format {
	case "":
		opt.Format = FormatAuto
	case FormatAuto, FormatCSV, FormatJSON, FormatStderr, FormatMySQLGeneral, FormatMySQLSlow:
	default:
		return nil, opt, "", fmt.Errorf("unknown log format %q: use auto, csvlog, jsonlog, stderr, mysql-general or mysql-slow", opt.Format)
	}
	if opt.Prefix == "" {
		opt.Prefix = DefaultPrefix
	}
	if len(files) == 0 {
		return nil, opt, "", errors.New("no log files given")
	}
	// The same file named twice would count its sessions twice.
	seen := map[string]bool{}
	unique := files[:0:0]
	for _, f := range files {
		if c := filepath.Clean(f); !seen[c] {
			seen[c] = true
			unique = append(unique, f)
		}
	}
	files = unique
	if isMySQLFormat(opt.Format) {
		return files, opt, opt.Format, nil
	}
	if opt.Format == FormatAuto {
		format, err := sniffFiles(files)
		if err != nil {
			return nil, opt, "", err
		}
		if format != "" {
			return files, opt, format, nil
		}
	}
	return files, opt, "", nil
}

// logFile is a log to read, as peek found it.
type logFile struct {
	path   string
	format string
	first  time.Time
	empty  bool
}

// plan peeks at each PostgreSQL log, checks that they are of one format,
// and orders them for reading.
func plan(files []string, opt Options) (*parser, []logFile, error) {
	p := &parser{opt: opt, b: newBuilder(opt)}
	var logs []logFile
	formats := map[string]string{}
	for _, path := range files {
		format, first, empty, err := p.peek(path)
		if err != nil {
			return nil, nil, err
		}
		logs = append(logs, logFile{path: path, format: format, first: first, empty: empty})
		if !empty {
			if _, seen := formats[format]; !seen {
				formats[format] = path
			}
		}
	}
	if len(formats) > 1 {
		var list []string
		for f, path := range formats {
			list = append(list, fmt.Sprintf("%s is %s", path, f))
		}
		sort.Strings(list)
		return nil, nil, fmt.Errorf("log files of different formats (%s): capture one format at a time", strings.Join(list, ", "))
	}
	// Rotation order; files without any timestamp go last, as given.
	sort.SliceStable(logs, func(i, j int) bool {
		a, z := logs[i], logs[j]
		if a.first.IsZero() != z.first.IsZero() {
			return !a.first.IsZero()
		}
		return a.first.Before(z.first)
	})
	return p, logs, nil
}

func sourcesOf(logs []logFile) []string {
	sources := make([]string, len(logs))
	for i, l := range logs {
		sources[i] = l.path
	}
	return sources
}

// readAll reads the logs in order into the builder: the reading in a
// goroutine of its own, the building in this one (pipe.go).
func (p *parser) readAll(logs []logFile) error {
	pp := newPipe()
	done := make(chan error, 1)
	go func() {
		err := p.readFiles(logs, pp)
		pp.close()
		done <- err
	}()
	pp.drain(p.b)
	return <-done
}

// readFiles reads the logs in order, handing what it reads to out.
func (p *parser) readFiles(logs []logFile, out sink) error {
	for _, l := range logs {
		if l.empty {
			continue
		}
		if err := p.read(l.path, l.format, out); err != nil {
			return err
		}
	}
	if p.grouper != nil {
		p.grouper.flush()
	}
	return nil
}

type parser struct {
	opt     Options
	b       *builder
	prefix  *prefix
	grouper *grouper
}

// csvStart is how a csvlog record begins: a timestamp, the user and the
// database quoted or empty, the pid. A stderr prefix that starts with a
// timestamp and a comma does not quote names.
var csvStart = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?( [^ ,]*)?,("(?:[^"]|"")*")?,("(?:[^"]|"")*")?,\d*,`)

// open opens a log file, decompressing it when it starts with gzip's magic
// bytes whatever its name.
func open(path string) (*logReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open log: %w", err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("open log %s: is a directory: name the log files", path)
	}
	lr := &logReader{f: f, size: st.Size(), counter: &counter{r: f}}
	br := bufio.NewReaderSize(lr.counter, 64<<10)
	magic, _ := br.Peek(2)
	if bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open log %s: damaged gzip header: %w", path, err)
		}
		lr.gzip = true
		lr.r = &gzipErrors{zr}
	} else {
		lr.r = br
	}
	return lr, nil
}

type logReader struct {
	f       *os.File
	r       io.Reader
	gzip    bool
	size    int64
	counter *counter
}

func (l *logReader) Read(p []byte) (int, error) { return l.r.Read(p) }
func (l *logReader) Close() error               { return l.f.Close() }

type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// errDamaged marks a gzip stream that ends badly (a file still being
// written, or corrupt): the rest of that file is lost, the capture goes on.
type errDamaged struct{ err error }

func (e errDamaged) Error() string { return "damaged gzip stream: " + e.err.Error() }

type gzipErrors struct{ r io.Reader }

func (g *gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		var pathErr *os.PathError
		if !errors.As(err, &pathErr) {
			err = errDamaged{err}
		}
	}
	return n, err
}

// peek finds a file's format and first timestamp.
func (p *parser) peek(path string) (format string, first time.Time, empty bool, err error) {
	lr, err := open(path)
	if err != nil {
		return "", time.Time{}, false, err
	}
	defer lr.Close()
	br := bufio.NewReaderSize(lr, 64<<10)
	head, err := br.Peek(4096)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		var damaged errDamaged
		if !errors.As(err, &damaged) {
			return "", time.Time{}, false, fmt.Errorf("read log %s: %w", path, err)
		}
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	if len(trimmed) == 0 {
		return "", time.Time{}, true, nil
	}
	format = p.opt.Format
	if format == FormatAuto {
		switch {
		case trimmed[0] == '{':
			format = FormatJSON
		case csvStart.Match(trimmed):
			format = FormatCSV
		default:
			format = FormatStderr
		}
	}
	if format == FormatStderr {
		if err := p.compilePrefix(); err != nil {
			return "", time.Time{}, false, err
		}
	}
	first = p.firstTime(br, format)
	return format, first, false, nil
}

func (p *parser) compilePrefix() error {
	if p.prefix != nil {
		return nil
	}
	px, err := compilePrefix(p.opt.Prefix)
	if err != nil {
		return err
	}
	p.prefix = px
	return nil
}

// firstTime reads the first timestamp of a file, within its first
// thousand lines or records.
func (p *parser) firstTime(r io.Reader, format string) time.Time {
	var first time.Time
	quiet := newBuilder(p.opt)
	n := 0
	stop := func(e *entry) bool {
		n++
		if !e.time.IsZero() {
			first = e.time
			return false
		}
		return n < 1000
	}
	sc := newScanner(r)
	switch format {
	case FormatCSV:
		readCSV(sc, "", p.b.clock, quiet, stop)
	case FormatJSON:
		readJSON(sc, "", p.b.clock, quiet, stop)
	case FormatStderr:
		for k := 0; k < 1000; k++ {
			sp, err := sc.next()
			if err == io.EOF || (err != nil && err != errLongLine) {
				break
			}
			if err != nil {
				continue
			}
			if m, ok := p.prefix.match(string(sc.bytes(sp)), p.b.clock); ok {
				return m.time
			}
		}
	}
	return first
}

// read parses one file, handing what it reads to out.
func (p *parser) read(path, format string, out sink) error {
	lr, err := open(path)
	if err != nil {
		return err
	}
	defer lr.Close()
	var r io.Reader = lr
	if p.opt.Progress != nil {
		r = &progress{r: lr, file: path, size: lr.size, counter: lr.counter, report: p.opt.Progress}
	}
	sc := newScanner(r)
	err = p.readLines(sc, path, format, out)
	if p.opt.Progress != nil {
		p.opt.Progress(path, lr.counter.n, lr.size)
	}
	var damaged errDamaged
	if errors.As(err, &damaged) {
		out.skip(Dropped, "rest of a file after a damaged gzip stream", fmt.Sprintf("%s:%d", path, sc.n+1))
		return nil
	}
	if err != nil {
		return fmt.Errorf("read log %s: %w", path, err)
	}
	return nil
}

// readLines parses one log, whose name is only for messages, handing what
// it reads to out.
func (p *parser) readLines(sc *scanner, name, format string, out sink) error {
	emit := func(e *entry) bool { out.add(e); return true }
	switch format {
	case FormatCSV:
		return readCSV(sc, name, p.b.clock, out, emit)
	case FormatJSON:
		return readJSON(sc, name, p.b.clock, out, emit)
	}
	if p.grouper == nil {
		p.grouper = newGrouper(out, p.b.clock)
	}
	matched, other, err := p.grouper.read(sc, name, p.prefix)
	if err == nil && matched == 0 && other > 0 {
		return fmt.Errorf("none of its %d lines matches log_line_prefix %q: give the server's log_line_prefix (SHOW log_line_prefix), or the log is not a PostgreSQL stderr log",
			other, p.prefix.source)
	}
	return err
}

// parseReader parses one uncompressed log of a known format from r: what
// Parse does for one file, without files (tests and fuzzing).
func parseReader(r io.Reader, name, format string, opt Options) (*Capture, error) {
	if opt.Prefix == "" {
		opt.Prefix = DefaultPrefix
	}
	p := &parser{opt: opt, b: newBuilder(opt)}
	if format == FormatStderr {
		if err := p.compilePrefix(); err != nil {
			return nil, err
		}
	}
	if err := p.readLines(newScanner(r), name, format, p.b); err != nil {
		return nil, fmt.Errorf("read log %s: %w", name, err)
	}
	if p.grouper != nil {
		p.grouper.flush()
	}
	return p.b.capture([]string{name}), nil
}

type progress struct {
	r       io.Reader
	file    string
	size    int64
	counter *counter
	last    int64
	report  func(string, int64, int64)
}

func (p *progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if p.counter.n-p.last >= 4<<20 {
		p.last = p.counter.n
		p.report(p.file, p.counter.n, p.size)
	}
	return n, err
}
