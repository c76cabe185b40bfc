package replay

import (
	"fmt"
	"path"
	"strings"

	"github.com/dbparity/dbparity/internal/capture"
)

// Match picks sessions by one of their names: KEY=PATTERN, KEY one of
// user, database, application, PATTERN a shell pattern (app*, report?).
type Match struct {
	Key, Pattern string
}

// ParseMatch reads KEY=PATTERN.
func ParseMatch(s string) (Match, error) {
	k, p, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	switch {
	case !ok:
		return Match{}, fmt.Errorf("%q: want KEY=PATTERN, KEY one of user, database, application (for example application=web*)", s)
	case k != "user" && k != "database" && k != "application":
		return Match{}, fmt.Errorf("%q: %s is not user, database or application", s, k)
	}
	if _, err := path.Match(p, ""); err != nil {
		return Match{}, fmt.Errorf("%q: bad pattern: %v", s, err)
	}
	return Match{k, p}, nil
}

func (m Match) matches(s *capture.Session) bool {
	v := s.User
	switch m.Key {
	case "database":
		v = s.Database
	case "application":
		v = s.Application
	}
	ok, _ := path.Match(m.Pattern, v)
	return ok
}

// Filter keeps the sessions that match an Include (any, when there is
// one) and no Exclude.
type Filter struct {
	Include, Exclude []Match
}

// Empty tells whether the filter keeps every session.
func (f Filter) Empty() bool { return len(f.Include) == 0 && len(f.Exclude) == 0 }

// Keep says whether session s is replayed.
func (f Filter) Keep(s *capture.Session) bool {
	in := len(f.Include) == 0
	for _, m := range f.Include {
		in = in || m.matches(s)
	}
	for _, m := range f.Exclude {
		if m.matches(s) {
			return false
		}
	}
	return in
}
