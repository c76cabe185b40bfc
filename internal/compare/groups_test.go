package compare

import (
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/result"
)

// Runs on MySQL or MariaDB are not compared with runs on another engine;
// runs on one engine are.
func TestComparableRefusesAnotherEngine(t *testing.T) {
	run := func(dialect string) *result.Run {
		r := &result.Run{}
		r.Workload.Name, r.Target.Dialect = "order-entry", dialect
		return r
	}
	groups := func(a, b string) []Group {
		return []Group{{Label: "a", Runs: []*result.Run{run(a)}, Files: []string{"a.json"}},
			{Label: "b", Runs: []*result.Run{run(b)}, Files: []string{"b.json"}}}
	}
	if err := Comparable(groups("postgres", "mysql"), nil); err == nil || !strings.Contains(err.Error(), "different engines") {
		t.Errorf("postgres against mysql: %v", err)
	}
	if err := Comparable(groups("mysql", "mysql"), nil); err != nil {
		t.Errorf("mysql against mysql: %v", err)
	}
}
