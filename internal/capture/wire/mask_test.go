package wire

import (
	"strings"
	"testing"
	"time"
)

// The wire capture masks passwords as its server reads them: PostgreSQL's
// E'...' and dollar quotes, MySQL's backslash escapes (issue 46 found
// 'xxxxx'rest' there) and SET PASSWORD FOR, MASTER_PASSWORD.
func TestPasswordFormsMasked(t *testing.T) {
	check := func(rec *Recorder, secrets ...string) {
		t.Helper()
		c := rec.Capture()
		for _, text := range c.Texts {
			for _, s := range secrets {
				if strings.Contains(text, s) {
					t.Errorf("%q left in %q", s, text)
				}
			}
			if !strings.Contains(text, "xxxxx") {
				t.Errorf("not masked: %q", text)
			}
		}
		if len(c.Texts) != 2 {
			t.Errorf("texts %q", c.Texts)
		}
	}

	pg := NewRecorder("test")
	s := pg.Open("a")
	at := time.Now()
	s.FromClient(startup(protocol3, "user", "u"), at)
	for _, q := range []string{`ALTER ROLE app PASSWORD E'it\'s s3cret'`, `ALTER ROLE app PASSWORD $pw$hunter$$22$pw$`} {
		s.FromClient(wire(nil).msg('Q', str(q)), at)
		s.FromServer(wire(nil).msg('C', str("ALTER ROLE")).msg('Z', []byte("I")), at)
	}
	check(pg, "s3cret", "hunter")

	my := NewRecorder("test")
	my.MySQL = true
	x := my.openMidstream("10.0.0.2:40000", at)
	pkt := func(seq byte, payload ...byte) []byte {
		return append([]byte{byte(len(payload)), byte(len(payload) >> 8), 0, seq}, payload...)
	}
	for _, q := range []string{`CREATE USER 'app'@'%' IDENTIFIED BY 'it\'s s3cret'`, `CHANGE MASTER TO MASTER_PASSWORD='hunter22'`} {
		x.FromClient(pkt(0, append([]byte{comQuery}, q...)...), at)
		x.FromServer(pkt(1, 0, 0, 0, 2, 0, 0, 0), at)
	}
	x.Close(at)
	check(my, "s3cret", "hunter22")
}
