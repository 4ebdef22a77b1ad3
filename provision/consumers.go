package provision

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/taskconsumer"
)

// Every long-lived pull of a consumer jetflow made lasts PullExpiry, and
// the server sends a heartbeat every PullHeartbeat while it waits; two
// heartbeats missed and nats.go pulls again. nats.go's defaults (30 s and
// 15 s) left a consumer idle for 30 s whenever the server dropped a
// waiting pull without a word: seen under a flood of strays terminated in
// batches (the consumer reported no waiting pull and 1,224 inputs pending
// while nats.go counted its pull as outstanding), and by an event trigger
// right after a restart.
const (
	PullExpiry    = 5 * time.Second
	PullHeartbeat = time.Second
)

// DispatcherConsumerConfig is the durable consumer every dispatcher shares
// on the input stream: every run input, explicitly acknowledged, never
// given up on (a dispatcher that cannot step an input hands it back), at
// most maxAckPending delivered and not acknowledged across dispatchers,
// redelivered after ackWait. Each dispatcher applies it when it starts
// (CreateOrUpdateConsumer), so the last one started sets ackWait and
// maxAckPending.
func DispatcherConsumerConfig(names subjects.Names, ackWait time.Duration, maxAckPending int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       names.DispatcherConsumer(),
		Description:   "jetflow dispatchers: every run input",
		FilterSubject: names.InputAll(),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    -1,
		MaxAckPending: maxAckPending,
	}
}

// ReaperConsumerConfig is the durable consumer every dispatcher shares on
// the timer stream for batched removal: each bucket's fire goes to one
// dispatcher, which removes the bucket's due runs and acknowledges;
// redelivered after ackWait if it dies (the dispatcher reports progress
// while it works). A few buckets at a time across dispatchers.
func ReaperConsumerConfig(names subjects.Names, ackWait time.Duration) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       names.ReaperConsumer(),
		Description:   "jetflow dispatchers: buckets of settled runs due for removal",
		FilterSubject: names.ReapFires(),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    -1,
		MaxAckPending: ReaperMaxAckPending,
	}
}

// ReaperMaxAckPending is how many buckets the dispatchers reap at once.
const ReaperMaxAckPending = 4

// TaskPolicy is the delivery policy of one task version's durable
// consumer (taskconsumer.Policy, which the worker SDK shares).
type TaskPolicy = taskconsumer.Policy

// Defaults of TaskPolicy.
const (
	DefaultStartToClose  = taskconsumer.DefaultStartToClose
	DefaultMaxAckPending = taskconsumer.DefaultMaxAckPending
	DefaultMaxDeliver    = taskconsumer.DefaultMaxDeliver
)

// EnsureTaskConsumer creates or updates the durable consumer of one task
// version on the task stream, with policy p. It is the one place that
// defines that consumer: the deploy path calls it for every task a
// workflow uses, and workers (in any language) only bind to it. The task
// stream must exist.
func EnsureTaskConsumer(ctx context.Context, js jetstream.JetStream, names subjects.Names, task, version string, p TaskPolicy) (jetstream.Consumer, error) {
	if err := checkTaskVersion(task, version); err != nil {
		return nil, err
	}
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("provision: task %q version %q: invalid policy: %w", task, version, err)
	}
	// An update that names no PauseUntil keeps an operator's pause
	// (PauseTask): TestPauseTask checks the server does.
	c, err := js.CreateOrUpdateConsumer(ctx, names.TaskStream(), TaskConsumerConfig(names, task, version, p))
	if err != nil {
		return nil, fmt.Errorf("provision: creating consumer %q on stream %q: %w", names.TaskConsumer(task, version), names.TaskStream(), err)
	}
	return c, nil
}

// TaskConsumerConfig is the consumer configuration EnsureTaskConsumer
// applies; p must already have its defaults.
func TaskConsumerConfig(names subjects.Names, task, version string, p TaskPolicy) jetstream.ConsumerConfig {
	return taskconsumer.Config(names, task, version, p)
}

func checkTaskVersion(task, version string) error {
	if err := taskconsumer.Check(task, version); err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	return nil
}
