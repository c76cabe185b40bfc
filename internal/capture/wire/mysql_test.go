package wire

import (
	"encoding/binary"
	"testing"
	"time"
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

// A connection picked up after its handshake does not say whether its
// result sets end in an EOF packet or an OK one (CLIENT_DEPRECATE_EOF):
// the first result set's shape tells, and rows are counted right either
// way, a prepared statement's definitions included.
func TestMyMidstream(t *testing.T) {
	pkt := func(seq byte, payload ...byte) []byte {
		return append([]byte{byte(len(payload)), byte(len(payload) >> 8), 0, seq}, payload...)
	}
	colDef := append([]byte("\x03def"), "\x00\x00\x00\x01a\x00\x0c\x3f\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00"...)
	eof := []byte{0xfe, 0, 0, 2, 0}
	okEnd := []byte{0xfe, 0, 0, 2, 0, 0, 0}
	for _, deprecateEOF := range []bool{false, true} {
		rec := NewRecorder("test")
		rec.MySQL = true
		x := rec.openMidstream("10.0.0.2:40000", time.Now())
		now := time.Now()
		query := func(sql string, answer ...[]byte) {
			x.FromClient(pkt(0, append([]byte{comQuery}, sql...)...), now)
			for _, a := range answer {
				x.FromServer(a, now)
			}
		}
		var set [][]byte
		set = append(set, pkt(1, 1), pkt(2, colDef...))
		if !deprecateEOF {
			set = append(set, pkt(3, eof...))
		}
		set = append(set, pkt(4, 1, '1'), pkt(5, 1, '2'))
		if deprecateEOF {
			set = append(set, pkt(6, okEnd...))
		} else {
			set = append(set, pkt(6, eof...))
		}
		query("SELECT a FROM t", set...)
		query("UPDATE t SET a = 1", pkt(1, 0, 3, 0, 2, 0, 0, 0))
		// A prepared statement with one parameter and one column, then
		// its execution's result.
		prep := [][]byte{pkt(1, 0, 7, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0), pkt(2, colDef...)}
		if !deprecateEOF {
			prep = append(prep, pkt(3, eof...))
		}
		prep = append(prep, pkt(4, colDef...))
		if !deprecateEOF {
			prep = append(prep, pkt(5, eof...))
		}
		x.FromClient(pkt(0, append([]byte{comStmtPrepare}, "SELECT a FROM t WHERE a > ?"...)...), now)
		for _, p := range prep {
			x.FromServer(p, now)
		}
		query("DELETE FROM t", pkt(1, 0, 2, 0, 2, 0, 0, 0))
		x.Close(now)
		c := rec.Capture()
		got := map[string]int64{}
		for _, s := range c.Sessions {
			for _, st := range s.Statements {
				if st.Rows != nil {
					got[c.Texts[st.Text]] = *st.Rows
				}
			}
		}
		want := map[string]int64{"SELECT a FROM t": 2, "UPDATE t SET a = 1": 3, "DELETE FROM t": 2}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("DEPRECATE_EOF %v: %s: %d rows, want %d (all: %v)", deprecateEOF, k, got[k], v, got)
			}
		}
	}
}

// A parameter sent in pieces (COM_STMT_SEND_LONG_DATA) is bound at the
// next execution, whose packet carries no value for it; the one after it
// carries its own again.
func TestMyLongData(t *testing.T) {
	pkt := func(seq byte, payload ...byte) []byte {
		return append([]byte{byte(len(payload)), byte(len(payload) >> 8), 0, seq}, payload...)
	}
	rec := NewRecorder("test")
	rec.MySQL = true
	x := rec.openMidstream("10.0.0.2:40000", time.Now())
	now := time.Now()
	x.FromClient(pkt(0, append([]byte{comStmtPrepare}, "INSERT INTO t VALUES (?, ?)"...)...), now)
	// id 7, no columns, 2 parameters; their definitions, then EOF.
	x.FromServer(pkt(1, 0, 7, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0), now)
	colDef := append([]byte("\x03def"), "\x00\x00\x00\x01?\x00\x0c\x3f\x00\x00\x00\x00\x00\xfd\x80\x00\x00\x00\x00"...)
	x.FromServer(pkt(2, colDef...), now)
	x.FromServer(pkt(3, colDef...), now)
	x.FromServer(pkt(4, 0xfe, 0, 0, 2, 0), now)
	long := func(param byte, data string) []byte {
		return pkt(0, append([]byte{comStmtLong, 7, 0, 0, 0, param, 0}, data...)...)
	}
	x.FromClient(long(1, "it's "), now)
	x.FromClient(long(1, "long"), now)
	// Execute: id, flags, iterations, null bitmap, types bound (int, blob),
	// then only parameter 0's value.
	exec := func(values ...byte) []byte {
		b := []byte{comStmtExecute, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0x03, 0, 0xfc, 0}
		return pkt(0, append(b, values...)...)
	}
	x.FromClient(exec(5, 0, 0, 0), now)
	x.FromServer(pkt(1, 0, 1, 0, 2, 0, 0, 0), now)
	x.FromClient(exec(6, 0, 0, 0, 2, 'h', 'i'), now)
	x.FromServer(pkt(1, 0, 1, 0, 2, 0, 0, 0), now)
	x.Close(now)
	c := rec.Capture()
	var texts []string
	for _, ss := range c.Sessions {
		for _, st := range ss.Statements {
			texts = append(texts, c.Texts[st.Text])
		}
	}
	want := []string{`INSERT INTO t VALUES (5, 'it\'s long')`, `INSERT INTO t VALUES (6, 'hi')`}
	if len(texts) != 2 || texts[0] != want[0] || texts[1] != want[1] {
		t.Errorf("statements %q, want %q", texts, want)
	}
}

// An INSERT's or REPLACE's OK packet gives the first AUTO_INCREMENT value
// it took (its last_insert_id), kept for the replay to give it again:
// text queries and prepared statements' executions alike; the first
// statement's of a multi-statement query; not another statement's (an
// UPDATE calling LAST_INSERT_ID(expr) is answered with expr), nor an
// upsert's that updated a row (its id is the row's), nor one's whose
// client counts rows matched (an unchanged row counts 1 as an insert
// does), nor any upsert's on a connection whose handshake was not seen.
func TestMyInsertID(t *testing.T) {
	pkt := func(seq byte, payload ...byte) []byte {
		return append([]byte{byte(len(payload)), byte(len(payload) >> 8), 0, seq}, payload...)
	}
	// ok is an OK packet: rows affected, last insert id (lenenc), status.
	ok := func(rows byte, id []byte, status byte) []byte {
		return pkt(1, append(append([]byte{0, rows}, id...), status, 0, 0, 0)...)
	}
	for _, tc := range []struct {
		found, known bool // the client's CLIENT_FOUND_ROWS, and whether its handshake was seen
		want         map[string]int64
	}{
		{known: true, want: map[string]int64{"INSERT INTO t (v) VALUES (1)": 42, "/* app */ replace into t (v) values (2)": 300,
			"INSERT INTO t (v) VALUES (3); INSERT INTO t (v) VALUES (4)": 43, "INSERT INTO t (v) VALUES (5)": 44,
			"INSERT INTO t (v) VALUES (6) ON DUPLICATE KEY UPDATE v = 7": 45}},
		{known: true, found: true, want: map[string]int64{"INSERT INTO t (v) VALUES (1)": 42, "/* app */ replace into t (v) values (2)": 300,
			"INSERT INTO t (v) VALUES (3); INSERT INTO t (v) VALUES (4)": 43, "INSERT INTO t (v) VALUES (5)": 44}},
		{want: map[string]int64{"INSERT INTO t (v) VALUES (1)": 42, "/* app */ replace into t (v) values (2)": 300,
			"INSERT INTO t (v) VALUES (3); INSERT INTO t (v) VALUES (4)": 43, "INSERT INTO t (v) VALUES (5)": 44}},
	} {
		rec := NewRecorder("test")
		rec.MySQL = true
		now := time.Now()
		x := rec.openMidstream("10.0.0.2:40000", now)
		x.s.my.capsKnown, x.s.my.foundRows = tc.known, tc.found
		query := func(sql string, answer ...[]byte) {
			x.FromClient(pkt(0, append([]byte{comQuery}, sql...)...), now)
			for _, a := range answer {
				x.FromServer(a, now)
			}
		}
		query("INSERT INTO t (v) VALUES (1)", ok(1, []byte{42}, 2))
		query("/* app */ replace into t (v) values (2)", ok(2, []byte{0xfc, 0x2c, 0x01}, 2))
		query("UPDATE t SET v = LAST_INSERT_ID(v + 1)", ok(1, []byte{9}, 2))
		query("INSERT INTO t (v) VALUES (3); INSERT INTO t (v) VALUES (4)", ok(1, []byte{43}, 2|0x08), ok(1, []byte{44}, 2))
		query("UPDATE t SET v = 0; INSERT INTO t (v) VALUES (4)", ok(1, []byte{0}, 2|0x08), ok(1, []byte{44}, 2))
		query("INSERT INTO t (v) VALUES (6) ON DUPLICATE KEY UPDATE v = 7", ok(1, []byte{45}, 2))
		query("INSERT INTO t (v) VALUES (6) ON DUPLICATE KEY UPDATE v = 8", ok(2, []byte{45}, 2))
		query("INSERT IGNORE INTO t (v) VALUES (6)", ok(0, []byte{0}, 2))
		// A prepared INSERT (id 7, one parameter) and its execution.
		x.FromClient(pkt(0, append([]byte{comStmtPrepare}, "INSERT INTO t (v) VALUES (?)"...)...), now)
		colDef := append([]byte("\x03def"), "\x00\x00\x00\x01?\x00\x0c\x3f\x00\x00\x00\x00\x00\xfd\x80\x00\x00\x00\x00"...)
		for _, p := range [][]byte{pkt(1, 0, 7, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0), pkt(2, colDef...), pkt(3, 0xfe, 0, 0, 2, 0)} {
			x.FromServer(p, now)
		}
		x.FromClient(pkt(0, comStmtExecute, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0x03, 0, 5, 0, 0, 0), now)
		x.FromServer(ok(1, []byte{44}, 2), now)
		x.Close(now)
		c := rec.Capture()
		got := map[string]int64{}
		for _, s := range c.Sessions {
			for _, st := range s.Statements {
				if st.InsertID != 0 {
					got[c.Texts[st.Text]] = st.InsertID
				}
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("found rows %v, handshake seen %v: insert ids %v, want %v", tc.found, tc.known, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("found rows %v, handshake seen %v: %s: insert id %d, want %d", tc.found, tc.known, k, got[k], v)
			}
		}
	}
}
