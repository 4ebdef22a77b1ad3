package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// input is one message of a run's history.
type input struct {
	seq     uint64
	time    time.Time
	subject string
	kind    string
	header  nats.Header
	data    []byte
}

// readInputs reads every run input in the input stream in one pass, by
// run: one consumer for all runs rather than one per run.
func (h *harness) readInputs(ctx context.Context) (map[string][]input, error) {
	stream, err := h.f.JS.Stream(ctx, h.names.InputStream())
	if err != nil {
		return nil, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, err
	}
	last := info.State.LastSeq
	cons, err := h.f.JS.OrderedConsumer(ctx, h.names.InputStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{h.names.InputAll()},
		// Recreating the consumer ignores ctx and retries forever unless
		// bounded.
		MaxResetAttempts: 3,
	})
	if err != nil {
		return nil, err
	}
	// Heartbeats due within one Next call, so that a lost pull request
	// is noticed and the consumer recreated.
	it, err := cons.Messages(jetstream.PullMaxMessages(512), jetstream.PullHeartbeat(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer it.Stop()
	out := map[string][]input{}
	pending, active := uint64(1), time.Now()
	for {
		nctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		m, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		switch {
		case err == nil:
			active = time.Now()
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && pending == 0:
			return out, nil // nothing at all matches the filter
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && time.Since(active) < 30*time.Second:
			continue
		default:
			return nil, fmt.Errorf("read the input stream (%d more to read): %w", pending, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return nil, err
		}
		runID, kind, _, err := h.names.ParseInput(m.Subject())
		if err != nil {
			return nil, fmt.Errorf("input %d on %s: %w", md.Sequence.Stream, m.Subject(), err)
		}
		out[runID] = append(out[runID], input{seq: md.Sequence.Stream, time: md.Timestamp, subject: m.Subject(), kind: kind, header: m.Headers(), data: m.Data()})
		pending = md.NumPending
		if md.Sequence.Stream >= last || pending == 0 {
			return out, nil
		}
	}
}
