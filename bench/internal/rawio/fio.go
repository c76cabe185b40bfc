package rawio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Fio measures the same thing with fio, when it is installed, as a check on
// Measure: the same test file, Workers jobs each with one synchronous read
// in flight (psync, iodepth 1, as Measure's readers), randread of Block
// bytes, direct=1 when Direct (falling back as Measure does), the same
// warm-up as ramp_time and Duration as a time-based runtime. It returns
// false, and no error, when fio is not on PATH.
func Fio(ctx context.Context, o Options) (Result, bool, error) {
	bin, err := exec.LookPath("fio")
	if err != nil {
		return Result{}, false, nil
	}
	o, err = o.withDefaults()
	if err != nil {
		return Result{}, true, err
	}
	path, err := createTestFile(ctx, o)
	if err != nil {
		return Result{}, true, err
	}
	defer os.Remove(path)

	direct, note := o.Direct, ""
	if o.Direct {
		if err := probeDirect(path, o.Block); refusesDirect(err) {
			direct = false
			note = fmt.Sprintf("the file system refused O_DIRECT (%v): fio ran with direct=0", errnoText(err))
			o.progress("rawio: %s", note)
		} else if err != nil {
			return Result{}, true, fmt.Errorf("rawio: read %s with O_DIRECT: %w", path, err)
		}
	}
	args := fioArgs(path, o, direct)
	o.progress("rawio: %s %s", bin, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return Result{}, true, ctx.Err()
		}
		return Result{}, true, fmt.Errorf("rawio: fio: %v: %s", err, lastLine(stderr.String()))
	}
	r, err := parseFio(&stdout)
	if err != nil {
		return Result{}, true, err
	}
	r.Method = fmt.Sprintf("fio psync randread numjobs=%d direct=%d", o.Workers, b2i(direct))
	r.Direct = direct
	r.FileSystem = fsType(o.Dir)
	r.Note = addNote(r.Note, note)
	if memoryBacked(r.FileSystem) {
		r.Note = addNote(r.Note, r.FileSystem+" keeps files in memory: these are memory reads, not storage")
	}
	return r, true, nil
}

// fioArgs is fio's command line for o on the file at path.
func fioArgs(path string, o Options, direct bool) []string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }
	args := []string{
		"--name=dbparity-rawio",
		"--filename=" + strings.ReplaceAll(path, ":", `\:`), // fio splits file names at colons
		"--size=" + strconv.FormatInt(o.Size, 10),
		"--rw=randread",
		"--bs=" + strconv.Itoa(o.Block),
		"--ioengine=psync",
		"--iodepth=1",
		"--numjobs=" + strconv.Itoa(o.Workers),
		"--group_reporting",
		"--direct=" + strconv.Itoa(b2i(direct)),
		"--norandommap", // uniform random offsets, as Measure's readers
		"--randrepeat=0",
		"--invalidate=1",
		"--time_based",
		"--runtime=" + ms(o.Duration),
		"--output-format=json",
	}
	if w := o.warmup(); w > 0 {
		args = append(args, "--ramp_time="+ms(w))
	}
	return args
}

// fioOutput is the part of fio 3.x's JSON output that Result needs.
type fioOutput struct {
	Version string `json:"fio version"`
	Jobs    []struct {
		Name  string `json:"jobname"`
		Error int    `json:"error"`
		Read  struct {
			BW       float64 `json:"bw"`        // KiB/s
			IOPS     float64 `json:"iops"`      // reads per second
			Runtime  int64   `json:"runtime"`   // ms
			TotalIOs int64   `json:"total_ios"` // reads
			Clat     struct {
				Max        float64            `json:"max"`        // ns
				Percentile map[string]float64 `json:"percentile"` // "50.000000": ns
			} `json:"clat_ns"`
		} `json:"read"`
	} `json:"jobs"`
}

// parseFio reads fio's JSON output into a Result without Method, Direct and
// FileSystem. Several jobs (without group_reporting) are added up; their
// percentiles cannot be merged, so the worst job's are taken and the Note
// says so. Lines that fio prints before the JSON (warnings) are skipped.
func parseFio(rd io.Reader) (Result, error) {
	b, err := io.ReadAll(rd)
	if err != nil {
		return Result{}, fmt.Errorf("rawio: read fio output: %w", err)
	}
	i := bytes.IndexByte(b, '{')
	if i < 0 {
		return Result{}, errors.New("rawio: fio output holds no JSON: was --output-format=json given?")
	}
	var out fioOutput
	if err := json.Unmarshal(b[i:], &out); err != nil {
		return Result{}, fmt.Errorf("rawio: fio output: %w", err)
	}
	if len(out.Jobs) == 0 {
		return Result{}, errors.New("rawio: fio output has no jobs")
	}
	var r Result
	var runtimeMS int64
	var kibps float64
	for _, j := range out.Jobs {
		if j.Error != 0 {
			return Result{}, fmt.Errorf("rawio: fio job %s failed with error %d", j.Name, j.Error)
		}
		rd := j.Read
		p50, ok50 := rd.Clat.Percentile["50.000000"]
		p99, ok99 := rd.Clat.Percentile["99.000000"]
		if rd.TotalIOs > 0 && (!ok50 || !ok99) {
			return Result{}, fmt.Errorf("rawio: fio job %s reports no 50th or 99th percentile of read completion latency", j.Name)
		}
		r.Reads += rd.TotalIOs
		r.IOPS += rd.IOPS
		kibps += rd.BW
		runtimeMS = max(runtimeMS, rd.Runtime)
		r.LatencyP50 = max(r.LatencyP50, time.Duration(p50))
		r.LatencyP99 = max(r.LatencyP99, time.Duration(p99))
		r.LatencyMax = max(r.LatencyMax, time.Duration(rd.Clat.Max))
	}
	if r.Reads == 0 || runtimeMS == 0 {
		return Result{}, errors.New("rawio: fio reports no reads")
	}
	r.Elapsed = time.Duration(runtimeMS) * time.Millisecond
	r.MBps = kibps * 1024 / 1e6
	if len(out.Jobs) > 1 {
		r.Note = fmt.Sprintf("percentiles are the worst of %d fio jobs", len(out.Jobs))
	}
	return r, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lastLine is the last non-empty line of s, for one-line error messages.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
