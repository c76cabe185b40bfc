package engine

import (
	"bytes"
	"database/sql/driver"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/go-sql-driver/mysql"
)

// myWire speaks MySQL's text protocol (COM_QUERY and its answer) on a
// session's socket for the commands that need nothing of database/sql:
// a batch's multi-statement text, and BEGIN, COMMIT and ROLLBACK. It
// sends between the driver's own commands, whose answers the driver has
// read to their end, so the driver, which keeps no state of its own
// across commands but its prepared statements, goes on unaware. Through
// database/sql and go-sql-driver/mysql such a command costs a Rows, a
// lock, a result set's column names as strings and each value converted
// twice; here the answer is read into one pooled buffer, each value
// converted once into its destination, and every statement's own count
// of rows is known, queries or not.
//
// A connection speaks it only where its bytes are the socket's: not
// through TLS or compression, and not with the driver's read or write
// timeouts (which the driver keeps on the socket itself); there the
// driver carries every command.
type myWire struct {
	conn      countedConn
	maxPacket int
	buf       *[]byte // from wireBufs for a command's time
	r, w      int     // the bytes received and not yet read: (*buf)[r:w]
	seq       byte
	// eof is how a result set's columns and rows end: 0 not yet seen, 1
	// with an OK packet (CLIENT_DEPRECATE_EOF, which go-sql-driver asks
	// for), 2 with EOF packets (a server without it).
	eof  int8
	held []byte // a packet read ahead, the first of a result set's rows
	big  []byte // a packet of 16 MB or more, joined
	cols []myColumn
	// fields are the current row's values in the buffer (nil: NULL),
	// valid until the next packet is read.
	fields [][]byte
	inSet  bool  // a result set's rows are being read
	more   bool  // the last result said more follow (its status)
	ended  bool  // the answer was read to its end
	err    error // the error that ended the rows read
}

type myColumn struct {
	typ      byte
	unsigned bool
}

// The protocol's numbers (MySQL's client/server protocol documentation).
const (
	comQuery          = 0x03
	myMaxPacket       = 1<<24 - 1
	myHeader          = 5 // a packet's header and COM_QUERY's byte, ahead of the text in mysqlConn.text
	statusMoreResults = 0x0008
	flagUnsigned      = 0x0020
)

// wireBufs hold the answers being read; a command takes one for its
// time, so that thousands of idle sessions keep none.
var wireBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// errWire is an answer the reader could not follow: the connection is
// lost.
var errWire error = lostError("MySQL protocol: an answer out of order or malformed; the connection is dropped")

// lostError is an error of the reader's that leaves the connection
// unusable; it is a bad connection to errors.Is, as the driver's own
// are, so that Classify counts it as a lost connection.
type lostError string

func (e lostError) Error() string        { return string(e) }
func (e lostError) Is(target error) bool { return target == driver.ErrBadConn }

// start takes a buffer for a command.
func (c *myWire) start() {
	c.buf = wireBufs.Get().(*[]byte)
	c.r, c.w, c.held, c.inSet, c.more, c.ended, c.err = 0, 0, nil, false, false, false, nil
}

// done gives the buffer back (not one grown past 1 MB for a large
// answer).
func (c *myWire) done() {
	if cap(*c.buf) <= 1<<20 {
		wireBufs.Put(c.buf)
	}
	clear(c.fields[:cap(c.fields)]) // no reference to the buffer past the command
	c.buf, c.held, c.fields = nil, nil, c.fields[:0]
	if cap(c.big) > 1<<20 {
		c.big = nil
	}
}

// send sends p, a text whose first myHeader bytes are left for the
// packet's header, as COM_QUERY: one write, split into packets of 16 MB
// when longer.
func (c *myWire) send(p []byte) error {
	body := len(p) - 4
	if c.maxPacket > 0 && body > c.maxPacket {
		c.ended = true // nothing sent, nothing to read: the connection goes on
		return fmt.Errorf("a text of %d bytes is larger than the connection's maxAllowedPacket (%d): raise it in the target's URL", body, c.maxPacket)
	}
	c.seq = 0
	p[4] = comQuery
	if body < myMaxPacket {
		p[0], p[1], p[2], p[3] = byte(body), byte(body>>8), byte(body>>16), 0
		c.seq = 1
		_, err := c.conn.Write(p)
		return err
	}
	rest := p[4:]
	for {
		n := min(len(rest), myMaxPacket)
		hdr := [4]byte{byte(n), byte(n >> 8), byte(n >> 16), c.seq}
		c.seq++
		if _, err := c.conn.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := c.conn.Write(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
		if n < myMaxPacket {
			return nil // a packet of exactly 16 MB is followed by an empty one
		}
	}
}

// fill reads until n bytes are there to read.
func (c *myWire) fill(n int) error {
	if c.w-c.r >= n {
		return nil
	}
	b := *c.buf
	if c.r+n > len(b) {
		if n > len(b) {
			nb := make([]byte, max(n, 2*len(b)))
			copy(nb, b[c.r:c.w])
			*c.buf, b = nb, nb
		} else {
			copy(b, b[c.r:c.w])
		}
		c.w -= c.r
		c.r = 0
	}
	for c.w-c.r < n {
		k, err := c.conn.Read(b[c.w:])
		c.w += k
		if err != nil && c.w-c.r < n {
			return err
		}
	}
	return nil
}

// packet returns the next packet's payload, valid until the next call.
func (c *myWire) packet() ([]byte, error) {
	if c.held != nil {
		p := c.held
		c.held = nil
		return p, nil
	}
	p, err := c.part()
	if err != nil || len(p) < myMaxPacket {
		return p, err
	}
	c.big = append(c.big[:0], p...)
	for {
		q, err := c.part()
		if err != nil {
			return nil, err
		}
		c.big = append(c.big, q...)
		if len(q) < myMaxPacket {
			return c.big, nil
		}
	}
}

// part reads one packet as it came.
func (c *myWire) part() ([]byte, error) {
	if err := c.fill(4); err != nil {
		return nil, err
	}
	h := (*c.buf)[c.r:]
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if h[3] != c.seq {
		return nil, errWire
	}
	c.seq++
	c.r += 4
	if err := c.fill(n); err != nil {
		return nil, err
	}
	p := (*c.buf)[c.r : c.r+n : c.r+n]
	c.r += n
	return p, nil
}

// lenenc reads a length-encoded integer: its value, its size (0: b is
// too short or malformed), and whether it is SQL's NULL (0xfb).
func lenenc(b []byte) (v uint64, n int, null bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch k := b[0]; {
	case k < 0xfb:
		return uint64(k), 1, false
	case k == 0xfb:
		return 0, 1, true
	case k == 0xfc && len(b) >= 3:
		return uint64(b[1]) | uint64(b[2])<<8, 3, false
	case k == 0xfd && len(b) >= 4:
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, false
	case k == 0xfe && len(b) >= 9:
		var v uint64
		for i := 8; i >= 1; i-- {
			v = v<<8 | uint64(b[i])
		}
		return v, 9, false
	}
	return 0, 0, false
}

// ok reads an OK packet (header 0x00, or 0xfe ending a result set): the
// rows it counts, and whether more results follow.
func (c *myWire) ok(p []byte) (affected int64, err error) {
	a, n, _ := lenenc(p[1:])
	_, m, _ := lenenc(p[1+n:])
	if n == 0 || m == 0 || len(p) < 1+n+m+2 {
		return 0, errWire
	}
	st := uint16(p[1+n+m]) | uint16(p[2+n+m])<<8
	c.more = st&statusMoreResults != 0
	c.ended = !c.more
	return int64(a), nil
}

// serverErr is an ERR packet's error, as the driver would return it.
// No result follows it.
func (c *myWire) serverErr(p []byte) error {
	c.more, c.ended = false, true
	if len(p) < 3 {
		return errWire
	}
	e := &mysql.MySQLError{Number: uint16(p[1]) | uint16(p[2])<<8}
	msg := p[3:]
	if len(msg) >= 6 && msg[0] == '#' {
		copy(e.SQLState[:], msg[1:6])
		msg = msg[6:]
	}
	e.Message = string(msg)
	return e
}

// result reads the head of the command's next result: an OK (its count
// of rows), the server's error, or a result set's columns, whose rows
// next then reads (rows true).
func (c *myWire) result() (rows bool, affected int64, err error) {
	p, err := c.packet()
	if err != nil {
		return false, 0, err
	}
	if len(p) == 0 {
		return false, 0, errWire
	}
	switch p[0] {
	case 0x00:
		a, err := c.ok(p)
		return false, a, err
	case 0xff:
		return false, 0, c.serverErr(p)
	case 0xfb: // LOCAL INFILE's request: no batch of dbparity's asks for one
		return false, 0, errWire
	}
	n, k, _ := lenenc(p)
	if k == 0 || n == 0 || n > 1<<16 {
		return false, 0, errWire
	}
	c.cols = c.cols[:0]
	for range n {
		q, err := c.packet()
		if err != nil {
			return false, 0, err
		}
		// catalog, schema, table, org_table, name, org_name; then the
		// fixed fields' length (0x0c), charset, length, type, flags.
		at := 0
		for range 6 {
			l, k, _ := lenenc(q[at:])
			if k == 0 || l > uint64(len(q)-at-k) {
				return false, 0, errWire
			}
			at += k + int(l)
		}
		if at+10 > len(q) {
			return false, 0, errWire
		}
		flags := uint16(q[at+8]) | uint16(q[at+9])<<8
		c.cols = append(c.cols, myColumn{typ: q[at+7], unsigned: flags&flagUnsigned != 0})
	}
	// The columns end with an EOF packet unless CLIENT_DEPRECATE_EOF was
	// agreed: learnt from the first result set (an EOF is 5 bytes; an OK
	// ending an empty result set at least 7, a row that begins with 0xfe
	// at least 9).
	if c.eof != 1 {
		q, err := c.packet()
		if err != nil {
			return false, 0, err
		}
		switch {
		case len(q) == 5 && q[0] == 0xfe:
			c.eof = 2
		case c.eof == 0:
			c.eof = 1
			c.held = q
		default:
			return false, 0, errWire
		}
	}
	c.inSet = true
	return true, 0, nil
}

// next reads the result set's next row into c.fields: false at its end
// (c.more then set) or on an error (c.err).
func (c *myWire) next() bool {
	if !c.inSet {
		return false
	}
	p, err := c.packet()
	if err == nil && len(p) == 0 {
		err = errWire
	}
	if err != nil {
		c.inSet, c.err = false, err
		return false
	}
	switch {
	case p[0] == 0xfe && c.eof == 2 && len(p) < 9:
		if len(p) < 5 {
			c.err = errWire
		}
		c.inSet = false
		c.more = c.err == nil && (uint16(p[3])|uint16(p[4])<<8)&statusMoreResults != 0
		c.ended = c.err == nil && !c.more
		return false
	case p[0] == 0xfe && c.eof == 1 && len(p) < myMaxPacket:
		c.inSet = false
		_, c.err = c.ok(p)
		return false
	case p[0] == 0xff:
		c.inSet, c.err = false, c.serverErr(p)
		return false
	}
	c.fields = c.fields[:0]
	at := 0
	for range c.cols {
		l, k, null := lenenc(p[at:])
		if k == 0 || l > uint64(len(p)-at-k) {
			c.inSet, c.err = false, errWire
			return false
		}
		at += k
		if null {
			c.fields = append(c.fields, nil)
			continue
		}
		c.fields = append(c.fields, p[at:at+int(l):at+int(l)])
		at += int(l)
	}
	return true
}

// drain reads the rest of the command's answer: the error it ends with,
// if any (the server stops a batch at its first error).
func (c *myWire) drain() error {
	for c.next() {
	}
	if c.err != nil {
		return c.err
	}
	for c.more {
		rows, _, err := c.result()
		if err != nil {
			return err
		}
		if rows {
			for c.next() {
			}
			if c.err != nil {
				return c.err
			}
		}
	}
	return nil
}

// The rows of a query of a batch, handed to its Each: the reader itself.

func (c *myWire) Next() bool { return c.next() }
func (c *myWire) Err() error { return c.err }
func (c *myWire) Close()     {}
func (c *myWire) Scan(dest ...any) error {
	if len(dest) != len(c.fields) {
		return &scanError{fmt.Errorf("%d destinations for %d columns", len(dest), len(c.fields))}
	}
	for i, d := range dest {
		if err := c.scan(i, d); err != nil {
			return &scanError{fmt.Errorf("column %d: %w", i+1, err)}
		}
	}
	return nil
}

// scanError is a value that would not go into its destination.
type scanError struct{ err error }

func (e *scanError) Error() string { return "scan: " + e.err.Error() }
func (e *scanError) Unwrap() error { return e.err }

// asString is b as a string that lives no longer than b, for parsing.
func asString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// scan converts the current row's i-th value into d, as database/sql
// would from the driver's value: text into strings and bytes, numbers
// parsed, DATE, DATETIME and TIMESTAMP into times (UTC, as the sessions'
// connections parse them), NULL into a nil pointer or a Scanner.
func (c *myWire) scan(i int, d any) error {
	v := c.fields[i]
	if v == nil {
		switch d := d.(type) {
		case *[]byte:
			*d = nil
			return nil
		case *any:
			*d = nil
			return nil
		case interface{ Scan(any) error }:
			return d.Scan(nil)
		}
		return c.scanPtr(i, d)
	}
	var err error
	switch d := d.(type) {
	case *string:
		*d = string(v)
	case *[]byte:
		*d = bytes.Clone(v)
	case *int64:
		*d, err = strconv.ParseInt(asString(v), 10, 64)
	case *int:
		var n int64
		n, err = strconv.ParseInt(asString(v), 10, strconv.IntSize)
		*d = int(n)
	case *int32:
		var n int64
		n, err = strconv.ParseInt(asString(v), 10, 32)
		*d = int32(n)
	case *uint64:
		*d, err = strconv.ParseUint(asString(v), 10, 64)
	case *float64:
		*d, err = strconv.ParseFloat(asString(v), 64)
	case *float32:
		var f float64
		f, err = strconv.ParseFloat(asString(v), 32)
		*d = float32(f)
	case *bool:
		*d, err = strconv.ParseBool(asString(v))
	case *time.Time:
		if !c.isTime(i) {
			return fmt.Errorf("a column of type %d into a time", c.cols[i].typ)
		}
		*d, err = parseMyTime(v)
	case *any:
		*d, err = c.value(i, true)
	case interface{ Scan(any) error }:
		var x any
		if x, err = c.value(i, false); err == nil {
			err = d.Scan(x)
		}
	default:
		return c.scanPtr(i, d)
	}
	return err
}

// scanPtr scans into a pointer to a pointer (nil for NULL), the
// nullable destinations the workloads use.
func (c *myWire) scanPtr(i int, d any) error {
	switch d := d.(type) {
	case **int64:
		return scanInto(c, i, d)
	case **float64:
		return scanInto(c, i, d)
	case **string:
		return scanInto(c, i, d)
	case **time.Time:
		return scanInto(c, i, d)
	case **bool:
		return scanInto(c, i, d)
	}
	if c.fields[i] == nil {
		return fmt.Errorf("NULL into %T", d)
	}
	return fmt.Errorf("a value into %T, which the MySQL batch reader does not take", d)
}

func scanInto[T any](c *myWire, i int, d **T) error {
	if c.fields[i] == nil {
		*d = nil
		return nil
	}
	v := new(T)
	if err := c.scan(i, v); err != nil {
		return err
	}
	*d = v
	return nil
}

// isTime tells whether column i is a date or a time of day and date.
func (c *myWire) isTime(i int) bool {
	switch c.cols[i].typ {
	case 7, 10, 12, 14: // TIMESTAMP, DATE, DATETIME, NEWDATE
		return true
	}
	return false
}

// value is column i's value as go-sql-driver/mysql gives it (bytes
// copied when own).
func (c *myWire) value(i int, own bool) (any, error) {
	v := c.fields[i]
	switch c.cols[i].typ {
	case 7, 10, 12, 14:
		return parseMyTime(v)
	case 1, 2, 3, 9, 13: // TINY, SHORT, LONG, INT24, YEAR
		return strconv.ParseInt(asString(v), 10, 64)
	case 8: // LONGLONG
		if c.cols[i].unsigned {
			return strconv.ParseUint(asString(v), 10, 64)
		}
		return strconv.ParseInt(asString(v), 10, 64)
	case 4: // FLOAT
		f, err := strconv.ParseFloat(asString(v), 32)
		return float32(f), err
	case 5: // DOUBLE
		return strconv.ParseFloat(asString(v), 64)
	}
	if own {
		return bytes.Clone(v), nil
	}
	return v, nil
}

// parseMyTime reads MySQL's text of a date or a date and time, in UTC;
// a zero date is the zero time.
func parseMyTime(v []byte) (time.Time, error) {
	s := asString(v)
	if len(s) >= 10 && s[:10] == "0000-00-00" && len(bytes.Trim(v[10:], " 0:.")) == 0 {
		return time.Time{}, nil
	}
	layout := "2006-01-02 15:04:05.999999"
	if len(s) == 10 {
		layout = "2006-01-02"
	}
	t, err := time.ParseInLocation(layout, s, time.UTC)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a MySQL date and time", s)
	}
	return t, nil
}
