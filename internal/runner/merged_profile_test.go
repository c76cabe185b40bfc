package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/collect/counters"
	"github.com/dbparity/dbparity/internal/collect/mystat"
	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/workload/orderentry"
)

// A run split over two driver processes (parts 0 and 1, here in this
// process) against one managed PostgreSQL without pg_stat_statements, so
// that the load profile's Executes are the statements the driver sent,
// as in issue 46. Part 0's collectors read the server's counters, which
// count both parts' work; its driver counts its own statements only.
//
//   - load profile: every figure of the merged run's load profile is what
//     it should be: a line from the server's counters the server's count
//     (part 0's line, which covers both parts: its Transactions are the
//     merged run's commits and rollbacks, twice a part's), a line from the
//     driver's counts the parts' sum (Executes × the window is the merged
//     run's statements, not part 0's half), per transaction over the
//     server's transactions.
//   - recovered: both parts' journals as they stood two seconds into the
//     window (what kill -9 leaves; the only checkpoint in the warm-up)
//     are recovered, and merged with the other part's whole result. Every
//     figure a recovered part cannot know is absent from its JSON and from
//     the merged run's, and n/a in show's text, never 0.
//
// mergeLoaded merges parts; parts whose windows a loaded host started
// more than result.MaxSkew apart (107 ms with two suites beside) are
// merged with force, which is what this test's figures do not depend on.
func mergeLoaded(t *testing.T, parts []*result.Run, files []string) *result.Run {
	t.Helper()
	m, err := result.Merge(parts, files, false)
	if err != nil && strings.Contains(err.Error(), "they did not run at once") {
		t.Logf("%v: merged with force", err)
		m, err = result.Merge(parts, files, true)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMergedSplitRunOnPostgres(t *testing.T) {
	t.Parallel()
	s := runSplit(t)
	read := func(f string) *result.Run {
		t.Helper()
		r, err := result.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	p0, p1 := read(s.parts[0]), read(s.parts[1])

	t.Run("load profile", func(t *testing.T) {
		m := mergeLoaded(t, []*result.Run{p0, p1}, s.parts[:])
		lp, own := m.LoadProfile, p0.LoadProfile
		if lp == nil || own == nil {
			t.Fatalf("no load profile: merged %v, part 0 %v", lp != nil, own != nil)
		}
		if l := lp.Line("Executes"); l == nil || l.Source != counters.ExtraClientStmt {
			t.Fatalf("Executes from %+v: not the driver's statements, which this test is about", l)
		}
		for _, k := range []string{counters.ExtraClientStmt, mystat.ExtraClientTx} {
			if !strings.HasPrefix(k, result.DriverKeyPrefix) {
				t.Errorf("the driver's count %q does not begin with result.DriverKeyPrefix %q: merge would take it for the server's", k, result.DriverKeyPrefix)
			}
		}
		var commits, rollbacks int64
		for _, tx := range m.Transactions {
			commits, rollbacks = commits+tx.Committed, rollbacks+tx.Rollbacks
		}
		window := m.MeasureEnd.Sub(m.MeasureStart).Seconds()
		stmts := p0.Statements + p1.Statements
		if m.Statements != stmts || p0.Statements == 0 || p1.Statements == 0 {
			t.Fatalf("merged statements %d, the parts' %d + %d", m.Statements, p0.Statements, p1.Statements)
		}
		if lp.Transactions != own.Transactions {
			t.Errorf("the per-transaction divisor %.0f, the server's %.0f", lp.Transactions, own.Transactions)
		}
		near := func(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b)) }
		for i, l := range lp.Lines {
			o := own.Lines[i]
			got := func(v *float64) string {
				if v == nil {
					return "n/a"
				}
				return fmt.Sprintf("%.6g", *v)
			}
			if l.Name != o.Name || (l.Total == nil) != (o.Total == nil) {
				t.Errorf("%s: merged %+v, part 0's %+v", l.Name, l, o)
				continue
			}
			if l.Total == nil {
				continue
			}
			// What the line should be: the server's count of every part's
			// work as it is, the driver's own counts summed over the parts.
			want := *o.Total
			if strings.HasPrefix(l.Source, result.DriverKeyPrefix) {
				if l.Source != counters.ExtraClientStmt {
					t.Errorf("%s from %s: a driver-side count this test does not know", l.Name, l.Source)
					continue
				}
				want = float64(stmts)
			}
			if *l.Total != want {
				t.Errorf("%s: total %s, want %.6g (%s)", l.Name, got(l.Total), want, l.Source)
			}
			if l.PerSecond == nil || !near(*l.PerSecond, want/lp.Seconds, 1e-9) {
				t.Errorf("%s: %s per second, want %.6g over the profile's %.2f s", l.Name, got(l.PerSecond), want/lp.Seconds, lp.Seconds)
			}
			if (l.PerTx == nil) != (o.PerTx == nil) || l.PerTx != nil && !near(*l.PerTx, want/lp.Transactions, 1e-9) {
				t.Errorf("%s: %s per transaction, want %.6g over the server's %.0f transactions", l.Name, got(l.PerTx), want/lp.Transactions, lp.Transactions)
			}
		}
		// The figures against the merged run's own counts.
		// Within 3%, and the time the parts' windows were apart, which a
		// merge with force spans (208 ms of 3.15 s, 3.4% off, with two
		// suites beside).
		ex, txs := lp.Line("Executes"), lp.Line("Transactions")
		apart := max(p0.MeasureStart.Sub(p1.MeasureStart).Abs(), p0.MeasureEnd.Sub(p1.MeasureEnd).Abs())
		if v := *ex.PerSecond * window; !near(v, float64(m.Statements), 0.03+apart.Seconds()/window) {
			t.Errorf("Executes %.0f/s × %.2f s = %.0f, the merged run's statements %d (part 0's %d)", *ex.PerSecond, window, v, m.Statements, p0.Statements)
		}
		// The server's transactions come from pg_stat_database, which a
		// busy session flushes at most once a second: each end of the
		// window may miss up to a second of commits (the profile's note
		// says so), 1.2 s of the window's rate with the scheduler's slack.
		// Part 0's count alone would be half the merged run's, further off
		// than this for any window over 2.4 s.
		lag := math.Min(0.45, 1.2/window)
		if v := *txs.Total; !near(v, float64(commits+rollbacks), lag) {
			t.Errorf("Transactions %.0f, the merged run's commits and rollbacks %d (part 0's %d); up to %.0f%% off allowed for the server's flush", v, commits+rollbacks, p0.Summarize().Commits+p0.Summarize().Rollbacks, 100*lag)
		}
		if v := *ex.PerTx; !near(v, float64(m.Statements)/float64(commits+rollbacks), lag) {
			t.Errorf("Executes %.2f per transaction, the merged run's %.2f", v, float64(m.Statements)/float64(commits+rollbacks))
		}
		// The other sections part 0's collectors read are the server's too.
		if len(m.IOByBackend) != len(p0.IOByBackend) || m.IOProfile == nil || m.Waits == nil {
			t.Errorf("merged io by backend %d rows (part 0's %d), io profile %v, waits %v", len(m.IOByBackend), len(p0.IOByBackend), m.IOProfile != nil, m.Waits != nil)
		}
		for _, w := range m.Warnings {
			if strings.Contains(w, "collectors ran on parts") {
				t.Errorf("part 1 ran without collectors: %q", w)
			}
		}
		var text bytes.Buffer
		if err := report.Text(&text, m); err != nil {
			t.Fatal(err)
		}
		t.Logf("Executes %.0f/s (%.2f per transaction), %d statements in %.2f s; Transactions %.0f, commits and rollbacks %d\n%s",
			*ex.PerSecond, *ex.PerTx, m.Statements, window, *txs.Total, commits+rollbacks, text.String())
	})

	t.Run("recovered", func(t *testing.T) {
		write := func(name string, r *result.Run) (string, map[string]any) {
			t.Helper()
			f := filepath.Join(s.dir, name)
			if err := result.Write(f, r); err != nil {
				t.Fatal(err)
			}
			return f, flatJSON(t, f)
		}
		show := func(r *result.Run) string {
			t.Helper()
			var b bytes.Buffer
			if err := report.Text(&b, r); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}
		// What no recovered run knows: the driver's CPU and load (no
		// readings), its statement, round trip and reconnect counts (the
		// intervals after the checkpoint carry none), the latencies (its
		// only checkpoint came in the warm-up: even the count of each
		// histogram), the database's profiles, waits and counters, and the
		// OS window.
		unknown := []string{
			"statements", "round_trips", "phases.*.statements",
			"driver.reconnects", "driver.cpu_user_s", "driver.cpu_sys_s", "driver.total_cpu_s", "driver.cpus", "driver.cpu_share",
			"driver.sched_latency_p99_ms", "driver.sched_latency_max_ms", "driver.wake_latency_p99_ms", "driver.wake_latency_max_ms",
			"driver.gap_us_per_tx", "driver.slicing.active_s",
			"commit.count", "commit.mean_ms", "commit.p*_ms", "commit.max_ms",
			"transactions.#.latency.count", "transactions.#.latency.mean_ms", "transactions.#.latency.p*_ms", "transactions.#.latency.max_ms",
			"load_profile", "io_profile", "io_by_backend", "waits", "timed_waits", "db_counters", "os.window", "io_units",
		}
		whole := map[string]map[string]any{"part 0": flatJSON(t, s.parts[0]), "part 1": flatJSON(t, s.parts[1])}
		var recs [2]*result.Run
		var recFiles [2]string
		for i := range 2 {
			rec, err := result.Recover(s.journals[i])
			if err != nil {
				t.Fatal(err)
			}
			if rec.Summarize().Commits == 0 || rec.Commit.Count != 0 || !rec.Recovered {
				t.Fatalf("part %d recovered: %d commits, %d COMMIT latencies: not the run this test needs (its only checkpoint in the warm-up)",
					i, rec.Summarize().Commits, rec.Commit.Count)
			}
			recs[i] = rec
			var doc map[string]any
			recFiles[i], doc = write(fmt.Sprintf("died-%d.json", i), rec)
			absent(t, fmt.Sprintf("recovered part %d", i), doc, unknown)
			// What it does know stays: its counts, series, part.
			for _, k := range []string{"transactions.#.committed", "series.#.commits", "part.index", "measure_end"} {
				if _, ok := find(doc, k); !ok {
					t.Errorf("recovered part %d lacks %s, which its journal holds", i, k)
				}
			}
			text := show(read(recFiles[i]))
			checkText(t, fmt.Sprintf("recovered part %d", i), text)
			if strings.Contains(text, "cpu         user") || !strings.Contains(text, "database host os (measured window): n/a") && i == 0 {
				t.Errorf("recovered part %d: show prints an OS window it does not have:\n%s", i, text)
			}
			if f := fieldsOf(text, "(commit)"); strings.Join(f, " ") != "(commit) n/a n/a n/a n/a n/a" {
				t.Errorf("recovered part %d: (commit) row %q, want every cell n/a (%d commits)\n%s", i, f, rec.Summarize().Commits, text)
			}
		}
		// Each listed field is one a whole part has (part 0's collectors
		// gave it the database's sections): the list is not vacuous.
		for _, k := range unknown {
			_, in0 := find(whole["part 0"], k)
			_, in1 := find(whole["part 1"], k)
			if !in0 && !in1 && k != "driver.slicing.active_s" && k != "io_units" && k != "timed_waits" && k != "io_by_backend" {
				t.Errorf("%s: in neither whole part's file", k)
			}
		}

		// Merged with a recovered part: the collectors' part recovered,
		// then the other.
		for i := range 2 {
			files := s.parts
			files[i] = recFiles[i]
			parts := []*result.Run{read(files[0]), read(files[1])}
			m := mergeLoaded(t, parts, files[:])
			what := fmt.Sprintf("merged with recovered part %d", i)
			f, doc := write(fmt.Sprintf("merged-%d.json", i), m)
			// The run's sums and maxima over its parts' drivers, and what
			// a recovered part leaves unknown in them.
			absent(t, what, doc, []string{
				"statements", "round_trips", "phases.*.statements",
				"driver.reconnects", "driver.cpu_user_s", "driver.cpu_sys_s", "driver.total_cpu_s", "driver.cpus", "driver.cpu_share",
				"driver.sched_latency_p99_ms", "driver.sched_latency_max_ms", "driver.wake_latency_p99_ms", "driver.wake_latency_max_ms",
				"driver.gap_us_per_tx",
				fmt.Sprintf("merged.parts.%d.driver.cpu_*", i), fmt.Sprintf("merged.parts.%d.driver.total_cpu_s", i),
				fmt.Sprintf("merged.parts.%d.driver.cpus", i), fmt.Sprintf("merged.parts.%d.driver.cpu_share", i),
				fmt.Sprintf("merged.parts.%d.driver.sched_*", i), fmt.Sprintf("merged.parts.%d.driver.wake_*", i),
				fmt.Sprintf("merged.parts.%d.driver.gap_us_per_tx", i),
			})
			if v, _ := find(doc, fmt.Sprintf("merged.parts.%d.recovered", i)); v != true {
				t.Errorf("%s: merged.parts[%d].recovered %v", what, i, v)
			}
			if v, _ := find(doc, fmt.Sprintf("merged.parts.%d.driver.cpus", 1-i)); v == nil {
				t.Errorf("%s: the measured part's driver is gone", what)
			}
			if i == 1 {
				// Part 0's collectors: the load profile's driver-side line
				// (Executes, the statements sent) is n/a, the part 1's
				// statements unknown.
				for _, l := range m.LoadProfile.Lines {
					if strings.HasPrefix(l.Source, result.DriverKeyPrefix) && (l.Total != nil || l.PerSecond != nil || l.PerTx != nil) {
						t.Errorf("%s: load profile %s is %v/s from part 0's statements alone", what, l.Name, *l.PerSecond)
					}
				}
			}
			text := show(read(f))
			checkText(t, what, text)
			if f := fieldsOf(text, "(commit)"); len(f) < 2 || f[1] != "n/a" {
				t.Errorf("%s: (commit) row %q: the recovered part's COMMITs after its checkpoint are not known", what, f)
			}
			if f := fieldsOf(text, fmt.Sprintf("part %d", i)); !strings.Contains(strings.Join(f, " "), "driver n/a") {
				t.Errorf("%s: the recovered part's line %q\n%s", what, f, text)
			}
			if f := fieldsOf(text, fmt.Sprintf("part %d", 1-i)); !strings.Contains(strings.Join(f, " "), "s CPU") {
				t.Errorf("%s: the measured part's line %q\n%s", what, f, text)
			}
			t.Logf("%s:\n%s", what, text)
		}
	})
}

// checkText fails on a zero show prints for a figure the run does not
// have.
func checkText(t *testing.T, what, text string) {
	t.Helper()
	for _, bad := range []string{"0.00 s CPU", "0% of 0 CPU(s)", "scheduler p99 0.00 ms", "driver CPU   0", "of its 0 CPU(s)"} {
		if strings.Contains(text, bad) {
			t.Errorf("%s: show prints %q for a figure it does not have:\n%s", what, bad, text)
		}
	}
	if f := fieldsOf(text, "(commit)"); len(f) > 1 && f[1] == "0" {
		t.Errorf("%s: show prints (commit) 0:\n%s", what, text)
	}
	if !strings.Contains(text, "driver CPU   n/a") {
		t.Errorf("%s: show lacks driver CPU n/a:\n%s", what, text)
	}
}

// flatJSON reads a JSON file into its values by path: object keys joined
// by ".", array elements by their index ("transactions.0.latency.count").
func flatJSON(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	var walk func(p string, v any)
	walk = func(p string, v any) {
		out[p] = v
		join := func(k string) string { return strings.TrimPrefix(p+"."+k, ".") }
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(join(k), e)
			}
		case []any:
			for i, e := range x {
				walk(join(fmt.Sprint(i)), e)
			}
		}
	}
	walk("", doc)
	return out
}

// find looks pattern up in a flattened document: "*" matches one key, "#"
// one array index; the first match and whether any exists.
func find(doc map[string]any, pattern string) (any, bool) {
	keys := matches(doc, pattern)
	if len(keys) == 0 {
		return nil, false
	}
	return doc[keys[0]], true
}

func matches(doc map[string]any, pattern string) []string {
	pattern = strings.ReplaceAll(pattern, "#", "[0-9]*")
	var out []string
	for k := range doc {
		if strings.Count(k, ".") != strings.Count(pattern, ".") {
			continue
		}
		if ok, _ := path.Match(strings.ReplaceAll(pattern, ".", "/"), strings.ReplaceAll(k, ".", "/")); ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// absent fails for each field of doc matching one of unknown that holds a
// value (null or missing is absent).
func absent(t *testing.T, what string, doc map[string]any, unknown []string) {
	t.Helper()
	var bad []string
	for _, u := range unknown {
		for _, k := range matches(doc, u) {
			if doc[k] != nil {
				bad = append(bad, fmt.Sprintf("%s = %v", k, doc[k]))
			}
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Errorf("%s: its JSON gives figures it does not have a value:\n  %s", what, strings.Join(bad, "\n  "))
	}
}

// splitRun is a run split over two driver processes (parts 0 and 1, in
// this process) against one managed PostgreSQL, with each part's journal
// as it stood two seconds into the measured window (what kill -9 would
// have left: its only checkpoint the warm-up's).
type splitRun struct {
	dir      string
	parts    [2]string // the parts' result files
	journals [2]string // the copies of their journals
}

func runSplit(t *testing.T) splitRun {
	t.Helper()
	tg, _ := managedServer(t)
	ctx := context.Background()
	c, out := common(t, tg)
	c.Workload.(*orderentry.OrderEntry).Warehouses = 2
	if err := Load(ctx, LoadOptions{Common: c}); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	// Executes from the statements the driver sent, as on a server
	// without pg_stat_statements.
	execSQL(t, tg, "DROP EXTENSION IF EXISTS pg_stat_statements")
	s := splitRun{dir: t.TempDir()}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		s.parts[i] = filepath.Join(s.dir, fmt.Sprintf("p%d.json", i))
		s.journals[i] = filepath.Join(s.dir, fmt.Sprintf("died-%d.json.journal", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Run(ctx, RunOptions{Common: c, Users: 4, Warmup: time.Second, Duration: 3 * time.Second, Label: "split",
				Out: s.parts[i], Part: &Part{Index: i, Of: 2, RunID: "split", BarrierTimeout: time.Minute}})
		}()
	}
	copied := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(time.Minute)
		for {
			var bs [2][]byte
			ok := true
			for i := range 2 {
				bs[i], _ = os.ReadFile(result.JournalPath(s.parts[i]))
				// What a kill -9 leaves once the second measured second is
				// written: the journal up to that line (a copy taken later
				// on a busy host would hold a checkpoint of the window too).
				var n, cut int
				for off := 0; off < len(bs[i]) && n < 2; {
					line, _, _ := bytes.Cut(bs[i][off:], []byte("\n"))
					end := off + len(line) + 1
					if end > len(bs[i]) {
						break // a line still being written
					}
					if bytes.Contains(line, []byte(`"phase":"measure"`)) {
						n, cut = n+1, end
					}
					off = end
				}
				ok = ok && n >= 2
				bs[i] = bs[i][:cut]
			}
			if ok {
				copied <- errors.Join(os.WriteFile(s.journals[0], bs[0], 0o644), os.WriteFile(s.journals[1], bs[1], 0o644))
				return
			}
			if time.Now().After(deadline) {
				copied <- errors.New("the parts' journals hold no 2 measured seconds after a minute")
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	wg.Wait()
	if err := errors.Join(append(errs, <-copied)...); err != nil {
		t.Fatalf("split run: %v\n%s", err, out)
	}
	return s
}
