package capture

import (
	"strings"
	"unicode/utf8"
)

// A log_line_prefix is matched by a small backtracking matcher of its
// own rather than by the regular expression compilePrefix also builds: on
// stderr logs the regexp package's backtracker took two thirds of
// capture's time (issue 51). The matcher explores the same alternatives
// in the same order as a backtracking implementation of that expression
// (lazy free text shortest first, runs of digits longest first, the
// optional zone and the part after %q taken when they can be), which is
// the match the regexp package's leftmost-first semantics define, so the
// fields read are the same; tests hold it to the expression on real and
// random lines. Once a line has taken many steps, it is matched again
// with each state (element, position) that failed remembered, so that no
// line's time grows exponentially with the free-text values in the
// prefix.

// pnode is one element of a compiled prefix.
type pnode struct {
	kind   byte   // 'l' literal, 'g' an escape's value, 'o' the optional part after %q, 's' the severity
	lit    string // a literal's text
	esc    byte   // the escape of a value
	group  int    // its submatch index
	padded bool   // spaces before and after it (%-10u, %10u)
	skip   int    // 'o': the element after the optional part
	// follow is the literal that comes right after a value that is not
	// padded, when one does: where a value can end is then only where
	// follow is found, which is looked for rather than tried at every
	// character (free text and the zone of a time, which on a prefix
	// such as pgreplay's %m|%u|%d|%c| can run up to the message).
	follow string
}

// matcher holds a match's state, reused from line to line.
type matcher struct {
	nodes  []pnode
	groups int // submatches before the severity's
	line   string
	loc    []int  // submatch positions, as FindStringSubmatchIndex gives them
	memo   bool   // remember failed states
	failed []bool // (element, position) states known to fail
	steps  int
}

// memoAfter is the number of steps after which a line's failed states
// are remembered.
const memoAfter = 256

// find returns the submatch positions of line's prefix, as the regular
// expression's FindStringSubmatchIndex does, or nil. The slice is reused.
func (m *matcher) find(line string) []int {
	if n := 2 * (m.groups + 2); len(m.loc) != n {
		m.loc = make([]int, n)
	}
	for i := range m.loc {
		m.loc[i] = -1
	}
	m.line, m.steps, m.memo = line, 0, false
	end := m.match(0, 0)
	if end < 0 && m.steps > memoAfter {
		// The line took too many steps and was given up: again with the
		// failed states remembered, which gives the same answer in
		// bounded time.
		size := len(m.nodes) * (len(line) + 1)
		if cap(m.failed) < size {
			m.failed = make([]bool, size)
		}
		m.failed = m.failed[:size]
		clear(m.failed)
		for i := range m.loc {
			m.loc[i] = -1
		}
		m.memo = true
		end = m.match(0, 0)
	}
	if end < 0 {
		return nil
	}
	m.loc[0], m.loc[1] = 0, end
	return m.loc
}

// match matches the elements from i on at pos and returns where the whole
// match ends, or -1.
func (m *matcher) match(i, pos int) int {
	if !m.memo {
		if m.steps++; m.steps > memoAfter {
			return -1 // given up: find starts again with memory
		}
		return m.try(i, pos)
	}
	k := i*(len(m.line)+1) + pos
	if m.failed[k] {
		return -1
	}
	end := m.try(i, pos)
	if end < 0 {
		m.failed[k] = true
	}
	return end
}

func (m *matcher) try(i, pos int) int {
	n := &m.nodes[i]
	line := m.line
	switch n.kind {
	case 'l':
		if !strings.HasPrefix(line[pos:], n.lit) {
			return -1
		}
		return m.match(i+1, pos+len(n.lit))
	case 'o':
		if end := m.match(i+1, pos); end >= 0 {
			return end
		}
		return m.match(n.skip, pos)
	case 's':
		rest := line[pos:]
		for _, sev := range severityList {
			if strings.HasPrefix(rest, sev) && strings.HasPrefix(rest[len(sev):], ":  ") {
				m.loc[2*n.group], m.loc[2*n.group+1] = pos, pos+len(sev)
				return pos + len(sev) + len(":  ")
			}
		}
		return -1
	}
	if !n.padded {
		return m.value(i, n, pos)
	}
	// ` *(value) *`: spaces before, as many as can be first.
	sp := pos
	for sp < len(line) && line[sp] == ' ' {
		sp++
	}
	for ; sp >= pos; sp-- {
		if end := m.value(i, n, sp); end >= 0 {
			return end
		}
	}
	return -1
}

// value matches an escape's value at pos, then what follows it.
func (m *matcher) value(i int, n *pnode, pos int) int {
	line := m.line
	next := func(end int) int {
		if !n.padded {
			if r := m.match(i+1, end); r >= 0 {
				m.loc[2*n.group], m.loc[2*n.group+1] = pos, end
				return r
			}
			return -1
		}
		// Spaces after, as many as can be first.
		sp := end
		for sp < len(line) && line[sp] == ' ' {
			sp++
		}
		for ; sp >= end; sp-- {
			if r := m.match(i+1, sp); r >= 0 {
				m.loc[2*n.group], m.loc[2*n.group+1] = pos, end
				return r
			}
		}
		return -1
	}
	switch n.esc {
	case 'a', 'u', 'd', 'r', 'h', 'b', 'i', 'v':
		// Free text, shortest first: any character but a newline.
		if n.follow != "" {
			stop := len(line)
			if k := strings.IndexByte(line[pos:], '\n'); k >= 0 {
				stop = pos + k
			}
			for end := pos; end <= stop; {
				j := strings.Index(line[end:], n.follow)
				if j < 0 || end+j > stop {
					return -1
				}
				if r := next(end + j); r >= 0 {
					return r
				}
				end += j + 1
			}
			return -1
		}
		for end := pos; ; {
			if r := next(end); r >= 0 {
				return r
			}
			if end == len(line) || line[end] == '\n' {
				return -1
			}
			end += runeLen(line[end:])
		}
	case 'p', 'x', 'l', 'P':
		run := digits(line[pos:])
		least := 1
		if n.esc == 'P' {
			least = 0
		}
		for k := run; k >= least; k-- {
			if r := next(pos + k); r >= 0 {
				return r
			}
		}
		return -1
	case 'e':
		if len(line)-pos < 5 {
			return -1
		}
		for _, c := range []byte(line[pos : pos+5]) {
			if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
				return -1
			}
		}
		return next(pos + 5)
	case 'c':
		// [0-9a-f]+\.[0-9a-f]+: the first run cannot hold the dot, so it
		// ends there; the second is tried longest first.
		a := hexes(line[pos:])
		if a == 0 || pos+a >= len(line) || line[pos+a] != '.' {
			return -1
		}
		at := pos + a + 1
		for k := hexes(line[at:]); k >= 1; k-- {
			if r := next(at + k); r >= 0 {
				return r
			}
		}
		return -1
	case 'n':
		// \d+\.\d{3}
		a := digits(line[pos:])
		for k := a; k >= 1; k-- {
			at := pos + k
			if at+4 <= len(line) && line[at] == '.' && digits(line[at+1:at+4]) == 3 {
				if r := next(at + 4); r >= 0 {
					return r
				}
			}
		}
		return -1
	case 't', 's', 'm':
		// A date and time, with milliseconds for %m, then an optional
		// zone (a space and anything but spaces), as long as can be
		// first.
		end := pos + len("2006-01-02 15:04:05")
		if end > len(line) || !dateTime(line[pos:end]) {
			return -1
		}
		if n.esc == 'm' {
			if end+4 > len(line) || line[end] != '.' || digits(line[end+1:end+4]) != 3 {
				return -1
			}
			end += 4
		}
		if end < len(line) && line[end] == ' ' {
			// The zone's possible ends, longest first: up to the next
			// space.
			zone := end + 1
			last := zone + strings.IndexAny(line[zone:], " \n")
			if last < zone {
				last = len(line)
			}
			if n.follow != "" {
				for k := last; k >= zone; k-- {
					j := strings.LastIndex(line[zone:min(k+len(n.follow), len(line))], n.follow)
					if j < 0 {
						break
					}
					if r := next(zone + j); r >= 0 {
						return r
					}
					k = zone + j
				}
			} else {
				var room [64]int
				ends := room[:0]
				for k := zone; ; {
					ends = append(ends, k)
					if k == last {
						break
					}
					k += runeLen(line[k:])
				}
				for k := len(ends) - 1; k >= 0; k-- {
					if r := next(ends[k]); r >= 0 {
						return r
					}
				}
			}
		}
		return next(end)
	}
	return -1
}

// runeLen is the length of the character s starts with, as the regexp
// package steps: an invalid byte is one.
func runeLen(s string) int {
	if s[0] < utf8.RuneSelf {
		return 1
	}
	_, n := utf8.DecodeRuneInString(s)
	return n
}

func digits(s string) int {
	k := 0
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	return k
}

func hexes(s string) int {
	k := 0
	for k < len(s) && (s[k] >= '0' && s[k] <= '9' || s[k] >= 'a' && s[k] <= 'f') {
		k++
	}
	return k
}

// dateTime says whether s is "dddd-dd-dd dd:dd:dd".
func dateTime(s string) bool {
	for i := 0; i < len(s); i++ {
		switch i {
		case 4, 7:
			if s[i] != '-' {
				return false
			}
		case 10:
			if s[i] != ' ' {
				return false
			}
		case 13, 16:
			if s[i] != ':' {
				return false
			}
		default:
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
	}
	return true
}

// severityList is severities as a list.
var severityList = strings.Split(strings.ReplaceAll(severities, "DEBUG[1-5]", "DEBUG1|DEBUG2|DEBUG3|DEBUG4|DEBUG5"), "|")
