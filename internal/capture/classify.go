package capture

import (
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
