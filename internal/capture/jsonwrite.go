package capture

import (
	"io"
	"unicode/utf8"
)

// The capture file's writing for Convert (stream.go): the JSON encoded by
// hand, as encoding/json writes it, and compressed beside the encoding.

// asyncWriter hands the capture's JSON, in pieces of writeChunk, to the
// gzip writer in a goroutine of its own, so that compressing and
// encoding run side by side. A write error is returned by close.
type asyncWriter struct {
	buf  []byte
	full chan []byte
	free chan []byte
	done chan error
}

const writeChunk = 256 << 10

func newAsyncWriter(w io.Writer) *asyncWriter {
	a := &asyncWriter{buf: make([]byte, 0, writeChunk+64<<10), full: make(chan []byte, 2), free: make(chan []byte, 3), done: make(chan error, 1)}
	for range 2 {
		a.free <- make([]byte, 0, writeChunk+64<<10)
	}
	go func() {
		var err error
		for b := range a.full {
			if err == nil {
				_, err = w.Write(b)
			}
			a.free <- b[:0]
		}
		a.done <- err
	}()
	return a
}

// maybeSend sends b once it holds writeChunk, and returns the buffer to
// go on with.
func (a *asyncWriter) maybeSend(b []byte) []byte {
	if len(b) < writeChunk {
		return b
	}
	a.full <- b
	return <-a.free
}

// close sends what is left and waits for the writer.
func (a *asyncWriter) close() error {
	if len(a.buf) > 0 {
		a.full <- a.buf
	}
	close(a.full)
	return <-a.done
}

// abort stops the writer after a failure.
func (a *asyncWriter) abort() {
	close(a.full)
	<-a.done
}

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it with HTML escaping off (Write's encoder): quotes, backslashes
// and control characters escaped (\b \f \n \r \t by name, the others as
// \u00XX), invalid UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString[T string | []byte](b []byte, s T) []byte {
	b = append(b, '"')
	done := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[done:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			done = i
			continue
		}
		r, n := decodeRune(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[done:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[done:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		done = i
	}
	b = append(b, s[done:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// decodeRune decodes the character s starts with; a piece of at most four
// bytes made a string is not allocated.
func decodeRune[T string | []byte](s T) (rune, int) {
	return utf8.DecodeRuneInString(string(s[:min(len(s), utf8.UTFMax)]))
}
