package wire

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
)

// wire builds protocol messages.
type wire []byte

func (w wire) msg(typ byte, parts ...[]byte) wire {
	var body []byte
	for _, p := range parts {
		body = append(body, p...)
	}
	w = append(w, typ)
	w = binary.BigEndian.AppendUint32(w, uint32(4+len(body)))
	return append(w, body...)
}

func str(s string) []byte { return append([]byte(s), 0) }
func u16(v int) []byte    { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
func u32(v int) []byte    { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func startup(code int, kv ...string) wire {
	body := u32(code)
	for _, s := range kv {
		body = append(body, str(s)...)
	}
	if len(kv) > 0 {
		body = append(body, 0)
	}
	return append(u32(4+len(body)), body...)
}

// A session through SSL refused, simple queries (one failing), and an
// extended pipeline whose second execution fails: the third, before the
// Sync, never ran and is not captured. Binary parameters are decoded by
// their declared types; the rows come from the command tags.
func TestDecode(t *testing.T) {
	rec := NewRecorder("test")
	s := rec.Open("10.0.0.1:5000")
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	s.FromClient(startup(sslRequest), at(0))
	s.FromServer([]byte("N"), at(1))
	s.FromClient(startup(protocol3, "user", "app", "database", "shop", "application_name", "web"), at(2))
	s.FromServer(wire(nil).msg('R', u32(0)).msg('K', u32(4242), u32(7)).msg('Z', []byte("I")), at(3))

	s.FromClient(wire(nil).msg('Q', str("UPDATE t SET a = 1")), at(10))
	s.FromServer(wire(nil).msg('C', str("UPDATE 3")).msg('Z', []byte("I")), at(12))
	s.FromClient(wire(nil).msg('Q', str("SELECT * FROM nope")), at(20))
	s.FromServer(wire(nil).msg('E', []byte("SERROR\x00C42P01\x00Mrelation \"nope\" does not exist\x00\x00")).msg('Z', []byte("I")), at(21))

	// Parse with types int4, int8, bool, text; Bind with binary formats.
	parse := wire(nil).msg('P', str("s1"), str("INSERT INTO t VALUES ($1, $2, $3, $4)"), u16(4), u32(23), u32(20), u32(16), u32(25))
	bind := func(i int) wire {
		var params []byte
		params = append(params, u16(4)...)
		params = append(params, u32(4)...)
		params = append(params, u32(i)...)
		params = append(params, u32(8)...)
		params = append(params, binary.BigEndian.AppendUint64(nil, uint64(1)<<40)...)
		params = append(params, u32(1)...)
		params = append(params, 1)
		params = append(params, u32(2)...)
		params = append(params, []byte("hi")...)
		return wire(nil).msg('B', str(""), str("s1"), u16(1), u16(1), params, u16(0))
	}
	exec := wire(nil).msg('E', str(""), u32(0))
	pipeline := append(append(append(append(append(append(parse, bind(1)...), exec...), bind(2)...), exec...), bind(3)...), exec...)
	pipeline = pipeline.msg('S')
	s.FromClient(pipeline, at(30))
	s.FromServer(wire(nil).msg('1').msg('2').msg('C', str("INSERT 0 1")).msg('2').
		msg('E', []byte("SERROR\x00C23505\x00Mduplicate key\x00\x00")).msg('Z', []byte("E")), at(33))
	s.FromClient(wire(nil).msg('X'), at(40))
	s.Close(at(40))

	c := rec.Capture()
	if len(c.Sessions) != 1 {
		t.Fatalf("%d sessions", len(c.Sessions))
	}
	ss := c.Sessions[0]
	if ss.User != "app" || ss.Database != "shop" || ss.Application != "web" || ss.PID != 4242 || ss.Host != "10.0.0.1:5000" {
		t.Errorf("session %+v", ss)
	}
	if len(ss.Statements) != 4 {
		t.Fatalf("%d statements, want 2 simple and 2 executions", len(ss.Statements))
	}
	st := ss.Statements
	if c.Texts[st[0].Text] != "UPDATE t SET a = 1" || st[0].Rows == nil || *st[0].Rows != 3 || st[0].Duration != 2*time.Millisecond {
		t.Errorf("first: %+v", st[0])
	}
	if st[1].Error == nil || st[1].Error.SQLState != "42P01" || st[1].Rows != nil {
		t.Errorf("second: %+v", st[1])
	}
	ins := st[2]
	got := []string{}
	for _, p := range ins.Params {
		got = append(got, *p)
	}
	if !ins.Extended || ins.Prepared != "s1" || strings.Join(got, ",") != "1,1099511627776,true,hi" || *ins.Rows != 1 ||
		len(ins.Types) != 4 || ins.Types[0] != 23 {
		t.Errorf("insert: %+v params %q", ins, got)
	}
	if st[3].Error == nil || st[3].Error.SQLState != "23505" || *st[3].Params[0] != "2" {
		t.Errorf("failed insert: %+v", st[3])
	}
	if st[2].Seq >= st[3].Seq || st[0].Offset != 8*time.Millisecond { // from the session's start
		t.Errorf("order: %d %d, first offset %v", st[2].Seq, st[3].Seq, st[0].Offset)
	}
}

// An encrypted session is counted, not decoded; dbparity's own sessions
// are left out and counted.
func TestTLSAndOwn(t *testing.T) {
	rec := NewRecorder("test")
	at := time.Now()
	tls := rec.Open("a")
	tls.FromClient(startup(sslRequest), at)
	tls.FromServer([]byte("S\x16\x03\x01garbage"), at)
	own := rec.Open("b")
	own.FromClient(startup(protocol3, "user", "u", "application_name", "dbparity-collector"), at)
	own.FromClient(wire(nil).msg('Q', str("SELECT 1")), at)
	own.FromServer(wire(nil).msg('C', str("SELECT 1")).msg('Z', []byte("I")), at)
	c := rec.Capture()
	if len(c.Sessions) != 0 {
		t.Errorf("%d sessions captured", len(c.Sessions))
	}
	var reasons []string
	for _, s := range c.Skipped {
		reasons = append(reasons, s.Reason)
	}
	if j := strings.Join(reasons, "|"); !strings.Contains(j, "TLS sessions") || !strings.Contains(j, "dbparity's own sessions") {
		t.Errorf("skipped %q", reasons)
	}
}

// A length no message can have stops the session's decoding, counted.
func TestBadLength(t *testing.T) {
	rec := NewRecorder("test")
	s := rec.Open("a")
	s.FromClient(startup(protocol3, "user", "u"), time.Now())
	s.FromClient([]byte{'Q', 0, 0, 0, 1}, time.Now())
	if c := rec.Capture(); len(c.Skipped) != 1 || !strings.Contains(c.Skipped[0].Reason, "could not be decoded") {
		t.Errorf("skipped %+v", c.Skipped)
	}
}

// A password given as a literal never reaches the capture: masked, as the
// log reader masks it, and flagged.
func TestPasswordMasked(t *testing.T) {
	rec := NewRecorder("test")
	s := rec.Open("a")
	at := time.Now()
	s.FromClient(startup(protocol3, "user", "u"), at)
	s.FromClient(wire(nil).msg('Q', str("ALTER ROLE app PASSWORD 'hunter2'")), at)
	s.FromServer(wire(nil).msg('C', str("ALTER ROLE")).msg('Z', []byte("I")), at)
	c := rec.Capture()
	if len(c.Texts) != 1 || strings.Contains(c.Texts[0], "hunter2") || !strings.Contains(c.Texts[0], "'xxxxx'") {
		t.Errorf("texts %q", c.Texts)
	}
	flagged := false
	for _, sk := range c.Skipped {
		flagged = flagged || strings.Contains(sk.Reason, "password")
	}
	if !flagged {
		t.Errorf("not flagged: %+v", c.Skipped)
	}
}

// A command tag's rows read in place agree with capture.TagRows.
func TestTagRows(t *testing.T) {
	for _, tag := range []string{"INSERT 0 1", "SELECT 10", "UPDATE 0", "COPY 12345", "BEGIN", "", "SELECT ", "FETCH -1",
		"SELECT 99999999999999999999", "SELECT 1x", "MOVE 123456789012345678"} {
		n, ok := tagRows(append([]byte(tag), 0, 'Z'))
		wn, wok := capture.TagRows(tag)
		if n != wn || ok != wok {
			t.Errorf("%q: %d %v, capture.TagRows %d %v", tag, n, ok, wn, wok)
		}
	}
	if _, ok := tagRows([]byte("SELECT 1")); ok {
		t.Error("a tag without its NUL read")
	}
}
