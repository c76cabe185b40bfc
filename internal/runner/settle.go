package runner

import (
	"context"
	"time"

	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/observe"
	"github.com/dbparity/dbparity/internal/workload"
)

// settled wraps a run's sessions for the collectors' Settler (package
// observe): their workers, so that a session publishes its counts to the
// statistics views before its first transaction after each reading of
// the collectors began, and their connections, so that a session that
// closes owing a reading publishes them first. The server's counters are
// then right at the readings, the window's edges among them. Without a
// Settler (collectors off, an engine that needs none) nothing is wrapped.
func settled(s *observe.Settler, connect func(context.Context) (engine.Conn, error),
	newWorker func(id int) workload.Worker) (func(context.Context) (engine.Conn, error), func(id int) workload.Worker) {
	if s == nil {
		return connect, newWorker
	}
	conn := func(ctx context.Context) (engine.Conn, error) {
		c, err := connect(ctx)
		if err != nil {
			return nil, err
		}
		return s.Conn(c), nil
	}
	worker := func(id int) workload.Worker {
		w := settleWorker{Worker: newWorker(id), s: s}
		if th, ok := w.Worker.(workload.Thinker); ok {
			return settleThinker{w, th}
		}
		return w
	}
	return conn, worker
}

// settleWorker tells the Settler where each transaction begins and ends.
type settleWorker struct {
	workload.Worker
	s *observe.Settler
}

func (w settleWorker) Run(ctx context.Context, c engine.Conn) (workload.Outcome, error) {
	w.s.Before(ctx, c)
	defer w.s.After(c)
	return w.Worker.Run(ctx, c)
}

// settleThinker keeps a thinking worker's pauses.
type settleThinker struct {
	settleWorker
	th workload.Thinker
}

func (w settleThinker) Think() time.Duration { return w.th.Think() }
