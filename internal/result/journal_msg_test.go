package result

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A journal damaged by a line longer than any dbparity writes (over
// MaxJournalLine): recover says what is wrong in one line (the journal,
// the line's number and length, the limit) and recovers the run from the
// lines before it, leaving out the damaged line and every line after it
// (before: "bufio.Scanner: token too long", nothing recovered). Damage
// before the measured window's first checkpoint is one line saying there
// is nothing to recover.
func TestJournalOverlongLine(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	head := sample()
	head.Start, head.Transactions, head.Phases = start, []Transaction{{Name: "new_order"}}, nil
	journal := func(t *testing.T, damageAfter int) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "r.json")
		j, err := OpenJournal(out, head)
		if err != nil {
			t.Fatal(err)
		}
		cp := *sample()
		cp.Start, cp.End, cp.MeasureStart, cp.MeasureEnd = start, start.Add(3*time.Second), start.Add(time.Second), start.Add(3*time.Second)
		cp.Transactions = []Transaction{{Name: "new_order", Committed: 200, Latency: sample().Transactions[0].Latency}}
		cp.Phases = map[string]Phase{"measure": {Committed: map[string]int64{"new_order": 200}, Rollbacks: map[string]int64{}, Errors: map[string]int64{}}}
		entries := sixSeconds(&cp, 3)
		for i, e := range entries {
			if i == damageAfter {
				// What no writer of dbparity makes: a line of 64 MiB and
				// 10 bytes, say a block of another file, with no newline.
				j.f.Write(append(bytes.Repeat([]byte{'x'}, 64<<20+10), '\n'))
			}
			if err := j.Append(e); err != nil {
				t.Fatal(err)
			}
		}
		j.Close(false)
		return JournalPath(out)
	}

	// Damaged after the checkpoint and one more interval (line 7 of 9):
	// the run up to the 5th second, 200 + 100 committed.
	path := journal(t, 5)
	r, err := Recover(path)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	var said string
	for _, w := range r.Warnings {
		if strings.Contains(w, "damaged") {
			said = w
		}
	}
	want := "the journal r.json.journal is damaged at line 7: the line is 67108874 bytes, over the 64 MiB a journal line may have: " +
		"recovered from the 6 lines before it, the damaged line and the 2 after it left out"
	if said != want || strings.Contains(said, "\n") {
		t.Errorf("warning %q, want %q", said, want)
	}
	if r.Transactions[0].Committed != 300 || !r.MeasureEnd.Equal(start.Add(4*time.Second)) || !r.Recovered {
		t.Errorf("recovered %d committed to %s, want 300 to the 4th second", r.Transactions[0].Committed, r.MeasureEnd.Sub(start))
	}

	// Damaged before the checkpoint: one line, nothing recovered.
	path = journal(t, 2)
	if _, err := Recover(path); err == nil || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), path+" is damaged at line 4: the line is 67108874 bytes, over the 64 MiB a journal line may have, and no checkpoint") {
		t.Errorf("damaged before the checkpoint: %v", err)
	}
	os.Remove(path)
}
