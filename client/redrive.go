package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ErrRedriveRefused is wrapped by Redriven when the dispatchers refused
// a redrive; the error names the reason the run's record holds.
var ErrRedriveRefused = errors.New("redrive refused")

// Redrive asks failed run runID to continue from its failed work
// activation (docs/OPERATIONS.md#redrive) and returns the request's
// stream sequence, which Redriven waits for. Its Nats-Msg-Id is random
// for each call, as a cancel's: two calls are two redrives, and the
// second is refused unless the first one's run failed again.
func (c *Client) Redrive(ctx context.Context, runID, reason string, opts ...RedriveOption) (uint64, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return 0, fmt.Errorf("client: redrive: %w", err)
	}
	body := wire.Redrive{Reason: reason}
	for _, o := range opts {
		o(&body)
	}
	return c.publishSeq(ctx, c.names.Redrive(runID), msgID(subjects.KindRedrive, runID, ""), body)
}

// redriveKeyed publishes a bulk job's redrive, whose message id key makes
// deterministic.
func (c *Client) redriveKeyed(ctx context.Context, runID, reason, key string) error {
	if err := subjects.CheckRunID(runID); err != nil {
		return fmt.Errorf("client: redrive: %w", err)
	}
	_, err := c.publishSeq(ctx, c.names.Redrive(runID), msgID(subjects.KindRedrive, runID, key), wire.Redrive{Reason: reason})
	return err
}

// RedriveOption adjusts Redrive.
type RedriveOption func(*wire.Redrive)

// RedriveRevision moves the run to another deployed revision of its
// workflow as it is redriven: one that holds the same document, deployed
// with another task policy. The dispatchers refuse a revision of another
// document.
func RedriveRevision(rev string) RedriveOption { return func(r *wire.Redrive) { r.Revision = rev } }

// Redriven waits until the dispatchers have taken the redrive at stream
// sequence seq and returns the run's status after it. A refused redrive
// returns an error wrapping ErrRedriveRefused with the recorded reason.
// After it, Wait waits for the redriven run's outcome.
func (c *Client) Redriven(ctx context.Context, runID string, seq uint64) (*wire.Status, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return nil, fmt.Errorf("client: redriven: %w", err)
	}
	return c.takenAt(ctx, runID, seq, "redriven", ErrRedriveRefused)
}

// takenAt waits until the run's record reflects its input at seq (an
// operator's request, what) and returns the status after it, or an error
// wrapping refused with the reason the record holds.
func (c *Client) takenAt(ctx context.Context, runID string, seq uint64, what string, refused error) (*wire.Status, error) {
	nc := c.js.Conn()
	sub, err := nc.SubscribeSync(c.names.Status(runID))
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", what, runID, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.flush(ctx, nc); err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("client: %s %s: %w", what, runID, err)
	}
	interval := c.cfg.RecheckInterval
	for {
		st, taken, err := c.taken(ctx, runID, seq, refused)
		switch {
		case taken:
			return st, err
		case err != nil && ctx.Err() != nil:
			return nil, fmt.Errorf("client: %s %s: the dispatchers have not taken the request (stream sequence %d): %w", what, runID, seq, context.Cause(ctx))
		}
		// Any announcement of the run is a reason to read it again.
		wctx, cancel := context.WithTimeout(ctx, interval)
		_, _ = sub.NextMsgWithContext(wctx)
		cancel()
		interval = min(2*interval, c.cfg.MaxRecheckInterval)
	}
}

// taken reads the run and reports whether its record reflects the input
// at seq: applied (the status after it) or refused (an error; a run
// removed by retention refuses it too, the error wrapping
// runrecord.ErrRemoved).
func (c *Client) taken(ctx context.Context, runID string, seq uint64, refused error) (*wire.Status, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, waitReadTimeout)
	defer cancel()
	data, _, err := c.store.Get(ctx, runID)
	if err != nil {
		return nil, false, err
	}
	rec, err := runrecord.Decode(data)
	if errors.Is(err, runrecord.ErrRemoved) {
		// Removed by retention before (or instead of) taking the input:
		// it never will; the error gives the tombstone.
		return nil, true, fmt.Errorf("client: run %s: %w: %w", runID, refused, err)
	}
	if err != nil {
		return nil, false, err
	}
	for _, r := range rec.Rejected {
		if r.Seq == seq {
			return nil, true, fmt.Errorf("client: run %s: %w: %s", runID, refused, r.Reason)
		}
	}
	if !rec.HasApplied(seq) && !appliedBefore(rec, seq) {
		return nil, false, nil
	}
	st, err := c.Status(ctx, runID)
	return st, true, err
}

// appliedBefore reports whether seq fell out of the record's window of
// applied inputs: later inputs of the run were applied after it.
func appliedBefore(rec *runrecord.Record, seq uint64) bool {
	return len(rec.Applied) > 0 && rec.Applied[0] > seq && len(rec.Order) > 0 && rec.Order[0].From <= seq
}
