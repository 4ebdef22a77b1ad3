package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/wire"
)

// drained says what is still pending or unacknowledged on the
// deployment's consumers, or nil. The task stream (work-queue retention)
// must hold nothing but invocations NATS stopped redelivering: a
// work-queue stream deletes a message on its acknowledgement only, so an
// attempt the protocol worker NAKed until max_deliver ran out stays, and
// each one left must be such an attempt (naked).
func (h *harness) drained(ctx context.Context, naked map[attemptKey]bool) error {
	for _, c := range h.consumers() {
		info, err := h.consumerInfo(ctx, c)
		if err != nil {
			return err
		}
		if info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("consumer %s: %d pending, %d unacknowledged", c[1], info.NumPending, info.NumAckPending)
		}
	}
	left, err := h.leftInvocations(ctx)
	if err != nil {
		return err
	}
	for _, k := range left {
		if !naked[k] {
			return fmt.Errorf("task stream holds %d invocations, among them attempt %+v, which no worker gave back until max_deliver ran out", len(left), k)
		}
	}
	return nil
}

// leftInvocations lists the attempts of the invocations the task stream
// still holds.
func (h *harness) leftInvocations(ctx context.Context) ([]attemptKey, error) {
	s, err := h.f.JS.Stream(ctx, h.names.TaskStream())
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []attemptKey
	if info.State.Msgs == 0 {
		return nil, nil
	}
	// The stream is sparse after the work queue's deletes: step from one
	// message to the next one the stream holds.
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && uint64(len(out)) < info.State.Msgs; seq++ {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(h.names.TaskAll()))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the task stream at %d: %w", seq, err)
		}
		var inv wire.Invocation
		if err := json.Unmarshal(m.Data, &inv); err != nil {
			return nil, fmt.Errorf("task stream message %d: %w", m.Sequence, err)
		}
		out = append(out, attemptKey{inv.Run, inv.Activation, inv.Node, inv.Attempt})
		seq = m.Sequence
	}
	return out, nil
}
