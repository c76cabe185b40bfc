package disclose

import "strings"

// bracketed returns the active choice of a sysfs selector such as
// "always [madvise] never" or "none [mq-deadline] kyber bfq". A selector
// with a single, unbracketed word (a queue that offers only "none") has
// that word as its choice; anything else yields "", since there is no way
// to tell which of several words is in effect.
func bracketed(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		j := strings.IndexByte(s[i+1:], ']')
		if j < 0 {
			return ""
		}
		v := s[i+1 : i+1+j]
		if strings.ContainsAny(v, "[ \t\n") {
			return ""
		}
		return v
	}
	if f := strings.Fields(s); len(f) == 1 && !strings.Contains(f[0], "]") {
		return f[0]
	}
	return ""
}
