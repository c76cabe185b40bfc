package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPostgresWatch: a session's statements stop when their context
// ends, as when pgx watched each one, with the connection lost; a
// context no longer used cuts nothing.
func TestPostgresWatch(t *testing.T) {
	t.Parallel()
	inst := postgres(t)
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, c Conn) error
	}{
		{"batch", func(ctx context.Context, c Conn) error {
			var b Batch
			b.Begin(ReadOnly)
			b.Exec("SELECT pg_sleep(10)")
			return c.SendBatch(ctx, &b)
		}},
		{"exec", func(ctx context.Context, c Conn) error {
			_, err := c.Exec(ctx, "SELECT pg_sleep(10)")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := openSession(t, inst.URL())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			err := tc.run(ctx, c)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("cut after %s", d)
			}
			if !c.Lost() {
				t.Error("the connection is not lost after its statement was cut")
			}
			if _, err := c.Exec(ctx, "SELECT 1"); !errors.Is(err, context.Canceled) {
				t.Errorf("a statement under the ended context: %v", err)
			}
		})
	}
	t.Run("earlier context", func(t *testing.T) {
		c := openSession(t, inst.URL())
		old, cancelOld := context.WithCancel(context.Background())
		if _, err := c.Exec(old, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(100*time.Millisecond, cancelOld)
		if _, err := c.Exec(ctx, "SELECT pg_sleep(0.5)"); err != nil {
			t.Fatalf("cut by an earlier context: %v", err)
		}
		if c.Lost() {
			t.Error("lost")
		}
		if _, err := c.Exec(context.WithoutCancel(ctx), "SELECT 1"); err != nil {
			t.Error(err)
		}
	})
}
