// Package taskconsumer holds the durable consumer of one task version: its
// delivery policy and the JetStream configuration made from it. It is a
// leaf (names only), so that provisioning, which creates the consumer on
// deploy, and the worker SDK, which creates it itself in development, share
// one definition.
package taskconsumer

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// Policy is the delivery policy of one task version's durable consumer.
type Policy struct {
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

	// RatePerSecond caps how many invocations of the task version the
	// dispatchers release to workers per second, RateBurst at once after
	// a quiet spell (docs/POLICY.md#rate-limits). The consumer carries
	// them in its metadata, where every dispatcher reads them (Rate).
	// Default: 0, no limit.
	RatePerSecond float64
	RateBurst     int
}

// Metadata keys of a task consumer that carry its rate limit.
const (
	MetaRatePerSecond = "jetflow_rate_per_second"
	MetaRateBurst     = "jetflow_rate_burst"
)

// Rate reads the rate limit a task consumer's configuration carries: 0
// when it has none or the metadata is not a valid rate.
func Rate(cfg jetstream.ConsumerConfig) (perSecond float64, burst int) {
	r, err := strconv.ParseFloat(cfg.Metadata[MetaRatePerSecond], 64)
	if err != nil || r <= 0 || math.IsInf(r, 0) || math.IsNaN(r) {
		return 0, 0
	}
	b, err := strconv.Atoi(cfg.Metadata[MetaRateBurst])
	if err != nil || b < 1 {
		b = 1
	}
	return r, b
}

// Defaults of Policy.
const (
	DefaultStartToClose  = time.Minute
	DefaultMaxAckPending = 1000
	DefaultMaxDeliver    = 5
)

// WithDefaults returns a copy of p with every unset field at its default.
func (p Policy) WithDefaults() Policy {
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

// Validate says which field is out of range.
func (p Policy) Validate() error {
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
	if p.RatePerSecond < 0 || math.IsInf(p.RatePerSecond, 0) || math.IsNaN(p.RatePerSecond) {
		errs = append(errs, fmt.Errorf("RatePerSecond %v is not a rate", p.RatePerSecond))
	}
	if p.RateBurst < 0 {
		errs = append(errs, fmt.Errorf("RateBurst %d is negative", p.RateBurst))
	}
	if p.Replicas < 0 {
		errs = append(errs, fmt.Errorf("Replicas %d is negative", p.Replicas)) //nolint:staticcheck // ST1005: it begins with the field's name
	}
	return errors.Join(errs...)
}

// Config is the consumer of task version (task, version) under names with
// policy p, which must already have its defaults.
func Config(names subjects.Names, task, version string, p Policy) jetstream.ConsumerConfig {
	var meta map[string]string
	if p.RatePerSecond > 0 {
		meta = map[string]string{
			MetaRatePerSecond: strconv.FormatFloat(p.RatePerSecond, 'g', -1, 64),
			MetaRateBurst:     strconv.Itoa(max(1, p.RateBurst)),
		}
	}
	return jetstream.ConsumerConfig{
		Metadata:      meta,
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

// Check refuses a task name or version that cannot be a subject token.
func Check(task, version string) error {
	if err := subjects.CheckTask(task); err != nil {
		return err
	}
	return subjects.CheckVersion(version)
}
