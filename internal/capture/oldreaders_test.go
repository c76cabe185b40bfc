package capture

// The readers as they were before issue 51 made them fast, kept as the
// definition the new ones are held to: csvlog records and stderr lines
// read through lineReader, prefixes matched with the regular expression.

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// oldCSVReader reads csvlog records: comma-separated fields, quoted with ""
// for a quote when they hold anything but plain values, and quoted fields
// may span lines.
type oldCSVReader struct {
	lines *lineReader
}

func newOldCSVReader(l *lineReader) *oldCSVReader { return &oldCSVReader{lines: l} }

// record returns the next record's fields and the physical lines it was
// read from (so that a malformed record can be read again from its second
// line). At the end it returns io.EOF.
func (c *oldCSVReader) record() (fields []string, raw []numbered, err error) {
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
					if size += len(next) + 1; size > lineLimit {
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
func oldReadCSV(lines *lineReader, file string, b sink, clk *clock, emit func(*entry) bool) error {
	rd := newOldCSVReader(lines)
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
		e := &entry{}
		if !csvEntry(e, fields, clk) {
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

func (g *grouper) oldRead(lines *lineReader, file string, px *prefix) (matched, other int, err error) {
	for {
		line, n, err := lines.next()
		if err == io.EOF {
			return matched, other, nil
		}
		if err == errLongLine {
			g.out.skip(Dropped, reasonLong, fmt.Sprintf("%s:%d", file, n))
			g.cur = nil
			continue
		}
		if err != nil {
			return matched, other, err
		}
		if strings.HasPrefix(line, "\t") && g.cur != nil {
			*g.cur += "\n" + line[1:]
			continue
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		m, ok := px.oldMatch(line, g.clock)
		if !ok {
			other++
			reason := reasonPrefix
			if strings.HasPrefix(line, "\t") {
				reason = reasonOrphanPart
			}
			g.out.skip(Dropped, reason, fmt.Sprintf("%s:%d", file, n))
			g.cur = nil
			continue
		}
		matched++
		key := m.session
		if key == "" {
			key = "pid:" + strconv.Itoa(m.pid)
		}
		switch m.severity {
		case "DETAIL", "CONTEXT", "STATEMENT", "HINT", "QUERY", "LOCATION":
			e := g.open[key]
			if e == nil {
				g.out.skip(Dropped, reasonOrphanPart, fmt.Sprintf("%s:%d", file, n))
				g.cur = nil
				continue
			}
			switch m.severity {
			case "DETAIL":
				g.cur = &e.detail
			case "CONTEXT":
				g.cur = &e.context
			case "STATEMENT":
				g.cur = &e.statement
			default:
				g.cur = &g.scratch
			}
			*g.cur = m.rest
			continue
		}
		if m.severity == "ERROR" || m.severity == "FATAL" || m.severity == "PANIC" {
			m.rest = cutPosition(m.rest)
		}
		e := &entry{
			file: file, line: n, time: m.time, pid: m.pid, session: m.session,
			user: m.user, db: m.db, app: m.app, host: m.host, backend: m.backend,
			severity: m.severity, state: m.state, message: m.rest,
		}
		if old := g.open[key]; old != nil {
			g.emit(key, old)
		}
		if m.severity == "LOG" && strings.HasPrefix(m.rest, "disconnection: ") {
			// Nothing follows a disconnection: hand it over now, so that
			// a long log does not keep one message per session it saw.
			g.out.add(e)
			g.cur = &g.scratch
			continue
		}
		g.open[key] = e
		g.n++
		g.seq[e] = g.n
		g.cur = &e.message
	}
}

func (px *prefix) oldMatch(line string, c *clock) (prefixMatch, bool) {
	head := line
	if len(head) > maxPrefix {
		head = head[:maxPrefix]
	}
	loc := px.re.FindStringSubmatchIndex(head)
	if loc == nil {
		return prefixMatch{}, false
	}
	get := func(esc byte) string {
		g, ok := px.group[esc]
		if !ok || loc[2*g] < 0 {
			return ""
		}
		return strings.TrimSpace(head[loc[2*g]:loc[2*g+1]])
	}
	m := prefixMatch{
		session:  get('c'),
		user:     known(get('u')),
		db:       known(get('d')),
		app:      known(get('a')),
		backend:  get('b'),
		state:    get('e'),
		severity: head[loc[2*px.sev]:loc[2*px.sev+1]],
		rest:     line[loc[1]:],
	}
	var ok bool
	switch px.timeEsc {
	case 'n':
		m.time, ok = epoch(get('n'))
	default:
		m.time, ok = c.parse(get(px.timeEsc))
	}
	if !ok {
		return prefixMatch{}, false
	}
	if p := get('p'); p != "" {
		m.pid, _ = strconv.Atoi(p)
	} else if _, hex, found := strings.Cut(m.session, "."); found {
		// The session id is the backend's start time and pid, in hex.
		n, _ := strconv.ParseInt(hex, 16, 64)
		m.pid = int(n)
	}
	if h := get('h'); h != "" {
		m.host = h
	} else if r := get('r'); r != "" {
		if i := strings.LastIndexByte(r, '('); i > 0 && strings.HasSuffix(r, ")") {
			r = r[:i]
		}
		m.host = r
	}
	m.host = known(m.host)
	return m, true
}

// readJSON hands each line's record to emit until emit returns false.
func oldReadJSON(lines *lineReader, file string, b sink, clk *clock, emit func(*entry) bool) error {
	for {
		line, n, err := lines.next()
		if err == io.EOF {
			return nil
		}
		if err == errLongLine {
			b.skip(Dropped, reasonLong, fmt.Sprintf("%s:%d", file, n))
			continue
		}
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		var r jsonRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Severity == "" {
			b.skip(Dropped, reasonJSON, fmt.Sprintf("%s:%d", file, n))
			continue
		}
		t, ok := clk.parse(r.Timestamp)
		if !ok {
			b.skip(Dropped, reasonTime, fmt.Sprintf("%s:%d", file, n))
			continue
		}
		e := &entry{
			file: file, line: n, time: t, pid: r.PID, session: r.SessionID,
			user: r.User, db: r.DBName, host: r.RemoteHost, app: r.Application,
			backend: r.BackendType, severity: r.Severity, state: r.StateCode,
			message: r.Message, detail: r.Detail, context: r.Context, statement: r.Statement,
		}
		if !emit(e) {
			return nil
		}
	}
}
