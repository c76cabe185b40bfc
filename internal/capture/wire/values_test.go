package wire

import (
	"encoding/hex"
	"testing"
)

// Binary parameters come out as the server prints the values: the bytes
// here are what PostgreSQL 15's numeric_send, time_send, interval_send,
// jsonb_send and timestamp_send return for them.
func TestBinaryValues(t *testing.T) {
	for _, c := range []struct {
		typ       uint32
		hex, want string
	}{
		{oidNumeric, "0000000000000000", "0"},
		{oidNumeric, "0002000000000003007b1194", "123.450"},
		{oidNumeric, "0001ffff40000004000c", "-0.0012"},
		{oidNumeric, "00010001000000000001", "10000"},
		{oidNumeric, "0003000100000002270f270f26ac", "99999999.99"},
		{oidNumeric, "00000000c0000000", "NaN"},
		{oidNumeric, "0001fffb000000140001", "0.00000000000000000001"},
		{oidNumeric, "000600040000000104d2162e23340d801ed203e8", "12345678901234567890.1"},
		{oidNumeric, "0001ffff0000000103e8", "0.1"},
		{oidNumeric, "00000000d0000020", "Infinity"},
		{oidNumeric, "00000000f0000020", "-Infinity"},
		{oidNumeric, "00010000000000000007", "7"},
		{oidNumeric, "00010000400000020005", "-5.00"},
		{oidTime, "0000000b187d38e0", "13:14:15.5"},
		{oidInterval, "000000036c966ee0000000030000000e", "14 mons 3 days 14706700000 microseconds"},
		{oidJSONB, "017b2261223a20317d", `{"a": 1}`},
		{oidTimestamp, "7fffffffffffffff", "infinity"},
		{oidTimestamp, "8000000000000000", "-infinity"},
	} {
		raw, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := value(raw, 1, c.typ); !ok || got != c.want {
			t.Errorf("type %d %s: %q, %v; want %q", c.typ, c.hex, got, ok, c.want)
		}
	}
	for _, bad := range []string{"000100", "0002000000000003007b", "00000000abcd0000"} {
		raw, _ := hex.DecodeString(bad)
		if got, ok := value(raw, 1, oidNumeric); ok {
			t.Errorf("numeric %s decoded as %q", bad, got)
		}
	}
}
