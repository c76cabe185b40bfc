package capture

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
)

// textStore interns a stream's statement texts: each text gets an index
// and is written once to a spill file, in the order of the indices (a
// length, then the bytes), and the texts met lately are kept to find them
// again, in two generations of at most textCacheBytes/2 each: a text
// found in the older moves to the newer, and when the newer is full the
// older goes. A text met again after its generation went is stored
// again, under a new index. Nothing is kept per index: the capture file
// takes the texts in their order from the spill.
type textStore struct {
	f    *os.File
	w    *bufio.Writer
	size int64
	n    int // texts stored

	cur, prev map[string]int
	curBytes  int

	last   string // the text interned last, and its index
	lastID int

	err error
}

// textOverhead is what a cached text costs beside its bytes: its map
// entry.
const textOverhead = 48

func newTextStore(f *os.File) *textStore {
	return &textStore{f: f, w: bufio.NewWriterSize(f, 256<<10), cur: map[string]int{}, prev: map[string]int{}, lastID: -1}
}

func (t *textStore) count() int { return t.n }

func (t *textStore) intern(text string) int {
	i, ok := t.cur[text]
	if !ok {
		if i, ok = t.prev[text]; ok {
			t.cur[text] = i
			t.grow(len(text))
		}
	}
	if !ok {
		i = t.n
		t.n++
		var head [binary.MaxVarintLen64]byte
		t.write(head[:binary.PutUvarint(head[:], uint64(len(text)))])
		t.write([]byte(text))
		// A piece of a log record: copied, so that the cache keeps the
		// text and not the record.
		t.cur[strings.Clone(text)] = i
		t.grow(len(text))
	}
	t.last, t.lastID = text, i
	return i
}

func (t *textStore) write(b []byte) {
	if _, err := t.w.Write(b); err != nil && t.err == nil {
		t.err = err
	}
	t.size += int64(len(b))
}

// grow counts a text into the newer generation, and starts another when
// it is full.
func (t *textStore) grow(n int) {
	t.curBytes += n + textOverhead
	if t.curBytes <= textCacheBytes/2 {
		return
	}
	t.prev, t.cur, t.curBytes = t.cur, map[string]int{}, 0
}

// text returns text i: the last interned (a session's last statement's,
// which is what the builder asks for), else read from the spill.
func (t *textStore) text(i int) string {
	if i == t.lastID {
		return t.last
	}
	var found string
	t.each(func(k int, text []byte) bool {
		if k == i {
			found = string(text)
			return false
		}
		return true
	})
	return found
}

// each reads the texts back in the order of their indices until f
// returns false; the bytes are good until the next call.
func (t *textStore) each(f func(i int, text []byte) bool) {
	if err := t.w.Flush(); err != nil && t.err == nil {
		t.err = err
	}
	r := bufio.NewReaderSize(io.NewSectionReader(t.f, 0, t.size), 1<<20)
	var buf []byte
	for i := 0; i < t.n; i++ {
		n, err := binary.ReadUvarint(r)
		if err == nil {
			if uint64(cap(buf)) < n {
				buf = make([]byte, n)
			}
			buf = buf[:n]
			_, err = io.ReadFull(r, buf)
		}
		if err != nil {
			if t.err == nil {
				t.err = fmt.Errorf("texts read back: %w", err)
			}
			return
		}
		if !f(i, buf) {
			return
		}
	}
}
