package capture

import (
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
// may span lines.
type csvReader struct {
	lines *lineReader
}

func newCSVReader(l *lineReader) *csvReader { return &csvReader{lines: l} }

// record returns the next record's fields and the physical lines it was
// read from (so that a malformed record can be read again from its second
// line). At the end it returns io.EOF.
func (c *csvReader) record() (fields []string, raw []numbered, err error) {
	line, n, err := c.lines.next()
	if err != nil {
		return nil, nil, err
	}
	raw = append(raw, numbered{line, n})
	size := len(line)
	pos := 0
	for {
		var field string
		if pos < len(line) && line[pos] == '"' {
			pos++
			var b strings.Builder
			for {
				j := strings.IndexByte(line[pos:], '"')
				if j < 0 {
					// The quoted field goes on in the next line.
					b.WriteString(line[pos:])
					b.WriteByte('\n')
					next, n, err := c.lines.next()
					if err != nil {
						if err == io.EOF || err == errLongLine {
							return nil, raw, errMalformed
						}
						return nil, raw, err
					}
					raw = append(raw, numbered{next, n})
					if size += len(next) + 1; size > maxLine {
						return nil, raw, errMalformed
					}
					line, pos = next, 0
					continue
				}
				b.WriteString(line[pos : pos+j])
				pos += j + 1
				if pos < len(line) && line[pos] == '"' {
					b.WriteByte('"')
					pos++
					continue
				}
				break
			}
			field = b.String()
		} else {
			j := strings.IndexByte(line[pos:], ',')
			if j < 0 {
				j = len(line) - pos
			}
			field = line[pos : pos+j]
			pos += j
			if strings.IndexByte(field, '"') >= 0 {
				return nil, raw, errMalformed
			}
		}
		fields = append(fields, field)
		if pos == len(line) {
			return fields, raw, nil
		}
		if line[pos] != ',' || len(fields) >= csvMaxFields {
			return nil, raw, errMalformed
		}
		pos++
	}
}

// readCSV hands each record to emit until emit returns false. A malformed
// record is skipped by its first line and reading resumes at the next, so
// that a cut or garbled record costs only itself.
func readCSV(lines *lineReader, file string, b *builder, emit func(*entry) bool) error {
	rd := newCSVReader(lines)
	for {
		fields, raw, err := rd.record()
		switch {
		case err == io.EOF:
			return nil
		case err == errLongLine:
			b.skip(Dropped, reasonLong, fmt.Sprintf("%s:%d", file, lines.n))
			continue
		case err == errMalformed:
			b.skip(Dropped, reasonCSV, fmt.Sprintf("%s:%d", file, raw[0].n))
			lines.unread(raw[1:])
			continue
		case err != nil:
			return err
		}
		if strings.TrimSpace(raw[0].text) == "" && len(raw) == 1 {
			continue
		}
		e, ok := csvEntry(fields, b.clock)
		if !ok {
			b.skip(Dropped, reasonCSV, fmt.Sprintf("%s:%d", file, raw[0].n))
			lines.unread(raw[1:])
			continue
		}
		e.file, e.line = file, raw[0].n
		if !emit(e) {
			return nil
		}
	}
}

func csvEntry(f []string, c *clock) (*entry, bool) {
	if len(f) < csvMinFields || f[csvSeverity] == "" {
		return nil, false
	}
	t, ok := c.parse(f[csvTime])
	if !ok {
		return nil, false
	}
	pid, err := strconv.Atoi(f[csvPID])
	if err != nil && f[csvPID] != "" {
		return nil, false
	}
	e := &entry{
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
	return e, true
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
