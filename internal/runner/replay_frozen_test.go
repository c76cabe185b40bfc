package runner

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

// A server frozen (SIGSTOP) in the middle of a replay: the stalled
// statement is reported, and Ctrl-C ends the replay within 5 s with its
// result written, marked partial, collectors and all; on PostgreSQL and
// on MariaDB, whose replay connections and stall monitor are their own.
func TestReplayFrozenServer(t *testing.T) {
	t.Parallel()
	t.Run("postgresql", func(t *testing.T) {
		tg, inst := managedServer(t)
		replayFrozen(t, tg, inst, "")
	})
	t.Run("mariadb", func(t *testing.T) {
		tg := managedMariaDB(t)
		inst, err := managed.StartMariaDB(context.Background(), managed.Options{DataDir: tg.MyData})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inst.Stop() })
		replayFrozen(t, Target{URL: inst.URL()}, inst, "mysql")
	})
}

func replayFrozen(t *testing.T, tg Target, inst *managed.Instance, engine string) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sess := capture.Session{ID: "a", User: inst.User, Database: inst.Database, End: 20 * time.Second}
	for i := range 40 {
		sess.Statements = append(sess.Statements, capture.Statement{Offset: time.Duration(i) * 500 * time.Millisecond, Duration: time.Millisecond})
	}
	c := &capture.Capture{Format: capture.Format, Engine: engine, Start: t0, End: t0.Add(20 * time.Second), Texts: []string{"SELECT 1"},
		Sessions: []capture.Session{sess}}
	dir := t.TempDir()
	capFile := filepath.Join(dir, "c.capture")
	if err := capture.Write(capFile, c); err != nil {
		t.Fatal(err)
	}
	signal := func(sig syscall.Signal) {
		for _, pid := range inst.Processes() {
			syscall.Kill(pid, sig)
		}
	}
	t.Cleanup(func() { signal(syscall.SIGCONT) }) // before the server's stop
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := filepath.Join(dir, "r.json")
	var buf bytesBuffer
	// The server freezes once the replay's progress shows a statement
	// replayed (its session connected and went on), Ctrl-C comes 2.3 s
	// after, once the next statement, due every 0.5 s, stalled. Timed
	// from the command's start, a loaded host froze the server while
	// the replay still described the database; timed 1.2 s from
	// "replaying", while its session was still connecting.
	cancelled := make(chan time.Time, 1)
	replayed := regexp.MustCompile(`\b[1-9][0-9]*/40 statements`)
	go func() {
		for !replayed.MatchString(buf.String()) {
			if ctx.Err() != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		signal(syscall.SIGSTOP)
		time.AfterFunc(2300*time.Millisecond, func() { cancelled <- time.Now(); cancel() }) // Ctrl-C, once a statement stalled
	}()
	start := time.Now()
	err := Replay(ctx, ReplayOptions{Common: Common{Target: tg, Stdout: &buf, Stderr: &buf}, Capture: capFile, Speed: 1,
		StallTimeout: time.Second, Label: "frozen", Out: out})
	took := time.Since(start)
	var at time.Time
	select {
	case at = <-cancelled:
	default:
		t.Fatalf("the replay ended before its interrupt, %v after its start: %v\n%s", took, err, buf.String())
	}
	t.Logf("replay ended %v after the start, %v after Ctrl-C: %v", took.Round(time.Millisecond), time.Since(at).Round(time.Millisecond), err)
	if err == nil || !errors.Is(err, context.Canceled) && !errors.Is(err, ErrInterrupted) {
		t.Errorf("replay of a frozen server, interrupted: %v", err)
	}
	if after := time.Since(at); after > 5*time.Second {
		t.Errorf("the replay ended %v after Ctrl-C, want within 5 s", after)
	}
	r, rerr := result.Read(out)
	if rerr != nil {
		t.Fatalf("no result after the interrupt: %v\n%s", rerr, buf.String())
	}
	if !r.Partial || r.Replay == nil || len(r.Replay.Stalls) == 0 {
		t.Errorf("partial %v, replay %+v", r.Partial, r.Replay)
	}
}
