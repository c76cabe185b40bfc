package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

// The 4-host and 8-host study on one machine: 8 managed servers (tiny
// buffer caches, the last four with synchronous_commit off), slob on 4
// and then on 8 of them from one command each, compared. Each
// aggregate's servers' CPU is the sum of its targets' (no server is
// another's "other process"), the load profile and waits are kept, the
// setting only some targets have is a difference, and compare gives the
// scale-out table with the efficiency of the targets added.
func TestScaleOverHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 servers")
	}
	dir := t.TempDir()
	urls := make([]string, 8)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range urls {
		pgData := managedDataDir(t)
		settings := []string{"shared_buffers=1MB", "max_connections=20", "autovacuum=off"}
		if i >= 4 {
			settings = append(settings, "synchronous_commit=off")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, err := managed.Start(context.Background(), managed.Options{DataDir: pgData, Settings: settings})
			if err != nil {
				errs[i] = err
				return
			}
			t.Cleanup(func() { inst.Stop() })
			urls[i] = inst.URL()
			if code, _, stderr := dbparity(t, dir, "load", "--workload", "slob", "--scale", "500", "--target", urls[i]); code != 0 {
				errs[i] = fmt.Errorf("load %d: exit %d: %s", i+1, code, stderr)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	runOn := func(name string, targets []string) *result.Run {
		args := []string{"run", "--workload", "slob", "--users", "1", "--duration", "3s", "--warmup", "1s",
			"--label", name, "--out", name + ".json"}
		for _, u := range targets {
			args = append(args, "--target", u)
		}
		if code, _, stderr := dbparity(t, dir, args...); code != 0 {
			t.Fatalf("run on %d targets: exit %d\n%s", len(targets), code, stderr)
		}
		r, err := result.Read(filepath.Join(dir, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Parts) != len(targets) {
			t.Fatalf("%s: %d parts", name, len(r.Parts))
		}
		// Servers' CPU summed over the targets, the others' not counted
		// as competing processes.
		sum := 0.0
		for i, p := range r.Parts {
			if p.OS == nil || p.OS.Window.ServerCPUCores == nil {
				t.Fatalf("%s: target %d has no server CPU", name, i+1)
			}
			sum += *p.OS.Window.ServerCPUCores
		}
		w := r.OS.Window
		if w.ServerCPUCores == nil || math.Abs(*w.ServerCPUCores-sum) > 1e-9 {
			t.Errorf("%s: servers' CPU %v, the targets' sum %.4f", name, w.ServerCPUCores, sum)
		}
		if first := r.Parts[0].OS.Window; w.OtherCPUCores > first.OtherCPUCores-(sum-*first.ServerCPUCores)+1e-9 {
			t.Errorf("%s: other processes %.3f cores: the other servers still counted (target 1 saw %.3f)", name, w.OtherCPUCores, first.OtherCPUCores)
		}
		// The database sections are kept: the load profile over every
		// target's transactions.
		txs := 0.0
		for _, p := range r.Parts {
			if p.LoadProfile != nil {
				txs += p.LoadProfile.Transactions
			}
		}
		if r.LoadProfile == nil || txs == 0 || r.LoadProfile.Transactions != txs {
			t.Errorf("%s: aggregate load profile %v, the targets' transactions %v", name, r.LoadProfile != nil, txs)
		}
		if r.Waits == nil {
			t.Errorf("%s: no waits in the aggregate", name)
		}
		return r
	}
	runOn("four", urls[:4])
	runOn("eight", urls)

	code, stdout, stderr := dbparity(t, dir, "compare", "four.json", "eight.json")
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s", code, stderr)
	}
	table := section(stdout, "over the targets (several database hosts")
	if table == "" {
		t.Fatalf("no scale-out table:\n%s", stdout)
	}
	for _, want := range []string{"targets", "transactions/s per target", "database servers CPU per target", "efficiency of the targets added"} {
		if !strings.Contains(table, want) {
			t.Errorf("scale-out table lacks %q:\n%s", want, table)
		}
	}
	if row := line(table, "targets "); !strings.Contains(row, "4") || !strings.Contains(row, "8") {
		t.Errorf("targets row %q", row)
	}
	// One machine: the targets share its host, and compare says so.
	if f := strings.Fields(line(table, "database hosts")); len(f) < 4 || f[2] != "1" || f[3] != "1" {
		t.Errorf("database hosts row %q, want 1 and 1", f)
	}
	if !strings.Contains(stdout, "grade: NOT A FINDING (ONE HOST)") || !strings.Contains(stdout, "ONE HOST: 2 of 2 runs ran their targets on fewer database hosts than targets") ||
		!strings.Contains(stdout, "8 targets on 1 host(s)") {
		t.Errorf("compare does not say the 8 targets shared one host:\n%s", stdout)
	}
	if row := line(table, "efficiency"); !strings.Contains(row, "100%") || strings.Count(row, "%") < 2 {
		t.Errorf("efficiency row %q: the baseline 100%% and the 8 targets' figure", row)
	}
	for _, want := range []string{"load profile", "synchronous_commit"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("compare lacks %q:\n%s", want, stdout)
		}
	}
	if testing.Verbose() {
		os.Stdout.WriteString(table)
	}
}

// section is the text of a compare section whose title contains title:
// its lines up to the next blank line.
func section(out, title string) string {
	i := strings.Index(out, title)
	if i < 0 {
		return ""
	}
	rest := out[i:]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest + "\n"
}

// line is the first line of s that contains prefix after its indentation.
func line(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return l
		}
	}
	return ""
}
