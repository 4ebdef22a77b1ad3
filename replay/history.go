package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// Message is one message of a run's history.
type Message struct {
	// Seq is the input stream's sequence; Time its timestamp, the "now"
	// the dispatcher applied the message with.
	Seq     uint64
	Time    time.Time
	Subject string
	Header  nats.Header
	// Data is the body: for a message that travelled by reference, the
	// object it names (resolvePayloads).
	Data []byte
	// PayloadErr is why the object a message by reference names could not
	// be read (it wraps payload.ErrBadRef): the dispatcher refused it.
	PayloadErr error
}

// readWait bounds the wait for the next history message: the history is
// already stored, so a long wait means the server is gone.
const readWait = 30 * time.Second

// ReadHistory returns the messages on names.RunInputs(runID) in stream
// order (nil when there are none). It reads them with an ordered
// consumer, up to the run's last message when the read began.
func ReadHistory(ctx context.Context, js jetstream.JetStream, names subjects.Names, runID string) ([]Message, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return nil, err
	}
	streamName, filter := names.InputStream(), names.RunInputs(runID)
	stream, err := js.Stream(ctx, streamName)
	if err != nil {
		return nil, fmt.Errorf("replay: bind input stream %q (is it provisioned?): %w", streamName, err)
	}
	last, err := stream.GetLastMsgForSubject(ctx, filter)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replay: last message on %s in stream %q: %w", filter, streamName, err)
	}
	cons, err := js.OrderedConsumer(ctx, streamName, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		// Recreating the consumer ignores ctx and by default retries
		// forever; a bounded number of tries returns the error instead.
		MaxResetAttempts: maxResets,
		// A consumer left behind (its delete below failed) goes soon:
		// nats-server allows 1000 consumers per stream by default.
		InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("replay: read %s from stream %q: %w", filter, streamName, err)
	}
	// nats.go notices missing heartbeats only within one Next call, so
	// they must be due well within idleWait: in a cluster the first pull
	// to a fresh consumer can be lost (its interest has not reached the
	// client's server yet), and only a missed heartbeat makes the ordered
	// consumer pull again.
	it, err := cons.Messages(jetstream.PullMaxMessages(256), jetstream.PullHeartbeat(idleWait/4))
	if err != nil {
		return nil, fmt.Errorf("replay: read %s from stream %q: %w", filter, streamName, err)
	}
	defer func() {
		it.Stop()
		deleteConsumer(js, streamName, cons)
	}()
	if ci := cons.CachedInfo(); ci != nil && ci.NumPending == 0 {
		return nil, nil // removed since we looked
	}
	var out []Message
	var seen uint64
	active := time.Now()
	for {
		m, idle, err := next(ctx, it)
		if idle {
			// Retention may have removed what was left since we looked.
			last, err := stream.GetLastMsgForSubject(ctx, filter)
			if errors.Is(err, jetstream.ErrMsgNotFound) || err == nil && last.Sequence <= seen {
				return out, resolvePayloads(ctx, js, names, out)
			}
			if time.Since(active) < readWait {
				continue
			}
			return nil, fmt.Errorf("replay: read %s from stream %q: no message for %s after %d", filter, streamName, readWait, len(out))
		}
		if err != nil {
			return nil, fmt.Errorf("replay: read %s from stream %q after %d messages: %w", filter, streamName, len(out), err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return nil, fmt.Errorf("replay: message on %s without metadata: %w", m.Subject(), err)
		}
		active, seen = time.Now(), meta.Sequence.Stream
		out = append(out, Message{
			Seq: meta.Sequence.Stream, Time: meta.Timestamp,
			Subject: m.Subject(), Header: m.Headers(), Data: m.Data(),
		})
		if seen >= last.Sequence || meta.NumPending == 0 {
			return out, resolvePayloads(ctx, js, names, out)
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
