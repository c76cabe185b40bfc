// Command replayclients measures how well `dbparity replay` replays the
// captures of real clients. For each client it sets up a throw-away
// managed server, keeps a copy of its starting state, runs the client with
// statement logging on for -duration, records the end state (dbparity
// snapshot) and captures the log (dbparity capture); then it replays the
// capture twice on fresh copies of the starting state, at the captured pace
// (--speed 1) and as fast as possible (--speed max), each verified against
// the end state and bounded by -limit. For each replay it prints
// dbparity's own CPU (user+sys of the replaying process, from its
// getrusage over the replay, synchronisation and monitor included) per
// statement sent, against issue 51's target of at most 10 µs.
//
//	go run ./bench/replayclients [-dbparity PATH] [-before PATH] [-pgreplay PATH|none] [-duration 20s] [-clients a,b] [-limit 180s] [-keep DIR] [-sync MODE]
//
// With -before, every replay is run again by that dbparity build, in
// turns with this one's on fresh copies of the same starting state, and a
// second table gives both builds' CPU per statement and their ratio.
//
// pgreplay (the C replayer, when installed, or -pgreplay PATH) is the
// peer on the PostgreSQL clients: their servers log with log_statement =
// 'all' as well, which pgreplay reads, and pgreplay parses the same
// csvlog (pgreplay -f -c) and replays it on a fresh copy of the starting
// state at the captured pace (-s 1) and 1000 times faster (-s 1000, its
// nearest to as fast as possible), bounded by -limit; a third table gives
// its time, its CPU per statement (user+sys of the process, from its
// rusage, the replay file read in too) and the end state it left.
//
// Clients (run one after another):
//
//	pgbench-extended  pgbench -c 4 -j 2 -M extended, no rate limit (one hot branch row)
//	pgbench-prepared  the same with -M prepared
//	pgbench-1         pgbench -c 1 -M extended: one session, nothing to wait for (pgreplay's best case)
//	psycopg           psycopg_app.py: a psycopg 3 application, 4 threads
//	sysbench-pg       sysbench oltp_read_write on PostgreSQL, 4 threads
//	sysbench-mariadb  sysbench oltp_read_write on MariaDB over TCP, 4 threads: captured from the general
//	                  log, the slow log and the wire (--listen-on lo, needs CAP_NET_RAW) of one run
//	autoinc-mariadb   8 sessions of a Go client inserting at once into AUTO_INCREMENT tables of a schema it
//	                  creates itself, on MariaDB over TCP, captured as sysbench-mariadb is (issue 49)
//	mysqlslap-mariadb mysqlslap --concurrency=8, its generated mix of AUTO_INCREMENT INSERTs and key lookups
//	                  in a schema it creates, on MariaDB over TCP, captured as sysbench-mariadb is
//	pgbench-200       pgbench -c 200 -j 2 -M extended for 10 s whatever -duration says
//	order-entry       dbparity run itself as the client, 4 users on 2 warehouses
//	pgjdbc            JdbcApp.java: pgJDBC with prepared statements, 4 threads
//
// A client whose program is missing is skipped, with the reason. Progress
// goes to stderr; the markdown table, the date and the dbparity build go to
// stdout at the end.
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

//go:embed psycopg_app.py
var psycopgApp []byte

//go:embed JdbcApp.java
var jdbcApp []byte

type options struct {
	bin      string
	duration time.Duration
	limit    time.Duration
	clients  []string
	keep     string
	sync     string
	before   string // the build before, replayed in turns with this one
	pgreplay string // pgreplay, the peer on PostgreSQL clients; "" none
}

// bench is the state shared by the clients.
type bench struct {
	o    options
	ctx  context.Context
	work string // working directory, one subdirectory per client
	bin  string // the dbparity binary
	// binDir is the directory of a dbparity built here, removed at the end.
	binDir string
	turn   bool // which build replays first (-before)
}

// clientFunc records one client and replays it.
type clientFunc func(b *bench, name string) *row

var clients = []struct {
	name string
	fn   clientFunc
}{
	{"pgbench-extended", func(b *bench, n string) *row { return b.pgbench(n, "extended", 4, b.o.duration) }},
	{"pgbench-prepared", func(b *bench, n string) *row { return b.pgbench(n, "prepared", 4, b.o.duration) }},
	{"pgbench-1", func(b *bench, n string) *row { return b.pgbench(n, "extended", 1, b.o.duration) }},
	{"psycopg", (*bench).psycopg},
	{"sysbench-pg", (*bench).sysbenchPG},
	{"sysbench-mariadb", (*bench).sysbenchMariaDB},
	{"autoinc-mariadb", (*bench).autoincMariaDB},
	{"mysqlslap-mariadb", (*bench).mysqlslapMariaDB},
	{"pgbench-200", func(b *bench, n string) *row { return b.pgbench(n, "extended", 200, 10*time.Second) }},
	{"order-entry", (*bench).orderEntry},
	{"pgjdbc", (*bench).pgjdbc},
}

func main() {
	var o options
	var list string
	flag.StringVar(&o.bin, "dbparity", "", "dbparity binary to measure (default: go build ./cmd/dbparity into a temporary directory)")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "how long each client runs while its log is captured (pgbench-200: always 10s)")
	flag.StringVar(&list, "clients", "", "comma-separated clients to run (default all): "+clientNames())
	flag.DurationVar(&o.limit, "limit", 180*time.Second, "time limit of each replay; a replay still running then is killed and reported as not finished")
	flag.StringVar(&o.keep, "keep", "", "keep the work files (data directories, captures, snapshots, results, logs) in this directory; as root, user dbparity must be able to enter it (default: a temporary directory, removed)")
	flag.StringVar(&o.before, "before", "", "a dbparity build to replay every capture with too, in turns with this one, for the ratio of their CPU per statement")
	flag.StringVar(&o.pgreplay, "pgreplay", "", "pgreplay binary, the peer on PostgreSQL clients (default: pgreplay on PATH; none: no peer)")
	flag.StringVar(&o.sync, "sync", "", "passed to dbparity replay as --sync when not empty (see dbparity replay --help: commit, statement, none)")
	flag.Parse()
	if o.duration <= 0 || o.limit <= 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "replayclients: -duration and -limit must be above 0; no arguments are taken")
		os.Exit(2)
	}
	if list != "" {
		for _, c := range strings.Split(list, ",") {
			c = strings.TrimSpace(c)
			if c == "" {
				continue
			}
			if !known(c) {
				fmt.Fprintf(os.Stderr, "replayclients: unknown client %q (known: %s)\n", c, clientNames())
				os.Exit(2)
			}
			o.clients = append(o.clients, c)
		}
	}
	if o.before != "" {
		p, err := filepath.Abs(o.before)
		if err == nil {
			_, err = os.Stat(p)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "replayclients: -before:", err)
			os.Exit(2)
		}
		o.before = p
	}
	switch o.pgreplay {
	case "none":
		o.pgreplay = ""
	case "":
		if p, err := exec.LookPath("pgreplay"); err == nil {
			o.pgreplay = p
		}
	default:
		if _, err := exec.LookPath(o.pgreplay); err != nil {
			fmt.Fprintln(os.Stderr, "replayclients: -pgreplay:", err)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "replayclients:", err)
		os.Exit(1)
	}
	if ctx.Err() != nil {
		os.Exit(130)
	}
}

func clientNames() string {
	var n []string
	for _, c := range clients {
		n = append(n, c.name)
	}
	return strings.Join(n, ", ")
}

func known(name string) bool {
	for _, c := range clients {
		if c.name == name {
			return true
		}
	}
	return false
}

func run(ctx context.Context, o options) error {
	b := &bench{o: o, ctx: ctx}
	var err error
	if o.keep != "" {
		if b.work, err = filepath.Abs(o.keep); err == nil {
			err = os.MkdirAll(b.work, 0o755)
		}
		if err != nil {
			return fmt.Errorf("-keep: %w", err)
		}
	} else {
		if b.work, err = os.MkdirTemp("", "dbparity-replayclients-"); err != nil {
			return err
		}
		defer os.RemoveAll(b.work)
	}
	os.Chmod(b.work, 0o755) // the managed server's user (when run as root) must enter it
	logf("work directory %s", b.work)

	build, err := b.dbparity()
	if b.binDir != "" {
		defer os.RemoveAll(b.binDir)
	}
	if err != nil {
		return err
	}
	logf("dbparity: %s", build)
	var rows []*row
	for _, c := range clients {
		if len(o.clients) > 0 && !contains(o.clients, c.name) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		logf("== %s", c.name)
		t0 := time.Now()
		r := c.fn(b, c.name)
		if r.client == "" {
			r.client = c.name
		}
		rows = append(append(rows, r), r.extra...)
		logf("== %s done in %s", c.name, time.Since(t0).Round(time.Second))
		if o.keep == "" {
			os.RemoveAll(filepath.Join(b.work, c.name))
		}
	}
	printTable(os.Stdout, rows, o, build)
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// dbparity builds the binary unless -dbparity named one, and describes it.
func (b *bench) dbparity() (string, error) {
	if b.o.bin != "" {
		p, err := filepath.Abs(b.o.bin)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("-dbparity: %w", err)
		}
		b.bin = p
		return describeBinary(p), nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "dbparity-replayclients-bin-")
	if err != nil {
		return "", err
	}
	b.bin = filepath.Join(dir, "dbparity")
	logf("building dbparity from %s", root)
	cmd := exec.CommandContext(b.ctx, "go", "build", "-o", b.bin, "./cmd/dbparity")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./cmd/dbparity (or give -dbparity PATH): %v\n%s", err, out)
	}
	b.binDir = dir
	desc := "built from " + root
	if out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty", "--tags").Output(); err == nil {
		desc = "git describe " + strings.TrimSpace(string(out)) + " (built from " + root + ")"
	}
	if v := version(b.bin); v != "" {
		desc = v + ", " + desc
	}
	return desc, nil
}

// moduleRoot is the directory of go.mod of the module we run in.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the dbparity module: run from the repository, or give -dbparity PATH")
	}
	return filepath.Dir(gomod), nil
}

// describeBinary reads the version control facts go build embedded.
func describeBinary(path string) string {
	desc := path
	if v := version(path); v != "" {
		desc = v + ", " + path
	}
	out, err := exec.Command("go", "version", "-m", path).Output()
	if err != nil {
		return desc
	}
	var rev, modified string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "build" {
			k, v, _ := strings.Cut(f[1], "=")
			switch k {
			case "vcs.revision":
				rev = v
			case "vcs.modified":
				modified = v
			}
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if modified == "true" {
			rev += "-dirty"
		}
		desc += ", commit " + rev
	} else {
		desc += " (no commit recorded in the binary)"
	}
	return desc
}

func version(bin string) string {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// logf prints a progress line to stderr.
func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

// tail is the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fileTail is the last n lines of a file.
func fileTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return tail(b, n)
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// command runs a program with its output appended to logFile, bounded by
// limit; on failure the error carries the log's tail.
func (b *bench) command(limit time.Duration, logFile, dir string, env []string, prog string, args ...string) error {
	ctx, cancel := context.WithTimeout(b.ctx, limit)
	defer cancel()
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "$ %s %s\n", prog, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, f, f
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	if ctx.Err() == context.DeadlineExceeded && b.ctx.Err() == nil {
		err = fmt.Errorf("not finished after %s", limit)
	}
	if err != nil {
		f.Sync()
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(prog), firstArg(args), err, indent(fileTail(logFile, 15), "    | "))
	}
	return nil
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// program finds a program on PATH (and, for the PostgreSQL client
// programs, in /usr/lib/postgresql/*/bin).
func program(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name); len(m) > 0 {
		return m[len(m)-1], nil
	}
	return "", fmt.Errorf("%s is not installed", name)
}

// writeTo writes an embedded helper into dir.
func writeTo(dir, name string, body []byte) (string, error) {
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, body, 0o644)
}
