package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetflow/jetflow/lifecycle"
	"github.com/jetflow/jetflow/taskconsumer"
	"github.com/jetflow/jetflow/tracing"
)

// Handler runs one task invocation and returns its output, which must
// encode as JSON (nil is null; a json.RawMessage is used as is). A
// returned error fails the attempt; wrap it with NonRetryable or WithCode
// to steer retries. ctx is cancelled with cause ErrStopped when the worker
// stops before the handler returns.
type Handler func(ctx context.Context, inv Invocation) (output any, err error)

// Worker serves registered task versions from NATS JetStream.
type Worker struct {
	js  jetstream.JetStream
	cfg Config
	log *slog.Logger
	// tracer is nil unless Config.TracerProvider is set (trace.go).
	tracer trace.Tracer
	// payloads is the payload bucket, bound on first use (payload.go).
	payloads payloadBucket

	// life is the Start/Stop state; its runs are *runState.
	life lifecycle.Machine
	// regs is appended to by Register only while the worker is stopped
	// (life.IfStopped), and read by the start function.
	regs []*registration
}

type registration struct {
	task, version string
	handler       Handler
	concurrency   int
}

// RegisterOption adjusts one registration.
type RegisterOption func(*registration)

// MaxConcurrency overrides Config.Concurrency for one task version.
func MaxConcurrency(n int) RegisterOption {
	return func(r *registration) { r.concurrency = n }
}

// New returns a worker that serves tasks through js. Register tasks, then
// Start it.
func New(js jetstream.JetStream, cfg Config) (*Worker, error) {
	if js == nil {
		return nil, errors.New("worker: no JetStream context (create one with jetstream.New(nc))")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := &Worker{js: js, cfg: cfg, log: cfg.Logger, life: lifecycle.Machine{Name: "worker"}}
	if cfg.TracerProvider != nil {
		w.tracer = cfg.TracerProvider.Tracer(tracing.ScopeName)
	}
	return w, nil
}

// Register serves task version with h. Register every task before Start;
// a task version can be registered once per worker.
func (w *Worker) Register(task, version string, h Handler, opts ...RegisterOption) error {
	if err := taskconsumer.Check(task, version); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if h == nil {
		return fmt.Errorf("worker: task %q version %q: handler is nil", task, version)
	}
	r := &registration{task: task, version: version, handler: h, concurrency: w.cfg.Concurrency}
	for _, o := range opts {
		o(r)
	}
	if r.concurrency < 1 {
		return fmt.Errorf("worker: task %q version %q: concurrency %d is below 1", task, version, r.concurrency)
	}
	var err error
	if !w.life.IfStopped(func() {
		for _, o := range w.regs {
			if o.task == task && o.version == version {
				err = fmt.Errorf("worker: task %q version %q is already registered", task, version)
				return
			}
		}
		w.regs = append(w.regs, r)
	}) {
		return fmt.Errorf("worker: task %q version %q: Register after Start (stop the worker first)", task, version)
	}
	return err
}

// runState is one Start..Stop cycle, the worker's lifecycle.Run.
type runState struct {
	// pull is cancelled to stop sending pull requests (graceful stop);
	// fetch to abandon the pull requests in flight and work to cancel the
	// handlers (hard stop).
	pull      context.Context
	stopPull  context.CancelFunc
	fetch     context.Context
	stopFetch context.CancelFunc
	work      context.Context
	stopWork  context.CancelCauseFunc
	loops     sync.WaitGroup // the pull loops
	handlers  sync.WaitGroup // the handler goroutines
	done      chan struct{}  // closed once every loop and handler returned
}

// hardStop abandons the pull requests in flight and cancels the handlers.
func (rs *runState) hardStop(cause error) {
	rs.stopPull()
	rs.stopFetch()
	rs.stopWork(cause)
}

func (rs *runState) stopping() bool { return rs.pull.Err() != nil }

// Drain stops sending pull requests: the handlers in flight finish.
func (rs *runState) Drain() { rs.stopPull() }

// Halt cancels the handlers with cause ErrStopped; their invocations are
// handed back.
func (rs *runState) Halt() { rs.hardStop(ErrStopped) }

// Done is closed once every pull loop and handler returned.
func (rs *runState) Done() <-chan struct{} { return rs.done }

// Ending: the Start context was cancelled, which stops the run.
func (rs *runState) Ending() bool { return rs.stopping() }

// Start binds the consumer of every registered task version and serves
// them in the background until Stop. It returns start-up errors; a
// consumer that does not exist yet (no workflow using the task is
// deployed) is not one: the worker logs it and keeps trying to bind.
// Cancelling ctx stops the worker as a Stop whose deadline has passed
// would, with ctx's cause as the handlers' cancellation cause. Start on a
// running worker does nothing; after Stop it starts the worker again
// (package lifecycle has the whole contract).
func (w *Worker) Start(ctx context.Context) error { return w.life.Start(ctx, w.start) }

func (w *Worker) start(ctx context.Context) (lifecycle.Run, error) {
	regs := slices.Clone(w.regs)
	if len(regs) == 0 {
		return nil, errors.New("worker: no task registered (call Register before Start)")
	}
	bound := make([]jetstream.Consumer, len(regs))
	for i, r := range regs {
		c, err := w.bind(ctx, r)
		switch {
		case err == nil:
			bound[i] = c
		case missing(err):
			w.log.WarnContext(ctx, "task consumer not found; waiting for a deployment to create it",
				"task", r.task, "version", r.version, "consumer", w.cfg.Names.TaskConsumer(r.task, r.version), "error", err)
		default:
			return nil, fmt.Errorf("worker: start: %w", err)
		}
	}

	rs := &runState{done: make(chan struct{})}
	// The contexts keep ctx's values but not its cancellation, which
	// triggers an orderly hard stop instead.
	base := context.WithoutCancel(ctx)
	rs.work, rs.stopWork = context.WithCancelCause(base)
	rs.fetch, rs.stopFetch = context.WithCancel(base)
	rs.pull, rs.stopPull = context.WithCancel(base)
	unwatch := context.AfterFunc(ctx, func() { rs.hardStop(context.Cause(ctx)) })
	for i, r := range regs {
		// Bound here, so that the AckWait is read before Start returns.
		p := newPace(w.cfg.ConsumerRefresh, w.cfg.PublishTimeout, w.cfg.Clock, w.log.With("task", r.task, "version", r.version))
		if bound[i] != nil {
			p.bind(bound[i])
		}
		rs.loops.Add(1)
		go w.serve(rs, r, bound[i], p)
	}
	go func() {
		rs.loops.Wait()
		rs.handlers.Wait()
		unwatch()
		rs.stopPull()
		rs.stopFetch()
		rs.stopWork(ErrStopped)
		close(rs.done)
	}()
	return rs, nil
}

// Stop drains the worker: it stops fetching invocations, lets the
// handlers in flight finish and report their results, and returns once
// they have. If ctx ends first, the remaining handlers' contexts are
// cancelled with cause ErrStopped, their invocations are handed back for
// redelivery, and Stop returns an error after they have returned (a
// handler that ignores its context keeps Stop waiting). Stop is safe to
// call twice, concurrently, or before Start.
func (w *Worker) Stop(ctx context.Context) error { return w.life.Stop(ctx) }

// bind returns the durable consumer of r, creating it if the config says
// so and it is missing. It never changes an existing consumer: its
// policy belongs to the deployment.
func (w *Worker) bind(ctx context.Context, r *registration) (jetstream.Consumer, error) {
	names := w.cfg.Names
	c, err := w.js.Consumer(ctx, names.TaskStream(), names.TaskConsumer(r.task, r.version))
	if err == nil || !w.cfg.CreateConsumers || !errors.Is(err, jetstream.ErrConsumerNotFound) {
		if err != nil {
			err = fmt.Errorf("binding consumer %q of stream %q: %w", names.TaskConsumer(r.task, r.version), names.TaskStream(), err)
		}
		return c, err
	}
	c, err = w.js.CreateConsumer(ctx, names.TaskStream(), taskconsumer.Config(names, r.task, r.version, w.cfg.ConsumerPolicy))
	if errors.Is(err, jetstream.ErrConsumerExists) {
		// Created meanwhile with another policy; use it as it is.
		c, err = w.js.Consumer(ctx, names.TaskStream(), names.TaskConsumer(r.task, r.version))
	}
	if err != nil {
		err = fmt.Errorf("creating consumer %q of stream %q: %w", names.TaskConsumer(r.task, r.version), names.TaskStream(), err)
	}
	return c, err
}

// missing reports an error that a deployment will cure by creating the
// task stream or consumer.
func missing(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
}
