package wire

import "encoding/binary"

// msg reads a message's fields; bad is set when it ran out.
type msg struct {
	b   []byte
	bad bool
}

func (m *msg) str() string {
	for i, c := range m.b {
		if c == 0 {
			s := string(m.b[:i])
			m.b = m.b[i+1:]
			return s
		}
	}
	m.bad = true
	return ""
}

// strBytes is str in place: the bytes are the message's.
func (m *msg) strBytes() []byte {
	for i, c := range m.b {
		if c == 0 {
			v := m.b[:i]
			m.b = m.b[i+1:]
			return v
		}
	}
	m.bad = true
	return nil
}

func (m *msg) byte() byte {
	if len(m.b) < 1 {
		m.bad = true
		return 0
	}
	c := m.b[0]
	m.b = m.b[1:]
	return c
}

func (m *msg) u16() uint16 {
	if len(m.b) < 2 {
		m.bad = true
		return 0
	}
	v := binary.BigEndian.Uint16(m.b)
	m.b = m.b[2:]
	return v
}

func (m *msg) u32() uint32 {
	if len(m.b) < 4 {
		m.bad = true
		return 0
	}
	v := binary.BigEndian.Uint32(m.b)
	m.b = m.b[4:]
	return v
}

func (m *msg) bytes(n int) []byte {
	if n < 0 || len(m.b) < n {
		m.bad = true
		return nil
	}
	v := m.b[:n]
	m.b = m.b[n:]
	return v
}

// buffer holds one direction's bytes until whole messages are there.
// Bytes written into an empty buffer are read where they are, not
// copied (most segments hold whole messages): release, at the end of
// the call that wrote them, copies what is left of them, a message not
// yet whole.
type buffer struct {
	b    []byte
	lent bool // b is the writer's bytes, valid during its call only
}

func (b *buffer) write(p []byte) {
	if len(b.b) == 0 {
		b.b, b.lent = p, true
		return
	}
	b.release()
	b.b = append(b.b, p...)
}

// release makes the buffer hold its own copy of what is left of the
// writer's bytes; the writer may reuse them after it.
func (b *buffer) release() {
	if !b.lent {
		return
	}
	b.lent = false
	if len(b.b) == 0 {
		b.b = nil
		return
	}
	b.b = append([]byte(nil), b.b...)
}

// message takes a typed message: type, 4-byte length (itself included),
// body; bad when the length cannot be a message's.
func (b *buffer) message() (typ byte, body []byte, ok, bad bool) {
	if len(b.b) < 5 {
		return 0, nil, false, false
	}
	n := int(binary.BigEndian.Uint32(b.b[1:5]))
	if n < 4 || n > maxMessage {
		return 0, nil, false, true
	}
	if len(b.b) < 1+n {
		return 0, nil, false, false
	}
	// The body is the buffer's, or the writer's: valid during the call
	// that wrote it; the decoder copies what it keeps.
	typ, body = b.b[0], b.b[5:1+n]
	b.b = b.b[1+n:]
	if len(b.b) == 0 {
		b.b = nil // let the array go
	}
	return typ, body, true, false
}

// untyped takes a startup-phase message: 4-byte length, body.
func (b *buffer) untyped() (body []byte, ok, bad bool) {
	if len(b.b) < 4 {
		return nil, false, false
	}
	n := int(binary.BigEndian.Uint32(b.b))
	if n < 8 || n > 10000 {
		return nil, false, true
	}
	if len(b.b) < n {
		return nil, false, false
	}
	body = b.b[4:n]
	b.b = b.b[n:]
	return body, true, false
}

func (b *buffer) byte1() (byte, bool) {
	if len(b.b) < 1 {
		return 0, false
	}
	c := b.b[0]
	b.b = b.b[1:]
	return c, true
}
