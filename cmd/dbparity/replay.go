package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/capture/wire"
	"github.com/dbparity/dbparity/internal/runner"
	"github.com/dbparity/dbparity/internal/workload/replay"
)

func cmdCapture(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity capture", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var from multi
	fs.Var(&from, "from", "a server log file: PostgreSQL csvlog, jsonlog or stderr, MySQL/MariaDB general or slow log, plain or gzip (repeatable; files after the flags count too)")
	out := fs.String("out", "", "the capture file to write")
	format := fs.String("format", "auto", "log format: auto (by content), csvlog, jsonlog, stderr, mysql-general or mysql-slow")
	prefix := fs.String("prefix", "", "stderr logs: the server's log_line_prefix (default "+strconv.Quote(capture.DefaultPrefix)+")")
	paramMax := fs.Int("param-max-length", 0, "the server's log_parameter_max_length when it logged (-1: values whole; 0: unknown)")
	force := fs.Bool("force", false, "replace the capture file if it exists")
	keepOwn := fs.Bool("keep-own", false, "keep dbparity's own sessions (collectors, replay monitors: application dbparity-*), left out and counted by default")
	proxy := fs.String("proxy", "", "capture from the wire instead of logs: listen on HOST:PORT and relay each client to --upstream, recording what they exchange (the clients connect here; TLS only with --tls-cert)")
	tlsCert := fs.String("tls-cert", "", "with --proxy: a PEM certificate (and --tls-key its key) to accept clients' TLS with: the proxy ends TLS and records inside it (without: a client asking for TLS is told there is none)")
	tlsKey := fs.String("tls-key", "", "with --proxy: the PEM private key of --tls-cert")
	upstream := fs.String("upstream", "", "with --proxy: the PostgreSQL server's HOST:PORT, or its socket file (/var/run/postgresql/.s.PGSQL.5432)")
	listenOn := fs.String("listen-on", "", "capture from the wire passively: read the packets on this network interface (lo, eth0; needs CAP_NET_RAW) to and from --port (PostgreSQL)")
	port := fs.Int("port", 0, "with --listen-on: the server's TCP port")
	protocol := fs.String("protocol", "postgresql", "with --proxy or --listen-on: the server's protocol, postgresql or mysql (MySQL and MariaDB)")
	duration := fs.Duration("duration", 0, "with --proxy or --listen-on: stop after this long (default: at Ctrl-C)")
	ringBlockSize := fs.String("ring-block-size", "1MiB", "with --listen-on: the size of each block of the ring the kernel writes the packets into (KiB or MiB, at least 128KiB)")
	ringBlocks := fs.Int("ring-blocks", wire.DefaultRingBlocks, "with --listen-on: the ring's number of blocks; the kernel drops what comes while all are being read")
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(os.Stdout, fs, nil, "Reads PostgreSQL, MySQL or MariaDB server logs into a capture file that dbparity\n"+
				"replay plays; or captures from the wire: as a proxy the clients connect to, or\n"+
				"from the packets on an interface (--protocol mysql for MySQL and MariaDB).\n\n"+capture.ServerSettings)
			return err
		}
		return runner.UsageError{Err: fmt.Errorf("%v (see dbparity capture --help)", err)}
	}
	ringSet := false
	fs.Visit(func(f *flag.Flag) { ringSet = ringSet || strings.HasPrefix(f.Name, "ring-") })
	if ringSet && *listenOn == "" {
		return runner.UsageError{Err: errors.New("--ring-block-size and --ring-blocks size the packet capture's ring: they go with --listen-on")}
	}
	wire := *proxy != "" || *upstream != ""
	if wire || *listenOn != "" || *port != 0 {
		mysql := false
		switch *protocol {
		case "postgresql", "postgres":
		case "mysql", "mariadb":
			mysql = true
		default:
			return runner.UsageError{Err: fmt.Errorf("--protocol %s: choose postgresql or mysql", *protocol)}
		}
		switch {
		case len(from) > 0 || len(positional) > 0:
			return runner.UsageError{Err: errors.New("--proxy and --listen-on capture from the wire: leave out the log files")}
		case wire && (*listenOn != "" || *port != 0):
			return runner.UsageError{Err: errors.New("choose --proxy (relay the clients) or --listen-on (read the packets), not both")}
		case wire:
			setStopNote(captureStopNote(true, *out))
			return captureProxy(ctx, *proxy, *upstream, *tlsCert, *tlsKey, *out, *force, *keepOwn, mysql, *duration)
		case *tlsCert != "" || *tlsKey != "":
			return runner.UsageError{Err: errors.New("--tls-cert and --tls-key go with --proxy: a passive capture cannot read TLS")}
		}
		ring, err := ringFlags(*ringBlockSize, *ringBlocks)
		if err != nil {
			return runner.UsageError{Err: err}
		}
		setStopNote(captureStopNote(true, *out))
		return captureSniff(ctx, *listenOn, *port, ring, *out, *force, *keepOwn, mysql, *duration)
	}
	setStopNote(captureStopNote(false, *out))
	files, err := expandLogs(append([]string(from), positional...))
	if err != nil {
		return runner.UsageError{Err: err}
	}
	switch {
	case len(files) == 0:
		return runner.UsageError{Err: errors.New("name the log files with --from (see dbparity capture --help)")}
	case *out == "":
		return runner.UsageError{Err: errors.New("--out CAPTURE is required")}
	}
	if err := notAnInput("--out", *out, files...); err != nil {
		return err
	}
	if _, err := os.Stat(*out); err == nil && !*force {
		return runner.UsageError{Err: fmt.Errorf("%s exists: choose another --out, or add --force to replace it", *out)}
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return runner.UsageError{Err: fmt.Errorf("log file %s: %v", f, errors.Unwrap(err))}
		}
	}
	o := capture.Options{Format: *format, Prefix: *prefix, ParamMaxLength: *paramMax, KeepOwn: *keepOwn}
	tty := term.IsTerminal(int(os.Stderr.Fd()))
	if tty {
		o.Progress = func(file string, done, total int64) {
			if total > 0 {
				fmt.Fprintf(os.Stderr, "\r\033[Kreading %s %3.0f%%", file, 100*float64(done)/float64(total))
			}
		}
	}
	// Read in the background: an interrupt ends the command at once,
	// whatever the reading waits for (a large file, a pipe), and writes
	// nothing. Convert writes the capture as it reads (its memory does
	// not grow with the logs), and nothing when they hold no statement.
	type converted struct {
		c   *capture.Converted
		err error
	}
	read := make(chan converted, 1)
	stop := make(chan struct{})
	o.Stop = stop
	go func() {
		c, err := capture.Convert(files, o, *out)
		read <- converted{c, err}
	}()
	var c *capture.Converted
	select {
	case r := <-read:
		c, err = r.c, r.err
	case <-ctx.Done():
		// Writing stops at once and removes its temporary file; reading
		// may wait on a pipe, and is not waited for long.
		close(stop)
		select {
		case r := <-read:
			c, err = r.c, r.err
		case <-time.After(2 * time.Second):
		}
		if c == nil {
			err = fmt.Errorf("capture %w: reading the logs stopped; no capture was written to %s", runner.ErrInterrupted, *out)
		}
	}
	if tty {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if errors.Is(err, runner.ErrInterrupted) {
		return err
	}
	var failed *capture.WriteError
	if errors.As(err, &failed) {
		return err
	}
	if err != nil {
		return runner.UsageError{Err: err}
	}
	fmt.Print(c.Summary)
	if c.Statements == 0 {
		return errors.New("the logs hold no statements, so no capture was written: is statement logging on? (see dbparity capture --help)")
	}
	fmt.Printf("capture written to %s\n", *out)
	return nil
}

// captureProxy records the clients it relays to upstream until ctx ends
// or d passes, then writes the capture.
func captureProxy(ctx context.Context, listen, upstream, cert, key, out string, force, keepOwn, mysql bool, d time.Duration) error {
	if listen == "" || upstream == "" {
		return runner.UsageError{Err: errors.New("--proxy HOST:PORT and --upstream HOST:PORT go together")}
	}
	o := wire.ProxyOptions{Notify: func(line string) { fmt.Fprintln(os.Stderr, line) }}
	if (cert == "") != (key == "") {
		return runner.UsageError{Err: errors.New("--tls-cert and --tls-key go together")}
	}
	if cert != "" {
		if err := privateKeyFile(key); err != nil {
			return err
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return runner.UsageError{Err: fmt.Errorf("--tls-cert %s, --tls-key %s: %v", cert, key, err)}
		}
		o.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	if err := checkCaptureOut(out, force, d); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return runner.UsageError{Err: fmt.Errorf("--proxy %s: %v", listen, errors.Unwrap(err))}
	}
	if mysql && o.TLS == nil {
		fmt.Fprintln(os.Stderr, "MySQL clients are offered no TLS through the proxy (give --tls-cert and --tls-key to accept it): those that prefer it go on in the clear, those that require it give up")
	}
	return captureWire(ctx, wireCapture{
		source: "proxy " + ln.Addr().String() + " to " + upstream,
		banner: fmt.Sprintf("clients connect to %s, relayed to %s", ln.Addr(), upstream),
		empty:  "no client sent a statement through the proxy, so no capture was written: point the application at " + ln.Addr().String(),
		serve:  func(ctx context.Context, rec *wire.Recorder) error { return wire.Serve(ctx, ln, upstream, rec, o) },
		mysql:  mysql,
	}, out, keepOwn, d)
}

// ringFlags reads --ring-block-size (bytes, or with KiB or MiB) and
// --ring-blocks into the packet capture's ring.
func ringFlags(size string, blocks int) (wire.Ring, error) {
	n, unit := size, 1
	for _, u := range []struct {
		suffix string
		bytes  int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"K", 1 << 10}, {"M", 1 << 20}} {
		if strings.HasSuffix(size, u.suffix) {
			n, unit = strings.TrimSuffix(size, u.suffix), u.bytes
			break
		}
	}
	v, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || v <= 0 || v > 1<<30/unit {
		return wire.Ring{}, fmt.Errorf("--ring-block-size %s: give a size such as 1MiB or 512KiB", size)
	}
	r := wire.Ring{BlockSize: v * unit, Blocks: blocks}
	return r, r.Check()
}

// captureSniff records the sessions (PostgreSQL's, or MySQL's) in the packets to and from
// port on iface until ctx ends or d passes, then writes the capture.
func captureSniff(ctx context.Context, iface string, port int, ring wire.Ring, out string, force, keepOwn, mysql bool, d time.Duration) error {
	if iface == "" || port <= 0 || port > 65535 {
		return runner.UsageError{Err: errors.New("--listen-on IFACE needs --port, the server's TCP port (1-65535)")}
	}
	if err := checkCaptureOut(out, force, d); err != nil {
		return err
	}
	if _, err := net.InterfaceByName(iface); err != nil {
		return runner.UsageError{Err: fmt.Errorf("--listen-on %s: %v (ip link lists the interfaces)", iface, err)}
	}
	// Bound before the start is announced: what passes from then on is
	// read.
	pk, err := wire.ListenPacketsRing(iface, port, ring)
	if err != nil {
		return err
	}
	var stats wire.SniffStats
	err = captureWire(ctx, wireCapture{
		source: fmt.Sprintf("interface %s, port %d", iface, port),
		banner: fmt.Sprintf("reading the packets to and from port %d on %s", port, iface),
		empty:  fmt.Sprintf("no statement passed port %d on %s, so no capture was written: is it the interface and port the clients reach the server on?", port, iface),
		serve: func(ctx context.Context, rec *wire.Recorder) error {
			var err error
			stats, err = pk.Run(ctx, rec)
			return err
		},
		mysql: mysql,
		after: func(c *capture.Capture) {
			if stats.KernelDrops > 0 {
				c.Skipped = append(c.Skipped, capture.Skip{Reason: "packets the kernel dropped (the ring was full: more --ring-blocks hold more): the statements in them are missing",
					Effect: capture.Dropped, Count: int(stats.KernelDrops), First: iface})
			}
			if n := stats.QueueDrops + stats.Truncated; n > 0 {
				c.Skipped = append(c.Skipped, capture.Skip{Reason: "segments the capture dropped (its decoder fell behind, or a segment was longer than --ring-block-size): the statements in them are missing",
					Effect: capture.Dropped, Count: int(n), First: iface})
			}
		},
		note: func() string { return stats.Summary() },
	}, out, keepOwn, d)
	return err
}

// privateKeyFile refuses a --tls-key that its group or others may read
// or write, as ssh refuses such a private key: whoever else can read it
// can read the clients' traffic. A file that cannot be read is left to
// the key's loading, which names it.
func privateKeyFile(key string) error {
	st, err := os.Stat(key)
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return runner.UsageError{Err: fmt.Errorf("--tls-key %s: its permissions %04o give its group or others access: a private key must be readable by its owner only (chmod 600 %s)", key, perm, key)}
	}
	return nil
}

func checkCaptureOut(out string, force bool, d time.Duration) error {
	switch {
	case out == "":
		return runner.UsageError{Err: errors.New("--out CAPTURE is required")}
	case d < 0:
		return runner.UsageError{Err: errors.New("--duration must not be negative")}
	}
	if _, err := os.Stat(out); err == nil && !force {
		return runner.UsageError{Err: fmt.Errorf("%s exists: choose another --out, or add --force to replace it", out)}
	}
	return nil
}

// wireCapture is one way of capturing from the wire.
type wireCapture struct {
	source, banner, empty string // the capture's source; what the start says; why nothing was written
	serve                 func(ctx context.Context, rec *wire.Recorder) error
	after                 func(c *capture.Capture) // adds what serve learnt (optional)
	note                  func() string            // a line the summary ends with (optional)
	mysql                 bool                     // the MySQL protocol (--protocol mysql)
}

// captureWire runs w until ctx ends or d passes, showing progress, then
// writes the capture.
func captureWire(ctx context.Context, w wireCapture, out string, keepOwn bool, d time.Duration) error {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	rec := wire.NewRecorder(w.source)
	rec.KeepOwn, rec.MySQL = keepOwn, w.mysql
	fmt.Fprintf(os.Stderr, "capturing: %s (Ctrl-C ends the capture)\n", w.banner)
	tty := term.IsTerminal(int(os.Stderr.Fd()))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	served := make(chan error, 1)
	go func() { served <- w.serve(ctx, rec) }()
	t0 := time.Now()
	var serveErr error
wait:
	for {
		select {
		case serveErr = <-served:
			break wait
		case <-tick.C:
			if s, n := rec.Counts(); tty {
				fmt.Fprintf(os.Stderr, "\r\033[Kcapture %s  %d sessions  %d statements", time.Since(t0).Round(time.Second), s, n)
			}
		}
	}
	if tty {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if serveErr != nil {
		return serveErr
	}
	c := rec.Capture()
	if w.after != nil {
		w.after(c)
	}
	if c.Statements() == 0 {
		if w.note != nil {
			fmt.Fprint(os.Stderr, w.note())
		}
		return errors.New(w.empty)
	}
	fmt.Print(c.Summary())
	if w.note != nil {
		fmt.Print(w.note())
	}
	if err := capture.Write(out, c); err != nil {
		return err
	}
	fmt.Printf("capture written to %s\n", out)
	return nil
}

// expandLogs expands the names that are shell patterns and name no file
// (a quoted --from 'postgresql-*.csv'), in order; a pattern that matches
// nothing is an error naming it.
func expandLogs(names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		if _, err := os.Stat(n); err == nil || !strings.ContainsAny(n, "*?[") {
			out = append(out, n)
			continue
		}
		m, err := filepath.Glob(n)
		if err != nil {
			return nil, fmt.Errorf("log files %q: %v", n, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("log files %q: no file matches", n)
		}
		out = append(out, m...)
	}
	return out, nil
}

// parseInterleaved parses flags that may come after arguments too
// (dbparity capture --from *.csv --out x: the shell expands the glob into
// arguments after --from's first value) and returns the arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// mapping is a repeatable FROM=TO flag.
type mapping map[string]string

func (mapping) kind() string { return "FROM=TO" }

func (m mapping) String() string {
	var s []string
	for k, v := range m {
		s = append(s, k+"="+v)
	}
	return strings.Join(s, ",")
}

func (m mapping) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: give FROM=TO", s)
	}
	m[k] = v
	return nil
}

func cmdReplay(ctx context.Context, args []string) error {
	fs, c := targetFlags("replay")
	o := runner.ReplayOptions{MapUser: mapping{}, MapDB: mapping{}, ShareCPUs: true}
	fs.StringVar(&o.Capture, "capture", "", "the capture file (made by dbparity capture)")
	speed := fs.String("speed", "1", "pace: 1 as captured, 2 twice as fast, 0.5 half; max: as fast as possible, order kept")
	fs.StringVar(&o.Sync, "sync", replay.SyncCommit, "commit: a statement waits for the other sessions' commits the capture shows before it: it goes once those that ended before it started are complete, and those logged before it ended sent (the server orders the rest); statement: for every statement of another session that ended before it started (strictest; capture is its earlier name); none: sessions keep their own order and pace only; in every mode a statement waits for the DDL captured before it, and a session for the statement that creates its database")
	order := fs.String("order", "", "replaced by --sync: session is --sync none, global is --sync statement")
	fs.DurationVar(&o.StallTimeout, "stall-timeout", 60*time.Second, "report a statement that runs, or a session that waits for the others, longer than this (on the progress line and in the result)")
	fs.Var(mapping(o.MapUser), "map-user", "replay a captured user as another: FROM=TO (repeatable)")
	fs.Var(mapping(o.MapDB), "map-db", "replay a captured database as another: FROM=TO (repeatable; USE, CREATE and DROP DATABASE name the new one)")
	var include, exclude multi
	fs.Var(&include, "include-session", "replay only the sessions that match: user=PATTERN, database=PATTERN or application=PATTERN (shell patterns; repeatable: any matches)")
	fs.Var(&exclude, "exclude-session", "leave out the sessions that match: user=, database= or application=PATTERN (repeatable)")
	excludeStmt := fs.String("exclude-statement", "", "skip the statements whose text matches this regular expression (counted in the report)")
	fs.BoolVar(&o.ReplayAdmin, "replay-admin", false, "send the statements that change the server (ALTER SYSTEM, pg_reload_conf(), CHECKPOINT, pg_terminate_backend(), ALTER DATABASE, SET GLOBAL, ...), skipped and listed by default (CREATE and DROP DATABASE, the workload's own, are sent)")
	warmup := fs.String("warmup", "", "before the measured replay, replay unmeasured the capture's first DURATION (30s), or all of it (all), for the caches; it writes too")
	fs.StringVar(&o.Verify, "verify", "", "after the replay, compare every table with this end-state snapshot (dbparity snapshot) and report which match")
	fs.BoolVar(&o.Literals, "show-literals", false, "keep one statement text per fingerprint, literal values included, in the result")
	fs.StringVar(&o.Label, "label", "", "the platform's name in results (default the target's engine and host, postgres@db1)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve live OpenMetrics at http://`HOST:PORT`/metrics while the replay runs (for Prometheus)")
	fs.DurationVar(&o.MetricsLinger, "metrics-linger", 0, "with --metrics-addr: keep serving the final values for this `duration` after the replay, so that a scrape sees them")
	fs.StringVar(&o.Out, "out", "", "result file (default dbparity-data/results/LABEL-replay-TIME.json)")
	fs.BoolVar(&o.Force, "force", false, "replace the result file if it exists")
	fs.BoolVar(&o.Collect.Off, "no-collect", false, "run no collectors")
	fs.IntVar(&o.Collect.DBPID, "db-pid", 0, "collectors: PID of the server's main process when it runs on this host")
	dbHostFlags(fs, &o.Collect)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if len(c.targets) > 1 {
		return runner.UsageError{Err: errors.New("replay takes one --target")}
	}
	var err error
	if *speed == "max" {
		o.Speed = 0
	} else if o.Speed, err = strconv.ParseFloat(*speed, 64); err != nil || o.Speed <= 0 {
		return runner.UsageError{Err: fmt.Errorf("--speed %q: give a factor above 0 (2 is twice as fast) or max", *speed)}
	}
	syncSet := false
	fs.Visit(func(f *flag.Flag) { syncSet = syncSet || f.Name == "sync" })
	if o.Sync == replay.SyncCapture {
		o.Sync = replay.SyncStatement
	}
	switch *order {
	case "":
	case "session", "global":
		want := replay.SyncNone
		if *order == "global" {
			want = replay.SyncStatement
		}
		if syncSet && o.Sync != want {
			return runner.UsageError{Err: fmt.Errorf("--order %s means --sync %s, not --sync %s: give --sync alone", *order, want, o.Sync)}
		}
		o.Sync = want
	default:
		return runner.UsageError{Err: fmt.Errorf("--order %q: replaced by --sync commit|statement|none", *order)}
	}
	if *order != "" {
		fmt.Fprintf(os.Stderr, "dbparity replay: --order is replaced by --sync; replaying with --sync %s\n", o.Sync)
	}
	for _, m := range include {
		x, err := replay.ParseMatch(m)
		if err != nil {
			return runner.UsageError{Err: fmt.Errorf("--include-session %v", err)}
		}
		o.Filter.Include = append(o.Filter.Include, x)
	}
	for _, m := range exclude {
		x, err := replay.ParseMatch(m)
		if err != nil {
			return runner.UsageError{Err: fmt.Errorf("--exclude-session %v", err)}
		}
		o.Filter.Exclude = append(o.Filter.Exclude, x)
	}
	if *excludeStmt != "" {
		if o.ExcludeStatement, err = regexp.Compile(*excludeStmt); err != nil {
			return runner.UsageError{Err: fmt.Errorf("--exclude-statement: %v", err)}
		}
	}
	switch *warmup {
	case "", "0":
	case "all":
		o.WarmupAll = true
	default:
		if o.Warmup, err = time.ParseDuration(*warmup); err != nil || o.Warmup <= 0 {
			return runner.UsageError{Err: fmt.Errorf("--warmup %q: give a duration of the capture (30s) or all", *warmup)}
		}
	}
	o.Common = c.opts
	o.Command = append([]string{"dbparity", "replay"}, args...)
	if err := notAnInput("--out", o.Out, o.Capture, o.Verify); err != nil {
		return err
	}
	return runner.Replay(ctx, o)
}

func cmdSnapshot(ctx context.Context, args []string) error {
	fs, c := targetFlags("snapshot")
	out := fs.String("out", "", "the snapshot file to write")
	force := fs.Bool("force", false, "replace the snapshot file if it exists")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	switch {
	case len(c.targets) > 1:
		return runner.UsageError{Err: errors.New("snapshot takes one --target")}
	case *out == "":
		return runner.UsageError{Err: errors.New("--out FILE is required (usage: dbparity snapshot --target URL --out FILE)")}
	}
	return runner.Snapshot(ctx, runner.SnapshotOptions{Common: c.opts, Out: *out, Force: *force})
}
