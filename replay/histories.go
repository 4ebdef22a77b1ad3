package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// ReadHistories returns the histories of the runs in want, read in one
// pass over the input stream from sequence from up to its last message
// when the read began: an ordered consumer (no acknowledgements, nothing
// the dispatchers' durable consumer sees) pulling large batches, so that
// thousands of runs cost one consumer rather than one each. Runs with no
// message get no entry. from 0 reads from the stream's first message.
func ReadHistories(ctx context.Context, js jetstream.JetStream, names subjects.Names, from uint64, want map[string]bool) (map[string][]Message, error) {
	out := make(map[string][]Message, len(want))
	if len(want) == 0 {
		return out, nil
	}
	streamName := names.InputStream()
	stream, err := js.Stream(ctx, streamName)
	if err != nil {
		return nil, fmt.Errorf("replay: bind input stream %q (is it provisioned?): %w", streamName, err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("replay: input stream %q: %w", streamName, err)
	}
	last := info.State.LastSeq
	from = max(from, info.State.FirstSeq)
	if info.State.Msgs == 0 || from > last {
		return out, nil
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{names.InputAll()},
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		MaxResetAttempts:  maxResets,
		InactiveThreshold: 30 * time.Second,
	}
	if len(want) <= 64 {
		// A few runs: the server filters, so that their messages alone
		// cross the wire.
		cfg.FilterSubjects = cfg.FilterSubjects[:0]
		for id := range want {
			cfg.FilterSubjects = append(cfg.FilterSubjects, names.RunInputs(id))
		}
	}
	cons, err := js.OrderedConsumer(ctx, streamName, cfg)
	if err != nil {
		return nil, fmt.Errorf("replay: read stream %q from seq %d: %w", streamName, from, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(4096), jetstream.PullHeartbeat(idleWait/4))
	if err != nil {
		return nil, fmt.Errorf("replay: read stream %q from seq %d: %w", streamName, from, err)
	}
	defer func() {
		it.Stop()
		deleteConsumer(js, streamName, cons)
	}()
	active := time.Now()
	var seen uint64
	for {
		m, idle, err := next(ctx, it)
		if idle {
			if seen >= last {
				return out, nil
			}
			if ci := cons.CachedInfo(); ci != nil && ci.NumPending == 0 && seen > 0 {
				return out, nil
			}
			if time.Since(active) < readWait {
				continue
			}
			return nil, fmt.Errorf("replay: read stream %q: no message for %s at seq %d of %d", streamName, readWait, seen, last)
		}
		if err != nil {
			return nil, fmt.Errorf("replay: read stream %q at seq %d: %w", streamName, seen, err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return nil, errors.New("replay: a message of the input stream has no metadata")
		}
		active, seen = time.Now(), meta.Sequence.Stream
		if seen > last {
			return out, nil
		}
		if id, _, _, err := names.ParseInput(m.Subject()); err == nil && want[id] {
			out[id] = append(out[id], Message{
				Seq: seen, Time: meta.Timestamp,
				Subject: m.Subject(), Header: m.Headers(), Data: m.Data(),
			})
		}
		if seen >= last || meta.NumPending == 0 {
			return out, nil
		}
	}
}
