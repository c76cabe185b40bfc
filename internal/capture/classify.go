package capture

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// FastPath starts the text a capture keeps for a fast-path function call
// (the protocol's FunctionCall message, as large-object clients send):
// the log names the function, never its arguments.
const FastPath = "fastpath function call: "

// Reasons a captured statement cannot be replayed as it ran.
const (
	NoCopyData    = "COPY FROM STDIN: the rows are not in the log"
	NoFastPathArg = "fast-path function call: its arguments are not in the log"
)

// Unreplayable says why a statement cannot be replayed as it ran ("" when
// it can): the log holds no data for it.
func Unreplayable(text string) string {
	switch {
	case strings.HasPrefix(text, FastPath):
		return NoFastPathArg
	}
	if _, ok := CopyFromStdin(text); ok {
		return NoCopyData
	}
	return ""
}

// CopyFromStdin returns the table of a COPY ... FROM STDIN: its rows came
// through the protocol, and the server never logs them.
func CopyFromStdin(text string) (table string, ok bool) {
	w := words(text, 64)
	if len(w) < 4 || w[0] != "COPY" {
		return "", false
	}
	for i := 1; i+1 < len(w); i++ {
		if w[i] == "FROM" && strings.HasPrefix(w[i+1], "STDIN") {
			table = w[1]
			if k := strings.IndexByte(table, '('); k > 0 {
				table = table[:k]
			}
			return strings.ToLower(table), true
		}
	}
	return "", false
}

// adminWords are statements that change the server rather than the data:
// a replay skips them unless told to send them.
var adminWords = [][]string{
	{"ALTER", "SYSTEM"}, {"CHECKPOINT"}, {"LOAD"},
	// CREATE and DROP DATABASE (and MySQL's SCHEMA) are not here: they
	// make and remove the workload's own database, which its sessions
	// need (see Database); ALTER DATABASE changes its settings.
	{"ALTER", "DATABASE"},
	{"CREATE", "ROLE"}, {"CREATE", "USER"}, {"DROP", "ROLE"}, {"DROP", "USER"}, {"ALTER", "ROLE"}, {"ALTER", "USER"},
	{"CREATE", "TABLESPACE"}, {"DROP", "TABLESPACE"},
	// MySQL and MariaDB
	{"SET", "GLOBAL"}, {"SET", "PERSIST"}, {"SET", "PERSIST_ONLY"}, {"FLUSH"}, {"PURGE"}, {"SHUTDOWN"}, {"KILL"},
	{"INSTALL"}, {"UNINSTALL"}, {"CHANGE", "MASTER"}, {"CHANGE", "REPLICATION"},
}

// adminCalls are functions that act on the server or its other sessions.
var adminCalls = []string{"pg_reload_conf", "pg_terminate_backend", "pg_cancel_backend", "pg_rotate_logfile",
	"pg_switch_wal", "pg_promote", "pg_stat_reset", "pg_create_restore_point", "pg_backup_start", "pg_backup_stop",
	"pg_start_backup", "pg_stop_backup"}

// Admin names what an administrative statement does ("ALTER SYSTEM",
// "pg_reload_conf()", "COPY ... PROGRAM"), or "" for a statement that
// works on the data.
func Admin(text string) string {
	w := words(text, 8)
	for _, a := range adminWords {
		if len(w) >= len(a) && equalWords(w[:len(a)], a) {
			return strings.Join(a, " ")
		}
	}
	if len(w) > 0 && w[0] == "COPY" && strings.Contains(strings.ToUpper(text), " PROGRAM ") {
		return "COPY ... PROGRAM"
	}
	lower := strings.ToLower(text)
	for _, f := range adminCalls {
		if i := strings.Index(lower, f); i >= 0 {
			rest := strings.TrimLeftFunc(lower[i+len(f):], unicode.IsSpace)
			if strings.HasPrefix(rest, "(") && (i == 0 || !isIdent(rune(lower[i-1]))) {
				return f + "()"
			}
		}
	}
	return ""
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func isIdent(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// words returns the first n words of a statement in upper case, after
// leading comments and white space; a word ends at white space or ';'.
func words(text string, n int) []string {
	s := text
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		switch {
		case strings.HasPrefix(s, "--"):
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i+1:]
				continue
			}
			return nil
		case strings.HasPrefix(s, "/*"):
			if i := strings.Index(s, "*/"); i >= 0 {
				s = s[i+2:]
				continue
			}
			return nil
		}
		break
	}
	// Only as far as the n words: a statement of megabytes costs what a
	// short one does, and the replay reads each capture text several
	// times (splitting it whole was 5% of a replay's CPU).
	sep := func(r rune) bool { return unicode.IsSpace(r) || r == ';' }
	var out []string
	for len(s) > 0 && len(out) != n {
		s = strings.TrimLeftFunc(s, sep)
		if s == "" {
			break
		}
		end := strings.IndexFunc(s, sep)
		if end < 0 {
			end = len(s)
		}
		out = append(out, strings.ToUpper(s[:end]))
		s = s[end:]
	}
	return out
}

// readOnlyWords start statements that change no data and take no lock a
// writer waits for (transaction control is the replay's to read apart).
var readOnlyWords = map[string]bool{
	"SELECT": true, "VALUES": true, "TABLE": true, "SHOW": true, "SET": true, "RESET": true, "FETCH": true,
	"MOVE": true, "CLOSE": true, "DECLARE": true, "DEALLOCATE": true, "DISCARD": true, "LISTEN": true,
	"UNLISTEN": true, "USE": true, "DESCRIBE": true, "DESC": true, "HELP": true, "BEGIN": true, "START": true,
	"COMMIT": true, "END": true, "ROLLBACK": true, "ABORT": true, "SAVEPOINT": true, "RELEASE": true,
	"EXPLAIN": true, "PREPARE": true, "EXECUTE": true, "WITH": true,
}

// pureCalls are functions and keywords a SELECT may call, or that look
// like a call, without writing: anything else called in a SELECT may be
// an application's function that writes (order-entry's procedures, say).
var pureCalls = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`count sum min max avg coalesce nullif greatest least now lower upper length
		char_length octet_length substr substring abs round trunc floor ceil ceiling mod power sqrt md5 sha1 sha2
		concat concat_ws to_char to_date to_timestamp to_number date_trunc date_part extract cast convert
		array_agg string_agg json_agg jsonb_agg json_build_object jsonb_build_object row_number rank dense_rank
		lag lead first_value last_value ntile exists in any all some values from join on using where and or not
		as over filter within case when then else row array lateral random version pg_backend_pid current_setting
		replace trim ltrim rtrim split_part position strpos left right lpad rpad format age unnest generate_series
		array_length cardinality bool_and bool_or every ifnull if isnull last_insert_id found_row found_rows
		row_count database schema user current_user session_user date time timestamp interval numeric decimal
		varchar char int integer bigint smallint float real double text uuid now_utc utc_timestamp
		current_date current_time localtime localtimestamp date_format date_add date_sub datediff
		unix_timestamp from_unixtime hex unhex crc32 group_concat json_extract json_object`) {
		pureCalls[f] = true
	}
}

// Writes says whether a statement may change data or take a lock that a
// writer waits for: INSERT, UPDATE, DELETE, MERGE, COPY, DDL, LOCK, CALL,
// a SELECT ... FOR UPDATE (or SHARE), SELECT INTO, a data-modifying WITH,
// and a SELECT that calls a function not known to be read-only. When it
// cannot tell, it says yes: a replay that takes a read for a write only
// orders it more strictly.
func Writes(text string) bool {
	w := words(text, 1)
	if len(w) == 0 {
		return false
	}
	first := strings.TrimLeft(w[0], "(")
	if !readOnlyWords[first] {
		return true
	}
	switch first {
	case "SELECT", "VALUES", "TABLE", "WITH", "EXPLAIN", "EXECUTE", "DECLARE":
	default:
		return false
	}
	if first == "EXECUTE" {
		return true // a prepared statement named in SQL: its text is not here
	}
	toks := lex(text)
	for i, t := range toks {
		if t.kind != tkIdent {
			continue
		}
		word := strings.ToLower(t.text)
		switch word {
		case "insert", "update", "delete", "merge", "into", "analyze", "truncate", "share", "nowait":
			// SELECT INTO makes a table; FOR UPDATE / FOR SHARE lock rows
			// (FOR NO KEY UPDATE, FOR KEY SHARE, LOCK IN SHARE MODE too);
			// WITH ... INSERT/UPDATE/DELETE writes; EXPLAIN ANALYZE runs.
			return true
		}
		if i+1 < len(toks) && toks[i+1].kind == tkPunct && toks[i+1].text == "(" && !pureCalls[word] {
			return true // a call of a function that may write
		}
	}
	return false
}

// OwnPrefix starts the application name of dbparity's own connections
// that are not a workload's: collectors, replay monitors, snapshots.
const OwnPrefix = "dbparity-"

// Own says whether an application name is one of dbparity's own
// connections, which a capture leaves out.
func Own(application string) bool { return strings.HasPrefix(application, OwnPrefix) }

// ownMarker is the statement dbparity's own MySQL connections send first:
// MySQL's logs name no application, so this names it.
var ownMarker = regexp.MustCompile(`^SET @dbparity_application = '(dbparity-[a-z-]+)'$`)

// OwnMarker reads the application from the statement a MySQL connection
// of dbparity's own sends first (engine.OwnMarkerSQL).
func OwnMarker(text string) (string, bool) {
	m := ownMarker.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return "", false
	}
	return m[1], true
}

// WrittenTable names the table a statement writes (INSERT INTO, UPDATE,
// DELETE FROM, MERGE INTO, REPLACE INTO, COPY ... FROM, TRUNCATE), in
// lower case without quotes, schema kept when written; "" for others.
func WrittenTable(text string) string {
	w := words(text, 6)
	if len(w) < 2 {
		return ""
	}
	i := 1
	switch w[0] {
	case "INSERT", "REPLACE":
		for i < len(w) && (w[i] == "IGNORE" || w[i] == "LOW_PRIORITY" || w[i] == "DELAYED" || w[i] == "HIGH_PRIORITY") {
			i++
		}
		if i < len(w) && w[i] == "INTO" {
			i++
		}
	case "DELETE":
		if w[1] == "FROM" {
			i = 2
		}
	case "MERGE":
		if w[1] == "INTO" {
			i = 2
		}
	case "UPDATE", "COPY":
	case "TRUNCATE":
		if w[1] == "TABLE" {
			i = 2
		}
	default:
		return ""
	}
	for i < len(w) && w[i] == "ONLY" {
		i++
	}
	if i >= len(w) {
		return ""
	}
	name := w[i]
	if k := strings.IndexAny(name, "(,"); k >= 0 {
		name = name[:k]
	}
	if w[0] == "COPY" {
		if _, ok := CopyFromStdin(text); !ok && !strings.Contains(strings.ToUpper(text), " FROM ") {
			return "" // COPY ... TO reads
		}
	}
	return strings.ToLower(strings.NewReplacer(`"`, "", "`", "").Replace(name))
}

// volatileCalls are functions whose value differs from run to run: the
// clock's, random numbers and identifiers, sequences.
var volatileCalls = map[string]bool{"random": true, "gen_random_uuid": true, "uuid_generate_v1": true,
	"uuid_generate_v4": true, "clock_timestamp": true, "now": true, "statement_timestamp": true,
	"transaction_timestamp": true, "timeofday": true, "rand": true, "uuid": true, "uuid_short": true,
	"sysdate": true, "nextval": true, "curtime": true, "curdate": true, "utc_timestamp": true, "unix_timestamp": true}

// volatileWords are the clock's values written without parentheses.
var volatileWords = map[string]bool{"current_timestamp": true, "localtimestamp": true, "current_date": true,
	"current_time": true, "localtime": true}

// Clock says whether a name Volatile returned is the clock's (its values
// land in date and time columns, which an end state compares apart).
func Clock(v string) bool {
	switch strings.TrimSuffix(v, "()") {
	case "random", "gen_random_uuid", "uuid_generate_v1", "uuid_generate_v4", "rand", "uuid", "uuid_short", "nextval":
		return false
	}
	return true
}

// Volatile names the first function a statement calls whose value differs
// from run to run ("random()", "now()", "current_timestamp"), "" for none:
// what such a statement writes may differ in a replay by nature.
func Volatile(text string) string {
	// In pieces of maxLexed that overlap by a little, so that memory stays
	// bounded for a statement of megabytes and no call is cut in two.
	for at := 0; ; at += maxLexed {
		end := min(at+maxLexed+256, len(text))
		if v := volatileIn(text[at:end]); v != "" || end == len(text) {
			return v
		}
	}
}

// volatileIn is Volatile of one piece of a statement.
func volatileIn(text string) string {
	toks := lex(text)
	for i, t := range toks {
		if t.kind != tkIdent {
			continue
		}
		word := strings.ToLower(t.text)
		call := i+1 < len(toks) && toks[i+1].kind == tkPunct && toks[i+1].text == "("
		switch {
		case call && volatileCalls[word]:
			return word + "()"
		case volatileWords[word]:
			return word
		}
	}
	return ""
}

// ReasonSecret is the skip under which every capture counts the
// statements whose password MaskSecrets masked.
const ReasonSecret = "passwords in statements (CREATE/ALTER ROLE or USER ... PASSWORD, IDENTIFIED BY or AS, SET PASSWORD, MASTER_PASSWORD, OPTIONS (password ...), password= in a connection string): masked, replayed as captured but for the password"

// readings are the ways MaskSecrets reads a statement: PostgreSQL's and
// MySQL's lexicons, each with and without backslash escapes in plain
// strings (standard_conforming_strings, NO_BACKSLASH_ESCAPES). A capture
// knows neither setting, a log capture may not know the server, and where
// a literal ends depends on them; a server reads the statement one of
// these ways, or rejects it (a failed statement is captured too).
var readings = []lexRules{{}, {backslash: true}, {mysql: true, backslash: true}, {mysql: true}}

// MaskSecrets replaces each password a statement gives as a literal with
// xxxxx in a literal of the same kind ('xxxxx', E'xxxxx', $tag$xxxxx$tag$,
// "xxxxx"), so that no capture file holds one.
//
// The statement is read with the lexer of fingerprints, as a server would
// read it: strings (plain, E'...', N'...', U&'...', with or without
// backslash escapes, dollar-quoted with a tag, MySQL's "..."), quoted
// identifiers, comments (nested or not, # and -- ; the statement inside
// MySQL's /*! ... */). A password is the string literal, or the run of
// adjacent literals, that follows, comments aside:
//
//   - PASSWORD, or any name ending in _PASSWORD (MASTER_PASSWORD,
//     SOURCE_PASSWORD), then = or ( or nothing: PostgreSQL's [ENCRYPTED]
//     PASSWORD '...', OPTIONS (password '...'), MySQL's SET PASSWORD =
//     '...', SET PASSWORD FOR user = '...', PASSWORD('...'), CHANGE MASTER
//     ... MASTER_PASSWORD = '...', IDENTIFIED BY PASSWORD '...';
//   - BY, AS or USING after IDENTIFIED in the same statement: IDENTIFIED
//     [WITH plugin] BY '...', IDENTIFIED WITH plugin AS '...', IDENTIFIED
//     VIA plugin USING '...'; a charset introducer (_utf8mb4'...') stays;
//   - REPLACE after a password in the same statement (MySQL's current
//     password);
//
// and any string literal holding a connection string's password=
// (CREATE SUBSCRIPTION ... CONNECTION '...') is masked whole. The
// statement is read each way a server could read it (readings), and what
// any reading takes for a password is masked: where readings disagree on
// where a literal ends, the longer span goes, as 'xxxxx' (the statement
// may no longer be valid then; nothing of the password stays).
func MaskSecrets(text string) string { return maskSecrets(text, readings) }

// secretSpan is a literal to mask, s[pos:end], and what replaces it.
type secretSpan struct {
	pos, end int
	mask     string
}

func maskSecrets(text string, readings []lexRules) string {
	spans := maskedSpans(text, readings)
	if len(spans) == 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(text[last:sp.pos])
		b.WriteString(sp.mask)
		last = sp.end
	}
	b.WriteString(text[last:])
	return b.String()
}

// maskedSpans are the spans of text that any of readings takes for a
// password, in order, those that overlap made one.
func maskedSpans(text string, readings []lexRules) []secretSpan {
	if !containsFold(text, "password") && !containsFold(text, "identified") {
		return nil
	}
	var spans []secretSpan
	for _, r := range readings {
		spans = append(spans, secretSpans(text, r)...)
	}
	slices.SortFunc(spans, func(a, b secretSpan) int { return cmp.Or(a.pos-b.pos, b.end-a.end) })
	var out []secretSpan
	for k := 0; k < len(spans); {
		sp := spans[k]
		// The first is the longest of those that start first: its kind
		// goes unless another reaches further.
		for k++; k < len(spans) && spans[k].pos < sp.end; k++ {
			if spans[k].end > sp.end {
				sp.mask = "'xxxxx'" // readings disagree: the plainest literal
				sp.end = spans[k].end
			}
		}
		out = append(out, sp)
	}
	return out
}

// secretSpans finds the password literals of text read by r.
func secretSpans(text string, r lexRules) []secretSpan {
	toks := lexWith(text, r)
	var spans []secretSpan
	// take masks the literals that start at toks[j] (after a charset
	// introducer, or a prefix such as E set apart from its quote, which no
	// server takes but a failed statement is captured too), and says where
	// the tokens after them start; 0 when there is none.
	take := func(j int) int {
		if j+1 < len(toks) && toks[j].kind == tkIdent && toks[j+1].str &&
			(strings.HasPrefix(toks[j].text, "_") || len(toks[j].text) == 1 && strings.ContainsAny(toks[j].text, "EeNnBbXx")) {
			j++
		}
		if j >= len(toks) || !toks[j].str {
			return 0
		}
		first := toks[j]
		for j+1 < len(toks) && toks[j+1].str {
			j++
		}
		spans = append(spans, secretSpan{pos: first.pos, end: toks[j].end, mask: maskLike(text[first.pos:first.end])})
		return j + 1
	}
	is := func(j int, kind tokKind, s string) bool {
		return j < len(toks) && toks[j].kind == kind && strings.EqualFold(toks[j].text, s)
	}
	identified, secret := false, false // in this statement
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.str && connPassword(text[t.pos:t.end]) {
			spans = append(spans, secretSpan{pos: t.pos, end: t.end, mask: maskLike(text[t.pos:t.end])})
			continue
		}
		switch {
		case t.kind == tkPunct && t.text == ";":
			identified, secret = false, false
		case is(i, tkIdent, "identified"):
			identified = true
		case passwordWord(t):
			j := i + 1
			if is(j, tkIdent, "for") { // SET PASSWORD FOR user = ...
				for k := j + 1; k < len(toks) && k < j+16 && !is(k, tkPunct, ";"); k++ {
					if is(k, tkOp, "=") {
						j = k
						break
					}
				}
			}
			if is(j, tkOp, "=") || is(j, tkPunct, "(") {
				j++
			}
			if next := take(j); next > 0 {
				secret, i = true, next-1
			}
		case identified && (is(i, tkIdent, "by") || is(i, tkIdent, "as") || is(i, tkIdent, "using")),
			secret && is(i, tkIdent, "replace"):
			if next := take(i + 1); next > 0 {
				secret, i = true, next-1
			}
		}
	}
	return spans
}

// passwordWord says whether t names a password: PASSWORD, or a name
// ending in _PASSWORD, quoted or not.
func passwordWord(t token) bool {
	w := t.text
	switch t.kind {
	case tkIdent:
	case tkQuoted:
		if len(w) < 2 || w[0] != '"' && w[0] != '`' {
			return false
		}
		w = w[1 : len(w)-1]
	default:
		return false
	}
	return strings.EqualFold(w, "password") || len(w) > 9 && strings.EqualFold(w[len(w)-9:], "_password")
}

// connPassword says whether a string literal holds a connection string
// with a password (password=..., sslpassword=...).
func connPassword(lit string) bool {
	for rest := lit; ; {
		k := indexFold(rest, "password")
		if k < 0 {
			return false
		}
		rest = strings.TrimLeft(rest[k+len("password"):], " \t\n\r")
		if strings.HasPrefix(rest, "=") {
			return true
		}
	}
}

// maskLike is the masked literal of the kind of lit.
func maskLike(lit string) string {
	switch lit[0] {
	case '$':
		tag := lit[:strings.IndexByte(lit[1:], '$')+2]
		return tag + "xxxxx" + tag
	case '"':
		return `"xxxxx"`
	case 'E', 'e':
		return "E'xxxxx'"
	case 'U', 'u':
		return "U&'xxxxx'"
	case 'N', 'n':
		return "N'xxxxx'"
	}
	return "'xxxxx'"
}

// indexFold is strings.Index for an ASCII lower-case word, ignoring case.
func indexFold(s, word string) int {
	for i := 0; i+len(word) <= len(s); i++ {
		if s[i]|0x20 == word[0] && strings.EqualFold(s[i:i+len(word)], word) {
			return i
		}
	}
	return -1
}

func containsFold(s, word string) bool { return indexFold(s, word) >= 0 }

// DDL says whether a statement changes the schema others' statements use
// (CREATE, ALTER, DROP, RENAME, TRUNCATE, COMMENT ON): a replay runs
// another session's statement only once the DDL captured before it is
// done. Temporary tables are the session's own, and statements that
// change the server (Admin: ALTER SYSTEM, CREATE ROLE) not the schema:
// neither is counted.
func DDL(text string) bool {
	w := words(text, 5)
	if len(w) == 0 {
		return false
	}
	switch w[0] {
	case "CREATE", "DROP":
		for _, x := range w[1:] {
			if x == "TEMPORARY" || x == "TEMP" {
				return false
			}
		}
	case "ALTER", "RENAME", "TRUNCATE":
	case "COMMENT":
		if len(w) < 2 || w[1] != "ON" {
			return false
		}
	default:
		return false
	}
	return Admin(text) == ""
}

// Database reads a statement that creates, drops or changes to a whole
// database: verb "CREATE", "DROP" or "USE", the database's name as the
// server takes it (unquoted; PostgreSQL folds an unquoted name to lower
// case), and where the name is written in text (at to end), so that a
// replay can write another in its place. On MySQL and MariaDB (mysql)
// SCHEMA is DATABASE's synonym; on PostgreSQL a schema lives inside a
// database and is not one. "" for any other statement.
func Database(text string, mysql bool) (verb, name string, at, end int) {
	toks := lex(firstN(text, 4096))
	k := 0
	word := func(want ...string) bool {
		if k < len(toks) && toks[k].kind == tkIdent {
			for _, x := range want {
				if strings.EqualFold(toks[k].text, x) {
					k++
					return true
				}
			}
		}
		return false
	}
	switch {
	case mysql && word("USE"):
		verb = "USE"
	case word("CREATE", "DROP"):
		verb = strings.ToUpper(toks[0].text)
		if !word("DATABASE") && !(mysql && word("SCHEMA")) {
			return "", "", 0, 0
		}
		if word("IF") {
			if verb == "CREATE" && !word("NOT") {
				return "", "", 0, 0
			}
			if !word("EXISTS") {
				return "", "", 0, 0
			}
		}
	default:
		return "", "", 0, 0
	}
	if k >= len(toks) {
		return "", "", 0, 0
	}
	switch t := toks[k]; t.kind {
	case tkIdent:
		name = t.text
		if !mysql {
			name = strings.ToLower(name)
		}
	case tkQuoted:
		q := t.text[:1]
		if len(t.text) < 2 || (q != "`" && q != `"`) || !strings.HasSuffix(t.text, q) {
			return "", "", 0, 0
		}
		name = strings.ReplaceAll(t.text[1:len(t.text)-1], q+q, q)
	default:
		return "", "", 0, 0
	}
	if k+1 < len(toks) && toks[k+1].kind == tkPunct && toks[k+1].text == "." {
		return "", "", 0, 0 // a qualified name: not a database
	}
	return verb, name, toks[k].pos, toks[k].end
}

func firstN(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
