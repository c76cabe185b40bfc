package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/runner"
	"github.com/dbparity/dbparity/internal/workload"
	"golang.org/x/term"
)

// common binds the flags shared by load, run and check.
type common struct {
	opts     runner.Common
	workload string
	pgSet    multi
	mySet    multi
	targets  multi
}

// eachTarget is the command's targets: the one of Common, or one per
// --target when several are given.
func (c *common) eachTarget() []runner.Target {
	if len(c.targets) <= 1 {
		return []runner.Target{c.opts.Target}
	}
	var ts []runner.Target
	for _, u := range c.targets {
		t := c.opts.Target
		t.URL = u
		ts = append(ts, t)
	}
	return ts
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// newFlags builds a command's flag set. The workload's own flags depend on
// which workload is chosen, so --workload is read from args first.
func newFlags(name string, args []string) (*flag.FlagSet, *common, error) {
	fs, c := targetFlags(name)
	c.workload = workloadArg(args)
	w, err := workload.New(c.workload)
	if err != nil {
		return nil, nil, runner.UsageError{Err: err}
	}
	c.opts.Workload = w
	fs.StringVar(&c.workload, "workload", c.workload, "workload: "+strings.Join(workload.Names(), ", "))
	fs.Uint64Var(&c.opts.Seed, "seed", 1, "seed of all random choices; the same seed repeats a load or run exactly")
	w.Flags(fs)
	return fs, c, nil
}

// targetFlags builds a command's flag set with the flags that name the
// target (replay has those and no workload's).
func targetFlags(name string) (*flag.FlagSet, *common) {
	fs := flag.NewFlagSet("dbparity "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &common{}
	t := &c.opts.Target
	fs.Var(&c.targets, "target", "database `URL`: postgres://USER@HOST:PORT/DB or sqlite://PATH (default sqlite://dbparity-data/dbparity.db); repeat it to load, check or run several targets (run drives them at once)")
	fs.StringVar(&t.Managed, "managed", "", "start a throw-away local server instead of --target: postgres or mariadb")
	fs.StringVar(&t.PGBin, "pg-bin", "", "managed: directory of initdb, pg_ctl and postgres (default: found on PATH)")
	fs.Var(major{&t.PGVersion}, "pg-version", "managed: the PostgreSQL major `version` to run (14 to 18): from --pg-bin, the local installation, --pg-dist or an archive in dbparity-data/pg-dist (default: the local binaries)")
	fs.StringVar(&t.PGDist, "pg-dist", "", "managed, with --pg-version: an archive of that version's binaries to unpack once into dbparity-data/pg-dist (a .jar of "+managed.DistArtifact+", or its .txz)")
	fs.StringVar(&t.PGData, "pg-data", "", "managed: cluster directory, kept between commands (default dbparity-data/pg, or dbparity-data/pgN with --pg-version N)")
	fs.Var(&c.pgSet, "pg-set", "managed: a server setting `name=value` (repeatable)")
	fs.StringVar(&t.PGConf, "pg-conf", "", "managed: file of postgresql.conf lines")
	fs.StringVar(&t.MyBin, "my-bin", "", "managed mariadb: directory of mariadbd and mariadb-install-db (default: found on PATH, /usr/sbin, /usr/bin)")
	fs.StringVar(&t.MyData, "my-data", "", "managed mariadb: data directory, kept between commands (default dbparity-data/mariadb)")
	fs.Var(&c.mySet, "my-set", "managed mariadb: a server option `name=value` (repeatable)")
	fs.StringVar(&t.MyConf, "my-conf", "", "managed mariadb: option file ([mysqld] lines)")
	fs.StringVar(&t.PGPreset, "pg-preset", "", "managed: named settings, overridden by --pg-conf and --pg-set: small-cache (16 MB shared_buffers, SLOB's method)")
	fs.StringVar(&t.MyPreset, "my-preset", "", "managed mariadb: named settings, overridden by --my-conf and --my-set: small-cache (16 MB InnoDB buffer pool, SLOB's method)")
	fs.Var(positive{d: &c.opts.ProgressInterval}, "progress-interval", "when stderr is not a terminal (CI, nohup, a pod's log): write a plain progress line every `duration` (default 10s; on a terminal the line is redrawn in place)")
	t.Timeout = 30 * time.Second
	fs.Var(positive{d: &t.Timeout}, "statement-timeout", "give up on any connection attempt, and in run, ab and sweep on any statement (sessions and collectors), the server has not answered for this `duration` (above 0)")
	return fs, c
}

// workloadArg finds --workload's value before flags are parsed.
func workloadArg(args []string) string {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, "workload="); ok {
			return v
		}
		if a == "workload" && i+1 < len(args) {
			return args[i+1]
		}
		if a == "" { // "--" ends the flags
			break
		}
	}
	return "order-entry"
}

// otherWorkloadsHelp lists the flags of the workloads not chosen (their
// flags exist only with --workload NAME), so that --help shows them all.
func (c *common) otherWorkloadsHelp(w io.Writer) {
	if c == nil || c.opts.Workload == nil {
		return
	}
	for _, name := range workload.Names() {
		if name == c.workload {
			continue
		}
		other, err := workload.New(name)
		if err != nil {
			continue
		}
		wf := flag.NewFlagSet(name, flag.ContinueOnError)
		other.Flags(wf)
		var fl []*flag.Flag
		wf.VisitAll(func(f *flag.Flag) { fl = append(fl, f) })
		if len(fl) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nflags of --workload %s (given with it):\n", name)
		for _, f := range fl {
			printFlag(w, f)
		}
	}
}

// parse parses args, prints help on -h, and fills the common options.
func (c *common) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(os.Stdout, fs, c, "")
			return err
		}
		return runner.UsageError{Err: fmt.Errorf("%v (see %s --help)", err, fs.Name())}
	}
	if fs.NArg() > 0 {
		return runner.UsageError{Err: fmt.Errorf("unexpected argument %q (see %s --help)", fs.Arg(0), fs.Name())}
	}
	c.opts.Target.PGSet = c.pgSet
	c.opts.Target.MySet = c.mySet
	if err := c.opts.Target.ManagedVersion(); err != nil {
		return err
	}
	if len(c.targets) > 0 {
		c.opts.Target.URL = c.targets[0]
	}
	if len(c.targets) > 1 && c.opts.Target.Managed != "" {
		return runner.UsageError{Err: errors.New("--managed starts one server: give several --target URLs, or one --managed")}
	}
	c.opts.Stdout, c.opts.Stderr = os.Stdout, os.Stderr
	c.opts.TTY = term.IsTerminal(int(os.Stderr.Fd()))
	c.opts.Target.Progress = os.Stderr
	if c.opts.Workload != nil {
		var wf flag.FlagSet
		c.opts.Workload.Flags(&wf)
		fs.Visit(func(f *flag.Flag) {
			if wf.Lookup(f.Name) != nil {
				c.opts.Explicit = append(c.opts.Explicit, f.Name)
			}
		})
	}
	return nil
}

// positive is a duration flag that refuses 0 and negative values: an
// interval of 0 means nothing (the library reads 0 as its default, so the
// command line must refuse it rather than pass it on).
type positive struct {
	d   *time.Duration
	min time.Duration // the least that makes sense; 0: anything above 0
}

func (positive) kind() string { return "duration" }

func (p positive) String() string {
	if p.d == nil {
		return "0s"
	}
	return p.d.String()
}

func (p positive) Set(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return errors.New("not a duration (for example 1s or 250ms)")
	case d <= 0:
		return errors.New("must be above 0 (for example 1s or 250ms)")
	case d < p.min:
		return fmt.Errorf("must be at least %s: a collector reads the server and the host each time", p.min)
	}
	*p.d = d
	return nil
}

// count is an int flag that refuses 0 and negative values: a run of no
// users or no repetitions is a mistake, not a default.
type count struct{ n *int }

// major is a PostgreSQL major version flag (--pg-version): one that
// dbparity manages.
type major struct{ n *int }

func (major) kind() string { return "version" }

func (m major) String() string {
	if m.n == nil || *m.n == 0 {
		return ""
	}
	return strconv.Itoa(*m.n)
}

func (m major) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || !slices.Contains(managed.SupportedMajors, n) {
		return fmt.Errorf("choose a major version: %s", managed.SupportedText())
	}
	*m.n = n
	return nil
}

func (count) kind() string { return "N" }

func (c count) String() string {
	if c.n == nil {
		return "0"
	}
	return strconv.Itoa(*c.n)
}

// maxCount bounds every count flag: more sessions, runs, CPUs or series
// points than this is a typing mistake, which would otherwise be tried
// (a million sessions is more than any server's connection slots).
const maxCount = 1_000_000

func (c count) Set(s string) error {
	n, err := strconv.Atoi(s)
	switch {
	case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(s, "-"):
		return fmt.Errorf("too large: at most %d", maxCount)
	case errors.Is(err, strconv.ErrRange):
		return errors.New("must be at least 1")
	case err != nil:
		return errors.New("not a whole number")
	case n < 1:
		return errors.New("must be at least 1")
	case n > maxCount:
		return fmt.Errorf("too large: at most %d", maxCount)
	}
	*c.n = n
	return nil
}

// warnPasswordArgs warns once, when a command that had a password on its
// command line has done its work (an error stays one line): the results
// never hold it, but other users of the host saw it (ps) while it ran.
func warnPasswordArgs(w io.Writer, args []string) {
	// Passwords only: RedactArgs also drops a --db-host-metrics URL's
	// query, which need hold none (?collect[]=cpu).
	password := false
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") {
			a = v
		}
		password = password || engine.Redact(a) != a
	}
	if password {
		fmt.Fprintln(w, "dbparity: warning: the password on the command line was visible to other users of this host (ps) while dbparity ran: "+
			"give it in PGPASSWORD or ~/.pgpass (PostgreSQL), MYSQL_PWD (MySQL, MariaDB) instead")
	}
}

// notAnInput refuses an output that is one of the command's inputs
// (the same path, or the same file by another name): --force replaces
// an output, never what the command reads.
func notAnInput(flagName, out string, inputs ...string) error {
	if out == "" {
		return nil
	}
	outInfo, outErr := os.Stat(out)
	outAbs, _ := filepath.Abs(out)
	for _, in := range inputs {
		inAbs, _ := filepath.Abs(in)
		same := outAbs == inAbs
		if inInfo, err := os.Stat(in); err == nil && outErr == nil {
			same = same || os.SameFile(inInfo, outInfo)
		}
		if same {
			return runner.UsageError{Err: fmt.Errorf("%s %s is one of the files this command reads: choose another file (--force never replaces an input)", flagName, out)}
		}
	}
	return nil
}

// parseOwn parses a command's own flags, which may follow its files;
// usageLine is named in errors (--help prints the command's help).
func parseOwn(fs *flag.FlagSet, args []string, usageLine string, valued ...string) ([]string, error) {
	fs.SetOutput(io.Discard)
	flags, files := splitArgs(args, valued...)
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(os.Stdout, fs, nil, "")
			return nil, err
		}
		return nil, runner.UsageError{Err: fmt.Errorf("%v (usage: %s)", err, usageLine)}
	}
	return files, nil
}

// splitArgs separates flags from file names so that flags may follow the
// files (dbparity compare a.json b.json --html r.html); valued names the
// flags that take the next word as their value.
func splitArgs(args []string, valued ...string) (flags, files []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case slices.Contains(valued, strings.TrimLeft(a, "-")):
			flags = append(flags, a)
			if i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		case strings.HasPrefix(a, "-"):
			flags = append(flags, a)
		default:
			files = append(files, a)
		}
	}
	return flags, files
}

// helpWidth is the width --help keeps to: a terminal's.
const helpWidth = 80

// printHelp prints a command's --help: its usage and summary; its flags,
// each once with its default once, under headings when the command
// takes a target (c: its common flags; nil for a command of its own
// flags); the flags of the workloads not chosen; after, a text of the
// command's own; and its examples.
func printHelp(w io.Writer, fs *flag.FlagSet, c *common, after string) {
	name := strings.TrimPrefix(fs.Name(), "dbparity ")
	cmd := commandNamed(name)
	usage := []string{"[flags]"}
	if cmd != nil && len(cmd.usage) > 0 {
		usage = cmd.usage
	}
	for i, u := range usage {
		lead := "usage: "
		if i > 0 {
			lead = "       "
		}
		// An optional part, [--duration D], stays on one line.
		depth := 0
		u = strings.Map(func(r rune) rune {
			switch {
			case r == '[':
				depth++
			case r == ']':
				depth--
			case r == ' ' && depth > 0:
				return '\x1f'
			}
			return r
		}, u)
		var b strings.Builder
		wrapText(&b, lead, strings.Repeat(" ", len(lead)+4), "dbparity "+name+" "+u)
		fmt.Fprint(w, strings.ReplaceAll(b.String(), "\x1f", " "))
	}
	if cmd != nil {
		fmt.Fprintln(w)
		wrapText(w, "", "", strings.ToUpper(cmd.summary[:1])+cmd.summary[1:]+".")
	}
	groups := map[string][]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) {
		h := "flags"
		if c != nil {
			h = flagHeading(name, f.Name)
		}
		groups[h] = append(groups[h], f)
	})
	for _, fl := range groups {
		if c != nil {
			// The flags most commands are given first, then by name.
			slices.SortStableFunc(fl, func(a, b *flag.Flag) int { return leadingFlag(a.Name) - leadingFlag(b.Name) })
		}
	}
	for _, h := range []string{"flags", "target", "workload", "run", name, "collectors", "output"} {
		if len(groups[h]) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", h)
		for _, f := range groups[h] {
			printFlag(w, f)
		}
		delete(groups, h)
		if h == "workload" {
			c.otherWorkloadsHelp(w)
		}
	}
	if after != "" {
		fmt.Fprint(w, "\n"+after)
		if !strings.HasSuffix(after, "\n") {
			fmt.Fprintln(w)
		}
	}
	if cmd != nil && len(cmd.examples) > 0 {
		fmt.Fprintln(w, "\nexamples:")
		for _, e := range cmd.examples {
			fmt.Fprintln(w, "  "+e)
		}
	}
}

// leadingFlag orders a heading's flags: these before the others.
func leadingFlag(name string) int {
	if i := slices.Index([]string{"target", "managed", "workload", "capture", "users", "duration"}, name); i >= 0 {
		return i - 100
	}
	return 0
}

// printFlag prints one flag: --name and its kind of value, then its usage
// wrapped to helpWidth, with the flag's default added when the usage does
// not already say it (the flag package would add it a second time).
func printFlag(w io.Writer, f *flag.Flag) {
	kind, usage := flag.UnquoteUsage(f)
	if k, ok := f.Value.(interface{ kind() string }); ok && kind == "value" {
		kind = k.kind()
	}
	head := "  --" + f.Name
	if kind != "" {
		head += " " + kind
	}
	fmt.Fprintln(w, head)
	if !strings.Contains(usage, "(default") && !zeroDefault(f) {
		if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		} else {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
	}
	wrapText(w, "      ", "      ", usage)
}

// zeroDefault tells whether f's default is its type's zero value, which
// --help does not show (as the flag package decides).
func zeroDefault(f *flag.Flag) (zero bool) {
	t := reflect.TypeOf(f.Value)
	var z reflect.Value
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	} else {
		z = reflect.Zero(t)
	}
	defer func() {
		if recover() != nil {
			zero = f.DefValue == ""
		}
	}()
	return f.DefValue == z.Interface().(flag.Value).String()
}

// wrapText writes text in lines of at most helpWidth, the first after
// first, the others after indent (a word longer than a line stays whole).
func wrapText(w io.Writer, first, indent, text string) {
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > helpWidth {
			fmt.Fprintln(w, line)
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	fmt.Fprintln(w, line)
}

// flagHeading is the heading a flag of a command that takes a target is
// listed under in --help: target, workload, run (the flags of a run, in
// run, ab and sweep), collectors, output, or the command's own.
func flagHeading(command, flagName string) string {
	switch flagName {
	case "out", "force", "prefix", "label", "label-a", "label-b", "html", "metrics-addr", "metrics-linger",
		"series-points", "progress-interval", "show-literals":
		return "output"
	case "no-collect", "interval", "wait-interval", "db-pid", "db-host", "db-host-metrics":
		return "collectors"
	case "workload", "seed":
		return "workload"
	case "cpus":
		return "target"
	}
	switch h := helpHeadings()[flagName]; {
	case h == "", h == "run" && command != "run" && command != "ab" && command != "sweep":
		return command // load's --workers, replay's own
	default:
		return h
	}
}

// helpHeadings maps the flags bound by targetFlags, sidesFlags, the
// workloads and runFlags to their heading, from the functions themselves.
var helpHeadings = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	add := func(heading string, fs *flag.FlagSet) {
		fs.VisitAll(func(f *flag.Flag) {
			if m[f.Name] == "" {
				m[f.Name] = heading
			}
		})
	}
	tf, _ := targetFlags("help")
	add("target", tf)
	sf := flag.NewFlagSet("help", flag.ContinueOnError)
	new(sidesFlags).bind(sf)
	add("target", sf)
	for _, name := range workload.Names() {
		if w, err := workload.New(name); err == nil {
			wf := flag.NewFlagSet(name, flag.ContinueOnError)
			w.Flags(wf)
			add("workload", wf)
		}
	}
	rf := flag.NewFlagSet("help", flag.ContinueOnError)
	runFlags(rf, &runner.RunOptions{})
	add("run", rf)
	return m
})
