package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/subjects"
)

// fewRuns is the most runs ReadHistories reads one by one rather than in
// one pass.
const fewRuns = 64

// ReadHistories returns the histories of the runs in want, read in one
// pass over the input stream from sequence from up to its last message
// when the read began: an ordered consumer (no acknowledgements, nothing
// the dispatchers' durable consumer sees) pulling large batches, so that
// thousands of runs cost one consumer rather than one each. Runs with no
// message get no entry. from 0 reads from the stream's first message.
// Up to fewRuns runs are read one by one, each by its own subjects.
func ReadHistories(ctx context.Context, js jetstream.JetStream, names subjects.Names, from uint64, want map[string]bool) (map[string][]Message, error) {
	out := make(map[string][]Message, len(want))
	if len(want) == 0 {
		return out, nil
	}
	streamName := names.InputStream()
	stream, err := kvstore.BindLeader(ctx, js, streamName)
	if err != nil {
		return nil, fmt.Errorf("replay: bind input stream %q (is it provisioned?): %w", streamName, err)
	}
	info := stream.CachedInfo()
	last := info.State.LastSeq
	from = max(from, info.State.FirstSeq)
	if info.State.Msgs == 0 || from > last {
		return out, nil
	}
	if len(want) <= fewRuns {
		// A few runs: each one's history by its subjects (readHistory),
		// which costs the same however many other messages the stream
		// holds, where a pass does not.
		for id := range want {
			msgs, err := readHistory(ctx, js, names, id, nil)
			if err != nil {
				return nil, err
			}
			msgs = slices.DeleteFunc(msgs, func(m Message) bool { return m.Seq < from || m.Seq > last })
			if len(msgs) > 0 {
				out[id] = msgs
			}
		}
		return out, nil
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{names.InputAll()},
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		MaxResetAttempts:  maxResets,
		InactiveThreshold: 30 * time.Second,
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

// deleteConsumer removes the ordered consumer a read used. Stopping it
// does not: the server would keep it for its inactive threshold, and a
// burst of reads (a replay of every run) would reach the server's limit
// of consumers per stream, after which no consumer of the input stream
// can be created at all.
func deleteConsumer(js jetstream.JetStream, stream string, cons jetstream.Consumer) {
	ci := cons.CachedInfo()
	if ci == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = js.DeleteConsumer(ctx, stream, ci.Name)
}

// maxResets bounds the attempts to recreate the ordered consumer after
// a failure (about 40 s with nats.go's backoff and request timeouts).
const maxResets = 3

// idleWait is how long one wait for the next message lasts before the
// reader checks whether anything is left to read.
const idleWait = 2 * time.Second

// next returns the next message, or idle when none came within idleWait.
func next(ctx context.Context, it jetstream.MessagesContext) (jetstream.Msg, bool, error) {
	nctx, cancel := context.WithTimeout(ctx, idleWait)
	defer cancel()
	m, err := it.Next(jetstream.NextContext(nctx))
	if err != nil && ctx.Err() == nil && nctx.Err() != nil {
		return nil, true, nil
	}
	return m, false, err
}
