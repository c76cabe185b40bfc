package capture

import (
	"strings"
	"testing"
	"unicode"
)

func TestCopyFromStdin(t *testing.T) {
	for text, want := range map[string]string{
		"COPY copied(v) FROM STDIN":                  "copied",
		"copy public.t FROM stdin WITH (FORMAT csv)": "public.t",
		"/* c */ COPY t (a, b) FROM STDIN;":          "t",
		"COPY t TO STDOUT":                           "",
		"COPY t FROM '/tmp/x'":                       "",
		"SELECT 'COPY t FROM STDIN'":                 "",
	} {
		got, ok := CopyFromStdin(text)
		if got != want || ok != (want != "") {
			t.Errorf("CopyFromStdin(%q) = %q, %v; want %q", text, got, ok, want)
		}
	}
	if Unreplayable("COPY t FROM STDIN") != NoCopyData || Unreplayable(FastPath+`"lo_open" (OID 952)`) != NoFastPathArg ||
		Unreplayable("SELECT 1") != "" {
		t.Error("Unreplayable")
	}
}

func TestAdmin(t *testing.T) {
	for text, want := range map[string]string{
		"ALTER SYSTEM SET work_mem = '64MB'":                     "ALTER SYSTEM",
		"select pg_reload_conf()":                                "pg_reload_conf()",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity": "pg_terminate_backend()",
		"checkpoint":                                   "CHECKPOINT",
		"-- admin\nALTER DATABASE app SET x = 1":       "ALTER DATABASE",
		"-- the workload's own\nDROP DATABASE scratch": "",
		"COPY t TO PROGRAM 'gzip > /tmp/t.gz'":         "COPY ... PROGRAM",
		"CREATE ROLE app LOGIN":                        "CREATE ROLE",
		"SELECT my_pg_reload_conf_wrapper()":           "",
		"UPDATE t SET v = 1":                           "",
		"SELECT 'pg_reload_conf'":                      "",
		"CREATE TABLE t (a int)":                       "",
	} {
		if got := Admin(text); got != want {
			t.Errorf("Admin(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestWrites(t *testing.T) {
	for text, want := range map[string]bool{
		"SELECT abalance FROM pgbench_accounts WHERE aid = $1":        false,
		"select count(*), max(x) from t where id in (1, 2)":           false,
		"SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND $2 ORDER BY c": false,
		"SELECT now(), coalesce(x, 0)::numeric(10,2) FROM t":          false,
		"  /* app */ SELECT 1":                                        false,
		"SET application_name = 'x'":                                  false,
		"BEGIN":                                                       false,
		"COMMIT":                                                      false,
		"SHOW transaction_isolation":                                  false,
		"UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2": true,
		"insert into t values (1)":                                     true,
		"DELETE FROM sbtest1 WHERE id=5":                               true,
		"SELECT * FROM t WHERE id = 1 FOR UPDATE":                      true,
		"SELECT * FROM t WHERE id = 1 FOR NO KEY UPDATE":               true,
		"SELECT * FROM t WHERE id = 1 LOCK IN SHARE MODE":              true,
		"SELECT * INTO newt FROM t":                                    true,
		"WITH d AS (DELETE FROM t RETURNING *) SELECT count(*) FROM d": true,
		"SELECT dbp_new_order($1, $2, $3)":                             true,
		"SELECT public.bump(1)":                                        true,
		"CALL new_order(1, 2)":                                         true,
		"COPY t FROM STDIN":                                            true,
		"CREATE TEMP TABLE x (a int)":                                  true,
		"LOCK TABLE t":                                                 true,
		"EXECUTE stmt1":                                                true,
		"":                                                             false,
	} {
		if got := Writes(text); got != want {
			t.Errorf("Writes(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestWrittenTableAndVolatile(t *testing.T) {
	for text, want := range map[string]string{
		"INSERT INTO pgbench_history (tid, bid) VALUES ($1, $2)": "pgbench_history",
		`insert into "Events"(v) values (1)`:                     "events",
		"UPDATE public.t SET v = random() WHERE id = 1":          "public.t",
		"DELETE FROM sbtest1 WHERE id=5":                         "sbtest1",
		"REPLACE INTO t VALUES (1)":                              "t",
		"INSERT IGNORE INTO t VALUES (1)":                        "t",
		"COPY events (a, b) FROM STDIN":                          "events",
		"COPY events TO STDOUT":                                  "",
		"TRUNCATE TABLE t":                                       "t",
		"SELECT 1":                                               "",
	} {
		if got := WrittenTable(text); got != want {
			t.Errorf("WrittenTable(%q) = %q, want %q", text, got, want)
		}
	}
	for text, want := range map[string]string{
		"UPDATE t SET v = random() WHERE id = 1":        "random()",
		"INSERT INTO h VALUES ($1, CURRENT_TIMESTAMP)":  "current_timestamp",
		"INSERT INTO t (id) VALUES (gen_random_uuid())": "gen_random_uuid()",
		"UPDATE t SET v = 'random()' WHERE id = 1":      "",
		"INSERT INTO t VALUES ($1, $2)":                 "",
		"SELECT dbp_new_order($1)":                      "",
	} {
		if got := Volatile(text); got != want {
			t.Errorf("Volatile(%q) = %q, want %q", text, got, want)
		}
		if got := Volatile(text); got != "" && Clock(got) != (got == "current_timestamp") {
			t.Errorf("Clock(%q) = %v", got, Clock(got))
		}
	}
}

func TestMaskSecrets(t *testing.T) {
	for text, want := range map[string]string{
		"ALTER ROLE app PASSWORD 'hunter2'":                          "ALTER ROLE app PASSWORD 'xxxxx'",
		"CREATE USER u WITH LOGIN PASSWORD 'it''s secret' VALID":     "CREATE USER u WITH LOGIN PASSWORD 'xxxxx' VALID",
		"create role r password 'p'":                                 "create role r password 'xxxxx'",
		"CREATE USER 'u'@'%' IDENTIFIED BY 'hunter2'":                "CREATE USER 'u'@'%' IDENTIFIED BY 'xxxxx'",
		"ALTER USER u IDENTIFIED WITH mysql_native_password BY 'pw'": "ALTER USER u IDENTIFIED WITH mysql_native_password BY 'xxxxx'",
		"SET PASSWORD = 'pw'":                                        "SET PASSWORD = 'xxxxx'",
		"SET PASSWORD FOR u = PASSWORD('pw')":                        "SET PASSWORD FOR u = PASSWORD('xxxxx')",
		"SELECT password FROM users WHERE id = 1":                    "SELECT password FROM users WHERE id = 1",
		"UPDATE t SET v = 1":                                         "UPDATE t SET v = 1",
	} {
		if got := MaskSecrets(text); got != want {
			t.Errorf("MaskSecrets(%q) = %q, want %q", text, got, want)
		}
	}
}

// words reads a statement's first n words as splitting it whole would,
// and stops there: each word in upper case, separated by white space
// (Unicode's too) and ';', after leading comments.
func TestWordsFirstN(t *testing.T) {
	whole := func(s string) []string {
		var out []string
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == ';' }) {
			out = append(out, strings.ToUpper(f))
		}
		return out
	}
	for _, c := range []struct {
		text, rest string // rest: the text after its leading comments
	}{
		{"select 1", "select 1"},
		{"  insert\tinto t;values (1);;", "insert\tinto t;values (1);;"},
		{"-- a comment\n/* another */ update t\u00a0set a = 'é' ; commit", "update t\u00a0set a = 'é' ; commit"},
		{";;;", ";;;"},
		{"", ""},
		{"   \n\t", ""},
	} {
		all := whole(c.rest)
		for n := 1; n <= len(all)+1; n++ {
			want := all[:min(n, len(all))]
			if got := words(c.text, n); strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
				t.Errorf("words(%q, %d) = %q, want %q", c.text, n, got, want)
			}
		}
	}
}
