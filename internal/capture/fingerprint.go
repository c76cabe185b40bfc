package capture

import "strings"

// Fingerprint normalises a statement for reports, so that executions that
// differ only in their values group together and no value is shown:
// numbers, strings (plain, E'...', B'...', X'...', U&'...' and dollar-quoted) and
// $n placeholders become ?, lists of them after IN, VALUES and ARRAY
// collapse to (...) or [...], comments go, and spacing is made uniform.
// Identifiers and keywords keep their case; booleans and NULL stay. It
// accepts any input, valid SQL or not.
func Fingerprint(sql string) string {
	cut := ""
	if len(sql) > maxLexed {
		// A statement of megabytes (an INSERT of 400,000 rows) is a list
		// its first megabyte shows; lexing it whole took 934 MiB for 11.7 MB.
		sql, cut = sql[:maxLexed], " …"
		// Cut before the last element begun, so that the list collapses.
		if i := strings.LastIndexByte(sql, '('); i > maxLexed/2 {
			sql = strings.TrimRight(sql[:i], " \t\r\n,")
		}
	}
	toks := lex(sql)
	toks = collapse(toks)
	return render(toks) + cut
}

// maxLexed is the most of a statement the fingerprint lexes, and the
// size of the pieces other scans of its tokens take at a time: a token
// costs about 50 bytes, so memory stays near 50 times this whatever the
// statement's size.
const maxLexed = 1 << 20

type tokKind uint8

const (
	tkIdent  tokKind = iota // identifier or keyword
	tkQuoted                // "quoted identifier"
	tkLit                   // literal or placeholder, shown as ?
	tkOp                    // operator
	tkPunct                 // ( ) [ ] , ; . :: :
	tkOther
	tkEllipsis // a collapsed list
)

type token struct {
	kind  tokKind
	text  string
	param bool // a $n placeholder
	space bool // whitespace or a comment came before it
	str   bool // a string literal (quoted, prefixed or dollar-quoted)
	// pos and end are where the token is in the text (for a literal, the
	// literal itself without a sign taken in before it).
	pos, end int
}

// lexRules are the ways the lexer can read a text. The zero value is
// PostgreSQL's with standard_conforming_strings on, which fingerprints
// use; the others read passwords wherever a server could (masking).
type lexRules struct {
	// mysql reads MySQL's and MariaDB's lexicon: "..." strings, `...`
	// identifiers, # and "-- " comments, comments that do not nest,
	// /*! ... */ and /*M! ... */ read as the statement they hold, no
	// dollar quotes, $n placeholders, E'...' or U&'...'.
	mysql bool
	// backslash reads \x as an escaped x in '...' (and "..." under mysql):
	// MySQL's default, PostgreSQL's with standard_conforming_strings off.
	backslash bool
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == '$' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isOpChar(c byte) bool { return strings.IndexByte("+-*/<>=~!@#%^&|`?", c) >= 0 }

// valueLike tokens end an operand: a sign after them is a binary operator.
func valueLike(t token) bool {
	switch t.kind {
	case tkQuoted, tkLit, tkEllipsis:
		return true
	case tkIdent:
		switch strings.ToLower(t.text) {
		case "select", "where", "and", "or", "not", "then", "else", "when", "by", "limit", "offset",
			"values", "between", "like", "ilike", "return", "in", "is", "set", "on", "as", "case", "having":
			return false
		}
		return true
	case tkPunct:
		return t.text == ")" || t.text == "]"
	}
	return false
}

// lex splits SQL into tokens the way PostgreSQL's scanner does, as far as
// fingerprints need (standard_conforming_strings on).
func lex(s string) []token { return lexWith(s, lexRules{}) }

// lexWith is lex under rules r.
func lexWith(s string, r lexRules) []token {
	var out []token
	space := false
	start := 0 // where the token being read starts
	inDirective := false
	emit := func(k tokKind, text string) {
		out = append(out, token{kind: k, text: text, space: space, pos: start, end: start + len(text)})
		space = false
	}
	// literal emits a value that ends at i, taking a sign before it when
	// that sign is unary (nothing that ends an operand comes before it).
	var i int
	literal := func(param, str bool) {
		if n := len(out); n > 0 && out[n-1].kind == tkOp && (out[n-1].text == "-" || out[n-1].text == "+") && !space &&
			(n == 1 || !valueLike(out[n-2])) {
			space = out[n-1].space
			out = out[:n-1]
		}
		out = append(out, token{kind: tkLit, text: "?", param: param, space: space, str: str, pos: start, end: i})
		space = false
	}
	n := len(s)
	for i = 0; i < n; {
		c := s[i]
		start = i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			space = true
			i++
		case c == '-' && i+1 < n && s[i+1] == '-' && (!r.mysql || i+2 == n || s[i+2] <= ' '),
			c == '#' && r.mysql:
			for i < n && s[i] != '\n' {
				i++
			}
			space = true
		case c == '/' && i+1 < n && s[i+1] == '*' && r.mysql:
			if j, ok := directive(s, i); ok {
				inDirective = true
				i = j
			} else if k := strings.Index(s[i+2:], "*/"); k >= 0 {
				i += 2 + k + 2
			} else {
				i = n
			}
			space = true
		case c == '*' && i+1 < n && s[i+1] == '/' && inDirective:
			inDirective = false
			i += 2
			space = true
		case c == '/' && i+1 < n && s[i+1] == '*':
			i = skipBlockComment(s, i)
			space = true
		case c == '\'':
			i = skipString(s, i+1, r.backslash)
			literal(false, true)
		case c == '"' && r.mysql:
			i = skipQuote(s, i+1, '"', r.backslash)
			literal(false, true)
		case c == '`':
			// MySQL's quoted name; PostgreSQL has no backtick at all, so
			// every reading takes it so (a fingerprint of a MySQL log's
			// statement is read the PostgreSQL way: "` appdb `" before).
			i = skipQuote(s, i+1, '`', false)
			emit(tkQuoted, s[start:i])
		case (c == 'E' || c == 'e') && i+1 < n && s[i+1] == '\'' && !r.mysql:
			i = skipString(s, i+2, true)
			literal(false, true)
		case (c == 'B' || c == 'b' || c == 'X' || c == 'x' || c == 'N' || c == 'n') && i+1 < n && s[i+1] == '\'':
			i = skipString(s, i+2, r.backslash && (c == 'N' || c == 'n'))
			literal(false, true)
		case (c == 'U' || c == 'u') && i+2 < n && s[i+1] == '&' && s[i+2] == '\'' && !r.mysql:
			i = skipString(s, i+3, false)
			literal(false, true)
		case (c == 'U' || c == 'u') && i+2 < n && s[i+1] == '&' && s[i+2] == '"' && !r.mysql:
			j := skipQuoted(s, i+3)
			emit(tkQuoted, s[i:j])
			i = j
		case c == '"':
			j := skipQuoted(s, i+1)
			emit(tkQuoted, s[i:j])
			i = j
		case c == '$' && !r.mysql:
			if i+1 < n && isDigit(s[i+1]) {
				j := i + 1
				for j < n && isDigit(s[j]) {
					j++
				}
				i = j
				literal(true, false)
				break
			}
			if j, ok := skipDollar(s, i); ok {
				i = j
				literal(false, true)
				break
			}
			emit(tkOther, "$")
			i++
		case isDigit(c) || c == '.' && i+1 < n && isDigit(s[i+1]) && (len(out) == 0 || space || !valueLike(out[len(out)-1])):
			i = skipNumber(s, i)
			literal(false, false)
		case isIdentStart(c) || c == '$' && r.mysql:
			j := i + 1
			for j < n && isIdentChar(s[j]) {
				j++
			}
			emit(tkIdent, s[i:j])
			i = j
		case c == ':' && i+1 < n && s[i+1] == ':':
			emit(tkPunct, "::")
			i += 2
		case strings.IndexByte("()[],;.:", c) >= 0:
			emit(tkPunct, s[i:i+1])
			i++
		case isOpChar(c):
			j := i
			for j < n && isOpChar(s[j]) {
				if j > i && (s[j] == '-' && j+1 < n && s[j+1] == '-' || s[j] == '/' && j+1 < n && s[j+1] == '*') {
					break
				}
				if r.mysql && (s[j] == '`' || s[j] == '#' || inDirective && s[j] == '*' && j+1 < n && s[j+1] == '/') {
					break
				}
				j++
			}
			// A multi-character operator cannot end in + or - unless it
			// holds one of ~ ! @ # % ^ & | ` ?: "=-1" is = then -1.
			if j-i > 1 && !strings.ContainsAny(s[i:j], "~!@#%^&|`?") {
				for j-i > 1 && (s[j-1] == '+' || s[j-1] == '-') {
					j--
				}
			}
			emit(tkOp, s[i:j])
			i = j
		default:
			emit(tkOther, s[i:i+1])
			i++
		}
	}
	return out
}

func skipBlockComment(s string, i int) int {
	depth := 0
	for i < len(s) {
		switch {
		case s[i] == '/' && i+1 < len(s) && s[i+1] == '*':
			depth++
			i += 2
		case s[i] == '*' && i+1 < len(s) && s[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return i
}

// directive says whether the comment at i is one MySQL executes
// (/*!, /*!50700, /*M!100100), and returns the index after its opening.
func directive(s string, i int) (int, bool) {
	j := i + 2
	if j < len(s) && s[j] == 'M' {
		j++
	}
	if j >= len(s) || s[j] != '!' {
		return i, false
	}
	j++
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	return j, true
}

// skipQuote returns the index after the closing q of a string or
// identifier quoted with q whose body starts at i (a doubled q is a q;
// with backslashes, \x escapes x).
func skipQuote(s string, i int, q byte, backslashes bool) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			if backslashes {
				i += 2
				continue
			}
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return len(s)
}

// skipString returns the index after the closing quote of a string whose
// body starts at i (a doubled quote is a quote; with backslashes, \x
// escapes x).
func skipString(s string, i int, backslashes bool) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			if backslashes {
				i += 2
				continue
			}
		case '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return len(s)
}

func skipQuoted(s string, i int) int {
	for i < len(s) {
		if s[i] == '"' {
			if i+1 < len(s) && s[i+1] == '"' {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return len(s)
}

// skipDollar reads a dollar-quoted string starting at i ($$...$$ or
// $tag$...$tag$); ok is false when no tag starts at i.
func skipDollar(s string, i int) (int, bool) {
	j := i + 1
	if j < len(s) && isIdentStart(s[j]) {
		j++
		for j < len(s) && (isIdentStart(s[j]) || isDigit(s[j])) {
			j++
		}
	}
	if j >= len(s) || s[j] != '$' {
		return i, false
	}
	tag := s[i : j+1]
	if k := strings.Index(s[j+1:], tag); k >= 0 {
		return j + 1 + k + len(tag), true
	}
	return len(s), true
}

func skipNumber(s string, i int) int {
	n := len(s)
	if s[i] == '0' && i+1 < n && strings.IndexByte("xXoObB", s[i+1]) >= 0 {
		i += 2
		for i < n && (isIdentChar(s[i]) && s[i] != '$') {
			i++
		}
		return i
	}
	for i < n && (isDigit(s[i]) || s[i] == '_') {
		i++
	}
	if i < n && s[i] == '.' && !(i+1 < n && s[i+1] == '.') {
		i++
		for i < n && (isDigit(s[i]) || s[i] == '_') {
			i++
		}
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < n && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < n && isDigit(s[j]) {
			i = j
			for i < n && isDigit(s[i]) {
				i++
			}
		}
	}
	// Junk such as 123abc stays one value.
	for i < n && isIdentChar(s[i]) {
		i++
	}
	return i
}

// collapse replaces lists of values after IN, VALUES and ARRAY with one
// ellipsis, so that lists of different lengths group together.
func collapse(toks []token) []token {
	out := make([]token, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		out = append(out, t)
		if t.kind != tkIdent {
			continue
		}
		switch strings.ToLower(t.text) {
		case "in":
			if end, ok := valueList(toks, i+1, "(", ")"); ok {
				out = append(out, toks[i+1], token{kind: tkEllipsis, text: "..."}, toks[end])
				i = end
			}
		case "array":
			if end, ok := valueList(toks, i+1, "[", "]"); ok {
				out = append(out, toks[i+1], token{kind: tkEllipsis, text: "..."}, toks[end])
				i = end
			}
		case "values":
			end, ok := valueList(toks, i+1, "(", ")")
			if !ok {
				continue
			}
			for end+2 < len(toks) && toks[end+1].kind == tkPunct && toks[end+1].text == "," {
				next, ok := valueList(toks, end+2, "(", ")")
				if !ok {
					break
				}
				end = next
			}
			out = append(out, toks[i+1], token{kind: tkEllipsis, text: "..."}, toks[end])
			i = end
		}
	}
	return out
}

// valueList matches open, one or more values separated by commas, close
// at toks[i:], and returns the index of close.
func valueList(toks []token, i int, open, close string) (int, bool) {
	if i >= len(toks) || toks[i].kind != tkPunct || toks[i].text != open {
		return 0, false
	}
	for j := i + 1; j+1 < len(toks); j += 2 {
		if toks[j].kind != tkLit && toks[j].kind != tkEllipsis {
			return 0, false
		}
		sep := toks[j+1]
		if sep.kind == tkPunct && sep.text == close {
			return j + 1, true
		}
		if sep.kind != tkPunct || sep.text != "," {
			return 0, false
		}
	}
	return 0, false
}

func render(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && spaceBetween(toks[i-1], t) {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}

func spaceBetween(prev, t token) bool {
	if prev.kind == tkPunct {
		switch prev.text {
		case "(", "[", ".", "::", ":":
			return false
		}
	}
	if prev.kind == tkEllipsis || t.kind == tkEllipsis {
		return false
	}
	if t.kind == tkPunct {
		switch t.text {
		case ",", ")", "]", ";", ".", "::", ":", "[":
			return false
		case "(":
			return t.space
		}
	}
	return true
}

// hasPlaceholder says whether a statement has $n parameters outside its
// literals and comments.
func hasPlaceholder(sql string) bool {
	if !strings.Contains(sql, "$") {
		return false
	}
	for _, t := range lex(sql) {
		if t.param {
			return true
		}
	}
	return false
}
