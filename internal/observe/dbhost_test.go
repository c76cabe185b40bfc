package observe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/ostat"
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

// silentHost is a database host whose readings never answer (a frozen
// server read through with --db-host sql).
type silentHost struct{}

func (silentHost) Name() string { return "sql" }
func (silentHost) Read(ctx context.Context) (*ostat.Snapshot, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (silentHost) Disclose(context.Context, string) (disclose.HostInfo, *disclose.StorageInfo) {
	return disclose.HostInfo{}, nil
}
func (silentHost) Close() error { return nil }

// A database host reading that does not answer is a failure the run's
// warnings name: when it times out, and when the run ends while it had
// waited half its timeout (the run may fail on the same silence first: a
// second suite beside delayed the reading past the run's end). One the
// run's end cuts sooner is not.
func TestHostReadingCutByTheEnd(t *testing.T) {
	for _, c := range []struct {
		name    string
		timeout time.Duration
		endAt   time.Duration // 0: the run goes on; < 0: it had ended
		failed  string        // what the failure says, "" none
	}{
		{"timed out", 200 * time.Millisecond, 0, "deadline exceeded"},
		// A timer late by up to 0.8 s still cuts it before its timeout.
		{"cut after half its timeout", 2 * time.Second, 1200 * time.Millisecond, "no answer in 1."},
		{"cut at once", 2 * time.Second, -1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ob := &Observer{timeout: c.timeout, errs: map[string]*collectorError{}}
			h := &hostSource{ob: ob, src: silentHost{}, name: "sql"}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch {
			case c.endAt < 0:
				cancel()
			case c.endAt > 0:
				time.AfterFunc(c.endAt, cancel)
			}
			h.mu.Lock()
			s := h.read(ctx, "os")
			h.mu.Unlock()
			e := ob.errs["os (sql)"]
			switch {
			case s != nil:
				t.Errorf("a reading from a host that never answered: %+v", s)
			case c.failed == "" && e != nil:
				t.Errorf("a reading cut at once reported: %s", e.first)
			case c.failed != "" && (e == nil || !strings.Contains(e.first, c.failed)):
				t.Errorf("failure %+v, want one saying %q", e, c.failed)
			}
		})
	}
}
