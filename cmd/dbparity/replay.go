package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/runner"
)

func cmdCapture(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity capture", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var from multi
	fs.Var(&from, "from", "a server log file: csvlog, jsonlog or stderr, plain or gzip (repeatable; files after the flags count too)")
	out := fs.String("out", "", "the capture file to write")
	format := fs.String("format", "auto", "log format: auto (by content), csvlog, jsonlog or stderr")
	prefix := fs.String("prefix", "", "stderr logs: the server's log_line_prefix (default "+strconv.Quote(capture.DefaultPrefix)+")")
	paramMax := fs.Int("param-max-length", 0, "the server's log_parameter_max_length when it logged (-1: values whole; 0: unknown)")
	force := fs.Bool("force", false, "replace the capture file if it exists")
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Printf("usage: dbparity capture --out CAPTURE [flags] LOG... (or --from LOG, repeatable)\n\n")
			fmt.Printf("Reads PostgreSQL server logs into a capture file that dbparity replay plays.\n\nflags:\n")
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
			fmt.Printf("\n%s\n", capture.ServerSettings)
			return err
		}
		return runner.UsageError{Err: fmt.Errorf("%v (see dbparity capture --help)", err)}
	}
	files := append([]string(from), positional...)
	switch {
	case len(files) == 0:
		return runner.UsageError{Err: errors.New("name the log files with --from (see dbparity capture --help)")}
	case *out == "":
		return runner.UsageError{Err: errors.New("--out CAPTURE is required")}
	}
	if _, err := os.Stat(*out); err == nil && !*force {
		return runner.UsageError{Err: fmt.Errorf("%s exists: choose another --out, or add --force to replace it", *out)}
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return runner.UsageError{Err: fmt.Errorf("log file %s: %v", f, errors.Unwrap(err))}
		}
	}
	o := capture.Options{Format: *format, Prefix: *prefix, ParamMaxLength: *paramMax}
	tty := term.IsTerminal(int(os.Stderr.Fd()))
	if tty {
		o.Progress = func(file string, done, total int64) {
			if total > 0 {
				fmt.Fprintf(os.Stderr, "\r\033[Kreading %s %3.0f%%", file, 100*float64(done)/float64(total))
			}
		}
	}
	c, err := capture.Parse(files, o)
	if tty {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if err != nil {
		return runner.UsageError{Err: err}
	}
	if err := capture.Write(*out, c); err != nil {
		return err
	}
	fmt.Print(c.Summary())
	fmt.Printf("capture written to %s\n", *out)
	if c.Statements() == 0 {
		return errors.New("the logs hold no statements: is statement logging on? (see dbparity capture --help)")
	}
	return nil
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
	o := runner.ReplayOptions{MapUser: mapping{}, MapDB: mapping{}}
	fs.StringVar(&o.Capture, "capture", "", "the capture file (made by dbparity capture)")
	speed := fs.String("speed", "1", "pace: 1 as captured, 2 twice as fast, 0.5 half; max: as fast as possible, order kept")
	fs.StringVar(&o.Order, "order", "session", "session: each session keeps its own order and pace; global: statements also start in their captured order across sessions")
	fs.Var(mapping(o.MapUser), "map-user", "replay a captured user as another: FROM=TO (repeatable)")
	fs.Var(mapping(o.MapDB), "map-db", "replay a captured database as another: FROM=TO (repeatable)")
	fs.BoolVar(&o.Literals, "show-literals", false, "keep one statement text per fingerprint, literal values included, in the result")
	fs.StringVar(&o.Label, "label", "", "the platform's name in results (default the host name)")
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
	o.Common = c.opts
	o.Command = append([]string{"dbparity", "replay"}, args...)
	return runner.Replay(ctx, o)
}
