package runner

import (
	"slices"
	"testing"
)

// The recorded command line masks passwords by their position in each
// target, whichever way the target is spelled, and leaves the rest alone:
// a password equal to the user or "1" is masked only where it stands.
func TestRedactArgsTargets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want []string }{
		{[]string{"run", "--target", "host=/tmp user=u password=u dbname=d", "--users", "1"},
			[]string{"run", "--target", "host=/tmp user=u password=xxxxx dbname=d", "--users", "1"}},
		{[]string{"run", "--target=host=/tmp user=u password = 'a b' dbname=d"},
			[]string{"run", "--target=host=/tmp user=u password = 'xxxxx' dbname=d"}},
		{[]string{"run", "--target", "postgres://u:1@h:1/d?sslpassword=1", "--a=postgres://u@h/d?password=u"},
			[]string{"run", "--target", "postgres://u:xxxxx@h:1/d?sslpassword=xxxxx", "--a=postgres://u@h/d?password=xxxxx"}},
		{[]string{"run", "--managed", "postgres", "--pg-set", "password_encryption=md5", "--label", "1"},
			[]string{"run", "--managed", "postgres", "--pg-set", "password_encryption=md5", "--label", "1"}},
	} {
		if got := RedactArgs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("RedactArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
