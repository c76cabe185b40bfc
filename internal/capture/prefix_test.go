package capture

import (
	"testing"
	"time"
)

func TestPrefix(t *testing.T) {
	utc := func(ms int) time.Time { return time.Date(2024, 5, 20, 10, 0, 0, ms*1e6, time.UTC) }
	for _, tc := range []struct {
		prefix  string
		line    string
		want    prefixMatch
		nomatch bool
	}{
		{
			prefix: DefaultPrefix,
			line:   "2024-05-20 10:00:00.123 UTC [42] 664b1f10.2a 22012 user=a b db=c@d app=x LOG: y ERROR:  division by zero",
			want: prefixMatch{time: utc(123), pid: 42, session: "664b1f10.2a", state: "22012", user: "a b", db: "c@d",
				app: "x LOG: y", severity: "ERROR", rest: "division by zero"},
		},
		{
			// %q: processes that are not sessions stop there.
			prefix: DefaultPrefix,
			line:   "2024-05-20 10:00:00.001 UTC [7] LOG:  checkpoint starting: time",
			want:   prefixMatch{time: utc(1), pid: 7, severity: "LOG", rest: "checkpoint starting: time"},
		},
		{
			prefix: DefaultPrefix,
			line:   "2024-05-20 10:00:00.001 UTC [7] 664b1f10.7 00000 user=[unknown] db=[unknown] app=[unknown] LOG:  connection received: host=[local]",
			want:   prefixMatch{time: utc(1), pid: 7, session: "664b1f10.7", state: "00000", severity: "LOG", rest: "connection received: host=[local]"},
		},
		{
			prefix: "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",
			line:   "2024-05-20 10:00:00 UTC [9]: [3-1] user=u,db=d,app=psql,client=10.0.0.9 STATEMENT:  select 1",
			want:   prefixMatch{time: utc(0), pid: 9, user: "u", db: "d", app: "psql", host: "10.0.0.9", severity: "STATEMENT", rest: "select 1"},
		},
		{
			// Padding, %r, %n, %b, and the pid from the session id.
			prefix: "%n|%c|%-10u|%10d|%r|%b|%x|%v|%i|%P|%s|%Z %% ",
			line:   "1716199200.250|664b1f10.2b|bob       |      shop|10.0.0.1(5432)|client backend|0|3/7|idle in transaction||2024-05-20 09:00:00 UTC| % LOG:  statement: x",
			want: prefixMatch{time: utc(250), pid: 43, session: "664b1f10.2b", user: "bob", db: "shop", host: "10.0.0.1",
				backend: "client backend", severity: "LOG", rest: "statement: x"},
		},
		{
			prefix: "%m %p ",
			line:   "2024-05-20 13:00:00.000 +03 12 DETAIL:  parameters: $1 = '1'",
			want:   prefixMatch{time: utc(0), pid: 12, severity: "DETAIL", rest: "parameters: $1 = '1'"},
		},
		{
			prefix: "%m %p ",
			line:   "2024-05-20 06:30:00.000 -03:30 12 LOG:  x",
			want:   prefixMatch{time: utc(0), pid: 12, severity: "LOG", rest: "x"},
		},
		{prefix: "%m %p ", line: "2024-05-20 10:00:00.000 UTC 12 LOG: one space", nomatch: true},
		{prefix: "%m %p ", line: "2024-13-20 10:00:00.000 UTC 12 LOG:  bad month", nomatch: true},
		{prefix: "%m [%p] ", line: "\tcontinuation", nomatch: true},
	} {
		px, err := compilePrefix(tc.prefix)
		if err != nil {
			t.Fatalf("%q: %v", tc.prefix, err)
		}
		got, ok := px.match(tc.line, newClock())
		if ok == tc.nomatch {
			t.Errorf("%q on %q: matched %v", tc.prefix, tc.line, ok)
			continue
		}
		if ok && (!got.time.Equal(tc.want.time) || got.pid != tc.want.pid || got.session != tc.want.session || got.user != tc.want.user ||
			got.db != tc.want.db || got.app != tc.want.app || got.host != tc.want.host || got.backend != tc.want.backend ||
			got.state != tc.want.state || got.severity != tc.want.severity || got.rest != tc.want.rest) {
			t.Errorf("%q on %q:\n got %+v\nwant %+v", tc.prefix, tc.line, got, tc.want)
		}
	}
}

func TestClockZones(t *testing.T) {
	c := newClock()
	a, ok1 := c.parse("2024-05-20 10:00:00.5 CEST")
	b, ok2 := c.parse("2024-05-20 10:00:00 GMT")
	if !ok1 || !ok2 || !a.Equal(b.Add(500*time.Millisecond)) || !c.unknown["CEST"] || c.unknown["GMT"] {
		t.Errorf("CEST %v %v, GMT %v %v, unknown %v", a, ok1, b, ok2, c.unknown)
	}
	for _, bad := range []string{"", "2024-05-20", "2024-05-20 10:00:00.", "2024-05-20 10:00:00 +3", "2024-05-20 10:00:00  UTC", "2024-05-20 25:00:00 UTC", "2024-05-20 10:00:00 U-C"} {
		if _, ok := c.parse(bad); ok {
			t.Errorf("parsed %q", bad)
		}
	}
	if tm, ok := epoch("1716199200.250"); !ok || !tm.Equal(time.Date(2024, 5, 20, 10, 0, 0, 250e6, time.UTC)) {
		t.Errorf("epoch: %v", tm)
	}
	for _, bad := range []string{"", "x", "-1.000", "1.+5", "1.2.3"} {
		if _, ok := epoch(bad); ok {
			t.Errorf("epoch parsed %q", bad)
		}
	}
}

func TestMessages(t *testing.T) {
	d, rest, ok := cutDuration("duration: 1101.626 ms  statement: select 1")
	if !ok || d != 1101626*time.Microsecond || rest != "statement: select 1" {
		t.Errorf("cutDuration: %v %q %v", d, rest, ok)
	}
	for _, bad := range []string{"duration: x ms", "duration: -1 ms", "duration: 1 ms statement", "duration: 1e300 ms", "duration: NaN ms"} {
		if _, _, ok := cutDuration(bad); ok {
			t.Errorf("cutDuration(%q) ok", bad)
		}
	}
	for msg, want := range map[string]protocolStep{
		"execute <unnamed>: select 1":          {"execute", unnamed, "select 1"},
		"execute S_1/C_2: select $1":           {"execute", "S_1", "select $1"},
		"execute fetch from S_1/C_2: select 2": {"fetch", "S_1", "select 2"},
		"parse P_0: BEGIN;":                    {"parse", "P_0", "BEGIN;"},
		"bind <unnamed>: a: b":                 {"bind", unnamed, "a: b"},
		"execute x:":                           {"execute", "x", ""},
	} {
		if got, ok := cutStep(msg); !ok || got != want {
			t.Errorf("cutStep(%q) = %+v %v", msg, got, ok)
		}
	}
	for _, bad := range []string{"execute", "executor: x", "parse : x", "bind nocolon"} {
		if _, ok := cutStep(bad); ok {
			t.Errorf("cutStep(%q) ok", bad)
		}
	}
	for list, want := range map[string][]string{
		"$1 = '1', $2 = NULL":             {"'1'", "NULL"},
		"$1 = 'a'', $2 = ''b'":            {"'a', $2 = 'b'"},
		"$1 = ''''":                       {"'''"},
		"$1 = 'x'\nPL/pgSQL function f()": {"'x'"},
	} {
		got, _, ok := parseParams(list, -1)
		if !ok || len(got) != len(want) {
			t.Errorf("parseParams(%q) = %q %v", list, paramStrings(got), ok)
			continue
		}
		for i := range want {
			if paramStrings(got)[i] != want[i] {
				t.Errorf("parseParams(%q) = %q", list, paramStrings(got))
			}
		}
	}
	for _, bad := range []string{"", "$2 = '1'", "$1 = 1", "$1 = 'x", "$1 = 'x' $2 = 'y'", "$1 = NULL, "} {
		if _, _, ok := parseParams(bad, -1); ok {
			t.Errorf("parseParams(%q) ok", bad)
		}
	}
	for _, tc := range []struct {
		v   string
		max int
		cut bool
	}{
		{"abc...", 0, true}, {"abc", 0, false}, {"abc...", -1, false}, {"abc...", 3, true}, {"abcd...", 3, false}, {"ab...", 3, true}, {"a...", 5, false},
		{"ééé...", 6, true}, {"ééé...", 7, true}, {"ééé...", 3, false},
	} {
		if got := cutValue(tc.v, tc.max); got != tc.cut {
			t.Errorf("cutValue(%q, %d) = %v", tc.v, tc.max, got)
		}
	}
	f := connFields("user=a b database=c application_name=d e SSL enabled (protocol=TLSv1.3, cipher=x, bits=256)", "user", "database", "application_name")
	if f["user"] != "a b" || f["database"] != "c" || f["application_name"] != "d e" {
		t.Errorf("connFields: %q", f)
	}
	if got := cutPosition(`relation "x at character 3" does not exist at character 15`); got != `relation "x at character 3" does not exist` {
		t.Errorf("cutPosition: %q", got)
	}
	if hostOf("::1:5432") != "::1" || hostOf("[local]") != "[local]" || hostOf("10.0.0.1:5432") != "10.0.0.1" || hostOf("db.example") != "db.example" {
		t.Errorf("hostOf")
	}
}
