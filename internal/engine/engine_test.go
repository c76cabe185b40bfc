package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url     string
		dialect Dialect
		shown   string
	}{
		{"", SQLite, "sqlite://dbparity-data/dbparity.db"},
		{"sqlite:///tmp/x.db", SQLite, "sqlite:///tmp/x.db"},
		{"sqlite://rel/x.db?_synchronous=NORMAL", SQLite, "sqlite://rel/x.db"},
		{"postgres://bench@db1:5432/bench", Postgres, "postgres://bench@db1:5432/bench"},
		{"postgresql://bench:s3cret@db1/bench", Postgres, "postgresql://bench:xxxxx@db1/bench"},
		{"postgres://bench@/bench?host=/var/run/postgresql&password=s3cret", Postgres, "postgres://bench@/bench?host=/var/run/postgresql&password=xxxxx"},
		{"host=/var/run/postgresql user=bench password=s3cret dbname=bench", Postgres, "host=/var/run/postgresql user=bench password=xxxxx dbname=bench"},
		{"  dbname=bench password = 'a b\\' c'", Postgres, "  dbname=bench password = 'xxxxx'"},
		{"POSTGRESQL://bench:s3cret@db1/bench", Postgres, "POSTGRESQL://bench:xxxxx@db1/bench"},
		{"file:rel/x.db", SQLite, "sqlite://rel/x.db"},
		{"mysql://bench:s3cret@db1/bench?tls=true", MySQL, "mysql://bench:xxxxx@db1/bench?tls=true"},
	} {
		tg, err := Open(tc.url)
		if err != nil {
			t.Errorf("Open(%q): %v", tc.url, err)
			continue
		}
		if tg.Dialect != tc.dialect || tg.URL != tc.shown {
			t.Errorf("Open(%q) = %v %q, want %v %q", tc.url, tg.Dialect, tg.URL, tc.dialect, tc.shown)
		}
		tg.Close()
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"db1:5432", "oracle://x", "mysql://root:pw@h", "sqlite://", "postgres://u:pw@h:notaport/db", "sqlite://x.db?%zz"} {
		_, err := Open(u)
		if err == nil {
			t.Errorf("Open(%q) succeeded", u)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(msg, ":pw@") {
			t.Errorf("Open(%q): error %q is not one safe line", u, msg)
		}
	}
}

// Targets the driver cannot read are refused with the problem named and
// the target shown redacted: neither pgx's message (which quotes the part
// it could not read) nor the input reaches the error. hunter2 and its
// halves are the password, or where a mistyped password lands.
func TestOpenErrorsHidePasswords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ target, shown, problem string }{
		{"postgres://u:hunter2@h:99999999/db", "postgres://u:xxxxx@h:99999999/db", "port is out of range"},
		{"postgres://u:hunter2@h:notaport/db", "postgres://u:xxxxx@h:xxxxx/db", "port is not a number"},
		{"postgres://u:hun%zzter2@h/db", "postgres://u:xxxxx@h/db", "percent escape"},
		{"postgres://u:hun ter2@h/db", "postgres://u:xxxxx@h/db", "space"},
		{"postgres://u:hun/ter2@h/db", "postgres://xxxxx@h/db", "percent-encode @ as %40 and / as %2F"},
		{"postgres://u:hun@ter2@h/db", "postgres://xxxxx@h/db", "percent-encode @ as %40"},
		{"postgres://u:hun:ter2/x@h:5432/db", "postgres://xxxxx@h:5432/db", "percent-encode"},
		{"postgres://u@h/db?password=hun&ter2&sslmode=disable", "postgres://u@h/db?password=xxxxx&sslmode=disable", "has no \"=\""},
		{"postgres://u@h/db?password=hun=ter2", "postgres://u@h/db?password=xxxxx", "two \"=\""},
		{"postgres://u@h/db?sslpassword=hun%zzter2", "postgres://u@h/db?sslpassword=xxxxx", "percent escape"},
		{"host=/tmp user=u password=hunter2 dbname=d port=99999999", "host=/tmp user=u password=xxxxx dbname=d port=99999999", "invalid port"},
		{"host=/tmp user=u password = 'hunter2", "host=/tmp user=u password = 'xxxxx", "no closing quote"},
		{"host=/tmp user=u password=hun ter2 dbname=d", "host=/tmp user=u password=xxxxx xxxxx dbname=d", "quote a value"},
		{"host=/tmp user=u password=hun ter2", "host=/tmp user=u password=xxxxx xxxxx", "quote a value"},
		{"host=h password=hunter2 sslmode=sometimes", "host=h password=xxxxx sslmode=sometimes", "sslmode"},
		{"host=/tmp password=hunter2 = x", "host=/tmp password=xxxxx = x", "without a keyword"},
	} {
		_, err := Open(tc.target)
		if err == nil {
			t.Errorf("Open(%q) succeeded", tc.target)
			continue
		}
		msg := err.Error()
		want := fmt.Sprintf("target %q: ", tc.shown)
		if !strings.HasPrefix(msg, want) || !strings.Contains(msg, tc.problem) || strings.Contains(msg, "\n") {
			t.Errorf("Open(%q): %q, want one line %s... naming %q", tc.target, msg, want, tc.problem)
		}
		for _, part := range []string{"hunter2", "hun", "ter2"} {
			if strings.Contains(msg, part) {
				t.Errorf("Open(%q): %q shows %q", tc.target, msg, part)
			}
		}
	}
	// A postgres: target without // has no structure to mask by: only its
	// scheme is shown.
	_, err := Open("postgres:u:hunter2@h/db?password=hunter2")
	if err == nil || err.Error() != "target postgres:...: write postgres://USER@HOST:PORT/DB" {
		t.Errorf("postgres: without //: %v", err)
	}
}

// Redaction masks the password's position, so a password that equals the
// user, the database, "postgres" or "1" is masked there and nowhere else.
func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		// URL: user info and password parameters.
		{"postgres://bench:bench@db1/bench", "postgres://bench:xxxxx@db1/bench"},
		{"postgres://postgres:postgres@/postgres?host=/tmp", "postgres://postgres:xxxxx@/postgres?host=/tmp"},
		{"postgres://u1:1@h:1/d1?connect_timeout=1", "postgres://u1:xxxxx@h:1/d1?connect_timeout=1"},
		{"postgres://app:@h/app", "postgres://app:xxxxx@h/app"},
		{"postgres://app@h/app?password=app&sslmode=disable", "postgres://app@h/app?password=xxxxx&sslmode=disable"},
		{"postgres://app@h/app?pass%77ord=app&sslpassword=k&db_password=z", "postgres://app@h/app?pass%77ord=xxxxx&sslpassword=xxxxx&db_password=xxxxx"},
		{"postgresql://u:p%40ss@[::1]:5432,h2/db", "postgresql://u:xxxxx@[::1]:5432,h2/db"},
		{"postgres://u:pa?ss@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u:p@h/db?options=-c%20x@y", "postgres://u:xxxxx@h/db?options=-c%20x@y"},
		{"postgres://db1/bench", "postgres://db1/bench"},
		{"sqlite://u:secret@h/x.db?password=1", "sqlite://u:xxxxx@h/x.db?password=xxxxx"},
		{"sqlite:///tmp/x.db", "sqlite:///tmp/x.db"},
		// Keyword/value: quotes, escapes, spacing.
		{"host=/tmp user=u password=u dbname=u", "host=/tmp user=u password=xxxxx dbname=u"},
		{"host=/tmp user=u password='a b' dbname=d", "host=/tmp user=u password='xxxxx' dbname=d"},
		{`password='it\'s' user=1`, `password='xxxxx' user=1`},
		{`password='it's' user=1`, `password='xxxxx'xxxxx user=1`},
		{`password=a\ b user=u`, `password=xxxxx user=u`},
		{"password = 1\tdbname =1", "password = xxxxx\tdbname =1"},
		{"password= dbname=d", "password= xxxxx"},
		{"password=", "password="},
		{"sslpassword=k password=postgres user=postgres", "sslpassword=xxxxx password=xxxxx user=postgres"},
		{"password_encryption=md5", "password_encryption=md5"},
		{"dbname=postgres", "dbname=postgres"},
		// Neither: unchanged.
		{"run", "run"},
		{"--label", "--label"},
		{"results/native.json", "results/native.json"},
		{"", ""},
	} {
		got := Redact(tc.in)
		if got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if again := Redact(got); again != got {
			t.Errorf("Redact(Redact(%q)) = %q, want %q", tc.in, again, got)
		}
	}
}

// A password equal to another part of the target, or to something any
// target holds, is masked where it stands and the target still opens:
// nothing compares values.
func TestOpenPasswordsLikeOtherParts(t *testing.T) {
	t.Parallel()
	for _, pw := range []string{"bench", "benchdb", "postgres", "1"} {
		for _, tc := range []struct{ target, shown string }{
			{"postgres://bench:" + pw + "@/benchdb?host=/tmp&port=1", "postgres://bench:xxxxx@/benchdb?host=/tmp&port=1"},
			{"postgres://bench@/benchdb?host=/tmp&port=1&password=" + pw, "postgres://bench@/benchdb?host=/tmp&port=1&password=xxxxx"},
			{"host=/tmp port=1 user=bench password=" + pw + " dbname=benchdb", "host=/tmp port=1 user=bench password=xxxxx dbname=benchdb"},
			{"host=/tmp port=1 user=bench password = '" + pw + "' dbname=benchdb", "host=/tmp port=1 user=bench password = 'xxxxx' dbname=benchdb"},
		} {
			tg, err := Open(tc.target)
			if err != nil {
				t.Errorf("Open(%q): %v", tc.target, err)
				continue
			}
			if tg.URL != tc.shown || tg.pgConfig.Password != pw {
				t.Errorf("Open(%q) shows %q, password %q; want %q, %q", tc.target, tg.URL, tg.pgConfig.Password, tc.shown, pw)
			}
			tg.Close()
		}
	}
}

func TestSQLiteSettings(t *testing.T) {
	t.Parallel()
	tg, err := Open("sqlite:///tmp/x.db?_busy_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if tg.Settings["_busy_timeout"] != "5" || tg.Settings["_journal_mode"] != "WAL" {
		t.Errorf("settings %v: want the URL's busy timeout and the default WAL", tg.Settings)
	}
}

func TestRebindNumbered(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"SELECT $1, $2":                   "SELECT ?1, ?2",
		"SELECT '$1' || $1":               "SELECT '$1' || ?1",
		"SELECT 1":                        "SELECT 1",
		"UPDATE t SET a = $12 WHERE b=$3": "UPDATE t SET a = ?12 WHERE b=?3",
	} {
		if got := rebindNumbered(in); got != want {
			t.Errorf("rebindNumbered(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err   error
		name  string
		retry bool
		lost  bool
	}{
		{&pgconn.PgError{Code: "40001"}, "serialization_failure", true, false},
		{fmt.Errorf("new_order: %w", &pgconn.PgError{Code: "40P01"}), "deadlock", true, false},
		{&pgconn.PgError{Code: "23505"}, "sqlstate_23505", false, false},
		{&pgconn.PgError{Code: "57P01"}, "connection", false, true},
		{io.EOF, "connection", false, true},
		{errors.New("boom"), "other", false, false},
	} {
		c := Classify(tc.err)
		if c.Name != tc.name || c.Retry != tc.retry || c.Lost != tc.lost {
			t.Errorf("Classify(%v) = %+v", tc.err, c)
		}
	}
}

// FuzzRedact checks Redact against its own parsers and against pgx's:
// redacting twice changes nothing; every password position of the output
// holds xxxxx; a string pgx reads a password from gives, redacted, xxxxx
// as pgx's password.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"postgres://u:secretpw@h/db", "postgres://u@h/db?password=secretpw", "x", "sqlite:///a",
		"postgres://u:secretpw@h:bad/db", "postgres://u:secretpw@[::1/db", "host=/tmp user=u password=secretpw dbname=d",
		`password = 'a \' b' user=u`, "password=a b c=d", "postgres://u:p/w@h/db?sslpassword=x&y", "sqlite://u:p@h/x?password=1#f",
		"postgres://h/d@b?password=a&b", "dbname=x password='unterminated", "password_encryption=md5 sslpassword=k"} {
		f.Add(s)
	}
	// pgx also reads passwords from the environment and files: the
	// comparison below must see only the string's own.
	f.Setenv("PGPASSWORD", "")
	f.Setenv("PGPASSFILE", os.DevNull)
	f.Setenv("PGSERVICEFILE", os.DevNull)
	f.Setenv("PGSERVICE", "")
	f.Fuzz(func(t *testing.T, s string) {
		out := Redact(s)
		if again := Redact(out); again != out {
			t.Fatalf("Redact(%q) = %q, but Redact of that = %q", s, out, again)
		}
		var p parsed
		secret := isSecretParam
		switch formOf(s) {
		case formPlain:
			if out != s {
				t.Fatalf("Redact(%q) = %q changed a plain string", s, out)
			}
			return
		case formURL:
			return
		case formPostgresURL:
			p = parsePostgresURL(s)
			for _, sp := range parsePostgresURL(out).secrets {
				if v := out[sp.from:sp.to]; v != mask {
					t.Fatalf("Redact(%q) = %q keeps %q in a password position", s, out, v)
				}
			}
		case formKeywordValue:
			p, secret = scanKeywordValue(s), isSecretKeyword
			for _, sp := range scanKeywordValue(out).secrets {
				if v := out[sp.from:sp.to]; v != mask {
					t.Fatalf("Redact(%q) = %q keeps %q in a password position", s, out, v)
				}
			}
		}
		in, err := pgconn.ParseConfig(s)
		if err != nil || in.Password == "" {
			return
		}
		red, err := pgconn.ParseConfig(out)
		switch {
		case err != nil && p.problem == "":
			t.Fatalf("pgx reads %q but not its redaction %q: %v", s, out, err)
		case err != nil:
			return
		case red.Password != mask && (p.problem == "" || red.Password != ""):
			t.Fatalf("Redact(%q) = %q, in which pgx reads the password %q", s, out, red.Password)
		}
		for k, v := range red.RuntimeParams {
			if secret(k) && v != mask && v != "" {
				t.Fatalf("Redact(%q) = %q, in which pgx reads %s=%q", s, out, k, v)
			}
		}
	})
}

func FuzzOpen(f *testing.F) {
	for _, s := range []string{"", "sqlite://x.db", "postgres://u:p@h:1/db?sslmode=disable", "mysql://a", "::", "sqlite://?",
		"host=/tmp user=u password='p w' dbname=d", "postgres:x", "postgres://u@h/db?password=a&b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := Open(s) // must not panic; errors must be one line
		pg := formOf(s) == formPostgresURL || isKeywordValue(s)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n") {
				t.Errorf("Open(%q): multi-line error %q", s, err)
			}
			// The only part of the input a PostgreSQL target's error
			// shows is the target redacted.
			if want := fmt.Sprintf("target %q: ", Redact(s)); pg && !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Open(%q): error %q does not start %s", s, err, want)
			}
			return
		}
		if pg && tg.URL != Redact(s) {
			t.Errorf("Open(%q).URL = %q, want %q", s, tg.URL, Redact(s))
		}
		tg.Close()
	})
}

// OnThisHost decides whether the database host is read from this host's
// /proc, so an address that is not loopback must never count as local.
func TestOnThisHost(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		"sqlite://x.db": true,
		"postgres:///bench?host=/var/run/postgresql": true,
		"host=/tmp dbname=bench":                     true,
		"postgres://localhost/bench":                 true,
		"postgres://127.0.0.1:5433/bench":            true,
		"postgres://127.0.0.53/bench":                true,
		"postgres://[::1]/bench":                     true,
		"postgres://db.example/bench":                false,
		"postgres://192.0.2.10/bench":                false,
		"host=198.51.100.7 dbname=bench":             false,
	} {
		tg, err := Open(raw)
		if err != nil {
			t.Fatalf("Open(%q): %v", raw, err)
		}
		if got := tg.OnThisHost(); got != want {
			t.Errorf("OnThisHost(%q) = %v, want %v", raw, got, want)
		}
	}
}

// openSession opens url and one session on it, both closed when the test
// ends.
func openSession(t *testing.T, url string) Conn {
	t.Helper()
	tg, err := Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	c, err := tg.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
