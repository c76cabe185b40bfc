package result

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/dbparity/dbparity/internal/metrics"
)

// JournalSchema names the journal's format.
const JournalSchema = "dbparity.journal/1"

// Journal streams a run's intervals to FILE.journal beside the result file
// while the run goes on: one JSON header line, then one line per interval.
// If dbparity dies (kill -9, out of memory, a crash), the journal keeps
// everything but the interval in progress; when the result file is written
// the journal is removed. Lines are written, not fsynced: an fsync a second
// on the disk under test would disturb what is measured.
type Journal struct {
	path string
	f    *os.File
	enc  *json.Encoder
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
	j := &Journal{path: p, f: f, enc: json.NewEncoder(f)}
	h := *header
	h.Schema = JournalSchema
	if err := j.enc.Encode(&h); err != nil {
		f.Close()
		os.Remove(p)
		return nil, fmt.Errorf("write journal: %w", err)
	}
	return j, nil
}

// Append adds one interval.
func (j *Journal) Append(iv metrics.Interval) error { return j.enc.Encode(iv) }

// Close closes the journal, and removes it when the result it stands in
// for has been written.
func (j *Journal) Close(resultWritten bool) {
	j.f.Close()
	if resultWritten {
		os.Remove(j.path)
	}
}
