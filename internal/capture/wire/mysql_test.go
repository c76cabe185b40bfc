package wire

import (
	"encoding/binary"
	"testing"
)

// Executions' values go into the text where its placeholders are, not
// into quotes or comments, as the general log writes them.
func TestInterpolate(t *testing.T) {
	got := interpolate("SELECT '?', `a?`, \"?\" /* ? */ FROM t WHERE a = ? AND b = ? -- ?\n AND c = ?",
		[]string{"1", "'x\\'y'", "NULL"})
	want := "SELECT '?', `a?`, \"?\" /* ? */ FROM t WHERE a = 1 AND b = 'x\\'y' -- ?\n AND c = NULL"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// Binary parameters by type: signed and unsigned integers, doubles,
// strings (quoted and escaped, or hex when not UTF-8), dates.
func TestMyValues(t *testing.T) {
	le := func(n int, v uint64) []byte {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, v)
		return b[:n]
	}
	for _, tc := range []struct {
		typ  uint16
		raw  []byte
		want string
	}{
		{0x01, []byte{0xff}, "-1"},
		{0x01 | 0x8000, []byte{0xff}, "255"},
		{0x03, le(4, 0xfffffffe), "-2"},
		{0x08, le(8, 1<<40), "1099511627776"},
		{0x05, le(8, 0x3ff8000000000000), "1.5"},
		{0xfe, append([]byte{5}, "a'b\n"...), ""}, // lenenc 5 but 4 bytes: bad
		{0xfd, append([]byte{4}, "a'b\n"...), `'a\'b\n'`},
		{0xfc, []byte{2, 0xff, 0xfe}, "X'fffe'"},
		{0x0a, []byte{4, 0xea, 0x07, 11, 26}, "'2026-11-26'"},
		{0x0c, []byte{7, 0xea, 0x07, 11, 26, 12, 30, 5}, "'2026-11-26 12:30:05'"},
	} {
		r := &msg{b: tc.raw}
		got, ok := myValue(r, tc.typ)
		if tc.want == "" {
			if ok && !r.bad {
				t.Errorf("type %x % x: %q, want a failure", tc.typ, tc.raw, got)
			}
			continue
		}
		if !ok || got != tc.want {
			t.Errorf("type %x % x: %q, want %q", tc.typ, tc.raw, got, tc.want)
		}
	}
}

// The server's greeting loses its own TLS on its way to the client, and
// offers the proxy's when it has a certificate.
func TestGreetingSSL(t *testing.T) {
	payload := []byte{10}
	payload = append(payload, "10.11.19-MariaDB\x00"...)
	payload = append(payload, 1, 0, 0, 0)         // thread id
	payload = append(payload, "12345678\x00"...)  // salt, filler
	payload = append(payload, 0xfe, 0xff|0x08, 8) // capabilities (SSL set), charset
	pkt := append([]byte{byte(len(payload)), 0, 0, 0}, payload...)
	i := 4 + 1 + len("10.11.19-MariaDB") + 1 + 4 + 9
	for _, on := range []bool{false, true, false} {
		if !greetingSSL(pkt, on) {
			t.Fatal("greeting not recognised")
		}
		caps := binary.LittleEndian.Uint16(pkt[i:])
		if (caps&mySSL != 0) != on || caps&0x07fe != 0x07fe {
			t.Errorf("TLS %v: capabilities %x", on, caps)
		}
	}
	if greetingSSL(pkt[:i], true) {
		t.Error("a greeting cut before its capabilities was changed")
	}
}
