package capture

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// csvlog columns (PostgreSQL 15 "Using CSV-Format Log Output"). Servers
// before 13 write 23 columns (no backend_type), 13 writes 24, 14 and later
// 26 (leader_pid, query_id); later columns are ignored.
const (
	csvTime        = 0
	csvUser        = 1
	csvDatabase    = 2
	csvPID         = 3
	csvFrom        = 4
	csvSession     = 5
	csvSeverity    = 11
	csvState       = 12
	csvMessage     = 13
	csvDetail      = 14
	csvContext     = 18
	csvQuery       = 19
	csvApplication = 22
	csvBackend     = 23
	csvMinFields   = 23
	csvMaxFields   = 40
)

var errMalformed = errors.New("malformed csvlog record")

// csvReader reads csvlog records: comma-separated fields, quoted with ""
// for a quote when they hold anything but plain values, and quoted fields
// may span lines. Each record's fields are one string (one allocation),
// whatever its number of fields.
type csvReader struct {
	s      *scanner
	rec    []byte   // the record's fields, unquoted, one after the other
	starts []int    // where each field starts in its line (one line without "")
	ends   []int    // where each field ends in rec, or in its line
	raw    []span   // the physical lines of the record
	fields []string // the fields, pieces of one string
}

func newCSVReader(s *scanner) *csvReader { return &csvReader{s: s} }

// record returns the next record's fields and the physical lines it was
// read from (so that a malformed record can be read again from its second
// line: they stay buffered until the next record). At the end it returns
// io.EOF. The fields are good until the next call.
func (c *csvReader) record() (fields []string, raw []span, err error) {
	c.rec, c.ends, c.raw = c.rec[:0], c.ends[:0], c.raw[:0]
	if len(c.s.back) == 0 {
		c.s.keep = -1 // what the last record left is read
	}
	first, err := c.s.next()
	if err != nil {
		return nil, nil, err
	}
	c.s.keep = first.from
	c.raw = append(c.raw, first)
	line := c.s.bytes(first)
	if c.oneLine(line) {
		// Most records: the fields are pieces of the line.
		all := string(line)
		c.fields = c.fields[:0]
		for i, end := range c.ends {
			c.fields = append(c.fields, all[c.starts[i]:end])
		}
		return c.fields, c.raw, nil
	}
	c.ends = c.ends[:0]
	size := len(line)
	pos := 0
	for {
		if pos < len(line) && line[pos] == '"' {
			pos++
			for {
				j := bytes.IndexByte(line[pos:], '"')
				if j < 0 {
					// The quoted field goes on in the next line.
					c.rec = append(c.rec, line[pos:]...)
					c.rec = append(c.rec, '\n')
					next, err := c.s.next()
					if err != nil {
						if err == io.EOF || err == errLongLine {
							return nil, c.raw, errMalformed
						}
						return nil, c.raw, err
					}
					c.raw = append(c.raw, next)
					if size += int(next.to-next.from) + 1; size > lineLimit {
						return nil, c.raw, errMalformed
					}
					line, pos = c.s.bytes(next), 0
					continue
				}
				c.rec = append(c.rec, line[pos:pos+j]...)
				pos += j + 1
				if pos < len(line) && line[pos] == '"' {
					c.rec = append(c.rec, '"')
					pos++
					continue
				}
				break
			}
		} else {
			j := bytes.IndexByte(line[pos:], ',')
			if j < 0 {
				j = len(line) - pos
			}
			field := line[pos : pos+j]
			if bytes.IndexByte(field, '"') >= 0 {
				return nil, c.raw, errMalformed
			}
			c.rec = append(c.rec, field...)
			pos += j
		}
		c.ends = append(c.ends, len(c.rec))
		if pos == len(line) {
			break
		}
		if line[pos] != ',' || len(c.ends) >= csvMaxFields {
			return nil, c.raw, errMalformed
		}
		pos++
	}
	all := string(c.rec)
	c.fields = c.fields[:0]
	from := 0
	for _, end := range c.ends {
		c.fields = append(c.fields, all[from:end])
		from = end
	}
	return c.fields, c.raw, nil
}

// oneLine reads the fields of a record that is one line and has no
// quote inside a quoted field; false for any other record (which record
// then reads, and tells whether it is malformed).
func (c *csvReader) oneLine(line []byte) bool {
	c.starts, c.ends = c.starts[:0], c.ends[:0]
	pos := 0
	for {
		if pos < len(line) && line[pos] == '"' {
			j := bytes.IndexByte(line[pos+1:], '"')
			if j < 0 {
				return false
			}
			end := pos + 1 + j
			if end+1 < len(line) && line[end+1] == '"' {
				return false
			}
			c.starts, c.ends = append(c.starts, pos+1), append(c.ends, end)
			pos = end + 1
		} else {
			// Unquoted fields are short: numbers, times, names.
			k := pos
			for k < len(line) && line[k] != ',' {
				if line[k] == '"' {
					return false
				}
				k++
			}
			c.starts, c.ends = append(c.starts, pos), append(c.ends, k)
			pos = k
		}
		if pos == len(line) {
			return true
		}
		if line[pos] != ',' || len(c.ends) >= csvMaxFields {
			return false
		}
		pos++
	}
}

// readCSV hands each record to emit until emit returns false, and what it
// skips to out. A malformed record is skipped by its first line and
// reading resumes at the next, so that a cut or garbled record costs only
// itself.
func readCSV(sc *scanner, file string, clk *clock, out sink, emit func(*entry) bool) error {
	rd := newCSVReader(sc)
	var e entry
	for {
		fields, raw, err := rd.record()
		switch {
		case err == io.EOF:
			return nil
		case err == errLongLine:
			out.skip(Dropped, reasonLong, fmt.Sprintf("%s:%d", file, sc.n))
			continue
		case err == errMalformed:
			out.skip(Dropped, reasonCSV, fmt.Sprintf("%s:%d", file, raw[0].n))
			sc.unread(raw[1:])
			continue
		case err != nil:
			return err
		}
		if len(raw) == 1 && len(bytes.TrimSpace(sc.bytes(raw[0]))) == 0 {
			continue
		}
		if !csvEntry(&e, fields, clk) {
			out.skip(Dropped, reasonCSV, fmt.Sprintf("%s:%d", file, raw[0].n))
			sc.unread(raw[1:])
			continue
		}
		e.file, e.line = file, raw[0].n
		if !emit(&e) {
			return nil
		}
	}
}

// csvEntry fills e from a record's fields; false when they are not a
// message.
func csvEntry(e *entry, f []string, c *clock) bool {
	if len(f) < csvMinFields || f[csvSeverity] == "" {
		return false
	}
	t, ok := c.parse(f[csvTime])
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(f[csvPID])
	if err != nil && f[csvPID] != "" {
		return false
	}
	*e = entry{
		time:      t,
		pid:       pid,
		session:   f[csvSession],
		user:      f[csvUser],
		db:        f[csvDatabase],
		host:      hostOf(f[csvFrom]),
		severity:  f[csvSeverity],
		state:     f[csvState],
		message:   f[csvMessage],
		detail:    f[csvDetail],
		context:   f[csvContext],
		statement: f[csvQuery],
		app:       f[csvApplication],
	}
	if len(f) > csvBackend {
		e.backend = f[csvBackend]
	}
	return true
}

// hostOf drops the port from csvlog's connection_from ("10.0.0.1:5432",
// "[::1]:5432" is not used: "::1:5432"; "[local]" for a socket).
func hostOf(from string) string {
	if from == "" || from == "[local]" {
		return from
	}
	if i := strings.LastIndexByte(from, ':'); i > 0 {
		if _, err := strconv.Atoi(from[i+1:]); err == nil {
			return from[:i]
		}
	}
	return from
}
