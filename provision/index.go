package provision

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// IndexStreamConfig is the run index (package runindex keeps it,
// client.ListRuns reads it): one message per subject, the latest, so a
// run's entry replaces itself while its subject stays, and the stream's
// order is the order runs last changed in. Direct gets answer the
// listings from any replica; only dispatchers write it.
func IndexStreamConfig(names subjects.Names, opts ProvisionOptions) jetstream.StreamConfig {
	opts = opts.withDefaults()
	return jetstream.StreamConfig{
		Name:              names.IndexStream(),
		Description:       "jetflow run index: one small entry per run and search attribute",
		Subjects:          []string{names.IndexAll()},
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxMsgsPerSubject: 1,
		AllowDirect:       true,
		// The head of a deleted run expires (runindex).
		AllowMsgTTL: true,
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
		Duplicates:  time.Second,
	}
}

// IndexerConsumerConfig is the durable consumer of the run bucket's
// stream that every dispatcher shares to keep the run index: every record
// write, tombstone and deletion, explicitly acknowledged once the index
// holds it. Created on a bucket that already holds runs, it starts with
// the latest record of each (DeliverLastPerSubject): the backfill of an
// existing deployment.
func IndexerConsumerConfig(names subjects.Names, ackWait time.Duration, maxAckPending int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       names.IndexerConsumer(),
		Description:   "jetflow dispatchers: keep the run index",
		FilterSubject: names.KVKeys(names.RunBucket()),
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    -1,
		MaxAckPending: maxAckPending,
	}
}

// MarkIndexShape leaves the index's shape mark: its entries are of the
// shape this code writes (subjects.IndexShape). Provision leaves it on
// the index stream it creates, so that listings read a new deployment's
// index from the start instead of until its first indexer starts.
func MarkIndexShape(ctx context.Context, js jetstream.JetStream, n subjects.Names) error {
	body, err := json.Marshal(wire.IndexShapeMark{Shape: subjects.IndexShape})
	if err != nil {
		return err
	}
	if _, err := js.Publish(ctx, n.IndexShapeMark(), body); err != nil {
		return fmt.Errorf("leave the shape mark %q: %w", n.IndexShapeMark(), err)
	}
	return nil
}
