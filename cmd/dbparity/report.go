package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/atomicfile"
	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/report"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/runner"
	"github.com/dbparity/dbparity/internal/workload"
)

func cmdShow(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity show", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print the summary as a JSON object")
	literals := fs.Bool("show-literals", false, "replay results: show statement texts with their literal values (when the replay kept them)")
	htmlOut := fs.String("html", "", "also write the run as a self-contained HTML page with charts to this file; given a directory, write one page of every result under it")
	force := fs.Bool("force", false, "with --html: replace a file that is not a dbparity report")
	// Accept the flag after the file name too: dbparity show run.json --json.
	flags, files := splitArgs(args, "html")
	if err := fs.Parse(append(flags, files...)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(os.Stdout, fs, nil, showDirHelp)
			return err
		}
		return runner.UsageError{Err: fmt.Errorf("%v (usage: dbparity show [--json] FILE, or dbparity show --html PAGE DIR)", err)}
	}
	if fs.NArg() != 1 {
		return runner.UsageError{Err: errors.New("name one result file, or a directory with --html PAGE (usage: dbparity show [--json] FILE, or dbparity show --html PAGE DIR)")}
	}
	if st, err := os.Stat(fs.Arg(0)); err == nil && st.IsDir() {
		return showDir(fs.Arg(0), *htmlOut, *force, *asJSON || *literals)
	}
	r, err := result.Read(fs.Arg(0))
	if err != nil {
		return runner.UsageError{Err: err}
	}
	if *htmlOut != "" {
		if err := htmlOutOK(*htmlOut, *force, fs.Arg(0)); err != nil {
			return err
		}
		if err := writeHTML(*htmlOut, func(w io.Writer) error { return report.RunHTML(w, r) }); err != nil {
			return err
		}
	}
	if *asJSON {
		return report.JSONWith(os.Stdout, r, report.Options{Literals: *literals})
	}
	return report.TextWith(os.Stdout, r, report.Options{Literals: *literals})
}

// showDirHelp is show --help's text on the directory form.
const showDirHelp = `With a directory and --html PAGE (dbparity show --html PAGE DIR): writes one
self-contained page of every result file under DIR (*.json, read recursively), a
row per run (label, workload, engine and version, database host, date,
throughput, p95, grade, file) that sorts and filters in the page, the runs of
one dbparity ab or sweep grouped. Each run's page and each set's comparison go
to PAGE-dir beside it (PAGE without .html). Journals, captures and other files
are skipped and counted in one line; exit 2 when DIR holds no result.
`

// showDir writes the index page of the results under dir (show --html
// PAGE DIR).
func showDir(dir, page string, force, oneRunFlags bool) error {
	switch {
	case page == "":
		return runner.UsageError{Err: fmt.Errorf("%s is a directory: give --html PAGE to write one page of every result under it (usage: dbparity show --html PAGE DIR)", dir)}
	case oneRunFlags:
		return runner.UsageError{Err: fmt.Errorf("--json and --show-literals print one run: name a result file, not the directory %s", dir)}
	}
	if err := checkHTML(page, force); err != nil {
		return err
	}
	began := time.Now()
	ix, err := report.WriteIndex(page, dir, report.IndexOptions{Force: force})
	var refused report.RefusedError
	switch {
	case errors.Is(err, report.ErrNoResults):
		why := "no *.json file under it"
		if line := ix.SkipLine(); line != "" {
			why = line
		}
		return runner.UsageError{Err: fmt.Errorf("%s holds no dbparity result file: %s", dir, why)}
	case errors.As(err, &refused):
		return runner.UsageError{Err: err}
	case err != nil:
		return err
	}
	sets := ""
	if len(ix.Sets) > 0 {
		n := 0
		for _, s := range ix.Sets {
			n += s.Runs
		}
		sets = fmt.Sprintf(" (%d in %d %s of ab or sweep)", n, len(ix.Sets), map[bool]string{true: "set", false: "sets"}[len(ix.Sets) == 1])
	}
	fmt.Fprintf(os.Stderr, "HTML index of %d runs%s written to %s, their pages to %s (%.1f s)\n", len(ix.Runs), sets, page,
		ix.Side+string(filepath.Separator), time.Since(began).Seconds())
	if line := ix.SkipLine(); line != "" {
		fmt.Fprintln(os.Stderr, line)
	}
	return nil
}

func cmdCompare(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity compare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	baseline := fs.String("baseline", "", "label of the group the others are compared with (default the first file's)")
	force := fs.Bool("force", false, "compare runs of another workload, version or scale anyway, and replace an --html file that is not a dbparity report")
	format := fs.String("format", "text", "text, markdown, csv or json")
	htmlOut := fs.String("html", "", "also write a self-contained HTML report with charts to this file")
	groupBy := fs.String("group", "label", "group runs by label, or by a disclosed fact (driver.users, disclosure.host.kernel, ...)")
	over := fs.String("over", "", "read the runs as a sweep over users, rate, warehouses or cpus, taken from each run's own settings (runs of dbparity sweep record theirs)")
	atCPU := fs.Float64("at-cpu", 0, "a sweep's throughput at equal CPU utilisation is compared at this utilisation in % (default: the highest every group reached)")
	flags, files := splitArgs(args, "baseline", "format", "html", "group", "over", "at-cpu")
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(os.Stdout, fs, nil, "")
			return err
		}
		return runner.UsageError{Err: fmt.Errorf("%v (usage: dbparity compare [--baseline LABEL] FILE...)", err)}
	}
	if len(files) < 2 {
		return runner.UsageError{Err: errors.New("name at least two result files (usage: dbparity compare [--baseline LABEL] FILE...)")}
	}
	if *atCPU < 0 || *atCPU > 100 {
		return runner.UsageError{Err: fmt.Errorf("--at-cpu %g: a utilisation between 0 and 100%%", *atCPU)}
	}
	if err := htmlOutOK(*htmlOut, *force, files...); err != nil {
		return err
	}
	render := map[string]func(io.Writer, *report.Comparison) error{
		"text": report.CompareText, "markdown": report.CompareMarkdown, "csv": report.CompareCSV, "json": report.CompareJSON}[*format]
	if render == nil {
		return runner.UsageError{Err: fmt.Errorf("--format %q: choose text, markdown, csv or json", *format)}
	}
	var runs []*result.Run
	for _, f := range files {
		r, err := result.Read(f)
		if err != nil {
			return runner.UsageError{Err: err}
		}
		runs = append(runs, r)
	}
	// An interrupted ab or sweep leaves the run it was in partial (failed,
	// when the interrupt came before its window): compare PREFIX-*.json
	// compares the complete runs and names each one left out.
	var left []string
	if !*force {
		var kept []*result.Run
		var keptFiles []string
		for i, r := range runs {
			if !interrupted(r) {
				kept, keptFiles = append(kept, r), append(keptFiles, files[i])
				continue
			}
			why := "partial"
			if r.Failed {
				why += ", " + r.FailedReason
			}
			fmt.Fprintf(os.Stderr, "dbparity compare: left out %s: its run was interrupted (%s); --force compares it\n", files[i], why)
			left = append(left, files[i])
		}
		if len(left) > 0 && len(kept) < 2 {
			return runner.UsageError{Err: fmt.Errorf("%d complete run(s) left once the interrupted %s are left out: compare needs two (or --force to compare them anyway)",
				len(kept), strings.Join(left, ", "))}
		}
		runs, files = kept, keptFiles
	}
	leftOut := func(err error) error {
		if len(left) > 0 {
			err = fmt.Errorf("%w (the interrupted %s left out: --force compares them)", err, strings.Join(left, ", "))
		}
		return runner.UsageError{Err: err}
	}
	gs, err := compare.GroupRuns(runs, files, *groupBy, *baseline)
	if err != nil {
		return leftOut(err)
	}
	param := *over
	if param == "" {
		param = compare.SweepParam(gs)
	}
	if param == "" {
		if err := compare.TwoGroups(gs, *groupBy); err != nil {
			return leftOut(err)
		}
	}
	if !*force {
		w, err := workload.New(runs[0].Workload.Name)
		var loadParams []string
		if err == nil {
			loadParams = append(w.Meta().LoadParams, w.Meta().RunParams...)
		}
		// A sweep over warehouses compares scales on purpose.
		loadParams = slices.DeleteFunc(loadParams, func(p string) bool { return p == param })
		if err := compare.Comparable(gs, loadParams); err != nil {
			return runner.UsageError{Err: err}
		}
	}
	c, err := report.NewComparisonWith(gs, report.CompareOptions{Over: *over, AtCPU: *atCPU})
	if err != nil {
		return runner.UsageError{Err: err}
	}
	if *htmlOut != "" {
		if err := writeHTML(*htmlOut, func(w io.Writer) error { return report.CompareHTML(w, c) }); err != nil {
			return err
		}
	}
	return render(os.Stdout, c)
}

// interrupted tells a run that the user stopped (run, ab, sweep, replay
// interrupted; a run of several targets names the target): cut short by
// choice, not by its platform, so it says nothing of the platform. A
// recovered or merged run is compared: its file was made to be.
func interrupted(r *result.Run) bool {
	return r.Partial && !r.Recovered && r.Merged == nil &&
		(r.PartialReason == "interrupted" || strings.HasSuffix(r.PartialReason, ": interrupted"))
}

// writeHTML writes the HTML report through a temporary file beside it and
// a rename, so that a failed write leaves neither half a report nor the
// temporary file.
func writeHTML(path string, write func(io.Writer) error) error {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(path, b.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "HTML report written to %s\n", path)
	return nil
}

// htmlOutOK refuses an --html file (none: "") that is one of the files
// the command reads, or that checkHTML refuses.
func htmlOutOK(path string, force bool, inputs ...string) error {
	if path == "" {
		return nil
	}
	if err := notAnInput("--html", path, inputs...); err != nil {
		return err
	}
	return checkHTML(path, force)
}

// checkHTML refuses an --html file that must not be replaced: a directory,
// a file in a directory that does not exist, dbparity's data (a result, a
// journal, a capture: not even with force), or any file but an earlier
// report of compare's own unless force.
func checkHTML(path string, force bool) error {
	usage := func(format string, a ...any) error {
		return runner.UsageError{Err: fmt.Errorf("--html %s: %s", path, fmt.Sprintf(format, a...))}
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if d, err := os.Stat(filepath.Dir(path)); err != nil || !d.IsDir() {
			return usage("directory %s does not exist", filepath.Dir(path))
		}
		return nil
	case err != nil:
		return usage("%v", errors.Unwrap(err))
	case st.IsDir():
		return usage("is a directory: name a file")
	}
	head := make([]byte, 4096)
	f, err := os.Open(path)
	if err != nil {
		return usage("%v", errors.Unwrap(err))
	}
	n, _ := io.ReadFull(f, head)
	f.Close()
	head = head[:n]
	if m := dbparityData.FindSubmatch(head); m != nil {
		return usage("holds dbparity data (%s), which is never replaced: choose another name", m[1])
	}
	if !force && !bytes.Contains(head, []byte(report.HTMLGenerator)) {
		return usage("exists and is not a dbparity HTML report: choose another name, or add --force to replace it")
	}
	return nil
}

// dbparityData matches the head of dbparity's own JSON files: results and
// journals ("schema") and captures ("format").
var dbparityData = regexp.MustCompile(`^\s*\{\s*"(?:schema|format)"\s*:\s*"(dbparity\.[^"]*)"`)

func cmdRecover(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity recover", flag.ContinueOnError)
	o := runner.RecoverOptions{Stdout: os.Stdout}
	fs.StringVar(&o.Out, "out", "", "result file to write (default: the one the journal stood for, FILE.journal without .journal)")
	fs.BoolVar(&o.Force, "force", false, "replace --out if it exists")
	fs.Float64Var(&o.MaxErrorPct, "max-error-pct", result.DefaultMaxErrorPct, "mark the recovered run failed when more than this percentage of its transactions failed")
	files, err := parseOwn(fs, args, "dbparity recover [--out FILE] [--force] FILE.journal", "out", "max-error-pct")
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return runner.UsageError{Err: errors.New("name one journal (usage: dbparity recover [--out FILE] FILE.journal)")}
	}
	o.Journal = files[0]
	if err := notAnInput("--out", o.Out, files...); err != nil {
		return err
	}
	return runner.Recover(o)
}
