// Package runner orchestrates the commands of dbparity: it opens the target
// (starting a managed server when asked), drives the load, the run or the
// check through the workload and the driver, and writes the result file.
// The command line hands it parsed options; runner holds no flag parsing
// and the packages below it know nothing of runner.
package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/workload"
)

// Errors the command line maps to exit codes.
var (
	// ErrCheckFailed: a consistency condition does not hold.
	ErrCheckFailed = errors.New("consistency check failed")
	// ErrEndStateDiffers: a replay's end state differs from --verify's
	// (a check that failed: exit 3, as ErrCheckFailed).
	ErrEndStateDiffers = errors.New("end state differs")
	// ErrInterrupted: the user stopped the command; a run's partial result
	// was still written.
	ErrInterrupted = errors.New("interrupted")
)

// UsageError is bad input the user can fix on the command line.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

func usage(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// DefaultDataDir holds the embedded default database, managed clusters
// and default result files.
const DefaultDataDir = "dbparity-data"

// Target is where a command connects.
type Target struct {
	URL     string // --target; "" with no Managed means the embedded default
	Managed string // --managed: "postgres", "mariadb" or ""
	PGBin   string // --pg-bin
	// PGVersion is --pg-version (or --managed postgres@N): the major
	// version of the managed server; 0: the local binaries. PGDist is
	// --pg-dist: an archive of that version's binaries.
	PGVersion int
	PGDist    string
	PGData    string   // --pg-data
	PGSet     []string // --pg-set name=value
	PGConf    string   // --pg-conf
	// PGPreset is --pg-preset: a named set of settings applied before
	// --pg-conf and --pg-set (which override it).
	PGPreset string
	// CPUs confines a managed server's processes to these CPUs (a sweep
	// over cpus=); nil leaves them free.
	CPUs []int
	// MyBin, MyData, MySet and MyConf are --pg-bin and the rest for
	// --managed mariadb (option file lines, names with - or _).
	MyBin, MyData, MyConf string
	MySet                 []string
	MyPreset              string // --my-preset: as --pg-preset
	Progress              io.Writer
	// Timeout is --statement-timeout: it bounds every connection attempt
	// of every command (0: 30s), so that a server frozen before a command
	// starts ends the command instead of hanging it.
	Timeout time.Duration
}

// DefaultLabel names a run given no --label: the target's engine and
// host ("postgres@db1", "postgres@managed", "mariadb@local", "sqlite"),
// never this machine's name alone, which reads like a platform's name in
// every line of a comparison.
func DefaultLabel(t Target) string {
	if t.Managed != "" {
		kind, _, _ := strings.Cut(t.Managed, "@")
		return kind + "@managed"
	}
	raw := t.URL
	if scheme, _, _ := strings.Cut(raw, ":"); raw == "" || strings.EqualFold(scheme, "sqlite") || strings.EqualFold(scheme, "file") {
		return "sqlite" // not opened: that could create its file
	}
	tg, err := engine.Open(raw)
	if err != nil {
		return "run"
	}
	defer tg.Close()
	kind := map[engine.Dialect]string{engine.Postgres: "postgres", engine.MySQL: "mysql", engine.SQLite: "sqlite"}[tg.Dialect]
	if tg.Dialect == engine.MySQL {
		if f := tg.Settings["flavor"]; f != "" {
			kind = f
		}
	}
	host := tg.Host()
	if host == "" || strings.HasPrefix(host, "/") {
		host = "local"
	}
	return kind + "@" + host
}

// labelNote says that a run's label is the default one.
func labelNote(label string) string {
	return fmt.Sprintf("label %s (a default from the target: --label names the platform)", label)
}

// fromManaged makes a managed server's refusal of its input (an archive
// refused or damaged, binaries of another version) a usage error: exit 2.
func fromManaged(err error) error {
	var ue managed.UsageError
	if errors.As(err, &ue) {
		return UsageError{err}
	}
	return err
}

// dataDir is a managed server's data directory, as openTarget uses it:
// one per major version chosen with --pg-version.
func (t Target) dataDir() string {
	if t.Managed == "mariadb" {
		return cmp.Or(t.MyData, filepath.Join(DefaultDataDir, "mariadb"))
	}
	if t.PGVersion > 0 {
		return cmp.Or(t.PGData, filepath.Join(DefaultDataDir, fmt.Sprintf("pg%d", t.PGVersion)))
	}
	return cmp.Or(t.PGData, filepath.Join(DefaultDataDir, "pg"))
}

// ManagedVersion reads --managed postgres@N as --managed postgres
// --pg-version N.
func (t *Target) ManagedVersion() error {
	kind, version, ok := strings.Cut(t.Managed, "@")
	if !ok || kind != "postgres" {
		return nil
	}
	n, err := strconv.Atoi(version)
	if err != nil || n <= 0 || (t.PGVersion > 0 && t.PGVersion != n) {
		return usage("--managed %s: give a major version, postgres@17 (or --pg-version 17)", t.Managed)
	}
	t.PGVersion, t.Managed = n, "postgres"
	return nil
}

// DistCache is where PostgreSQL distribution archives are looked for and
// unpacked (--pg-version).
var DistCache = filepath.Join(DefaultDataDir, "pg-dist")

// binOptions choose a managed PostgreSQL's binaries.
func (t Target) binOptions() managed.Options {
	return managed.Options{BinDir: t.PGBin, Version: t.PGVersion, Dist: t.PGDist, DistCache: DistCache, Log: t.Progress}
}

// validateSettings refuses a managed server's setting that is not
// name=value (--pg-set, --my-set and their per-side forms).
func (t Target) validateSettings() error {
	for _, s := range t.PGSet {
		if _, _, err := managed.ParseSetting(s); err != nil {
			return UsageError{fmt.Errorf("--pg-set %s: %w", s, err)}
		}
	}
	for _, s := range t.MySet {
		if _, _, err := managed.ParseMySetting(s); err != nil {
			return UsageError{fmt.Errorf("--my-set %s: %w", s, err)}
		}
	}
	if t.Managed == "postgres" {
		unknown, err := managed.UnknownSettings(context.Background(), t.binOptions(), t.PGSet)
		if err != nil {
			return fromManaged(err)
		}
		if len(unknown) > 0 {
			return usage("--pg-set %s: the server knows no such setting (postgres --describe-config lists them)", strings.Join(unknown, ", "))
		}
	}
	return nil
}

// connectTimeout is t.Timeout or its default.
func (t Target) connectTimeout() time.Duration {
	if t.Timeout <= 0 {
		return 30 * time.Second
	}
	return t.Timeout
}

// Common are the options every command shares.
type Common struct {
	Target   Target
	Workload workload.Workload
	// Explicit names the workload flags the user set on the command line,
	// to refuse a run whose flags contradict what is loaded.
	Explicit []string
	Seed     uint64
	Stdout   io.Writer
	Stderr   io.Writer
	TTY      bool // stderr is a terminal: draw progress in place
	// ProgressInterval is how often a plain progress line is written when
	// stderr is not a terminal (--progress-interval; 0: ten seconds).
	ProgressInterval time.Duration
}

// opened is a target ready to connect to, and how to let it go.
type opened struct {
	*engine.Target
	managed *managed.Instance
	// roundTripMs is the least time an empty query took on one
	// connection (serverVersion measures it); 0 when not measured.
	roundTripMs float64
}

// explain adds to a command's error, when the managed server dbparity
// started died during it, how it ended and the last lines of its log,
// and keeps those lines beside the result (out + ".server.log"; its
// path said). Without such a death err is returned as it is.
func (o *opened) explain(err error, out string) error {
	if err == nil || o.managed == nil {
		return err
	}
	died := o.managed.Died()
	if died == nil {
		return err
	}
	kept := ""
	if out != "" {
		path := out + ".server.log"
		lines := managed.LogTail(o.managed.LogFile(), 200)
		if werr := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); werr == nil {
			kept = fmt.Sprintf(" (its last %d lines kept in %s)", len(lines), path)
		}
	}
	return fmt.Errorf("%w; %v%s", err, died, kept)
}

func (o *opened) close() {
	o.Target.Close()
	if o.managed != nil {
		if err := o.managed.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "dbparity: stop managed %s: %v\n", o.managed.Engine, err)
		}
	}
}

func openTarget(ctx context.Context, t Target) (*opened, error) {
	switch {
	case t.Managed != "" && t.URL != "":
		return nil, usage("--target and --managed both given: choose one")
	case t.Managed == "" && len(t.CPUs) > 0:
		return nil, usage("--cpus (or cpus=) confines a managed server's processes: it needs --managed postgres (on another server, confine it yourself: dbparity discloses its allowed CPUs and cgroup quota)")
	case t.Managed != "postgres" && !strings.HasPrefix(t.Managed, "postgres@") &&
		(len(t.PGSet) > 0 || t.PGConf != "" || t.PGData != "" || t.PGBin != "" || t.PGPreset != "" || t.PGVersion > 0 || t.PGDist != ""):
		return nil, usage("--pg-set, --pg-conf, --pg-preset, --pg-data, --pg-bin, --pg-version and --pg-dist apply to --managed postgres only")
	case t.Managed != "mariadb" && (len(t.MySet) > 0 || t.MyConf != "" || t.MyData != "" || t.MyBin != "" || t.MyPreset != ""):
		return nil, usage("--my-set, --my-conf, --my-preset, --my-data and --my-bin apply to --managed mariadb only")
	case t.Managed == "":
		tg, err := engine.Open(t.URL)
		if err != nil {
			return nil, UsageError{err}
		}
		tg.ConnectTimeout = t.connectTimeout()
		return &opened{Target: tg}, nil
	}
	kind, version, _ := strings.Cut(t.Managed, "@")
	if kind == "mariadb" && version == "" {
		return openMariaDB(ctx, t)
	}
	if kind != "postgres" {
		return nil, usage("--managed %q: postgres and mariadb can be managed", t.Managed)
	}
	if version != "" {
		if err := t.ManagedVersion(); err != nil {
			return nil, err
		}
	}
	for _, s := range t.PGSet {
		if _, _, err := managed.ParseSetting(s); err != nil {
			return nil, UsageError{fmt.Errorf("--pg-set %s: %w", s, err)}
		}
	}
	if t.PGConf != "" {
		if _, err := os.Stat(t.PGConf); err != nil {
			return nil, usage("--pg-conf %s: %v", t.PGConf, errors.Unwrap(err))
		}
	}
	var preset []string
	if t.PGPreset != "" {
		p, ok := Presets[t.PGPreset]
		if !ok {
			return nil, usage("--pg-preset %q: choose one of %s", t.PGPreset, strings.Join(presetNames(), ", "))
		}
		preset = p.Settings
	}
	mo := t.binOptions()
	mo.DataDir, mo.Settings, mo.ConfFile, mo.Preset = t.dataDir(), t.PGSet, t.PGConf, preset
	inst, err := managed.Start(ctx, mo)
	if err != nil {
		return nil, fromManaged(fmt.Errorf("managed postgres: %w", err))
	}
	return openManaged(inst, t)
}

// openManaged confines a started server to cpus (when given) and opens
// its target; on failure the server is stopped.
func openManaged(inst *managed.Instance, t Target) (*opened, error) {
	if len(t.CPUs) > 0 {
		if err := inst.SetCPUs(t.CPUs); err != nil {
			inst.Stop()
			return nil, err
		}
	}
	tg, err := engine.Open(inst.URL())
	if err != nil {
		inst.Stop()
		return nil, err
	}
	tg.Settings = inst.Settings
	tg.ConnectTimeout = t.connectTimeout()
	return &opened{Target: tg, managed: inst}, nil
}

// openMariaDB starts a managed MariaDB.
func openMariaDB(ctx context.Context, t Target) (*opened, error) {
	for _, s := range t.MySet {
		if _, _, err := managed.ParseMySetting(s); err != nil {
			return nil, UsageError{fmt.Errorf("--my-set %s: %w", s, err)}
		}
	}
	if t.MyConf != "" {
		if _, err := os.Stat(t.MyConf); err != nil {
			return nil, usage("--my-conf %s: %v", t.MyConf, errors.Unwrap(err))
		}
	}
	var preset []string
	if t.MyPreset != "" {
		p, ok := Presets[t.MyPreset]
		if !ok {
			return nil, usage("--my-preset %q: choose one of %s", t.MyPreset, strings.Join(presetNames(), ", "))
		}
		preset = p.MySettings
	}
	data := cmp.Or(t.MyData, filepath.Join(DefaultDataDir, "mariadb"))
	inst, err := managed.StartMariaDB(ctx, managed.Options{BinDir: t.MyBin, DataDir: data, Settings: t.MySet,
		ConfFile: t.MyConf, Preset: preset, Log: t.Progress})
	if err != nil {
		return nil, fmt.Errorf("managed mariadb: %w", err)
	}
	return openManaged(inst, t)
}

// Preset is a named set of managed server settings, for each engine.
type Preset struct {
	Settings   []string // --pg-preset
	MySettings []string // --my-preset
	Purpose    string
}

// Presets are the --pg-preset and --my-preset choices.
var Presets = map[string]Preset{
	// SLOB's method: a buffer cache far smaller than the data, so that the
	// database's reads leave it. PostgreSQL reads through the OS page
	// cache, which may still serve them (the IO units say whether it
	// did); MariaDB's InnoDB reads with O_DIRECT by default.
	"small-cache": {Settings: []string{"shared_buffers=16MB"}, MySettings: []string{"innodb_buffer_pool_size=16M"},
		Purpose: "a 16 MB buffer cache, so that reads leave the database's cache (SLOB's method)"},
}

func presetNames() []string { return slices.Sorted(maps.Keys(Presets)) }

// localDataDir is the directory of the database's files when they are on
// this host: the SQLite file's, or a managed cluster's.
func (o *opened) localDataDir() string {
	switch {
	case o.managed != nil:
		return o.managed.DataDir
	case o.Dialect == engine.SQLite:
		return filepath.Dir(o.Path)
	}
	return ""
}

// prepare connects and reads the workload's loaded state; notLoaded is set
// when the schema is missing. orLoad adds run's --load to the advice.
func prepare(ctx context.Context, o *opened, w workload.Workload, orLoad bool) (notLoaded bool, err error) {
	hint := ""
	if orLoad {
		hint = ", or add --load"
	}
	notLoadedErr := fmt.Errorf("%s is not loaded in %s: run `dbparity load --workload %s` first%s",
		w.Meta().Name, o.URL, w.Meta().Name, hint)
	if o.Dialect == engine.SQLite {
		// Connecting would create an empty database file: do not leave one
		// behind for a command that only reads.
		if _, err := os.Stat(o.Path); errors.Is(err, os.ErrNotExist) {
			return true, notLoadedErr
		}
	}
	c, err := o.Connect(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	err = w.Prepare(ctx, c, o.Dialect)
	if errors.Is(err, workload.ErrNotLoaded) {
		return true, notLoadedErr
	}
	return false, err
}

// checkExplicit refuses load parameters given on the command line that
// contradict what is loaded: a run always measures the data that is
// really there, and says so rather than quietly running on other data.
// want is the workload's parameters as the flags set them, taken before
// Prepare replaced the load parameters with the loaded values.
func checkExplicit(ctx context.Context, o *opened, c Common, want map[string]any) error {
	m := c.Workload.Meta()
	var given []string
	for _, key := range m.LoadParams {
		if slices.Contains(c.Explicit, strings.ReplaceAll(key, "_", "-")) {
			given = append(given, key)
		}
	}
	if len(given) == 0 {
		return nil
	}
	conn, err := o.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	loaded, err := workload.ReadMeta(ctx, conn, o.Dialect, m.Name)
	if err != nil {
		return err
	}
	for _, key := range given {
		v, ok := loaded.Params[key]
		if !ok { // an incomplete record: Prepare has refused it already
			continue
		}
		if asked, was := jsonValue(want[key]), jsonValue(v); asked != was {
			flagName := strings.ReplaceAll(key, "_", "-")
			return usage("--%s %s, but %s in %s is loaded with %s %s: run `dbparity load --workload %s --%s %s` first, or drop --%s to run on what is loaded",
				flagName, asked, m.Name, o.URL, key, was, m.Name, flagName, asked, flagName)
		}
	}
	return nil
}

// jsonValue is v as the load record stores it, so that the int a flag
// sets and the float64 JSON reads back compare equal (and 1000000 is not
// printed 1e+06).
func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.Trim(string(b), `"`)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// serverCPUs are the CPUs a managed server was confined to, if any.
func (o *opened) serverCPUs() []int {
	if o.managed == nil {
		return nil
	}
	return o.managed.CPUs
}
