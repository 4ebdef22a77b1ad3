package client

import (
	"context"
	"errors"
	"sort"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Operation is one per-run operation a bulk job can apply: how to tell
// whether a run can take it, and how to publish it for one run.
type Operation struct {
	// Eligible reports whether a run in this status can take the
	// operation; a matching run that cannot is counted as skipped.
	Eligible func(status string) bool
	// Publish sends the operation's input for run runID with reason.
	// key makes its Nats-Msg-Id deterministic, so that a job publishing
	// it twice within the input stream's duplicate window stores it once.
	Publish func(ctx context.Context, c *Client, runID, reason, key string) error
}

// Operations are the per-run operations a bulk job can apply, by name.
// One row per operation input a run accepts.
var Operations = map[string]Operation{
	"cancel": {Eligible: live, Publish: func(ctx context.Context, c *Client, runID, reason, key string) error {
		return c.publish(ctx, c.names.Cancel(runID), msgID(subjects.KindCancel, runID, key), wire.Cancel{Reason: reason})
	}},
	"pause": {Eligible: pausable, Publish: func(ctx context.Context, c *Client, runID, reason, key string) error {
		return c.operate(ctx, subjects.KindPause, runID, key, wire.Operation{Reason: reason, Operator: bulkOperator})
	}},
	"resume": {Eligible: paused, Publish: func(ctx context.Context, c *Client, runID, reason, key string) error {
		return c.operate(ctx, subjects.KindResume, runID, key, wire.Operation{Reason: reason, Operator: bulkOperator})
	}},
	"redrive": {Eligible: failed, Publish: func(ctx context.Context, c *Client, runID, reason, key string) error {
		return c.redriveKeyed(ctx, runID, reason, key)
	}},
	"terminate": {Eligible: live, Publish: func(ctx context.Context, c *Client, runID, reason, key string) error {
		return c.operate(ctx, subjects.KindTerminate, runID, key, wire.Operation{Reason: reason, Operator: bulkOperator})
	}},
	// The retention sweep publishes no input: the dispatcher that holds
	// the job schedules each settled run's removal itself (bulk.Config.Sweep).
	OpRetentionSweep: {Eligible: settled, Publish: func(context.Context, *Client, string, string, string) error {
		return ErrSweepLocal
	}},
	// A migration is checked against each run's history by the
	// dispatcher that holds the job (bulk.Config.Migrate).
	OpMigrate: {Eligible: pausable, Publish: func(context.Context, *Client, string, string, string) error {
		return ErrMigrateLocal
	}},
}

// OpRetentionSweep is the bulk operation that schedules the removal of
// settled runs that have none (settled before retention existed, or
// before their retention was lowered): `jetflow retention sweep`.
const OpRetentionSweep = "retention-sweep"

// ErrSweepLocal: a retention sweep is carried out by a dispatcher's job
// runner, never published by a client.
var ErrSweepLocal = errors.New("a retention sweep is carried out by the dispatchers (a job runner with Sweep set)")

// settled: a run retention may remove.
func settled(status string) bool { return run.Status(status).Terminal() }

// bulkOperator is the operator a bulk job's inputs name; their reason
// names the job.
const bulkOperator = "bulk job"

// pausable: a run a pause applies to.
func pausable(status string) bool {
	return status == wire.StatusRunning || status == wire.StatusWaiting
}

// failed: a run a redrive may apply to (the run refuses one whose failure
// was not at a work state, and records why).
func failed(status string) bool { return status == wire.StatusFailed }

// paused: a run a resume applies to.
func paused(status string) bool { return status == wire.StatusPaused }

// OperationNames lists Operations' names, sorted.
func OperationNames() []string {
	names := make([]string, 0, len(Operations))
	for n := range Operations {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// live: a run that has not ended.
func live(status string) bool { return !run.Status(status).Terminal() }
