package capture

import "testing"

func TestFingerprint(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT * FROM t WHERE id = 42":                                "SELECT * FROM t WHERE id = ?",
		"select *\n  from t\n where id=42 -- the answer\n":             "select * from t where id = ?",
		"SELECT 1.5e10, .5, 0x1F, 1_000, -3, x - 3, x-3, (-4)":         "SELECT ?, ?, ?, ?, ?, x - ?, x - ?, (?)",
		"SELECT 'it''s', E'a\\'b', $$x 'y' $$, $tag$ $$ $tag$, B'101'": "SELECT ?, ?, ?, ?, ?",
		"SELECT U&'d\\0061t', N'x', X'1F', U&\"col\"":                  "SELECT ?, ?, ?, U&\"col\"",
		"UPDATE t SET a = $1 WHERE b = $2":                             "UPDATE t SET a = ? WHERE b = ?",
		"SELECT * FROM t WHERE id IN (1, 2, 3)":                        "SELECT * FROM t WHERE id IN (...)",
		"SELECT * FROM t WHERE id IN ($1,$2)":                          "SELECT * FROM t WHERE id IN (...)",
		"SELECT * FROM t WHERE id in(1)":                               "SELECT * FROM t WHERE id in(...)",
		"SELECT * FROM t WHERE id IN (SELECT id FROM u)":               "SELECT * FROM t WHERE id IN (SELECT id FROM u)",
		"INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')":            "INSERT INTO t VALUES (...)",
		"INSERT INTO t VALUES ($1, now())":                             "INSERT INTO t VALUES (?, now())",
		"SELECT ARRAY[1,2,3], a[1], a[2:3]":                            "SELECT ARRAY[...], a[?], a[?:?]",
		"/* a /* nested */ comment */ SELECT true, NULL, 'x'::text":    "SELECT true, NULL, ?::text",
		"SELECT \"Weird \"\" Name\", t.col, a$1, f(1)":                 "SELECT \"Weird \"\" Name\", t.col, a$1, f(?)",
		"SELECT 1;SELECT 2":                                            "SELECT ?; SELECT ?",
		"SELECT x FROM t WHERE a = - 1 AND b=-1 AND c >= +2":           "SELECT x FROM t WHERE a = - ? AND b = ? AND c >= ?",
		"SELECT j ? 'k', j @> '{}' FROM t":                             "SELECT j ? ?, j @> ? FROM t",
		"SELECT 'unterminated":                                         "SELECT ?",
		"SELECT $":                                                     "SELECT $",
		"":                                                             "",
	} {
		if got := Fingerprint(in); got != want {
			t.Errorf("Fingerprint(%q)\n got %q\nwant %q", in, got, want)
		}
		if got := Fingerprint(Fingerprint(in)); got != Fingerprint(in) {
			t.Errorf("Fingerprint is not idempotent on %q: %q then %q", in, Fingerprint(in), got)
		}
	}
	// Different values and spacing, one fingerprint.
	a := Fingerprint("SELECT * FROM t WHERE a = 1 AND b IN (1,2)")
	b := Fingerprint("SELECT *  FROM t\nWHERE a=-7 AND b IN (3, 4, 5, 6)")
	if a != b {
		t.Errorf("%q != %q", a, b)
	}
}

func TestHasPlaceholder(t *testing.T) {
	for in, want := range map[string]bool{
		"select $1":                     true,
		"select '$1'":                   false,
		"select $$ $1 $$":               false,
		"select a$1 from t":             false,
		"select 1 -- $1":                false,
		"prepare p as select $1, $2":    true,
		"select \"$1\"":                 false,
		"insert into t values ($1, $2)": true,
	} {
		if got := hasPlaceholder(in); got != want {
			t.Errorf("hasPlaceholder(%q) = %v", in, got)
		}
	}
}

// MySQL's backtick-quoted names stay whole in a fingerprint, whichever
// way it reads the statement (a replay report printed "CREATE SCHEMA `
// appdb `").
func TestFingerprintBackticks(t *testing.T) {
	for in, want := range map[string]string{
		"CREATE SCHEMA `appdb`":                    "CREATE SCHEMA `appdb`",
		"SELECT `a`.`b` FROM `t` WHERE `x` = 1":    "SELECT `a`.`b` FROM `t` WHERE `x` = ?",
		"INSERT INTO `app db`.`t` VALUES (1), (2)": "INSERT INTO `app db`.`t` VALUES (...)",
	} {
		if got := Fingerprint(in); got != want {
			t.Errorf("Fingerprint(%q) = %q, want %q", in, got, want)
		}
	}
}
