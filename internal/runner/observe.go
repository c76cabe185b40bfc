package runner

import (
	"context"
	"errors"

	"github.com/dbparity/dbparity/internal/observe"
	"github.com/dbparity/dbparity/internal/result"
)

// CollectOptions set what is collected during a run (package observe
// runs the collectors).
type CollectOptions = observe.Options

// validateDBHost checks --db-host and --db-host-metrics together.
func validateDBHost(o CollectOptions) error { return fromObserve(o.Validate()) }

// startObserving starts the collectors of one run against t.
func startObserving(ctx context.Context, t *opened, o CollectOptions, testsIO bool, journal *result.Journal) (*observe.Observer, error) {
	ob, err := observe.Start(ctx, t.observed(), o, testsIO, journal)
	return ob, fromObserve(err)
}

// observed is what the collectors need to know of t: the target, and
// where a managed server runs.
func (o *opened) observed() observe.Target {
	t := observe.Target{Target: o.Target, DataDir: o.localDataDir()}
	if o.managed != nil {
		t.Managed, t.PID = true, o.managed.PID
	}
	return t
}

// fromObserve makes observe's usage errors the runner's, which the
// command's exit status tells apart.
func fromObserve(err error) error {
	var ue observe.UsageError
	if errors.As(err, &ue) {
		return UsageError{err}
	}
	return err
}
