package result

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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

// ReadJournal reads a journal: its header and its entries. A last line
// that does not decode (the process died while writing it) is dropped and
// reported in cut; any other bad line is an error naming it.
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
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	var pending error
	for sc.Scan() {
		line++
		if pending != nil {
			return nil, nil, false, pending
		}
		if line == 1 {
			var h Run
			if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Schema == "" {
				return nil, nil, false, fmt.Errorf("%s is not a dbparity journal (line 1 is no journal header)", path)
			}
			if h.Schema != JournalSchema {
				return nil, nil, false, fmt.Errorf("%s has schema %s; this dbparity reads %s journals", path, h.Schema, JournalSchema)
			}
			header = &h
			continue
		}
		var e JournalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Only the last line may be cut; decide when the next one comes.
			pending = fmt.Errorf("%s line %d does not decode: %v", path, line, err)
			continue
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	if header == nil {
		return nil, nil, false, fmt.Errorf("%s is empty: the run died before it wrote anything", path)
	}
	return header, entries, pending != nil, nil
}
