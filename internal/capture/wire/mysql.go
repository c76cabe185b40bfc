package wire

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dbparity/dbparity/internal/capture"
)

// The MySQL client/server protocol (MySQL and MariaDB), as the same
// recorder decodes it for a server on the MySQL port: the handshake (user,
// database), text queries, prepared statements' executions with their
// binary parameters written into the text as the general log writes them
// (a MySQL capture replays text), OK packets' affected rows (and an
// INSERT's first AUTO_INCREMENT value), result sets' rows, ERR packets'
// SQLSTATE.

// Capability flags.
const (
	myFoundRows     = 0x00000002
	myConnectWithDB = 0x00000008
	mySSL           = 0x00000800
	mySecureConn    = 0x00008000
	myPluginLenenc  = 0x00200000
	myDeprecateEOF  = 0x01000000
	myMoreResults   = 0x0008 // server status: another result follows
)

// Commands.
const (
	comQuit        = 0x01
	comInitDB      = 0x02
	comQuery       = 0x03
	comStmtPrepare = 0x16
	comStmtExecute = 0x17
	comStmtLong    = 0x18
	comStmtClose   = 0x19
)

// myState is a MySQL session's decoding state.
type myState struct {
	phase      int // 0 server's greeting, 1 client's answer, 2 authentication, 3 commands
	serverCaps uint32
	noEOF      bool // CLIENT_DEPRECATE_EOF: result sets end in an OK packet
	// eofUnknown: a connection picked up after its handshake, whose
	// noEOF is learnt from the first result set's shape.
	eofUnknown bool
	// foundRows: the client asked for rows matched rather than changed
	// (CLIENT_FOUND_ROWS), known from its handshake (capsKnown).
	foundRows, capsKnown bool
	stmts                map[uint32]*myStmt
	cmd                  *myCmd // the command awaiting its answer
}

type myStmt struct {
	text    string
	nparams int
	types   []uint16 // the last bound types (type, flags<<8)
	// long holds the data COM_STMT_SEND_LONG_DATA sent for a parameter
	// since the last execution: the execution then carries no value for
	// it.
	long map[int][]byte
}

// myCmd is a command and where its answer has got to.
type myCmd struct {
	kind    byte   // comQuery, comStmtExecute, comStmtPrepare, or 0 (answered by one OK or ERR)
	p       *pend  // the statement (queries and executions)
	prepare string // the text prepared
	stage   int    // 0 first packet, 1 column definitions, 2 rows, 3 prepare's definitions
	left    int    // definitions left
	rows    int64
	id      uint32
	nparams int
	results int // the results answered so far (a multi-statement query has several)
}

// myPacket takes one packet: 3-byte length, sequence number, payload.
func (b *buffer) myPacket() (payload []byte, seq byte, ok bool) {
	if len(b.b) < 4 {
		return nil, 0, false
	}
	n := int(b.b[0]) | int(b.b[1])<<8 | int(b.b[2])<<16
	if len(b.b) < 4+n {
		return nil, 0, false
	}
	payload, seq = b.b[4:4+n], b.b[3]
	b.b = b.b[4+n:]
	if len(b.b) == 0 {
		b.b = nil
	}
	return payload, seq, true
}

func (s *session) myFromClient(at time.Time) {
	for !s.off {
		p, _, ok := s.front.myPacket()
		if !ok {
			return
		}
		s.myClient(p, at)
	}
}

func (s *session) myFromServer(at time.Time) {
	for !s.off {
		p, _, ok := s.back.myPacket()
		if !ok {
			return
		}
		s.myServer(p, at)
	}
}

func (s *session) myClient(p []byte, at time.Time) {
	m := &s.my
	switch m.phase {
	case 1:
		m.phase = 2
		if len(p) < 32 {
			s.stop("a short handshake response")
			return
		}
		caps := binary.LittleEndian.Uint32(p)
		if caps&mySSL != 0 && len(p) == 32 {
			s.r.mu.Lock()
			s.r.skip(capture.Dropped, reasonTLS, s.host)
			s.r.mu.Unlock()
			s.off = true
			return
		}
		m.noEOF = caps&m.serverCaps&myDeprecateEOF != 0
		m.foundRows, m.capsKnown = caps&myFoundRows != 0, true
		r := msg{b: p[32:]}
		user := r.str()
		switch {
		case caps&myPluginLenenc != 0:
			r.bytes(int(r.lenenc()))
		case caps&mySecureConn != 0:
			r.bytes(int(r.byte()))
		default:
			r.str()
		}
		db := ""
		if caps&myConnectWithDB != 0 {
			db = r.str()
		}
		s.r.mu.Lock()
		s.user, s.database, s.started, s.start = user, db, true, at
		s.r.mu.Unlock()
	case 2:
		// Authentication's further exchanges.
	case 3:
		if len(p) == 0 {
			return
		}
		s.myCommand(p[0], p[1:], at)
	}
}

func (s *session) myCommand(c byte, body []byte, at time.Time) {
	m := &s.my
	switch c {
	case comQuery:
		m.cmd = &myCmd{kind: comQuery, p: &pend{text: string(body), start: at}}
	case comInitDB:
		m.cmd = &myCmd{kind: comQuery, p: &pend{text: "USE " + quoteIdent(string(body)), start: at}}
	case comStmtPrepare:
		m.cmd = &myCmd{kind: comStmtPrepare, prepare: string(body)}
	case comStmtExecute:
		r := msg{b: body}
		id := r.u32le()
		st := m.stmts[id]
		if st == nil {
			s.r.mu.Lock()
			s.r.skip(capture.Dropped, reasonUnknownStmt, s.id)
			s.r.mu.Unlock()
			m.cmd = &myCmd{kind: comStmtExecute} // answered, not recorded
			return
		}
		r.bytes(5) // flags, iteration count
		text, ok := st.bind(&r)
		p := &pend{text: text, start: at}
		if !ok {
			p.text = st.text
			p.st.ParamsTruncated = true
			s.r.mu.Lock()
			s.r.skip(capture.Dropped, reasonBinary, s.id)
			s.r.mu.Unlock()
		}
		m.cmd = &myCmd{kind: comStmtExecute, p: p}
	case comStmtClose:
		if len(body) >= 4 {
			delete(m.stmts, binary.LittleEndian.Uint32(body))
		}
	case comStmtLong:
		// No answer: a parameter's value in pieces (statement id,
		// parameter, data), bound at the next execution.
		if len(body) >= 6 {
			if st := m.stmts[binary.LittleEndian.Uint32(body)]; st != nil {
				if st.long == nil {
					st.long = map[int][]byte{}
				}
				i := int(binary.LittleEndian.Uint16(body[4:]))
				st.long[i] = append(st.long[i], body[6:]...)
			}
		}
	case comQuit:
		s.r.mu.Lock()
		s.end = at
		s.r.mu.Unlock()
	default:
		m.cmd = &myCmd{} // ping, statistics, reset...: one OK or ERR
	}
}

func (s *session) myServer(p []byte, at time.Time) {
	m := &s.my
	if len(p) == 0 {
		return
	}
	switch m.phase {
	case 0:
		m.phase = 1
		// Protocol 10: version, thread id, salt, filler, capabilities.
		r := msg{b: p[1:]}
		r.str()
		pid := r.u32le()
		r.bytes(9)
		lo := uint32(r.u16le())
		r.bytes(3)
		hi := uint32(r.u16le())
		m.serverCaps = lo | hi<<16
		m.stmts = map[uint32]*myStmt{}
		s.r.mu.Lock()
		s.pid = int(pid)
		s.r.mu.Unlock()
		return
	case 1:
		return
	case 2:
		switch p[0] {
		case 0x00:
			m.phase = 3
		case 0xff:
			s.off = true // refused
		}
		return
	}
	c := m.cmd
	if c == nil {
		return
	}
	switch c.stage {
	case 0:
		switch p[0] {
		case 0x00:
			if c.kind == comStmtPrepare {
				r := msg{b: p[1:]}
				c.id = r.u32le()
				cols := int(r.u16le())
				c.nparams = int(r.u16le())
				m.stmts[c.id] = &myStmt{text: c.prepare, nparams: c.nparams}
				c.left = c.nparams + cols
				if !m.noEOF && !m.eofUnknown {
					if c.nparams > 0 {
						c.left++
					}
					if cols > 0 {
						c.left++
					}
				}
				c.stage = 3
				if c.left == 0 {
					m.cmd = nil
				}
				return
			}
			r := msg{b: p[1:]}
			rows := int64(r.lenenc())
			id := r.lenenc()
			status := r.u16le()
			s.myInsertID(c, rows, id)
			s.myResult(c, s.slab.int64p(rows), nil, status, at)
		case 0xff:
			r := msg{b: p[1:]}
			code := r.u16le()
			e := &capture.Error{SQLState: "HY000"}
			rest := string(r.b)
			if strings.HasPrefix(rest, "#") && len(rest) >= 6 {
				e.SQLState, rest = rest[1:6], rest[6:]
			}
			e.Message = fmt.Sprintf("%s (%d)", rest, code)
			s.myResult(c, nil, e, 0, at)
		case 0xfb:
			s.myResult(c, nil, nil, 0, at) // LOCAL INFILE: not replayed
		default:
			r := msg{b: p}
			c.left, c.rows, c.stage = int(r.lenenc()), 0, 1
			if len(r.b) == 1 && r.b[0] == 0 {
				// MariaDB's cached metadata: "metadata follows" is 0,
				// the column definitions are not sent again.
				c.left = 0
			}
			if !m.noEOF && !m.eofUnknown {
				c.left++
			}
			if c.left == 0 {
				c.stage = 2
			}
		}
	case 1:
		if m.eofUnknown {
			// Column definitions, then an EOF packet (5 bytes) or, with
			// CLIENT_DEPRECATE_EOF, the first row or the OK that ends
			// the set.
			if isColumnDef(p) {
				return
			}
			m.eofUnknown, m.noEOF = false, !isEOF(p)
			c.stage = 2
			if m.noEOF {
				s.myServer(p, at)
			}
			return
		}
		c.left--
		if c.left <= 0 {
			c.stage = 2
		}
	case 2:
		if p[0] == 0xfe && len(p) < 0xffffff && (m.noEOF || len(p) < 9) {
			r := msg{b: p[1:]}
			var status uint16
			if !isEOF(p) {
				r.lenenc()
				r.lenenc()
				status = r.u16le()
			} else {
				r.u16le()
				status = r.u16le()
			}
			rows := c.rows
			s.myResult(c, s.slab.int64p(rows), nil, status, at)
			return
		}
		c.rows++
	case 3:
		if m.eofUnknown && isEOF(p) {
			// The EOF after the parameters' or columns' definitions: one
			// that comes after the last is passed over as no command's.
			m.eofUnknown, m.noEOF = false, false
			return
		}
		c.left--
		if c.left <= 0 {
			m.cmd = nil
		}
	}
}

// isEOF tells an EOF packet: 0xfe, warnings and status (an OK packet
// ending a result set with 0xfe is longer: rows, insert id, status,
// warnings).
func isEOF(p []byte) bool { return len(p) == 5 && p[0] == 0xfe }

// isColumnDef tells a column definition: it starts with the catalog,
// always "def".
func isColumnDef(p []byte) bool { return len(p) > 4 && string(p[:4]) == "\x03def" }

// myResult ends a result: the statement ends unless another result
// follows (a multi-statement query, a procedure's results).
func (s *session) myResult(c *myCmd, rows *int64, e *capture.Error, status uint16, at time.Time) {
	c.results++
	if status&myMoreResults != 0 && e == nil {
		c.stage = 0
		return
	}
	s.my.cmd = nil
	if c.p == nil {
		return
	}
	c.p.rows, c.p.err = rows, e
	st := c.p.st
	s.record(c.p, at, st)
}

// myInsertID keeps the first AUTO_INCREMENT value an INSERT or REPLACE
// took, from its OK packet's last_insert_id (rows is the rows it
// affected): the first result's, the statement's that the text begins
// with. Other statements' OK packets carry 0, or the argument of a
// LAST_INSERT_ID(expr) they called, which no replay needs. An INSERT
// given its ids carries the last explicit value, which a replay's
// statement does not take (MariaDB's SET STATEMENT insert_id=N FOR
// leaves nothing behind for the next). An INSERT ... ON DUPLICATE KEY
// UPDATE that updated a row carries that row's id, not a value it took:
// it is kept only where one row was inserted (rows affected 1, in a
// session whose client counts rows changed, not matched: with
// CLIENT_FOUND_ROWS an unchanged row counts 1 too).
func (s *session) myInsertID(c *myCmd, rows int64, id uint64) {
	if c.results > 0 || c.p == nil || id == 0 || id > math.MaxInt64 || !capture.InsertLike(c.p.text) {
		return
	}
	if upsert(c.p.text) && (rows != 1 || !s.my.capsKnown || s.my.foundRows) {
		return
	}
	c.p.st.InsertID = int64(id)
}

// upsert tells an INSERT ... ON DUPLICATE KEY UPDATE.
func upsert(text string) bool {
	for i := 0; i+9 <= len(text); i++ {
		if (text[i] == 'D' || text[i] == 'd') && strings.EqualFold(text[i:i+9], "DUPLICATE") {
			return onDuplicate.MatchString(text)
		}
	}
	return false
}

// onDuplicate is the clause of an upsert.
var onDuplicate = regexp.MustCompile(`(?i)\bON\s+DUPLICATE\s+KEY\s+UPDATE\b`)

// bind writes an execution's parameters into the prepared text, as the
// general log does; false when a value's type is not decoded.
func (st *myStmt) bind(r *msg) (string, bool) {
	if st.nparams == 0 {
		return st.text, true
	}
	nulls := r.bytes((st.nparams + 7) / 8)
	if r.byte() == 1 {
		st.types = make([]uint16, st.nparams)
		for i := range st.types {
			st.types[i] = r.u16le()
		}
	}
	if r.bad || len(st.types) != st.nparams {
		return "", false
	}
	vals := make([]string, st.nparams)
	long := st.long
	st.long = nil // an execution resets the long data
	for i := range vals {
		if nulls[i/8]&(1<<(i%8)) != 0 {
			vals[i] = "NULL"
			continue
		}
		if d, ok := long[i]; ok {
			vals[i] = quoteString(d)
			continue
		}
		v, ok := myValue(r, st.types[i])
		if !ok || r.bad {
			return "", false
		}
		vals[i] = v
	}
	return interpolate(st.text, vals), true
}

// myValue reads one binary parameter as a SQL literal.
func myValue(r *msg, t uint16) (string, bool) {
	unsigned := t&0x8000 != 0
	switch byte(t) {
	case 0x01:
		b := r.byte()
		if unsigned {
			return strconv.Itoa(int(b)), true
		}
		return strconv.Itoa(int(int8(b))), true
	case 0x02, 0x0d:
		v := r.u16le()
		if unsigned || byte(t) == 0x0d {
			return strconv.Itoa(int(v)), true
		}
		return strconv.Itoa(int(int16(v))), true
	case 0x03, 0x09:
		v := r.u32le()
		if unsigned {
			return strconv.FormatUint(uint64(v), 10), true
		}
		return strconv.Itoa(int(int32(v))), true
	case 0x08:
		b := r.bytes(8)
		if b == nil {
			return "", false
		}
		v := binary.LittleEndian.Uint64(b)
		if unsigned {
			return strconv.FormatUint(v, 10), true
		}
		return strconv.FormatInt(int64(v), 10), true
	case 0x04:
		return strconv.FormatFloat(float64(math.Float32frombits(r.u32le())), 'g', -1, 32), true
	case 0x05:
		b := r.bytes(8)
		if b == nil {
			return "", false
		}
		return strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(b)), 'g', -1, 64), true
	case 0x06:
		return "NULL", true
	case 0x07, 0x0a, 0x0c:
		b := r.bytes(int(r.byte()))
		var y, mo, d, h, mi, sec int
		var us uint32
		if len(b) >= 4 {
			y, mo, d = int(binary.LittleEndian.Uint16(b)), int(b[2]), int(b[3])
		}
		if len(b) >= 7 {
			h, mi, sec = int(b[4]), int(b[5]), int(b[6])
		}
		if len(b) >= 11 {
			us = binary.LittleEndian.Uint32(b[7:])
		}
		if byte(t) == 0x0a {
			return fmt.Sprintf("'%04d-%02d-%02d'", y, mo, d), true
		}
		if us > 0 {
			return fmt.Sprintf("'%04d-%02d-%02d %02d:%02d:%02d.%06d'", y, mo, d, h, mi, sec, us), true
		}
		return fmt.Sprintf("'%04d-%02d-%02d %02d:%02d:%02d'", y, mo, d, h, mi, sec), true
	case 0x00, 0xf6:
		return string(r.bytes(int(r.lenenc()))), true
	case 0x0f, 0xfd, 0xfe, 0xfc, 0xf9, 0xfa, 0xfb, 0xf5, 0xf7, 0xf8:
		return quoteString(r.bytes(int(r.lenenc()))), true
	}
	return "", false
}

// quoteString is a string literal as the general log writes one; bytes
// that are not UTF-8 as a hex literal.
func quoteString(b []byte) string {
	if !utf8.Valid(b) {
		return "X'" + hex.EncodeToString(b) + "'"
	}
	var sb strings.Builder
	sb.WriteByte('\'')
	for _, c := range string(b) {
		switch c {
		case '\'':
			sb.WriteString(`\'`)
		case '\\':
			sb.WriteString(`\\`)
		case 0:
			sb.WriteString(`\0`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case 0x1a:
			sb.WriteString(`\Z`)
		default:
			sb.WriteRune(c)
		}
	}
	sb.WriteByte('\'')
	return sb.String()
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// interpolate puts vals in place of the text's ? placeholders, those
// outside quotes and comments, in order.
func interpolate(text string, vals []string) string {
	var sb strings.Builder
	k := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(text) && text[j] != c {
				if text[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			end := min(j+1, len(text))
			sb.WriteString(text[i:end])
			i = end - 1
		case c == '-' && strings.HasPrefix(text[i:], "-- ") || c == '#':
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				j = len(text) - i - 1
			}
			sb.WriteString(text[i : i+j+1])
			i += j
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			j := strings.Index(text[i+2:], "*/")
			end := len(text)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			sb.WriteString(text[i:end])
			i = end - 1
		case c == '?' && k < len(vals):
			sb.WriteString(vals[k])
			k++
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func (m *msg) u16le() uint16 {
	b := m.bytes(2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

func (m *msg) u32le() uint32 {
	b := m.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// lenenc reads a length-encoded integer.
func (m *msg) lenenc() uint64 {
	c := m.byte()
	switch c {
	case 0xfc:
		return uint64(m.u16le())
	case 0xfd:
		b := m.bytes(3)
		if b == nil {
			return 0
		}
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16
	case 0xfe:
		b := m.bytes(8)
		if b == nil {
			return 0
		}
		return binary.LittleEndian.Uint64(b)
	}
	return uint64(c)
}
