package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/atomicfile"
	"github.com/dbparity/dbparity/internal/k8s"
	"github.com/dbparity/dbparity/internal/result"
	"github.com/dbparity/dbparity/internal/runner"
)

func cmdMerge(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity merge", flag.ContinueOnError)
	o := runner.MergeOptions{Stdout: os.Stdout, Stderr: os.Stderr}
	fs.StringVar(&o.Out, "out", "", "the merged result file to write")
	fs.BoolVar(&o.Force, "force", false, "replace --out, and merge parts that would be refused (other runs, missing or repeated parts, windows apart), flagged in the result")
	fs.DurationVar(&o.Wait, "wait", 0, "wait up to this `duration` for every part's file to appear (a merge step started beside the parts)")
	fs.Float64Var(&o.MaxErrorPct, "max-error-pct", result.DefaultMaxErrorPct, "mark the merged run failed when more than this percentage of its transactions failed")
	files, err := parseOwn(fs, args, "dbparity merge --out RUN.json PART.json...", "out", "wait", "max-error-pct")
	if err != nil {
		return err
	}
	o.Files = files
	if err := notAnInput("--out", o.Out, files...); err != nil {
		return err
	}
	return runner.Merge(ctx, o)
}

func cmdHlog(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity hlog", flag.ContinueOnError)
	out := fs.String("out", "", "the .hlog file to write (default: standard output)")
	force := fs.Bool("force", false, "replace --out if it exists")
	files, err := parseOwn(fs, args, "dbparity hlog [--out FILE.hlog] RESULT.json", "out")
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return runner.UsageError{Err: errors.New("name one result file (usage: dbparity hlog [--out FILE.hlog] RESULT.json)")}
	}
	if err := notAnInput("--out", *out, files...); err != nil {
		return err
	}
	r, err := result.Read(files[0])
	if err != nil {
		return runner.UsageError{Err: err}
	}
	if *out == "" {
		return result.WriteHlog(os.Stdout, r)
	}
	if _, err := os.Stat(*out); err == nil && !*force {
		return runner.UsageError{Err: fmt.Errorf("--out %s already exists: choose another file or pass --force to replace it", *out)}
	}
	return atomicfile.Write(*out, func(w io.Writer) error { return result.WriteHlog(w, r) })
}

func cmdK8s(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("dbparity k8s", flag.ContinueOnError)
	o := k8s.Options{}
	fs.StringVar(&o.Name, "name", "dbparity", "the Job's name (the merge step's is NAME-merge; results go to /results/NAME)")
	fs.StringVar(&o.Namespace, "namespace", "", "the namespace (default: kubectl's)")
	fs.StringVar(&o.Image, "image", "", "an image with dbparity on its PATH, sh and tar (the merge step and kubectl cp use them)")
	fs.IntVar(&o.Parts, "parts", 0, "the number of driver pods, each running one part")
	fs.StringVar(&o.Claim, "claim", "", "the PersistentVolumeClaim the results go to (ReadWriteMany when pods may land on several nodes)")
	fs.StringVar(&o.RunID, "run-id", "", "the run's name in the barrier table (default NAME-TIME: a new one each time the manifest is written)")
	fs.DurationVar(&o.MergeWait, "merge-wait", time.Hour, "how long the merge step waits for the parts' results")
	fs.DurationVar(&o.Hold, "hold", time.Hour, "how long the merge step stays up afterwards so that kubectl cp can copy the results")
	fs.StringVar(&o.Secret, "secret", "", "a Secret whose key password the parts read as PGPASSWORD and MYSQL_PWD (the manifest holds no credential)")
	metrics := fs.Bool("metrics", false, "each part serves live metrics (--metrics-addr on --metrics-port) and a PodMonitor scrapes them")
	fs.IntVar(&o.MetricsPort, "metrics-port", 9464, "with --metrics: the parts' metrics port")
	usageLine := "dbparity k8s --parts N --image IMAGE --claim PVC [--name NAME] -- RUN FLAGS (the target, workload, --users, --duration, --label ...)"
	var runArgs []string
	for i, a := range args {
		if a == "--" {
			args, runArgs = args[:i], args[i+1:]
			break
		}
	}
	files, err := parseOwn(fs, args, usageLine, "name", "namespace", "image", "parts", "claim", "run-id", "merge-wait", "hold", "secret", "metrics-port")
	if err != nil {
		return err
	}
	if !*metrics {
		o.MetricsPort = 0
	}
	if len(files) > 0 {
		return runner.UsageError{Err: fmt.Errorf("%q: run's flags go after -- (usage: %s)", files[0], usageLine)}
	}
	if o.RunID == "" {
		o.RunID = o.Name + "-" + time.Now().UTC().Format("20060102-150405")
	}
	o.RunArgs = runArgs
	if strings.Join(runner.RedactArgs(runArgs), "\x00") != strings.Join(runArgs, "\x00") {
		return runner.UsageError{Err: errors.New("the parts' flags hold a password, which the manifest would show: put it in a Secret " +
			"(kubectl create secret generic NAME --from-literal=password=PW), give --secret NAME, and the target without it")}
	}
	if err := o.Validate(); err != nil {
		return runner.UsageError{Err: err}
	}
	// The parts' command line must parse here, not fail in every pod.
	probe := append(append([]string{}, runArgs...), "--part", fmt.Sprintf("0/%d", o.Parts), "--run-id", o.RunID)
	if _, err := runOptions(probe); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return runner.UsageError{Err: fmt.Errorf("the parts' run flags: %w", err)}
	}
	m, err := k8s.Manifest(o)
	if err != nil {
		return runner.UsageError{Err: err}
	}
	_, err = os.Stdout.Write(m)
	return err
}
