package engine

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// wireAnswer is a server that reads one command and answers it with
// packets (their sequence numbers from 1, or as given by seq).
func wireAnswer(t *testing.T, seq func(i int) byte, packets ...[]byte) *myWire {
	t.Helper()
	var stream []byte
	for i, p := range packets {
		s := byte(i + 1)
		if seq != nil {
			s = seq(i)
		}
		stream = append(append(stream, byte(len(p)), byte(len(p)>>8), byte(len(p)>>16), s), p...)
	}
	return wireStream(t, stream)
}

// wireStream is a server that reads one command, answers it with stream
// and closes the connection.
func wireStream(t testing.TB, stream []byte) *myWire {
	t.Helper()
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	go func() {
		defer server.Close()
		var h [4]byte
		if _, err := io.ReadFull(server, h[:]); err != nil {
			return
		}
		if _, err := io.ReadFull(server, make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16)); err != nil {
			return
		}
		server.Write(stream)
	}()
	c := &myWire{conn: countedConn{Conn: client, n: &netCounts{}}}
	c.start()
	t.Cleanup(c.done)
	if err := c.send(append(make([]byte, myHeader), "SELECT"...)); err != nil {
		t.Fatal(err)
	}
	return c
}

// Whatever the server sends, the reader ends with a result or an error,
// and never panics.
func FuzzMyWire(f *testing.F) {
	f.Add([]byte{7, 0, 0, 1, 0, 3, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 1, 1, 5, 0, 0, 2, 1, 'a', 5, 0, 0, 3, 0xfe, 0, 0, 8, 0, 2, 0, 0, 4, 1, '7'})
	f.Add([]byte{1, 0, 0, 1, 2, 30, 0, 0, 2, 3, 'd', 'e', 'f', 0, 1, 't', 1, 't', 1, 'a', 1, 'a', 0x0c, 45, 0, 0, 1, 0, 0, 3, 0x20, 0, 0, 0, 0, 11, 0, 0, 3, 0xfc, 9, 0})
	f.Add([]byte{9, 0, 0, 1, 0xff, 0x25, 0x05, '#', '7', '0', '1', '0', '0'})
	f.Fuzz(func(t *testing.T, stream []byte) {
		c := wireStream(t, stream)
		for range 64 {
			rows, _, err := c.result()
			if err != nil {
				return
			}
			for rows && c.next() {
				var v any
				for i := range c.fields {
					c.scan(i, &v)
				}
			}
			if c.err != nil || !c.more {
				return
			}
		}
	})
}

// column is a column definition packet of type typ.
func column(name string, typ byte) []byte {
	var p []byte
	for _, s := range []string{"def", "db", "t", "t", name, name} {
		p = append(append(p, byte(len(s))), s...)
	}
	return append(p, 0x0c, 45, 0, 0, 1, 0, 0, typ, 0, 0, 0, 0, 0)
}

// The answers of servers without CLIENT_DEPRECATE_EOF (EOF packets after
// the columns and the rows), and with it (an OK with 0xfe ending the
// rows), read alike; values of each length encoding, NULL; an error
// mid-rows; a packet out of sequence.
func TestMyWirePackets(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("l", 300) // a length in 3 bytes (0xfc)
	row := append([]byte{1, '7', 0xfb, 0xfc, byte(len(long)), byte(len(long) >> 8)}, long...)
	eof := func(status byte) []byte { return []byte{0xfe, 0, 0, status, 0} }
	okFE := func(status byte) []byte { return []byte{0xfe, 0, 0, status, 0, 0, 0} }
	ok := []byte{0x00, 3, 0, 0, 0, 0, 0}
	cols := [][]byte{{3}, column("a", 3), column("b", 253), column("c", 253)}

	for _, tc := range []struct {
		name    string
		packets [][]byte
		eofMode int8
	}{
		{"EOF packets", append(append(cols, eof(0)), row, row, eof(statusMoreResults), ok), 2},
		{"CLIENT_DEPRECATE_EOF", append(append(cols[:4:4], row), row, okFE(statusMoreResults), ok), 1},
	} {
		c := wireAnswer(t, nil, tc.packets...)
		rows, _, err := c.result()
		if err != nil || !rows || len(c.cols) != 3 {
			t.Fatalf("%s: result %v %v, %d columns", tc.name, rows, err, len(c.cols))
		}
		n := 0
		for c.next() {
			var a int64
			var b *string
			var s string
			if err := c.Scan(&a, &b, &s); err != nil || a != 7 || b != nil || s != long {
				t.Errorf("%s: row %d: %v %d %v %d bytes", tc.name, n, err, a, b, len(s))
			}
			n++
		}
		if c.err != nil || n != 2 || !c.more || c.ended || c.eof != tc.eofMode {
			t.Errorf("%s: %d rows, %v, more %v, ended %v, eof mode %d", tc.name, n, c.err, c.more, c.ended, c.eof)
		}
		if rows, affected, err := c.result(); rows || affected != 3 || err != nil || !c.ended {
			t.Errorf("%s: the OK after: %v %d %v, ended %v", tc.name, rows, affected, err, c.ended)
		}
	}

	// The server's error after a row: the rows end with it, the answer too.
	c := wireAnswer(t, nil, cols[0], cols[1], cols[2], cols[3], row, append([]byte{0xff, 0x25, 0x05, '#'}, "70100query interrupted"...))
	if rows, _, err := c.result(); !rows || err != nil {
		t.Fatal(rows, err)
	}
	n := 0
	for c.next() {
		n++
	}
	var me *mysql.MySQLError
	if !errors.As(c.err, &me) || me.Number != 1317 || string(me.SQLState[:]) != "70100" || me.Message != "query interrupted" || n != 1 || !c.ended || c.drain() == nil {
		t.Errorf("an error after a row: %v (%+v) after %d rows, ended %v", c.err, me, n, c.ended)
	}

	// Lengths past their packet's end, in a column's definition and in a
	// row (an 8-byte length of 2^64-1): the answer cannot be followed,
	// nothing panics.
	c = wireAnswer(t, nil, []byte{1}, []byte{3, 'd', 'e', 'f', 200, 'x'})
	if _, _, err := c.result(); !errors.Is(err, errWire) {
		t.Errorf("a column's name past its packet: %v", err)
	}
	c = wireAnswer(t, nil, []byte{1}, column("a", 253), eof(0), []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'x', 'y'})
	if rows, _, err := c.result(); !rows || err != nil {
		t.Fatal(rows, err)
	}
	if c.next() || !errors.Is(c.err, errWire) {
		t.Errorf("a value's length past its packet: %v", c.err)
	}

	// A packet out of sequence: the answer cannot be followed.
	c = wireAnswer(t, func(i int) byte { return byte(2 * (i + 1)) }, ok)
	if _, _, err := c.result(); !errors.Is(err, errWire) || c.ended {
		t.Errorf("a packet out of sequence: %v, ended %v", err, c.ended)
	}
}
