package runner

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/workload/orderentry"
)

// Both execution modes run the same transactions: after a run in each,
// on one managed server, the consistency conditions hold, the mix is the
// same, and each mode's round trips are what it promises, counted by the
// connections themselves: client mode pipelines (more than one statement
// per round trip, fewer round trips than statements), procedure mode makes
// one round trip per transaction. So does client mode with --compact
// New-Order, with fewer statements. compare refuses to set them side by
// side.
func TestOrderEntryModes(t *testing.T) {
	t.Parallel()
	tg, _ := managedServer(t)
	ctx := context.Background()
	c, out := common(t, tg)
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	dir := t.TempDir()
	runs := map[string]*result.Run{}
	var files []string
	for _, mode := range []string{orderentry.ModeClient, orderentry.ModeProcedures, "compact"} {
		oe := c.Workload.(*orderentry.OrderEntry)
		oe.Mode, oe.Compact = mode, mode == "compact"
		if oe.Compact {
			oe.Mode = orderentry.ModeClient
		}
		path := filepath.Join(dir, mode+".json")
		err := Run(ctx, RunOptions{Common: c, Users: 3, Duration: 3 * time.Second, Warmup: 500 * time.Millisecond,
			Label: mode, Out: path, Collect: CollectOptions{Off: true}})
		if err != nil {
			t.Fatalf("run in %s mode: %v\n%s", mode, err, out)
		}
		if err := Check(ctx, c); err != nil {
			t.Fatalf("check after a run in %s mode: %v\n%s", mode, err, out)
		}
		r, err := result.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		runs[mode], files = r, append(files, path)
		s := r.Summarize()
		t.Logf("%s: %.0f tps, %d statements in %d round trips (%.1f per transaction), driver %.0f µs per transaction",
			mode, s.TPS, s.Statements, s.RoundTrips, s.RoundTripsPerTx, result.Value(s.DriverCPUPerTxUs))
		if got, _ := r.Workload.Params["execution"].(string); !strings.Contains(got, strings.TrimSuffix(mode, "s")) {
			t.Errorf("%s run records execution %q", mode, got)
		}
		if s.RoundTrips == 0 || s.Commits == 0 {
			t.Fatalf("%s: no round trips counted: %+v", mode, s)
		}
	}
	cl, pr, co := runs[orderentry.ModeClient].Summarize(), runs[orderentry.ModeProcedures].Summarize(), runs["compact"].Summarize()
	// Compact New-Order: an order of n lines sends 2n - 2 statements fewer
	// (n ≥ 5); New-Orders are 45% of the mix.
	if perCl, perCo := float64(cl.Statements)/float64(cl.Commits+cl.Rollbacks), float64(co.Statements)/float64(co.Commits+co.Rollbacks); perCo > perCl-0.45*8 {
		t.Errorf("compact New-Order: %.1f statements per transaction against %.1f", perCo, perCl)
	}
	if per := float64(cl.Statements) / float64(cl.RoundTrips); per <= 1.2 {
		t.Errorf("client mode sent %.2f statements per round trip: not pipelined", per)
	}
	// A transaction is one call; a retried or rolled-back one may add a
	// ROLLBACK.
	if pr.RoundTripsPerTx < 0.99 || pr.RoundTripsPerTx > 1.1 {
		t.Errorf("procedure mode took %.2f round trips per transaction, want 1", pr.RoundTripsPerTx)
	}
	if cl.RoundTripsPerTx < 3*pr.RoundTripsPerTx {
		t.Errorf("client mode took %.2f round trips per transaction against procedure mode's %.2f", cl.RoundTripsPerTx, pr.RoundTripsPerTx)
	}
	// The same mix, by the same generator: each type's share within 3
	// points (a few seconds of runs), or within three deviations of the
	// difference of two samples when a run is short (client mode ran 33
	// transactions on a host with two suites beside it, 79 another time,
	// none of them stock_level: 4% of the mix, none in 79 draws is a 4%
	// chance). The samples are not prefixes of one sequence: each
	// session's warm-up takes its own number of draws.
	for _, name := range []string{"new_order", "payment", "order_status", "delivery", "stock_level"} {
		na := float64(cl.Commits + cl.Rollbacks)
		a := float64(cl.Transactions[name].Count) / na
		for other, s := range map[string]result.Summary{"procedure": pr, "compact": co} {
			nb := float64(s.Commits + s.Rollbacks)
			b := float64(s.Transactions[name].Count) / nb
			p := (a + b) / 2
			margin := max(0.03, 3*math.Sqrt(p*(1-p)*(1/na+1/nb)))
			if d := a - b; d > margin || d < -margin {
				t.Errorf("%s is %.1f%% of client mode's %.0f transactions, %.1f%% of %s mode's %.0f (±%.1f)", name, 100*a, na, 100*b, other, nb, 100*margin)
			}
		}
	}
	// --compact on SQLite: the same statements, checked the same way.
	sq, sqOut := common(t, Target{URL: "sqlite://" + filepath.Join(dir, "oe.db")})
	sq.Workload.(*orderentry.OrderEntry).Compact = true
	if err := Load(ctx, LoadOptions{Common: sq}); err != nil {
		t.Fatalf("load sqlite: %v\n%s", err, sqOut)
	}
	if err := Run(ctx, RunOptions{Common: sq, Users: 2, Duration: 2 * time.Second, Label: "sqlite", Out: filepath.Join(dir, "sqlite.json"),
		Collect: CollectOptions{Off: true}}); err != nil {
		t.Fatalf("run sqlite --compact: %v\n%s", err, sqOut)
	}
	if err := Check(ctx, sq); err != nil {
		t.Fatalf("check after a --compact run on SQLite: %v\n%s", err, sqOut)
	}
	g := []compare.Group{{Label: "client", Runs: []*result.Run{runs[orderentry.ModeClient]}, Files: files[:1]},
		{Label: "procedures", Runs: []*result.Run{runs[orderentry.ModeProcedures]}, Files: files[1:]}}
	if err := compare.Comparable(g, []string{"execution"}); err == nil || !strings.Contains(err.Error(), "execution") {
		t.Errorf("compare accepts runs of both modes: %v", err)
	}
}
