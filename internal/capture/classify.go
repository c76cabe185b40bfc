package capture

import (
	"regexp"
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
	{"CREATE", "DATABASE"}, {"DROP", "DATABASE"}, {"ALTER", "DATABASE"},
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
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == ';' }) {
		out = append(out, strings.ToUpper(f))
		if len(out) == n {
			break
		}
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

// secretLiteral finds a password given as a literal: PostgreSQL's
// PASSWORD 'x' (CREATE/ALTER ROLE or USER), MySQL's IDENTIFIED BY 'x',
// SET PASSWORD = 'x' and PASSWORD('x').
var secretLiteral = regexp.MustCompile(`(?i)(\bPASSWORD\s*(?:=\s*|\(\s*)?|\bIDENTIFIED\s+(?:WITH\s+\S+\s+)?BY\s+)('(?:[^']|'')*'|"(?:[^"]|"")*")`)

// ReasonSecret is the skip under which every capture counts the
// statements whose password MaskSecrets masked.
const ReasonSecret = "passwords in statements (CREATE/ALTER ROLE or USER ... PASSWORD, IDENTIFIED BY, SET PASSWORD): masked, replayed as captured but for the password"

// MaskSecrets replaces the passwords a statement gives as literals with
// 'xxxxx', so that no capture file holds one.
func MaskSecrets(text string) string {
	if u := strings.ToUpper(text); !strings.Contains(u, "PASSWORD") && !strings.Contains(u, "IDENTIFIED") {
		return text
	}
	return secretLiteral.ReplaceAllString(text, "${1}'xxxxx'")
}
