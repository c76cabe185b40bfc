package target

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestOpen(t *testing.T) {
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
		{"postgres://bench@/bench?host=/var/run/postgresql&password=s3cret", Postgres, "postgres://bench@/bench?host=%2Fvar%2Frun%2Fpostgresql&password=xxxxx"},
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
	for _, u := range []string{"db1:5432", "oracle://x", "mysql://root@h/db", "sqlite://", "postgres://u:pw@h:notaport/db", "sqlite://x.db?%zz"} {
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

func TestSQLiteSettings(t *testing.T) {
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

func FuzzRedact(f *testing.F) {
	for _, s := range []string{"postgres://u:secretpw@h/db", "postgres://u@h/db?password=secretpw", "x", "sqlite:///a",
		"postgres://u:secretpw@h:bad/db", "postgres://u:secretpw@[::1/db"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Redact(s)
		if strings.Contains(s, "secretpw") && strings.Contains(s, "://") && strings.Contains(out, "secretpw") &&
			(strings.Contains(s, ":secretpw@") || strings.Contains(s, "password=secretpw")) {
			t.Errorf("Redact(%q) = %q keeps the password", s, out)
		}
	})
}

func FuzzOpen(f *testing.F) {
	for _, s := range []string{"", "sqlite://x.db", "postgres://u:p@h:1/db?sslmode=disable", "mysql://a", "::", "sqlite://?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := Open(s) // must not panic; errors must be one line
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n") {
				t.Errorf("Open(%q): multi-line error %q", s, err)
			}
			return
		}
		tg.Close()
	})
}
