package runner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
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
	// The server freezes 1.2 s after the replay said it began (its
	// sessions connect then), Ctrl-C comes 3.5 s after: timed from the
	// start of the command, a loaded host froze the server while the
	// replay still described the database, before there was a replay.
	cancelled := make(chan time.Time, 1)
	go func() {
		for !strings.Contains(buf.String(), "replaying ") {
			if ctx.Err() != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.AfterFunc(1200*time.Millisecond, func() { signal(syscall.SIGSTOP) })
		time.AfterFunc(3500*time.Millisecond, func() { cancelled <- time.Now(); cancel() }) // Ctrl-C, once a statement stalled
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
