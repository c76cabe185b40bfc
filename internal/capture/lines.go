package capture

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxLine bounds one physical line (and one csvlog record). Statements of
// hundreds of megabytes exist, but a line longer than this is far more
// likely a corrupt file, and reading it whole would cost that much memory.
const maxLine = 256 << 20

// errLongLine reports a line longer than maxLine; the reader has skipped
// past it and can go on.
var errLongLine = errors.New("line longer than 256 MiB")

// lineReader yields physical lines without their end of line (\n or
// \r\n), numbered from 1, and takes lines back so that a parser can
// resynchronise on a line it had already read.
type lineReader struct {
	r    *bufio.Reader
	n    int // number of the last line read from r
	back []numbered
	buf  []byte
}

type numbered struct {
	text string
	n    int
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line. At the end of the input it returns io.EOF;
// a last line without a newline is still a line.
func (l *lineReader) next() (string, int, error) {
	if k := len(l.back); k > 0 {
		ln := l.back[k-1]
		l.back = l.back[:k-1]
		return ln.text, ln.n, nil
	}
	l.buf = l.buf[:0]
	long := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !long {
			if len(l.buf)+len(chunk) > lineLimit {
				long = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (err != io.EOF || (len(l.buf) == 0 && !long)) {
			return "", l.n, err
		}
		l.n++
		if long {
			return "", l.n, errLongLine
		}
		b := bytes.TrimSuffix(l.buf, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
		return string(b), l.n, nil
	}
}

// unread gives lines back; they are returned again in the order given.
func (l *lineReader) unread(lines []numbered) {
	for k := len(lines) - 1; k >= 0; k-- {
		l.back = append(l.back, lines[k])
	}
}
