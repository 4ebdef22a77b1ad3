package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// runWatcher is a RunStore that also follows one run's record, as
// *kvstore.RunStore does.
type runWatcher interface {
	WatchRun(ctx context.Context, runID string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error)
}

// RunWatch follows one run's record as dispatchers save it: the record it
// holds when the watch begins, then each one saved after it. Each record
// is one step of the reducer, so a Tracker turns them into the run's
// progress. Stop it once done.
type RunWatch struct {
	runID string
	w     jetstream.KeyWatcher
}

// Watch begins watching run runID's record. A watch begun before the run
// is started sees every record of it (start --wait does that); one begun
// later starts at the record the run holds then. A run without a record
// is waited for.
func (c *Client) Watch(ctx context.Context, runID string) (*RunWatch, error) {
	store, ok := c.store.(runWatcher)
	if !ok {
		// Config.Store reads records but cannot watch them: bind the
		// bucket it stands for.
		rs, err := kvstore.OpenRunStore(ctx, c.js, c.names)
		if err != nil {
			return nil, fmt.Errorf("client: watch %s: %w", runID, err)
		}
		store = rs
	}
	w, err := store.WatchRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("client: watch %s: %w", runID, err)
	}
	return &RunWatch{runID: runID, w: w}, nil
}

// Next returns the run's next record, waiting for it until ctx ends.
func (w *RunWatch) Next(ctx context.Context) (*runrecord.Record, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case e, ok := <-w.w.Updates():
			if !ok {
				return nil, errors.New("the watch of the run's record ended")
			}
			// nil marks the end of the current values; deletes and purges
			// carry no record.
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			rec, err := runrecord.Decode(e.Value())
			if err != nil {
				return nil, fmt.Errorf("run %s: %w", e.Key(), err)
			}
			return rec, nil
		}
	}
}

// Follow reads the run's records until it ends, passing the progress t
// finds in each to show (also when there is none), and returns the run's
// final status. It returns when ctx ends, with ctx's cause.
func (w *RunWatch) Follow(ctx context.Context, t *Tracker, show func([]Progress)) (*wire.Status, error) {
	for {
		rec, err := w.Next(ctx)
		if err != nil {
			return nil, err
		}
		steps, err := t.Observe(rec)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", w.runID, err)
		}
		show(steps)
		for _, s := range steps {
			if s.Kind == ProgressEnd {
				return s.Status, nil
			}
		}
	}
}

// Stop ends the watch.
func (w *RunWatch) Stop() error { return w.w.Stop() }
