package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Pause asks for a run to be paused: until it is resumed it invokes no
// task and fires no timer, and holds what it is sent (docs/OPERATIONS.md).
// reason and operator are kept for the record and may be empty. The
// request's Nats-Msg-Id is random for each call, as a start's.
func (c *Client) Pause(ctx context.Context, runID, reason, operator string) error {
	return c.operate(ctx, subjects.KindPause, runID, "", wire.Operation{Reason: reason, Operator: operator})
}

// Resume asks for a paused run to go on: what it held applies in order.
func (c *Client) Resume(ctx context.Context, runID, reason, operator string) error {
	return c.operate(ctx, subjects.KindResume, runID, "", wire.Operation{Reason: reason, Operator: operator})
}

// Terminate asks for a run to end at once, status terminated, running
// nothing more (no catch). reason is required: the status shows it.
func (c *Client) Terminate(ctx context.Context, runID, reason, operator string) error {
	if strings.TrimSpace(reason) == "" {
		return errors.New("client: terminate: the reason is empty (say why the run is ended)")
	}
	return c.operate(ctx, subjects.KindTerminate, runID, "", wire.Operation{Reason: reason, Operator: operator})
}

// operate publishes an operator's input; key makes its Nats-Msg-Id
// deterministic (a bulk job's), "" random for each call.
func (c *Client) operate(ctx context.Context, kind, runID, key string, body wire.Operation) error {
	if err := subjects.CheckRunID(runID); err != nil {
		return fmt.Errorf("client: %s: %w", kind, err)
	}
	var subject string
	switch kind {
	case subjects.KindPause:
		subject = c.names.Pause(runID)
	case subjects.KindResume:
		subject = c.names.Resume(runID)
	default:
		subject = c.names.Terminate(runID)
	}
	return c.publish(ctx, subject, msgID(kind, runID, key), body)
}
