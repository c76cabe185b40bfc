package engine

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Passwords are removed where they enter: a target string is parsed the
// way the driver parses it, and the bytes in a password position are
// replaced by mask. Nothing here searches for a password's value, which
// would also hit a user or a database of the same name, or a "1" anywhere.

const mask = "xxxxx"

// Redact removes passwords from a target (or any command-line word) so it
// can be printed or stored:
//
//   - a postgres:// URL, split by libpq's URI rules: the password of the
//     user info, and every query parameter whose name contains "password"
//     (password, sslpassword);
//   - another URL (sqlite://), split by net/url's rules, the same way;
//   - a keyword/value string (host=/tmp user=u password='a b' dbname=d),
//     split by libpq's conninfo rules: the value of every keyword ending in
//     "password" (password, sslpassword; not a server setting such as
//     password_encryption=md5 given to --pg-set);
//   - anything else is returned unchanged.
//
// Where a malformed string leaves it unclear which bytes are the password
// (an '@' left outside the user info, a port that is not a number, words
// after an unquoted password that are not keyword=value), everything that
// could be is masked. The rest of the string is kept as written, and
// Redact(Redact(s)) == Redact(s).
func Redact(s string) string {
	switch formOf(s) {
	case formPostgresURL:
		return parsePostgresURL(s).redacted()
	case formURL:
		return redactURL(s)
	case formKeywordValue:
		return scanKeywordValue(s).redacted()
	}
	return s
}

type connForm int

const (
	formPlain connForm = iota
	formPostgresURL
	formURL
	formKeywordValue
)

var schemePrefix = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

// formOf tells the shape of a string: a URL has a scheme followed by //; a
// keyword/value string has an '=' and is not a URL.
func formOf(s string) connForm {
	if m := schemePrefix.FindStringSubmatch(s); m != nil && strings.HasPrefix(s[len(m[0]):], "//") {
		switch strings.ToLower(m[1]) {
		case "postgres", "postgresql":
			return formPostgresURL
		}
		return formURL
	}
	if strings.Contains(s, "=") {
		return formKeywordValue
	}
	return formPlain
}

// isKeywordValue reports whether Open takes s for a PostgreSQL
// keyword/value string: it has an '=' and does not start with a scheme
// (sqlite:x.db?mode=ro and file:x.db are SQLite's).
func isKeywordValue(s string) bool {
	return formOf(s) == formKeywordValue && !schemePrefix.MatchString(s)
}

// isSecretParam says which URL query parameters are masked.
func isSecretParam(k string) bool { return strings.Contains(strings.ToLower(k), "password") }

// isSecretKeyword says which keywords of a keyword/value string are masked.
func isSecretKeyword(k string) bool { return strings.HasSuffix(strings.ToLower(k), "password") }

// span is a half-open byte range of the input that mask replaces.
type span struct{ from, to int }

// replaceSpans returns s with each span (in order, disjoint) replaced by
// mask.
func replaceSpans(s string, spans []span) string {
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.from])
		b.WriteString(mask)
		last = sp.to
	}
	b.WriteString(s[last:])
	return b.String()
}

// parsed is a target string split into parts: where its passwords are,
// and why the driver (or Open) refuses it.
type parsed struct {
	s       string
	secrets []span
	// problem names what is wrong and where, never quoting the input;
	// "" when the string parses.
	problem string
}

func (p parsed) redacted() string { return replaceSpans(p.s, p.secrets) }

func (p *parsed) fail(problem string) {
	if p.problem == "" {
		p.problem = problem
	}
}

// parsePostgresURL splits a postgres:// URL the way libpq does
// (conninfo_uri_parse_options, which pgx follows): the user info ends at
// the first '@' met before any '/', its password follows the first ':',
// the host list runs to '/' or '?', the database to '?', and the query is
// '&'-separated key=value pairs. An '@' after the user info and before the
// query is where a password holding '@' or '/' was split: everything up to
// it is masked, and the rest is split again.
func parsePostgresURL(s string) parsed {
	stranded := false
	for {
		p, at, j := splitPostgresURL(s)
		if j < 0 {
			if stranded {
				p.problem = `an "@" outside the user info: percent-encode @ as %40 and / as %2F in a user name or password`
			}
			return p
		}
		stranded = true
		s = s[:at] + mask + s[j:]
	}
}

// splitPostgresURL is one pass of parsePostgresURL; stranded is the index
// of the last '@' left outside the user info before the query, or -1, and
// at the index just after "://".
func splitPostgresURL(s string) (p parsed, at, stranded int) {
	p.s = s
	if strings.IndexByte(s, 0) >= 0 {
		p.fail("a NUL byte in the URL")
	}
	at = strings.Index(s, "://") + 3
	rest := s[at:]
	pos := func() int { return len(s) - len(rest) }
	userEnd := -1
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		userEnd = at + i
		user, pw, hasPW := strings.Cut(rest[:i], ":")
		p.check(user, "the user name")
		if hasPW {
			p.secrets = append(p.secrets, span{at + len(user) + 1, userEnd})
			p.check(pw, "the password")
		}
		rest = rest[i+1:]
	}
	for {
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				p.fail(`an IPv6 host address has no closing "]"`)
				break
			}
			if end == 1 {
				p.fail("an IPv6 host address is empty")
			}
			rest = rest[end+1:]
			if rest != "" && !strings.ContainsRune(":/?,", rune(rest[0])) {
				p.fail(`an IPv6 host address is followed by something other than ":", "/", "?" or ","`)
			}
		} else {
			i := strings.IndexAny(rest, ":/?,")
			if i < 0 {
				i = len(rest)
			}
			p.check(rest[:i], "a host name")
			rest = rest[i:]
		}
		if strings.HasPrefix(rest, ":") {
			rest = rest[1:]
			i := strings.IndexAny(rest, "/?,")
			if i < 0 {
				i = len(rest)
			}
			port, problem := decode(rest[:i])
			switch {
			case problem != "" || !allDigits(port):
				// The port position can hold a mislaid password
				// (postgres://u:pa/ss@h puts "pa" there): masked.
				p.secrets = append(p.secrets, span{pos(), pos() + i})
				p.fail("a port is not a number")
			case port != "" && !portInRange(port):
				p.fail("a port is out of range: use 1 to 65535")
			}
			rest = rest[i:]
		}
		if !strings.HasPrefix(rest, ",") {
			break
		}
		rest = rest[1:]
	}
	queryAt := len(s)
	if strings.HasPrefix(rest, "/") {
		db := rest[1:]
		rest = ""
		if i := strings.IndexByte(db, '?'); i >= 0 {
			rest = db[i:]
			db = db[:i]
		}
		p.check(db, "the database name")
	}
	if strings.HasPrefix(rest, "?") {
		queryAt = pos()
		p.query(queryAt + 1)
	}
	stranded = strings.LastIndexByte(s[:queryAt], '@')
	if stranded <= userEnd {
		stranded = -1
	}
	return p, at, stranded
}

// query splits the query that starts at s[from:] into key=value pairs,
// masking the values of secret keys. A pair without '=' after a secret
// one is masked with it: an unencoded '&' in the password split it.
func (p *parsed) query(from int) {
	afterSecret := false
	for i := from; i < len(p.s); {
		end := strings.IndexByte(p.s[i:], '&')
		if end < 0 {
			end = len(p.s)
		} else {
			end += i
		}
		key, value, hasEq := strings.Cut(p.s[i:end], "=")
		switch {
		case !hasEq:
			p.fail(`a query parameter has no "=" (percent-encode & as %26 in a password)`)
			if afterSecret {
				p.secrets[len(p.secrets)-1].to = end
			}
		default:
			if strings.Contains(value, "=") {
				p.fail(`a query parameter has two "=" (percent-encode = as %3D in a value)`)
			}
			dk, problem := decode(key)
			if problem != "" {
				p.fail(problem + " in the name of a query parameter")
				dk = key
			}
			afterSecret = isSecretParam(dk)
			if afterSecret {
				p.secrets = append(p.secrets, span{i + len(key) + 1, end})
				p.check(value, "a password parameter")
			} else {
				p.check(value, "the value of a query parameter")
			}
		}
		i = end + 1
	}
}

// check records why a URL component does not decode.
func (p *parsed) check(raw, what string) {
	if _, problem := decode(raw); problem != "" {
		p.fail(problem + " in " + what)
	}
}

// decode percent-decodes a URL component as libpq does
// (conninfo_uri_decode): leading and trailing spaces are dropped, others
// are refused, %00 is refused. problem names what is wrong.
func decode(raw string) (string, string) {
	trimmed := strings.Trim(raw, " ")
	if strings.Contains(trimmed, " ") {
		return "", "a space (write it as %20)"
	}
	var b strings.Builder
	for i := 0; i < len(trimmed); i++ {
		c := trimmed[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(trimmed) || !isHex(trimmed[i+1]) || !isHex(trimmed[i+2]) {
			return "", "an invalid percent escape (write % as %25)"
		}
		v, _ := strconv.ParseUint(trimmed[i+1:i+3], 16, 8)
		if v == 0 {
			return "", "a %00"
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), ""
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func portInRange(s string) bool {
	n, err := strconv.ParseUint(s, 10, 16)
	return err == nil && n >= 1
}

// redactURL masks the passwords of a URL of another scheme, split by
// net/url's rules (the user info ends at the last '@' of the authority,
// the query at '#'), keeping the rest as written.
func redactURL(s string) string {
	var secrets []span
	at := strings.Index(s, "://") + 3
	end := strings.IndexAny(s[at:], "/?#")
	if end < 0 {
		end = len(s)
	} else {
		end += at
	}
	q := strings.IndexByte(s[end:], '?')
	if q < 0 {
		q = len(s)
	} else {
		q += end
	}
	// An '@' after the authority is where a password holding '/' was
	// split: everything up to it is masked, and the rest split again.
	if j := strings.LastIndexByte(s[end:q], '@'); j >= 0 {
		return redactURL(s[:at] + mask + s[end+j:])
	}
	if j := strings.LastIndexByte(s[at:end], '@'); j >= 0 {
		if k := strings.IndexByte(s[at:at+j], ':'); k >= 0 {
			secrets = append(secrets, span{at + k + 1, at + j})
		}
	}
	if q == len(s) {
		return replaceSpans(s, secrets)
	}
	q++
	qend := len(s)
	if f := strings.IndexByte(s[q:], '#'); f >= 0 {
		qend = q + f
	}
	for i := q; i < qend; {
		pairEnd := strings.IndexByte(s[i:qend], '&')
		if pairEnd < 0 {
			pairEnd = qend
		} else {
			pairEnd += i
		}
		key, _, hasEq := strings.Cut(s[i:pairEnd], "=")
		if dk, err := url.QueryUnescape(key); err == nil {
			key = dk
		}
		if hasEq && isSecretParam(key) {
			secrets = append(secrets, span{i + strings.IndexByte(s[i:pairEnd], '=') + 1, pairEnd})
		}
		i = pairEnd + 1
	}
	return replaceSpans(s, secrets)
}

// scanKeywordValue splits a keyword/value string the way libpq does
// (conninfo_parse, which pgx follows): keyword, '=', then a value that is
// either quoted ('a b', with \' and \\ escapes) or runs to the next
// whitespace (with \ escapes). A quoted password is masked between its
// quotes. Words after a password that are not keyword=value are masked
// too: a space in an unquoted password split it there.
func scanKeywordValue(s string) parsed {
	p := parsed{s: s}
	if strings.IndexByte(s, 0) >= 0 {
		p.fail("a NUL byte in the connection string")
	}
	afterSecret := false
	i := skipSpace(s, 0)
	for i < len(s) {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			p.fail(`words without "=" at the end: quote a value that holds spaces (password='a b')`)
			if afterSecret {
				p.secrets = append(p.secrets, span{i, len(strings.TrimRight(s, spaces))})
			}
			break
		}
		eq += i
		head := strings.TrimRight(s[i:eq], spaces)
		keyAt := i + strings.LastIndexAny(head, spaces) + 1
		key := s[keyAt : i+len(head)]
		if keyAt > i {
			p.fail(`a word without "=" before a keyword: quote a value that holds spaces (password='a b')`)
			if afterSecret {
				p.secrets = append(p.secrets, span{i, i + len(strings.TrimRight(s[i:keyAt], spaces))})
			}
		}
		if key == "" {
			p.fail(`an "=" without a keyword`)
		}
		v := skipSpace(s, eq+1)
		end, quoted, closed := valueEnd(s, v)
		if !closed {
			p.fail("a quoted value has no closing quote")
		}
		afterSecret = isSecretKeyword(key)
		if afterSecret {
			switch {
			case quoted && closed:
				p.secrets = append(p.secrets, span{v + 1, end - 1})
			case quoted:
				p.secrets = append(p.secrets, span{v + 1, end})
			case end > v:
				p.secrets = append(p.secrets, span{v, end})
			}
		}
		i = skipSpace(s, end)
	}
	return p
}

const spaces = " \t\n\v\f\r"

func skipSpace(s string, i int) int {
	for i < len(s) && strings.IndexByte(spaces, s[i]) >= 0 {
		i++
	}
	return i
}

// valueEnd returns where the value that starts at s[v:] ends: after its
// closing quote when quoted (closed false when there is none), else at the
// next unescaped whitespace.
func valueEnd(s string, v int) (end int, quoted, closed bool) {
	if v < len(s) && s[v] == '\'' {
		for i := v + 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '\'':
				return i + 1, true, true
			}
		}
		return len(s), true, false
	}
	i := v
	for ; i < len(s) && strings.IndexByte(spaces, s[i]) < 0; i++ {
		if s[i] == '\\' {
			i++
			if i >= len(s) {
				return len(s), false, true
			}
		}
	}
	return i, false, true
}
