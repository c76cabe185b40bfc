package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/snapshot"
)

// peerRow is one pgreplay replay of a client's log.
type peerRow struct {
	speed       string // "1" or "max" (pgreplay -s 1000)
	notFinished time.Duration
	failed      string
	seconds     float64 // pgreplay's own total run time
	statements  int64   // that it executed
	errors      int64   // of them, that failed
	cpuPerStmt  float64 // µs of its CPU (user+sys, rusage) per statement
	end         string
}

// parsePgreplay has pgreplay read the client's csvlogs (joined, in order)
// into its replay file, as its manual says: pgreplay -f -c -o FILE LOG.
func (b *bench) parsePgreplay(rec *recording, logs []string) {
	joined := filepath.Join(rec.dir, "pgreplay.csv")
	if err := concat(joined, logs); err != nil {
		logf("pgreplay: %v", err)
		return
	}
	out := filepath.Join(rec.dir, "pgreplay.replay")
	if err := b.command(30*time.Minute, filepath.Join(rec.dir, "pgreplay-parse.log"), rec.dir, nil, b.o.pgreplay, "-f", "-c", "-o", out, joined); err != nil {
		logf("pgreplay -f: %v", err)
		return
	}
	if b.o.keep == "" {
		os.Remove(joined)
	}
	rec.pgreplay = out
}

func concat(to string, from []string) error {
	w, err := os.Create(to)
	if err != nil {
		return err
	}
	for _, f := range from {
		r, err := os.Open(f)
		if err != nil {
			w.Close()
			return err
		}
		_, err = io.Copy(w, r)
		r.Close()
		if err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

var (
	pgreplayExecuted = regexp.MustCompile(`(?m)^SQL statements executed: (\d+)`)
	pgreplayErrors   = regexp.MustCompile(`(?m)^\((\d+) or [0-9.]+% of these completed with error\)`)
	pgreplayTook     = regexp.MustCompile(`(?m)^Total run time: ([0-9.]+) seconds`)
)

// pgreplayPG replays rec's pgreplay file at speed on a fresh copy of its
// starting state and checks the end state it leaves.
func (b *bench) pgreplayPG(rec *recording, speed string) *peerRow {
	pr := &peerRow{speed: speed}
	inst, stop, err := b.freshPG(rec, "pgreplay-"+speed)
	if err != nil {
		pr.failed = firstLine(err.Error())
		return pr
	}
	defer stop()
	factor := "1"
	if speed == "max" {
		factor = "1000"
	}
	logFile := filepath.Join(rec.dir, "pgreplay-replay-"+speed+".log")
	f, err := os.Create(logFile)
	if err != nil {
		pr.failed = err.Error()
		return pr
	}
	defer f.Close()
	logf("pgreplay -s %s (limit %s)", factor, b.o.limit)
	ctx, cancel := context.WithTimeout(b.ctx, b.o.limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.o.pgreplay, "-r", "-h", inst.SocketDir, "-p", strconv.Itoa(inst.Port), "-s", factor, rec.pgreplay)
	cmd.Dir, cmd.Stdout, cmd.Stderr = rec.dir, f, f
	cmd.WaitDelay = 5 * time.Second
	t0 := time.Now()
	runErr := cmd.Run()
	took := time.Since(t0)
	if ctx.Err() == context.DeadlineExceeded && b.ctx.Err() == nil {
		pr.notFinished = b.o.limit
		logf("pgreplay -s %s: not finished after %s, killed", factor, b.o.limit)
		return pr
	}
	out, _ := os.ReadFile(logFile)
	if runErr != nil {
		pr.failed = "failed: " + firstLine(runErr.Error())
		logf("pgreplay -s %s: %v; its output ends:\n%s", factor, runErr, indent(fileTail(logFile, 10), "    | "))
		return pr
	}
	pr.statements = int64(atoi(pgreplayExecuted.FindSubmatch(out)))
	pr.errors = int64(atoi(pgreplayErrors.FindSubmatch(out)))
	pr.seconds = took.Seconds()
	if m := pgreplayTook.FindSubmatch(out); m != nil {
		pr.seconds, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if ps := cmd.ProcessState; ps != nil && pr.statements > 0 {
		pr.cpuPerStmt = float64((ps.UserTime() + ps.SystemTime()).Microseconds()) / float64(pr.statements)
	}
	pr.end = b.pgEndState(rec, inst, "pgreplay-"+speed)
	logf("pgreplay -s %s: %.1f s, %d statements executed, %d failed, its CPU %.1f µs/statement; %s",
		factor, pr.seconds, pr.statements, pr.errors, pr.cpuPerStmt, pr.end)
	return pr
}

// pgEndState snapshots inst and compares it with the client's end state.
func (b *bench) pgEndState(rec *recording, inst *managed.Instance, name string) string {
	snap := filepath.Join(rec.dir, name+".snap")
	if err := b.command(10*time.Minute, filepath.Join(rec.dir, name+"-snapshot.log"), rec.dir, nil, b.bin,
		"snapshot", "--target", inst.URL(), "--out", snap, "--force"); err != nil {
		return "not verified: " + firstLine(err.Error())
	}
	want, err := snapshot.Read(rec.end)
	if err != nil {
		return "not verified: " + err.Error()
	}
	got, err := snapshot.Read(snap)
	if err != nil {
		return "not verified: " + err.Error()
	}
	return strings.TrimPrefix(snapshot.Compare(want, got).Summary(), "end state: ")
}

func atoi(m [][]byte) int {
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// printPeers writes pgreplay's table: its replays beside dbparity's.
func printPeers(w io.Writer, rows []*row) {
	var found bool
	for _, r := range rows {
		found = found || len(r.peer) > 0
	}
	if !found {
		return
	}
	fmt.Fprintf(w, "\npgreplay, the C replayer, on the same logs (-s 1; -s 1000 for max): its CPU is the process's (user+sys, rusage), the replay file read in too; dbparity's over its whole process too\n\n")
	fmt.Fprintln(w, "| client | speed | pgreplay: s | statements (failed) | pgreplay CPU µs/statement | end state | dbparity: s | dbparity CPU µs/statement (process) | dbparity over pgreplay |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---|---:|---:|---:|")
	for _, r := range rows {
		for _, p := range r.peer {
			d := find(r.replays, p.speed)
			cells := []string{r.client, p.speed}
			switch {
			case p.notFinished > 0:
				cells = append(cells, "not finished after "+p.notFinished.String(), "", "", "")
			case p.failed != "":
				cells = append(cells, p.failed, "", "", "")
			default:
				cells = append(cells, fmt.Sprintf("%.1f", p.seconds), fmt.Sprintf("%d (%d)", p.statements, p.errors),
					fmt.Sprintf("%.1f", p.cpuPerStmt), p.end)
			}
			if d != nil && d.failed == "" && d.notFinished == 0 {
				cells = append(cells, fmt.Sprintf("%.1f", d.seconds), fmt.Sprintf("%.1f", d.procPerStmt))
				if p.cpuPerStmt > 0 && d.procPerStmt > 0 {
					cells = append(cells, fmt.Sprintf("%.2f", d.procPerStmt/p.cpuPerStmt))
				} else {
					cells = append(cells, "")
				}
			} else {
				cells = append(cells, "", "", "")
			}
			for i, c := range cells {
				cells[i] = strings.ReplaceAll(c, "|", `\|`)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
	}
}

// printBefore writes the builds' CPU per statement side by side.
func printBefore(w io.Writer, rows []*row, before string) {
	var found bool
	for _, r := range rows {
		found = found || len(r.before) > 0
	}
	if !found {
		return
	}
	fmt.Fprintf(w, "\nthis build against -before (%s), replaying in turns on fresh copies: dbparity CPU µs/statement in the replay\n\n", before)
	fmt.Fprintln(w, "| client | speed | this build: s | before: s | this build µs/statement | before µs/statement | ratio |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		for _, old := range r.before {
			now := find(r.replays, old.speed)
			if now == nil {
				continue
			}
			ratio := ""
			if now.cpuPerStmt > 0 && old.cpuPerStmt > 0 {
				ratio = fmt.Sprintf("%.2f", now.cpuPerStmt/old.cpuPerStmt)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", strings.ReplaceAll(r.client, "|", `\|`), old.speed,
				secondsCell(now), secondsCell(old), cpuCell(now.cpuPerStmt), cpuCell(old.cpuPerStmt), ratio)
		}
	}
}

func secondsCell(r *replayRow) string {
	switch {
	case r.notFinished > 0:
		return "not finished"
	case r.failed != "":
		return r.failed
	}
	return fmt.Sprintf("%.1f", r.seconds)
}
