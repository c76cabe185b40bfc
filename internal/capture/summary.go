package capture

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"
)

// tally is what a capture's summary counts: Summary takes it from a
// Capture, and Convert as it writes, without holding the statements.
type tally struct {
	sessions, before, after                                        int
	stmts, extended, prepared, truncated, copies, fastpath, failed int
	busy                                                           time.Duration
	states                                                         map[string]int // SQLSTATE of failures
	copyTables                                                     map[string]int
	texts                                                          int
	copyKept                                                       int   // COPY statements whose data the capture kept
	copyBytes                                                      int64 // and the bytes of it
}

func newTally() *tally {
	return &tally{states: map[string]int{}, copyTables: map[string]int{}}
}

// textKind is what the summary tells of a statement text: a COPY FROM
// STDIN (into table) or a fast-path call.
type textKind struct {
	copy  bool
	table string
	fast  bool
}

func kindOf(text string) textKind {
	var k textKind
	// A COPY has the word in it, whatever its case (no other letter
	// upper-cases to these four): most texts are passed over at once.
	if hasCopy(text) {
		k.table, k.copy = CopyFromStdin(text)
	}
	k.fast = !k.copy && strings.HasPrefix(text, FastPath)
	return k
}

// kindOfBytes is kindOf for a text read back as bytes: only the few
// texts that may be special are made strings.
func kindOfBytes(text []byte) textKind {
	if !hasCopy(text) && !bytes.HasPrefix(text, []byte(FastPath)) {
		return textKind{}
	}
	return kindOf(string(text))
}

// hasCopy says whether s holds "copy" in any case.
func hasCopy[T string | []byte](s T) bool {
	for i := 0; i+4 <= len(s); i++ {
		if s[i]|0x20 == 'c' && s[i+1]|0x20 == 'o' && s[i+2]|0x20 == 'p' && s[i+3]|0x20 == 'y' {
			return true
		}
	}
	return false
}

func (t *tally) session(s *Session) {
	t.sessions++
	if s.StartedBeforeLog {
		t.before++
	}
	if s.EndedAfterLog {
		t.after++
	}
}

func (t *tally) statement(st *Statement, k textKind) {
	t.stmts++
	t.busy += st.Duration
	if st.Extended {
		t.extended++
	}
	if st.Prepared != "" {
		t.prepared++
	}
	if st.ParamsTruncated {
		t.truncated++
	}
	if k.copy {
		t.copies++
		t.copyTables[k.table]++
	} else if k.fast {
		t.fastpath++
	}
	if st.CopyData != nil {
		t.copyKept++
		t.copyBytes += int64(len(st.CopyData))
	}
	if st.Error != nil {
		t.failed++
		code := st.Error.SQLState
		if code == "" {
			code = "unknown SQLSTATE"
		}
		t.states[code]++
	}
}

func (c *Capture) tally() *tally {
	t := newTally()
	t.texts = len(c.Texts)
	// What each text is, read once: a capture repeats a few texts a
	// million times.
	kinds := make([]textKind, len(c.Texts))
	for i, text := range c.Texts {
		kinds[i] = kindOf(text)
	}
	for i := range c.Sessions {
		s := &c.Sessions[i]
		t.session(s)
		for k := range s.Statements {
			st := &s.Statements[k]
			var kind textKind
			if st.Text >= 0 && st.Text < len(kinds) {
				kind = kinds[st.Text]
			}
			t.statement(st, kind)
		}
	}
	return t
}

// summary writes the lines of Capture.Summary from the capture's header
// (sources, span, skips) and the counts.
func (t *tally) summary(c *Capture) string {
	var b strings.Builder
	span := c.End.Sub(c.Start)
	from, log, timed := fmt.Sprintf("%d log file(s)", len(c.Sources)), "the log", "server time"
	if c.FromWire() {
		from, log, timed = "from the wire ("+strings.TrimPrefix(c.Sources[0], WirePrefix)+")", "the capture", "client time"
	}
	fmt.Fprintf(&b, "capture: %s, %s to %s (%s)\n", from,
		c.Start.UTC().Format("2006-01-02 15:04:05.000"), c.End.UTC().Format("2006-01-02 15:04:05.000 MST"), span.Round(time.Millisecond))
	fmt.Fprintf(&b, "sessions: %d (%d started before %s, %d ended after it)\n", t.sessions, t.before, log, t.after)
	fmt.Fprintf(&b, "statements: %d (%d extended protocol, %d of named prepared statements), %d distinct texts, %s of %s\n",
		t.stmts, t.extended, t.prepared, t.texts, t.busy.Round(time.Microsecond), timed)
	if t.truncated > 0 {
		fmt.Fprintf(&b, "unreplayable: %d statements without their full parameters\n", t.truncated)
	}
	if t.copies > 0 && c.FromWire() {
		fmt.Fprintf(&b, "COPY FROM STDIN: %d statements into %s: the data of %d kept (%d bytes), replayed as sent; the others run empty and are reported\n",
			t.copies, strings.Join(sortedKeys(t.copyTables), ", "), t.copyKept, t.copyBytes)
	} else if t.copies > 0 {
		fmt.Fprintf(&b, "COPY FROM STDIN: %d statements into %s: the rows are not in the log (a replay runs them empty and reports them)\n",
			t.copies, strings.Join(sortedKeys(t.copyTables), ", "))
	}
	if t.fastpath > 0 {
		fmt.Fprintf(&b, "fast-path function calls: %d: their arguments are not in the log (a replay skips them and reports them)\n", t.fastpath)
	}
	unknown := !c.ErrorsKnown() && t.failed == 0
	if unknown {
		fmt.Fprintf(&b, "errors: not in %s (it records none: a replay cannot tell a statement that failed in the application)\n", log)
	} else {
		fmt.Fprintf(&b, "errors: %d", t.failed)
	}
	if t.failed > 0 {
		codes := make([]string, 0, len(t.states))
		for k := range t.states {
			codes = append(codes, k)
		}
		sort.Slice(codes, func(i, j int) bool {
			if t.states[codes[i]] != t.states[codes[j]] {
				return t.states[codes[i]] > t.states[codes[j]]
			}
			return codes[i] < codes[j]
		})
		parts := make([]string, len(codes))
		for i, k := range codes {
			parts[i] = fmt.Sprintf("%s x%d", k, t.states[k])
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	if !unknown {
		b.WriteString("\n")
	}
	for _, effect := range []SkipEffect{Dropped, Flagged, Ignored} {
		for _, s := range c.Skipped {
			if s.Effect == effect {
				fmt.Fprintf(&b, "%s: %d %s (first at %s)\n", s.Effect, s.Count, s.Reason, s.First)
			}
		}
	}
	return b.String()
}
