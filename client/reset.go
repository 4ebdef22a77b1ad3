package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ErrResetRefused is wrapped by Resetted when the dispatchers refused a
// reset; the error names the reason the run's record holds.
var ErrResetRefused = errors.New("reset refused")

// Reset asks run runID to go back to the state it had after its input at
// stream sequence to, rebuilt from its history, and continue from there
// (docs/OPERATIONS.md#reset). It returns the request's stream sequence,
// which Resetted waits for. Its Nats-Msg-Id is random for each call: two
// calls are two resets.
func (c *Client) Reset(ctx context.Context, runID string, to uint64, reason, operator string) (uint64, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return 0, fmt.Errorf("client: reset: %w", err)
	}
	if to == 0 {
		return 0, errors.New("client: reset: the input sequence to go back to is 0 (a stream sequence starts at 1)")
	}
	body := wire.Reset{To: to, Reason: reason, Operator: operator}
	return c.publishSeq(ctx, c.names.Reset(runID), msgID(subjects.KindReset, runID, ""), body)
}

// Resetted waits until the dispatchers have taken the reset at stream
// sequence seq and returns the run's status after it. A refused reset
// returns an error wrapping ErrResetRefused with the recorded reason.
func (c *Client) Resetted(ctx context.Context, runID string, seq uint64) (*wire.Status, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return nil, fmt.Errorf("client: resetted: %w", err)
	}
	return c.takenAt(ctx, runID, seq, "reset", ErrResetRefused)
}
