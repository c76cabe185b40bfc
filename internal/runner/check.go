package runner

import (
	"context"
	"fmt"
)

// Check verifies the workload's consistency conditions and returns
// ErrCheckFailed when one does not hold.
func Check(ctx context.Context, c Common) error {
	t, err := openTarget(ctx, c.Target)
	if err != nil {
		return err
	}
	defer t.close()
	if _, err := prepare(ctx, t, c.Workload, false); err != nil {
		return err
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	results, err := c.Workload.Check(ctx, conn, t.Dialect)
	if err != nil {
		return fmt.Errorf("check %s: %w", c.Workload.Meta().Name, err)
	}
	failed := 0
	for _, r := range results {
		mark := "ok  "
		if !r.OK {
			mark = "FAIL"
			failed++
		}
		fmt.Fprintf(c.Stdout, "%s  %s", mark, r.Name)
		if r.Detail != "" {
			fmt.Fprintf(c.Stdout, ": %s", r.Detail)
		}
		fmt.Fprintln(c.Stdout)
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d conditions do not hold in %s", ErrCheckFailed, failed, len(results), t.URL)
	}
	fmt.Fprintf(c.Stdout, "all %d consistency conditions hold\n", len(results))
	return nil
}
