package provision

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
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

// TaskPolicy is the delivery policy of one task version's durable
// consumer. (worker.TaskPolicy has the same fields, for the consumers a
// worker creates itself in development: convert one into the other.)
type TaskPolicy struct {
	// StartToClose is how long one attempt may go without an
	// acknowledgement or heartbeat before NATS redelivers it to another
	// worker (the consumer's AckWait). Workers heartbeat while a handler
	// runs, so this bounds how long a crashed worker holds an invocation,
	// not how long a handler may run. A deployment's policy sets it per
	// task version (docs/POLICY.md). Default: 1m.
	StartToClose time.Duration

	// MaxAckPending caps the invocations delivered and not yet
	// acknowledged across every worker of the task version, which bounds
	// the fleet-wide concurrency of the task. Default: 1000.
	MaxAckPending int

	// MaxDeliver caps deliveries of one invocation (first delivery,
	// redeliveries after a worker crash, naks on shutdown); -1 means no
	// limit. Retries after a task error are new invocations and do not
	// count. Default: 5.
	MaxDeliver int

	// Replicas of the consumer; 0 inherits the stream's. Default: 0.
	Replicas int
}

// Defaults of TaskPolicy.
const (
	DefaultStartToClose  = time.Minute
	DefaultMaxAckPending = 1000
	DefaultMaxDeliver    = 5
)

// WithDefaults returns a copy of p with every unset field at its default.
func (p TaskPolicy) WithDefaults() TaskPolicy {
	if p.StartToClose == 0 {
		p.StartToClose = DefaultStartToClose
	}
	if p.MaxAckPending == 0 {
		p.MaxAckPending = DefaultMaxAckPending
	}
	if p.MaxDeliver == 0 {
		p.MaxDeliver = DefaultMaxDeliver
	}
	return p
}

func (p TaskPolicy) validate() error {
	var errs []error
	if p.StartToClose < 0 {
		errs = append(errs, fmt.Errorf("StartToClose %v is negative", p.StartToClose))
	}
	if p.MaxAckPending < 0 {
		errs = append(errs, fmt.Errorf("MaxAckPending %d is negative (the task's concurrency must be bounded)", p.MaxAckPending))
	}
	if p.MaxDeliver < -1 {
		errs = append(errs, fmt.Errorf("MaxDeliver %d is below -1", p.MaxDeliver))
	}
	if p.Replicas < 0 {
		errs = append(errs, fmt.Errorf("Replicas %d is negative", p.Replicas)) //nolint:staticcheck // ST1005: it begins with the field's name
	}
	return errors.Join(errs...)
}

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
	if err := p.validate(); err != nil {
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
	return jetstream.ConsumerConfig{
		Durable:       names.TaskConsumer(task, version),
		Description:   fmt.Sprintf("jetflow workers of task %s version %s", task, version),
		FilterSubject: names.Task(task, version),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       p.StartToClose,
		MaxAckPending: p.MaxAckPending,
		MaxDeliver:    p.MaxDeliver,
		Replicas:      p.Replicas,
	}
}

func checkTaskVersion(task, version string) error {
	if err := subjects.CheckTask(task); err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	if err := subjects.CheckVersion(version); err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	return nil
}
