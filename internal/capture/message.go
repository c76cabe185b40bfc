package capture

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// This file reads the texts of PostgreSQL's messages (always in English:
// the server must log with lc_messages = 'C'), never the lines around them.

const unnamed = "<unnamed>"

// cutDuration splits "duration: 0.123 ms  rest" into 0.123 ms and rest
// (without the two spaces); ok is false when the text is not a duration.
func cutDuration(msg string) (d time.Duration, rest string, ok bool) {
	s, found := strings.CutPrefix(msg, "duration: ")
	if !found {
		return 0, "", false
	}
	num, after, found := strings.Cut(s, " ms")
	if !found {
		return 0, "", false
	}
	ms, err := strconv.ParseFloat(num, 64)
	if err != nil || ms < 0 || math.IsInf(ms, 0) || math.IsNaN(ms) || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		return 0, "", false
	}
	d = time.Duration(math.Round(ms * float64(time.Millisecond)))
	if after == "" {
		return d, "", true
	}
	rest, found = strings.CutPrefix(after, "  ")
	if !found {
		return 0, "", false
	}
	return d, rest, true
}

// protocolStep is one logged extended-protocol message: "parse NAME: text",
// "bind NAME: text", "execute NAME[/PORTAL]: text" or "execute fetch from
// NAME/PORTAL: text".
type protocolStep struct {
	kind string // "parse", "bind", "execute", "fetch"
	name string // statement name, unnamed for the unnamed statement
	text string
}

func cutStep(msg string) (protocolStep, bool) {
	var st protocolStep
	var rest string
	var found bool
	for _, k := range []struct{ prefix, kind string }{
		{"execute fetch from ", "fetch"},
		{"execute ", "execute"},
		{"parse ", "parse"},
		{"bind ", "bind"},
	} {
		if rest, found = strings.CutPrefix(msg, k.prefix); found {
			st.kind = k.kind
			break
		}
	}
	if !found {
		return st, false
	}
	name, text, found := strings.Cut(rest, ": ")
	if !found {
		// An empty text is logged as "execute S_1: " and may have lost its
		// trailing space on the way.
		name, found = strings.CutSuffix(rest, ":")
		if !found {
			return st, false
		}
	}
	if st.kind == "execute" || st.kind == "fetch" {
		// Portals are named after a slash: "execute S_1/C_2: ...".
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name = name[:i]
		}
	}
	if name == "" || strings.ContainsAny(name, "\n") {
		return st, false
	}
	st.name, st.text = name, text
	return st, true
}

// parseParams reads "$1 = '1', $2 = NULL, $3 = 'x'" as printed by the
// server (the part after "parameters: "). maxLen is the server's
// log_parameter_max_length: values cut to it end in "..." inside their
// quotes; 0 means unknown, and then every value that ends in "..." counts
// as cut. ok is false when the text is not a parameter list.
func parseParams(s string, maxLen int) (params []*string, truncated, ok bool) {
	for i := 1; ; i++ {
		after, found := cutParamHead(s, i)
		if !found {
			return nil, false, false
		}
		s = after
		if rest, isNull := strings.CutPrefix(s, "NULL"); isNull {
			params = append(params, nil)
			s = rest
		} else {
			v, rest, good := unquote(s)
			if !good {
				return nil, false, false
			}
			if cutValue(v, maxLen) {
				truncated = true
			}
			params = append(params, &v)
			s = rest
		}
		// A CONTEXT may go on with more lines after the list.
		if s == "" || s[0] == '\n' {
			return params, truncated, true
		}
		rest, found := strings.CutPrefix(s, ", ")
		if !found {
			return nil, false, false
		}
		s = rest
	}
}

// cutParamHead cuts "$i = " off the start of s.
func cutParamHead(s string, i int) (string, bool) {
	var num [20]byte
	head := strconv.AppendInt(append(num[:0], '$'), int64(i), 10)
	if len(s) < len(head)+3 || s[:len(head)] != string(head) || s[len(head):len(head)+3] != " = " {
		return "", false
	}
	return s[len(head)+3:], true
}

// unquote reads one single-quoted literal, in which a doubled quote is a
// quote.
func unquote(s string) (v, rest string, ok bool) {
	if !strings.HasPrefix(s, "'") {
		return "", "", false
	}
	// Most values hold no quote: they are a piece of s.
	if j := strings.IndexByte(s[1:], '\''); j >= 0 && (j+2 == len(s) || s[j+2] != '\'') {
		return s[1 : j+1], s[j+2:], true
	}
	var b strings.Builder
	i := 1
	for {
		j := strings.IndexByte(s[i:], '\'')
		if j < 0 {
			return "", "", false
		}
		b.WriteString(s[i : i+j])
		i += j + 1
		if i < len(s) && s[i] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), s[i:], true
	}
}

// cutValue says whether a printed parameter value was cut by
// log_parameter_max_length (maxLen > 0: the server keeps at most maxLen
// bytes, ending on a character boundary, then adds "..."; maxLen < 0:
// never; 0: unknown, then any value ending in "..." counts as cut).
func cutValue(v string, maxLen int) bool {
	if maxLen < 0 || !strings.HasSuffix(v, "...") {
		return false
	}
	if maxLen == 0 {
		return true
	}
	// A character takes at most 4 bytes in UTF-8, the widest server encoding
	// that matters here.
	n := len(v) - len("...")
	return n <= maxLen && n > maxLen-4
}

// paramsIn finds a parameter list in a DETAIL ("parameters: ...") or a
// CONTEXT ("unnamed portal with parameters: ...", "portal "x" with
// parameters: ..."; log_parameter_max_length_on_error).
func paramsIn(detail, context string) (list string, found bool) {
	if l, ok := strings.CutPrefix(detail, "parameters: "); ok {
		return l, true
	}
	if i := strings.Index(context, "with parameters: "); i >= 0 && (strings.HasPrefix(context, "unnamed portal ") || strings.HasPrefix(context, "portal ")) {
		return context[i+len("with parameters: "):], true
	}
	return "", false
}

// connFields reads "user=a database=b application_name=c" (connection
// authorized) or "user=a database=b host=c port=d" (disconnection) by the
// keys it knows, so that values may hold spaces.
func connFields(s string, keys ...string) map[string]string {
	out := map[string]string{}
	for k, key := range keys {
		i := strings.Index(s, key+"=")
		if i < 0 || (i > 0 && s[i-1] != ' ') {
			continue
		}
		v := s[i+len(key)+1:]
		end := len(v)
		for _, later := range keys[k+1:] {
			if j := strings.Index(v, " "+later+"="); j >= 0 && j < end {
				end = j
			}
		}
		for _, tail := range []string{" SSL enabled (", " GSS (", " SSL enabled", " GSS "} {
			if j := strings.Index(v, tail); j >= 0 && j < end {
				end = j
			}
		}
		out[key] = v[:end]
	}
	return out
}

// known turns the server's placeholder for a missing name into "".
func known(s string) string {
	if s == "[unknown]" {
		return ""
	}
	return s
}
