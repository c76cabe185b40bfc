package capture

import (
	"bytes"
	"io"
)

// lineLimit is maxLine, the longest physical line (and csvlog record)
// read; tests lower it.
var lineLimit = maxLine

// scanBuffer is the size of a scanner's first buffer; tests lower it so
// that lines and records cross refills often.
var scanBuffer = 1 << 20

// scanner yields the physical lines of a log as lineReader does (without
// their end of line, numbered from 1, lines over lineLimit skipped with
// errLongLine, lines given back read again), but as spans of one buffer
// rather than strings: a reader copies only what it keeps, once per
// record, where lineReader allocated every line and bufio copied it
// again.
//
// Positions are in the scanner's own stream: the bytes it read, less the
// long lines it skipped, so that the lines given back stay where they
// were. Bytes from keep on stay buffered, so that the lines of a record
// being read, and those given back, stay valid while more are read.
type scanner struct {
	r    io.Reader
	buf  []byte // buf[i] is the byte at position base+i
	base int64
	end  int64 // base + len(buf)
	pos  int64 // the next byte to read
	keep int64 // bytes from here on stay buffered (at most pos); -1: from pos on
	eof  bool
	err  error // what ended the input: io.EOF, or the read error
	n    int   // number of the last line read
	back []span
}

// span is a line: its bytes are buf[from-base:to-base] while they are
// buffered.
type span struct {
	from, to int64
	n        int
}

func newScanner(r io.Reader) *scanner {
	return &scanner{r: r, buf: make([]byte, 0, scanBuffer), keep: -1}
}

// bytes returns a line's bytes, valid until the scanner reads more.
func (s *scanner) bytes(sp span) []byte { return s.buf[sp.from-s.base : sp.to-s.base] }

// unread gives lines back; they are returned again in the order given.
// Their bytes must still be buffered (from keep on).
func (s *scanner) unread(lines []span) {
	for k := len(lines) - 1; k >= 0; k-- {
		s.back = append(s.back, lines[k])
	}
}

// next returns the next line. At the end of the input it returns io.EOF,
// or the error that ended the input, after the last whole line (a last
// line without a newline is a line when the input ended cleanly).
func (s *scanner) next() (span, error) {
	if k := len(s.back); k > 0 {
		sp := s.back[k-1]
		s.back = s.back[:k-1]
		return sp, nil
	}
	searched := s.pos
	for {
		if i := bytes.IndexByte(s.buf[searched-s.base:], '\n'); i >= 0 {
			nl := searched + int64(i)
			from := s.pos
			s.pos = nl + 1
			s.n++
			if nl+1-from > int64(lineLimit) {
				return span{n: s.n}, errLongLine
			}
			to := nl
			if to > from && s.buf[to-1-s.base] == '\r' {
				to--
			}
			return span{from: from, to: to, n: s.n}, nil
		}
		searched = s.end
		if s.end-s.pos > int64(lineLimit) {
			return span{n: s.n}, s.skipLong()
		}
		if s.eof {
			if s.err != io.EOF || s.pos == s.end {
				return span{n: s.n}, s.err
			}
			from, to := s.pos, s.end
			s.pos = s.end
			s.n++
			if to > from && s.buf[to-1-s.base] == '\r' {
				to--
			}
			return span{from: from, to: to, n: s.n}, nil
		}
		s.fill()
	}
}

// skipLong drops the line at pos, longer than lineLimit, up to and
// including its newline, without holding it: its bytes never get a
// position.
func (s *scanner) skipLong() error {
	for {
		at := s.pos - s.base
		if i := bytes.IndexByte(s.buf[at:], '\n'); i >= 0 {
			k := copy(s.buf[at:], s.buf[at+int64(i)+1:])
			s.buf = s.buf[:at+int64(k)]
			s.end = s.pos + int64(k)
			s.n++
			return errLongLine
		}
		s.buf = s.buf[:at]
		s.end = s.pos
		if s.eof {
			if s.err != io.EOF {
				return s.err
			}
			s.n++
			return errLongLine
		}
		s.fill()
	}
}

// fill reads more input: it moves what must stay to the front of the
// buffer, grows the buffer when that fills it, and reads.
func (s *scanner) fill() {
	from := s.pos
	if s.keep >= 0 && s.keep < from {
		from = s.keep
	}
	if from > s.base {
		k := copy(s.buf, s.buf[from-s.base:])
		s.buf = s.buf[:k]
		s.base = from
	}
	if len(s.buf) == cap(s.buf) {
		grown := make([]byte, len(s.buf), max(2*cap(s.buf), scanBuffer))
		copy(grown, s.buf)
		s.buf = grown
	}
	n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
	s.buf = s.buf[:len(s.buf)+n]
	s.end += int64(n)
	if err != nil {
		s.eof, s.err = true, err
	}
}
