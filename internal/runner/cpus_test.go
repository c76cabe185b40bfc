package runner

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/cpuset"
	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
)

// A server confined to fewer CPUs than the host has, by dbparity
// (managed, --cpus) or by someone else (taskset on a server of its own):
// its allowed CPUs are disclosed as the server's, they differ from an
// unconfined run's in what compare lists, and its CPU utilisation is a
// share of the CPUs it may use, not of the host's.
func TestServerCPUsDisclosed(t *testing.T) {
	t.Parallel()
	all, err := cpuset.Available()
	if err != nil || len(all) < 2 {
		t.Skipf("needs 2 CPUs or more (%v, %v)", all, err)
	}
	ctx := context.Background()
	direct, inst := managedServer(t)
	c, out := common(t, direct)
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	run := func(label string) *result.Run {
		t.Helper()
		o := RunOptions{Common: c, Label: label, Users: 2, Duration: 2 * time.Second, Out: filepath.Join(t.TempDir(), label+".json")}
		if err := Run(ctx, o); err != nil {
			t.Fatalf("run %s: %v\n%s", label, err, out)
		}
		r, err := result.Read(o.Out)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	free := run("free")
	// A managed server preloads pg_stat_statements: block changes are
	// measured, not n/a.
	if l := free.LoadProfile.Line("Block changes"); l == nil || l.PerSecond == nil || *l.PerSecond <= 0 {
		t.Errorf("block changes on a managed server: %+v", l)
	}
	last := all[len(all)-1:]
	if err := inst.SetCPUs(last); err != nil { // as taskset -c would
		t.Fatal(err)
	}
	confined := run("confined")
	cg := confined.Disclosure.Host.Cgroup
	if cg.Of != "server" || cg.CPUsAllowedList != cpuset.Format(last) || cg.CPUsAllowed != 1 {
		t.Errorf("the confined server's cgroup facts: %+v", cg)
	}
	var text bytes.Buffer
	if err := report.Text(&text, confined); err != nil {
		t.Fatal(err)
	}
	if want := "server confined to CPUs " + cpuset.Format(last); !strings.Contains(text.String(), want) {
		t.Errorf("show does not say %q:\n%s", want, text.String())
	}
	if u, ok := confined.CPU(); !ok || !u.Server || u.CPUs != 1 || u.Pct > 105 {
		t.Errorf("the confined server's utilisation: %+v (ok %v), want a share of its 1 CPU", u, ok)
	}
	if u, ok := free.CPU(); !ok || u.CPUs != float64(len(all)) {
		t.Errorf("the free server's utilisation: %+v (ok %v), want a share of %d CPUs", u, ok, len(all))
	}
	found := false
	for _, d := range compare.DisclosureDiff([]compare.Group{{Label: "free", Runs: []*result.Run{free}}, {Label: "confined", Runs: []*result.Run{confined}}}) {
		found = found || d.Key == "disclosure.host.cgroup.cpus_allowed_list"
	}
	if !found {
		t.Error("the server's allowed CPUs are not among what differs")
	}
}
