package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// TaskPolicy is the delivery policy of the task consumers a worker
// creates itself (Config.CreateConsumers, for development). A deployment
// creates them with provision.EnsureTaskConsumer, whose
// provision.TaskPolicy has the same fields and defaults: the worker keeps
// its own copy because the SDK depends on nothing of jetflow but subjects,
// wire and the leaf packages clock and lifecycle.
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

// taskConsumerConfig is the task consumer a worker creates with
// CreateConsumers: provision.TaskConsumerConfig, which package provision's
// tests hold it to; p must already have its defaults.
func taskConsumerConfig(names subjects.Names, task, version string, p TaskPolicy) jetstream.ConsumerConfig {
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
		return fmt.Errorf("worker: %w", err)
	}
	if err := subjects.CheckVersion(version); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}
