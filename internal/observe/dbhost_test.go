package observe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
)

// --db-host local reads this host's /proc: for a database on another
// host it would present the driver's host as the database's, so it is
// refused, naming the sources that can see that host. A database here
// (loopback, a socket, a PID given) keeps it.
func TestLocalOnlyHere(t *testing.T) {
	ctx := context.Background()
	o := Options{DBHost: "local", StatementTimeout: 5 * time.Second}
	for _, raw := range []string{"postgres://bench@198.18.1.2:5432/bench", "mysql://bench:pw@198.18.3.2:3306/bench", "host=db.example dbname=bench"} {
		tg, err := engine.Open(raw)
		if err != nil {
			t.Fatal(err)
		}
		hc, err := ChooseHost(ctx, Target{Target: tg}, o, nil, 0)
		var ue UsageError
		if !errors.As(err, &ue) || hc.Source != nil {
			t.Errorf("%s: --db-host local gave %q, %v; want a usage error", raw, hc.Name, err)
			continue
		}
		for _, want := range []string{"not on this host", "cannot see its server", "--db-host sql", "--db-host node-exporter", tg.Host()} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the refusal lacks %q: %v", raw, want, err)
			}
		}
		tg.Close()
	}
	for _, c := range []struct {
		raw string
		pid int
	}{{"postgres://bench@127.0.0.1:5432/bench", 0}, {"host=/tmp dbname=bench", 0}, {"postgres://bench@198.18.1.2/bench", 1}} {
		tg, err := engine.Open(c.raw)
		if err != nil {
			t.Fatal(err)
		}
		o := o
		o.DBPID = c.pid
		if hc, err := ChooseHost(ctx, Target{Target: tg}, o, nil, 0); err != nil || !hc.Local {
			t.Errorf("%s (--db-pid %d): --db-host local gave %q, %v", c.raw, c.pid, hc.Name, err)
		}
		tg.Close()
	}
}
