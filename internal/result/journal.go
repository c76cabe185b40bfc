package result

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/metrics"
)

// JournalSchema names the journal's format.
const JournalSchema = "dbparity.journal/2"

// Journal streams a run to FILE.journal beside the result file while the
// run goes on: one JSON header line (the result as known before the
// start), then one line per entry. If dbparity dies (kill -9, out of
// memory, a crash), the journal keeps everything but the interval in
// progress, and `dbparity recover` turns it into a result marked partial.
// When the result file is written the journal is removed.
//
// Lines are written, not fsynced: an fsync a second on the disk under test
// would disturb what is measured. A line is never left cut: a failed write
// (a full disk) is undone by truncating the file to the last whole line,
// and every later Append returns the same error, so the run can end on it.
// It is safe for concurrent use: the driver and the collectors append.
type Journal struct {
	path string
	mu   sync.Mutex
	f    *os.File
	end  int64 // offset after the last whole line
	err  error // the first write error: the journal is closed to writes
}

// JournalEntry is one line after the header; exactly one field is set.
type JournalEntry struct {
	// Interval is one point of the driver's series, with Types its counts
	// per transaction type (in the order of the header's transactions).
	Interval *metrics.Interval `json:"iv,omitempty"`
	Types    []TypeCounts      `json:"types,omitempty"`
	// Checkpoint is the run's measured state so far: counts, histograms,
	// error samples and events, as the result would hold them.
	Checkpoint *Run `json:"checkpoint,omitempty"`
	// OS and DB are points of the collectors' series.
	OS *ostat.Rates `json:"os,omitempty"`
	DB *DBInterval  `json:"db,omitempty"`
	// Part is, in a part of a split run (run --part), how its start was
	// agreed with the others, written once it was (the header holds the
	// part without it).
	Part *Part `json:"part,omitempty"`
}

// TypeCounts are one transaction type's counts in one interval.
type TypeCounts struct {
	Committed int64 `json:"c,omitempty"`
	Rollbacks int64 `json:"r,omitempty"`
	Errors    int64 `json:"e,omitempty"`
	Retries   int64 `json:"rt,omitempty"`
}

// JournalPath is where the journal of a result file goes.
func JournalPath(resultPath string) string { return resultPath + ".journal" }

// OpenJournal creates the journal and writes its header.
func OpenJournal(resultPath string, header *Run) (*Journal, error) {
	p := JournalPath(resultPath)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	j := &Journal{path: p, f: f}
	h := *header
	h.Schema = JournalSchema
	if err := j.write(&h); err != nil {
		f.Close()
		os.Remove(p)
		return nil, err
	}
	return j, nil
}

// Append adds one entry. After a write error it returns that error and
// writes nothing more.
func (j *Journal) Append(e JournalEntry) error { return j.write(e) }

func (j *Journal) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("journal %s: encode: %w", j.path, err)
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	n, err := j.f.Write(b)
	if err == nil {
		j.end += int64(n)
		return nil
	}
	// A short write leaves part of a line: take it back, so that the
	// journal stays a sequence of whole lines for recover.
	if n > 0 {
		j.f.Truncate(j.end)
		j.f.Seek(j.end, io.SeekStart)
	}
	j.err = fmt.Errorf("journal %s: write failed: %w", j.path, unwrapPath(err))
	return j.err
}

// Err is the journal's write error, if any.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Close closes the journal, and removes it when the result it stands in
// for has been written.
func (j *Journal) Close(resultWritten bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return
	}
	j.f.Close()
	j.f = nil
	if j.err == nil {
		j.err = errors.New("journal closed")
	}
	if resultWritten {
		os.Remove(j.path)
	}
}

// SeriesPath is where the full-resolution series of a result file go.
func SeriesPath(resultPath string) string { return resultPath + ".series.gz" }

// KeepSeries copies the journal, gzipped, to SeriesPath(resultPath): the
// series at full resolution for a result whose own were merged down. The
// copy is written whole or not at all.
func (j *Journal) KeepSeries(resultPath string) error {
	in, err := os.Open(j.path)
	if err != nil {
		return fmt.Errorf("keep the series: %w", err)
	}
	defer in.Close()
	dst := SeriesPath(resultPath)
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("keep the series: %w", err)
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("keep the series in %s: %w", dst, unwrapPath(err))
	}
	return nil
}

// unwrapPath drops the *PathError's operation and path, which the
// journal's own message already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// MaxJournalLine bounds one line of a journal. dbparity writes none
// near it (an interval is some hundred bytes, a checkpoint, the run's
// measured state, some hundred KB): a longer line is damage, not an entry.
const MaxJournalLine = 64 << 20

// ReadJournal reads a journal: its header and its entries. A last line
// that does not decode (the process died while writing it) is dropped and
// reported in cut; any other bad line is an error naming it.
//
// A line longer than MaxJournalLine is no line dbparity writes: the
// journal is damaged there. Each line before it stands alone (a
// checkpoint holds the measured state so far, the intervals after it add
// to it), so the lines before it are the journal of the run up to that
// point: they are returned, and the header's warnings (which a recovered
// result keeps) gain one line naming the damaged line, its length, the
// limit and how many lines after it were left out. Nothing after it is
// read as entries: what follows damage is not trusted. Damage before the
// first checkpoint of the measured window is an error naming it: nothing
// before it could be recovered.
func ReadJournal(path string) (header *Run, entries []JournalEntry, cut bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, false, fmt.Errorf("read %s: %w", path, unwrapPath(err))
	}
	defer f.Close()
	br, err := openJSON(f, path, "journal", MaxJournalBytes)
	if err != nil {
		return nil, nil, false, err
	}
	lines := journalLines{r: br, max: MaxJournalLine}
	line := 0
	var pending error
	for {
		b, size, over, err := lines.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("read %s: %w", path, unwrapPath(err))
		}
		line++
		if pending != nil {
			return nil, nil, false, pending
		}
		if over {
			return damaged(path, header, entries, line, size, &lines)
		}
		if line == 1 {
			var h Run
			if err := json.Unmarshal(b, &h); err != nil || h.Schema == "" {
				return nil, nil, false, fmt.Errorf("%s is not a dbparity journal (line 1 is no journal header)", path)
			}
			if h.Schema != JournalSchema {
				return nil, nil, false, fmt.Errorf("%s has schema %s; this dbparity reads %s journals", path, h.Schema, JournalSchema)
			}
			header = &h
			continue
		}
		var e JournalEntry
		if err := json.Unmarshal(b, &e); err != nil {
			// Only the last line may be cut; decide when the next one comes.
			pending = fmt.Errorf("%s line %d does not decode: %v", path, line, err)
			continue
		}
		entries = append(entries, e)
	}
	if header == nil {
		return nil, nil, false, fmt.Errorf("%s is empty: the run died before it wrote anything", path)
	}
	return header, entries, pending != nil, nil
}

// damaged ends the reading of a journal at line, size bytes long, over
// the limit: the entries before it, and a warning in the header; or an
// error when nothing measured comes before it.
func damaged(path string, header *Run, entries []JournalEntry, line int, size int64, rest *journalLines) (*Run, []JournalEntry, bool, error) {
	after := 0
	for {
		if _, _, _, err := rest.next(); err != nil {
			break
		}
		after++
	}
	what := fmt.Sprintf("is damaged at line %d: the line is %d bytes, over the %d MiB a journal line may have", line, size, rest.max>>20)
	measured := false
	for _, e := range entries {
		measured = measured || e.Checkpoint != nil && !e.Checkpoint.MeasureStart.IsZero() ||
			e.Interval != nil && e.Interval.Phase == "measure"
	}
	checkpoint := slices.ContainsFunc(entries, func(e JournalEntry) bool { return e.Checkpoint != nil })
	switch {
	case header == nil:
		return nil, nil, false, fmt.Errorf("%s %s (its header): nothing to recover", path, what)
	case !checkpoint || !measured:
		return nil, nil, false, fmt.Errorf("%s %s, and no checkpoint of the measured window comes before it: nothing to recover", path, what)
	}
	h := *header
	h.Warnings = append(slices.Clip(h.Warnings), fmt.Sprintf("the journal %s %s: recovered from the %d lines before it, the damaged line and the %d after it left out",
		filepath.Base(path), what, line-1, after))
	return &h, entries, false, nil
}

// journalLines reads a journal's lines, each up to max bytes (without
// its newline, and a carriage return before it).
type journalLines struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// next returns the next line and its length, or over set when the line
// is longer than max (read through to its end, for its length). io.EOF
// after the last line.
func (l *journalLines) next() (line []byte, size int64, over bool, err error) {
	l.buf = l.buf[:0]
	var last [2]byte // the last two bytes read, for "\r\n"
	for {
		frag, err := l.r.ReadSlice('\n')
		size += int64(len(frag))
		for _, c := range frag[max(0, len(frag)-2):] {
			last[0], last[1] = last[1], c
		}
		if !over {
			if len(l.buf)+len(frag) > l.max+2 { // the line, and "\r\n"
				over, l.buf = true, l.buf[:0]
			} else {
				l.buf = append(l.buf, frag...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && size == 0:
			return nil, 0, false, io.EOF
		case err != nil && err != io.EOF:
			return nil, 0, false, err
		}
		// The line's own length: without its newline and a "\r" before it.
		if err == nil {
			size--
			if last[0] == '\r' {
				size--
			}
		} else if last[1] == '\r' {
			size--
		}
		if over || size > int64(l.max) {
			return nil, size, true, nil
		}
		return l.buf[:size], size, false, nil
	}
}
