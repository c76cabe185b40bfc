package capture

import (
	"fmt"
	"strings"
	"testing"
)

// primary is the reading a statement for engine is checked in.
func primary(engine string) lexRules {
	if engine == EngineMySQL {
		return lexRules{mysql: true, backslash: true}
	}
	return lexRules{}
}

// Every form of password clause issue 46 found kept (PostgreSQL's E'...',
// dollar quotes, comments before the literal; MySQL's backslash escapes,
// SET PASSWORD FOR, MASTER_PASSWORD, IDENTIFIED WITH ... AS), and the
// others each server reads, is masked whole, in a literal of the same kind:
// the password's bytes are gone and the statement reads as as many tokens
// as before. Statements without a password are left as they are.
func TestMaskPasswordForms(t *testing.T) {
	pg, my := EnginePostgres, EngineMySQL
	for _, c := range []struct {
		engine, text, want, secret string
	}{
		// PostgreSQL.
		{pg, `ALTER ROLE app PASSWORD 'hunter22'`, `ALTER ROLE app PASSWORD 'xxxxx'`, "hunter22"},
		{pg, `ALTER ROLE app PASSWORD E'it\'s s3cret'`, `ALTER ROLE app PASSWORD E'xxxxx'`, `s3cret`},
		{pg, `ALTER ROLE app PASSWORD e'a\\''b''c\'d'`, `ALTER ROLE app PASSWORD E'xxxxx'`, `b''c`},
		{pg, `ALTER ROLE app PASSWORD $$s3cret'pw$$`, `ALTER ROLE app PASSWORD $$xxxxx$$`, "s3cret'pw"},
		{pg, `ALTER ROLE app PASSWORD $pw$s3c$$ret$pw$ VALID UNTIL 'infinity'`, `ALTER ROLE app PASSWORD $pw$xxxxx$pw$ VALID UNTIL 'infinity'`, "s3c$$ret"},
		{pg, `ALTER ROLE app PASSWORD /* c */ 'hunter22'`, `ALTER ROLE app PASSWORD /* c */ 'xxxxx'`, "hunter22"},
		{pg, `ALTER ROLE app PASSWORD /* a /* nested */ c */ 'hunter22'`, `ALTER ROLE app PASSWORD /* a /* nested */ c */ 'xxxxx'`, "hunter22"},
		{pg, "CREATE ROLE app LOGIN ENCRYPTED PASSWORD -- c\n 'SCRAM-SHA-256$4096:abc' VALID UNTIL 'infinity'", "CREATE ROLE app LOGIN ENCRYPTED PASSWORD -- c\n 'xxxxx' VALID UNTIL 'infinity'", "SCRAM-SHA-256$4096:abc"},
		{pg, `CREATE USER u WITH LOGIN PASSWORD 'it''s secret' VALID`, `CREATE USER u WITH LOGIN PASSWORD 'xxxxx' VALID`, "s secret"},
		{pg, `ALTER ROLE app PASSWORD U&'hunt\0065r22'`, `ALTER ROLE app PASSWORD U&'xxxxx'`, `hunt\0065r22`},
		{pg, "ALTER ROLE app PASSWORD 'hunter'\n'twotwo'", "ALTER ROLE app PASSWORD 'xxxxx'", "twotwo"},
		{pg, `ALTER ROLE app PASSWORD E 'hunter22'`, `ALTER ROLE app PASSWORD E 'xxxxx'`, "hunter22"}, // a syntax error, captured all the same
		// A password ending in a backslash: standard_conforming_strings off
		// (or MySQL) would read the literal on to the next quote, so that
		// much goes.
		{pg, `ALTER ROLE app PASSWORD 'hunter22\' VALID UNTIL 'infinity'`, `ALTER ROLE app PASSWORD 'xxxxx'infinity'`, "hunter22"},
		{pg, `CREATE USER MAPPING FOR app SERVER s OPTIONS (user 'app', password 'hunter22')`, `CREATE USER MAPPING FOR app SERVER s OPTIONS (user 'app', password 'xxxxx')`, "hunter22"},
		{pg, `ALTER USER MAPPING FOR app SERVER s OPTIONS (SET "password" 'hunter22')`, `ALTER USER MAPPING FOR app SERVER s OPTIONS (SET "password" 'xxxxx')`, "hunter22"},
		{pg, `CREATE SUBSCRIPTION s CONNECTION 'host=db password = hunter22 dbname=d' PUBLICATION p`, `CREATE SUBSCRIPTION s CONNECTION 'xxxxx' PUBLICATION p`, "hunter22"},
		{pg, `ALTER ROLE app PASSWORD 'one1'; ALTER ROLE bob PASSWORD $$two2$$`, `ALTER ROLE app PASSWORD 'xxxxx'; ALTER ROLE bob PASSWORD $$xxxxx$$`, "two2"},
		// MySQL and MariaDB.
		{my, `CREATE USER 'u'@'%' IDENTIFIED BY 'hunter22'`, `CREATE USER 'u'@'%' IDENTIFIED BY 'xxxxx'`, "hunter22"},
		{my, `CREATE USER 'app'@'%' IDENTIFIED BY 'it\'s s3cret'`, `CREATE USER 'app'@'%' IDENTIFIED BY 'xxxxx'`, "s s3cret"},
		{my, `CREATE USER 'app'@'%' IDENTIFIED BY 'a\\' PASSWORD EXPIRE`, `CREATE USER 'app'@'%' IDENTIFIED BY 'xxxxx' PASSWORD EXPIRE`, `a\\`},
		{my, `ALTER USER app IDENTIFIED BY "hun\"ter22"`, `ALTER USER app IDENTIFIED BY "xxxxx"`, `ter22`},
		{my, `ALTER USER u IDENTIFIED WITH mysql_native_password BY 'hunter22'`, `ALTER USER u IDENTIFIED WITH mysql_native_password BY 'xxxxx'`, "hunter22"},
		{my, `ALTER USER u IDENTIFIED WITH 'mysql_native_password' BY 'hunter22'`, `ALTER USER u IDENTIFIED WITH 'mysql_native_password' BY 'xxxxx'`, "hunter22"},
		{my, `CREATE USER app IDENTIFIED WITH caching_sha2_password AS '$A$005$hash\'22'`, `CREATE USER app IDENTIFIED WITH caching_sha2_password AS 'xxxxx'`, "hash"},
		{my, `SET PASSWORD = 'hunter22'`, `SET PASSWORD = 'xxxxx'`, "hunter22"},
		{my, `SET PASSWORD FOR 'app'@'localhost' = 'hunter22'`, `SET PASSWORD FOR 'app'@'localhost' = 'xxxxx'`, "hunter22"},
		{my, `SET PASSWORD FOR u = PASSWORD('hunter22')`, `SET PASSWORD FOR u = PASSWORD('xxxxx')`, "hunter22"},
		{my, `SET PASSWORD FOR CURRENT_USER() = 'hunter22' REPLACE 'old-pw22'`, `SET PASSWORD FOR CURRENT_USER() = 'xxxxx' REPLACE 'xxxxx'`, "old-pw22"},
		{my, `CHANGE MASTER TO MASTER_HOST='db', MASTER_PASSWORD='hunter22', MASTER_PORT=3306`, `CHANGE MASTER TO MASTER_HOST='db', MASTER_PASSWORD='xxxxx', MASTER_PORT=3306`, "hunter22"},
		{my, `CHANGE REPLICATION SOURCE TO SOURCE_USER='r', SOURCE_PASSWORD = 'hunter22'`, `CHANGE REPLICATION SOURCE TO SOURCE_USER='r', SOURCE_PASSWORD = 'xxxxx'`, "hunter22"},
		{my, `START REPLICA USER='r' PASSWORD='hunter22'`, `START REPLICA USER='r' PASSWORD='xxxxx'`, "hunter22"},
		{my, `ALTER USER app IDENTIFIED BY 'new-pw22' REPLACE 'old-pw22' RETAIN CURRENT PASSWORD`, `ALTER USER app IDENTIFIED BY 'xxxxx' REPLACE 'xxxxx' RETAIN CURRENT PASSWORD`, "old-pw22"},
		{my, `CREATE USER app /*!80000 IDENTIFIED BY 'hunter22' */`, `CREATE USER app /*!80000 IDENTIFIED BY 'xxxxx' */`, "hunter22"},
		{my, `CREATE USER app /*M!100100 IDENTIFIED BY 'hunter22' */`, `CREATE USER app /*M!100100 IDENTIFIED BY 'xxxxx' */`, "hunter22"},
		{my, `CREATE USER app /* a /* b */ IDENTIFIED BY 'hunter22'`, `CREATE USER app /* a /* b */ IDENTIFIED BY 'xxxxx'`, "hunter22"},
		{my, "CREATE USER app IDENTIFIED BY # c\n 'hunter22'", "CREATE USER app IDENTIFIED BY # c\n 'xxxxx'", "hunter22"},
		{my, "CREATE USER app IDENTIFIED BY -- c\n 'hunter22'", "CREATE USER app IDENTIFIED BY -- c\n 'xxxxx'", "hunter22"},
		{my, `ALTER USER app IDENTIFIED BY _utf8mb4'hunter22'`, `ALTER USER app IDENTIFIED BY _utf8mb4'xxxxx'`, "hunter22"},
		{my, "CREATE USER `it's`@'%' IDENTIFIED BY 'hunter22'", "CREATE USER `it's`@'%' IDENTIFIED BY 'xxxxx'", "hunter22"},
		{my, `SET PASSWORD = PASSWORD('hunter22')`, `SET PASSWORD = PASSWORD('xxxxx')`, "hunter22"},
		{my, `CREATE USER app IDENTIFIED VIA ed25519 USING PASSWORD('hunter22')`, `CREATE USER app IDENTIFIED VIA ed25519 USING PASSWORD('xxxxx')`, "hunter22"},
		{my, `GRANT ALL ON *.* TO app IDENTIFIED BY PASSWORD '*ABCDEF0123'`, `GRANT ALL ON *.* TO app IDENTIFIED BY PASSWORD 'xxxxx'`, "ABCDEF0123"},
		{my, `CREATE USER app IDENTIFIED BY 'hunter' 'twotwo'`, `CREATE USER app IDENTIFIED BY 'xxxxx'`, "twotwo"},
		{my, `CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'r', PASSWORD 'hunter22')`, `CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'r', PASSWORD 'xxxxx')`, "hunter22"},
		{my, "UPDATE users SET `password` = 'hunter22' WHERE id = 1", "UPDATE users SET `password` = 'xxxxx' WHERE id = 1", "hunter22"},
		// No password.
		{pg, `SELECT password FROM users WHERE id = 1`, `SELECT password FROM users WHERE id = 1`, ""},
		{pg, `SELECT 'PASSWORD', 'x' FROM t`, `SELECT 'PASSWORD', 'x' FROM t`, ""},
		{pg, `ALTER ROLE app PASSWORD NULL VALID UNTIL 'infinity'`, `ALTER ROLE app PASSWORD NULL VALID UNTIL 'infinity'`, ""},
		{my, `CREATE USER app IDENTIFIED WITH 'mysql_native_password'`, `CREATE USER app IDENTIFIED WITH 'mysql_native_password'`, ""},
		{my, `ALTER USER app PASSWORD EXPIRE INTERVAL 90 DAY COMMENT 'x'`, `ALTER USER app PASSWORD EXPIRE INTERVAL 90 DAY COMMENT 'x'`, ""},
		{my, `SELECT REPLACE('a', 'b', 'c')`, `SELECT REPLACE('a', 'b', 'c')`, ""},
		{pg, `UPDATE t SET v = 1`, `UPDATE t SET v = 1`, ""},
	} {
		got := MaskSecrets(c.text)
		if got != c.want {
			t.Errorf("MaskSecrets(%q)\n got %q\nwant %q", c.text, got, c.want)
		}
		if c.secret != "" && strings.Contains(got, c.secret) {
			t.Errorf("%q: %q left in %q", c.text, c.secret, got)
		}
		if strings.Contains(c.text, "twotwo") || strings.Contains(c.text, `\' VALID`) {
			continue // two literals made one; a statement no longer valid
		}
		if a, b := len(lexWith(c.text, primary(c.engine))), len(lexWith(got, primary(c.engine))); a != b {
			t.Errorf("%q: %d tokens, %q: %d", c.text, a, got, b)
		}
	}
}

// A password form is a way of writing a password as a literal: the
// literal, and the reading the server that takes it reads it in.
type passwordForm struct {
	engine string
	name   string
	write  func(pw string) (string, bool) // false: no literal of this form holds pw
	read   lexRules
}

func quoteWith(pw string, q byte, backslash bool) string {
	var b strings.Builder
	b.WriteByte(q)
	for i := 0; i < len(pw); i++ {
		switch c := pw[i]; {
		case c == q && backslash, c == '\\' && backslash:
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == q:
			b.WriteByte(c)
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(q)
	return b.String()
}

func dollarQuote(pw, tag string) (string, bool) {
	t := "$" + tag + "$"
	if strings.Index(pw+t, t) != len(pw) {
		return "", false
	}
	return t + pw + t, true
}

var passwordForms = []passwordForm{
	{EnginePostgres, "plain", func(pw string) (string, bool) { return quoteWith(pw, '\'', false), true }, lexRules{}},
	{EnginePostgres, "E''", func(pw string) (string, bool) { return "E" + quoteWith(pw, '\'', true), true }, lexRules{}},
	{EnginePostgres, "U&''", func(pw string) (string, bool) { return "U&" + quoteWith(pw, '\'', false), true }, lexRules{}},
	{EnginePostgres, "$$", func(pw string) (string, bool) { return dollarQuote(pw, "") }, lexRules{}},
	{EnginePostgres, "$tag$", func(pw string) (string, bool) {
		for _, tag := range []string{"pw", "q", "tag_1"} {
			if lit, ok := dollarQuote(pw, tag); ok {
				return lit, true
			}
		}
		return "", false
	}, lexRules{}},
	{EnginePostgres, "plain, standard_conforming_strings off", func(pw string) (string, bool) { return quoteWith(pw, '\'', true), true }, lexRules{backslash: true}},
	{EngineMySQL, "''", func(pw string) (string, bool) { return quoteWith(pw, '\'', true), true }, lexRules{mysql: true, backslash: true}},
	{EngineMySQL, `""`, func(pw string) (string, bool) { return quoteWith(pw, '"', true), true }, lexRules{mysql: true, backslash: true}},
	{EngineMySQL, "'' NO_BACKSLASH_ESCAPES", func(pw string) (string, bool) { return quoteWith(pw, '\'', false), true }, lexRules{mysql: true}},
	{EngineMySQL, "_utf8mb4''", func(pw string) (string, bool) { return "_utf8mb4" + quoteWith(pw, '\'', true), true }, lexRules{mysql: true, backslash: true}},
}

// passwordClauses are statements with a password clause, %[1]s where its
// literal goes, by engine.
var passwordClauses = map[string][]string{
	EnginePostgres: {
		"ALTER ROLE app WITH PASSWORD %[1]s",
		"CREATE ROLE app LOGIN ENCRYPTED PASSWORD /* c */ %[1]s VALID UNTIL 'infinity'",
		"ALTER USER app PASSWORD -- c\n%[1]s;\nSELECT 1",
		"CREATE USER MAPPING FOR app SERVER s OPTIONS (user 'app', password %[1]s)",
	},
	EngineMySQL: {
		"CREATE USER 'app'@'%%' IDENTIFIED BY %[1]s",
		"ALTER USER app IDENTIFIED WITH mysql_native_password BY %[1]s PASSWORD EXPIRE NEVER",
		"CREATE USER app IDENTIFIED WITH caching_sha2_password AS %[1]s",
		"SET PASSWORD FOR 'app'@'localhost' = %[1]s",
		"SET PASSWORD = PASSWORD(%[1]s)",
		"CHANGE MASTER TO MASTER_HOST='db', MASTER_PASSWORD=%[1]s, MASTER_PORT=3306",
		"CHANGE REPLICATION SOURCE TO SOURCE_PASSWORD = %[1]s",
		"CREATE USER app /*!80000 IDENTIFIED BY %[1]s */",
		"GRANT ALL ON *.* TO `it's`@'%%' IDENTIFIED BY # c\n %[1]s",
		"ALTER USER app IDENTIFIED BY %[1]s REPLACE %[1]s",
	},
}

type passwordCase struct {
	form   passwordForm
	clause string
}

func passwordCases() []passwordCase {
	var cs []passwordCase
	for _, f := range passwordForms {
		for _, c := range passwordClauses[f.engine] {
			cs = append(cs, passwordCase{f, c})
		}
	}
	return cs
}

// checkMasked builds the statement of case which with pw and checks its
// masking: read as its server reads it, exactly the statement with xxxxx
// for the password (in a literal of the same kind, so the statement stays
// valid); read every way a server could, every byte of the literal
// masked, and the password (as given and as written), when at least 4
// bytes and nowhere else in the statement, nowhere in the masked text.
func checkMasked(t *testing.T, pw string, which int) {
	cs := passwordCases()
	c := cs[which%len(cs)]
	lit, ok := c.form.write(pw)
	if !ok {
		return
	}
	text := fmt.Sprintf(c.clause, lit)
	mask := maskLike(lit)
	if strings.HasPrefix(lit, "_") {
		mask = "_utf8mb4" + maskLike(lit[len("_utf8mb4"):])
	}
	want := fmt.Sprintf(c.clause, mask)
	if got := maskSecrets(text, []lexRules{c.form.read}); got != want {
		t.Fatalf("%s, %s: %q\n got %q\nwant %q", c.form.engine, c.form.name, text, got, want)
	}
	// Where the literals are: the statement's text around them is the
	// clause's.
	parts := strings.Split(c.clause, "%[1]s")
	var lits [][2]int
	at := 0
	for k, p := range parts {
		at += len(strings.ReplaceAll(p, "%%", "%"))
		if k < len(parts)-1 {
			lits = append(lits, [2]int{at + strings.IndexAny(lit, `'"$`), at + len(lit)}) // an introducer stays
			at += len(lit)
		}
	}
	rest := strings.ReplaceAll(strings.Join(parts, " "), "%%", "%")
	// The literal's body as written, between its quotes.
	var body string
	if q := strings.IndexAny(lit, `'"$`); lit[q] == '$' {
		tag := strings.IndexByte(lit[q+1:], '$') + 2
		body = lit[q+tag : len(lit)-tag]
	} else {
		body = lit[q+1 : len(lit)-1]
	}
	// As MaskSecrets reads it, every way a server could: every byte of
	// each literal is masked, and the password, as given or as written,
	// is nowhere in the masked text unless the statement has it
	// elsewhere.
	spans := maskedSpans(text, readings)
	for _, l := range lits {
		covered := false
		for _, sp := range spans {
			covered = covered || sp.pos <= l[0] && sp.end >= l[1]
		}
		if !covered {
			t.Fatalf("%s, %s: %q: the literal at %d-%d is not masked whole (masked: %v)", c.form.engine, c.form.name, text, l[0], l[1], spans)
		}
	}
	got := MaskSecrets(text)
	for _, s := range []string{pw, body} {
		if len(s) >= 4 && !strings.Contains(rest, s) && !strings.Contains(want, s) && strings.Contains(got, s) {
			t.Fatalf("%s, %s: %q: %q left in %q", c.form.engine, c.form.name, text, s, got)
		}
	}
}

func FuzzMaskPassword(f *testing.F) {
	for which := range passwordCases() {
		for _, pw := range []string{"hunter22", "it's s3cret", `back\slash'quote"`, `ends in \`, `\'`, "''''",
			"$$dollar$$", "$pw$ $q$ $tag_1$", "*/ end of comment /*", "x' IDENTIFIED BY 'y", "-- c\n#", "\x00nul\n\r\t", "é ü 中文", ";"} {
			f.Add(pw, uint16(which))
		}
	}
	f.Fuzz(func(t *testing.T, pw string, which uint16) {
		checkMasked(t, pw, int(which))
	})
}
