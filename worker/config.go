package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/subjects"
)

// Config configures a Worker. The zero value is usable.
type Config struct {
	// Names builds the subjects, stream and consumer names of the
	// deployment the worker serves. Default: subjects.Must("") (prefix
	// "jetflow").
	Names subjects.Names

	// Concurrency is how many invocations of one registered task version
	// run at once in this worker; the worker fetches no more messages
	// than it has free slots, so an invocation never waits in the worker
	// while another worker could run it. Default: 16.
	Concurrency int

	// HeartbeatInterval is how often a running invocation is reported as
	// in progress, which resets the consumer's AckWait so that a handler
	// slower than AckWait is not redelivered. It is capped at half the
	// consumer's AckWait. Default: a third of the consumer's AckWait, at
	// most ConsumerRefresh.
	HeartbeatInterval time.Duration

	// ConsumerRefresh is how often a worker re-reads its task consumers'
	// AckWait (one request per task version, while it pulls or runs
	// invocations), so that a deploy that changes a task's startToClose
	// re-paces the heartbeats of invocations already running and of the
	// next ones within this time. By default heartbeats come at least
	// this often too, so lowering startToClose to more than twice this
	// redelivers nothing; to less, invocations started before the worker
	// noticed may be redelivered once. Default: 5s.
	ConsumerRefresh time.Duration

	// PollWait is how long one pull request waits on the server for
	// invocations. A graceful Stop waits for the pull request in flight to
	// expire, so this also bounds how long stopping an idle worker takes.
	// Default: 2s.
	PollWait time.Duration

	// PublishTimeout bounds one attempt to publish a result (and the
	// confirmed acknowledgement after it). Failed publishes are retried
	// with backoff while the worker runs. Default: 5s.
	PublishTimeout time.Duration

	// PayloadThreshold is the largest result body published inline; a
	// larger one is put in the payload bucket and travels by reference
	// (docs/PROTOCOL.md 2.4). Invocations that came by reference are read
	// from the bucket whatever this is. Default: payload.DefaultThreshold
	// (512 KiB).
	PayloadThreshold int

	// CreateConsumers makes the worker create a missing task consumer with
	// ConsumerPolicy instead of waiting for a deployment to create it.
	// Meant for tests and development. Default: false.
	CreateConsumers bool

	// ConsumerPolicy is the policy of consumers the worker creates when
	// CreateConsumers is set. Default: the zero TaskPolicy's defaults.
	ConsumerPolicy TaskPolicy

	// Logger receives the worker's logs. Default: slog.Default().
	Logger *slog.Logger

	// TracerProvider, when set, gives every task attempt a span
	// (tracing.SpanAttempt), the child of the dispatcher step that
	// invoked it through the invocation's traceparent header; the
	// handler's context holds it, and the result carries it back. Pass
	// otel.GetTracerProvider() to use the global one. Default: nil, no
	// tracing.
	TracerProvider trace.TracerProvider

	// Clock paces the worker's own waits: heartbeats, re-reads of the
	// consumers' AckWait, pauses before retrying a failed bind, fetch or
	// result publish. An invocation's deadline is a wall-clock time set
	// by the dispatchers, and is checked, like the handler context's
	// deadline, against the system clock. Default: clock.Real{}.
	Clock clock.Clock
}

// Defaults of Config.
const (
	DefaultConcurrency     = 16
	DefaultPollWait        = 2 * time.Second
	DefaultPublishTimeout  = 5 * time.Second
	DefaultConsumerRefresh = 5 * time.Second
)

// WithDefaults returns a copy of c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Names.Prefix() == "" {
		c.Names = subjects.Must("")
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.PollWait == 0 {
		c.PollWait = DefaultPollWait
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.ConsumerRefresh == 0 {
		c.ConsumerRefresh = DefaultConsumerRefresh
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	c.ConsumerPolicy = c.ConsumerPolicy.WithDefaults()
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("Concurrency %d is negative", c.Concurrency)) //nolint:staticcheck // ST1005: it begins with the field's name
	}
	if c.HeartbeatInterval < 0 {
		errs = append(errs, fmt.Errorf("HeartbeatInterval %v is negative", c.HeartbeatInterval))
	}
	// The server answers an expired pull request; below ~10ms the request
	// expires before it can deliver anything.
	if c.PollWait < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("PollWait %v is shorter than 10ms", c.PollWait))
	}
	if c.PublishTimeout < 0 {
		errs = append(errs, fmt.Errorf("PublishTimeout %v is negative", c.PublishTimeout))
	}
	// Each refresh is a JetStream API request.
	if c.ConsumerRefresh < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("ConsumerRefresh %v is shorter than 10ms", c.ConsumerRefresh))
	}
	if err := c.ConsumerPolicy.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("ConsumerPolicy: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("worker: invalid config: %w", err)
	}
	return nil
}
