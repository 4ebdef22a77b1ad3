package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jetflow/jetflow/startctl"
	"github.com/jetflow/jetflow/wire"
)

// WithIdempotencyKey makes the start count once within the idempotency
// window (startctl.Window, 24 h): a later start with the same key starts
// nothing, and StartDecided answers it with the first start's run.
func WithIdempotencyKey(key string) StartOption {
	return func(s *wire.Start) { s.IdempotencyKey = key }
}

// WithSingleton allows one active (not settled) run per key: while
// another run started with key has not settled, the start is refused
// (mode wire.SingletonRefuse, or "") or held until that run settles
// (wire.SingletonQueue).
func WithSingleton(key, mode string) StartOption {
	return func(s *wire.Start) { s.Singleton = &wire.Singleton{Key: key, Mode: mode} }
}

// WithDebounce holds the start for delay: a later start with the same key
// within it replaces this one, so only the last start of a burst runs,
// delay after it.
func WithDebounce(key string, delay time.Duration) StartOption {
	return func(s *wire.Start) {
		s.Debounce = &wire.Debounce{Key: key, Ms: float64(delay) / float64(time.Millisecond)}
	}
}

// StartOutcome is what the dispatchers made of a start.
type StartOutcome struct {
	// Run is the run that answers the start: the one asked for, or, for
	// a duplicate, the run the idempotency key started first.
	Run string
	// Decision is why the run asked for did not start (yet); nil when it
	// has a record.
	Decision *wire.StartDecision
}

// Started reports whether the run asked for has a record.
func (o StartOutcome) Started() bool { return o.Decision == nil }

// ErrStartRefused is wrapped by StartDecided's error when the singleton
// key's active run refused the start.
var ErrStartRefused = errors.New("start refused")

// ErrUndecided is wrapped when no dispatcher decided on the start before
// the context ended: it is published, and stays to be decided.
var ErrUndecided = errors.New("start published, not decided yet")

// StartDecided starts the run as StartRun does, then waits for the
// dispatchers' decision on it: the run started (it has a record), or a
// decision kept for its id (duplicate, refused, queued, debounced). A
// refusal is an error wrapping ErrStartRefused that names the key and the
// active run; a context that ends first, ErrUndecided.
func (c *Client) StartDecided(ctx context.Context, workflow, runID string, input any, opts ...StartOption) (StartOutcome, error) {
	before, err := c.DecisionMark(ctx, runID)
	if err != nil {
		return StartOutcome{}, err
	}
	if err := c.StartRun(ctx, workflow, runID, input, opts...); err != nil {
		return StartOutcome{}, err
	}
	return c.AwaitStart(ctx, runID, before)
}

// DecisionMark is the mark AwaitStart needs, read before publishing a
// start by other means (StartWithEvent): a decision kept from an earlier
// start of the same run id is not taken for this one's.
func (c *Client) DecisionMark(ctx context.Context, runID string) (uint64, error) {
	_, rev, err := startctl.Decision(ctx, c.js, c.names, runID)
	if err != nil && !errors.Is(err, startctl.ErrNoDecision) {
		return 0, fmt.Errorf("client: start %s: %w", runID, err)
	}
	return rev, nil
}

// StartDecision reads what was decided on runID's start: ok is false when
// the run has a record or nothing is kept about its start.
func (c *Client) StartDecision(ctx context.Context, runID string) (wire.StartDecision, bool, error) {
	d, _, err := startctl.Decision(ctx, c.js, c.names, runID)
	if errors.Is(err, startctl.ErrNoDecision) {
		return wire.StartDecision{}, false, nil
	}
	return d, err == nil, err
}

// AwaitStart waits for the dispatchers' decision on runID's start, as
// StartDecided does, polling the run's record and its start decision
// (newer than the mark before, from DecisionMark).
func (c *Client) AwaitStart(ctx context.Context, runID string, before uint64) (StartOutcome, error) {
	delay := 10 * time.Millisecond
	for {
		_, err := c.Status(ctx, runID)
		if err == nil {
			return StartOutcome{Run: runID}, nil
		}
		if !errors.Is(err, ErrRunNotFound) {
			return StartOutcome{}, err
		}
		d, rev, err := startctl.Decision(ctx, c.js, c.names, runID)
		switch {
		case err == nil && rev > before:
			out := StartOutcome{Run: runID, Decision: &d}
			switch d.Outcome {
			case wire.StartOutcomeDuplicate:
				out.Run = d.Run
			case wire.StartOutcomeRefused:
				return out, fmt.Errorf("%w: run %s holds singleton key %q and has not settled: run %s was not started (retry once it settles, or start with singleton mode queue)", ErrStartRefused, d.Run, d.Key, runID)
			}
			return out, nil
		case err != nil && !errors.Is(err, startctl.ErrNoDecision):
			return StartOutcome{}, err
		}
		select {
		case <-ctx.Done():
			return StartOutcome{Run: runID}, fmt.Errorf("%w: no dispatcher decided on run %s's start in time (is one running?): %w", ErrUndecided, runID, context.Cause(ctx))
		case <-time.After(delay):
		}
		delay = min(2*delay, 250*time.Millisecond)
	}
}
