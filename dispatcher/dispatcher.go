package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetflow/jetflow/bulk"
	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/lifecycle"
	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/startctl"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/tracing"
)

// Dispatcher consumes run inputs and drives runs. Create it with New, run
// it with Start and stop it with Stop.
type Dispatcher struct {
	cfg      Config
	settings step.Settings
	js       jetstream.JetStream
	pub      publisher
	store    RunStore
	// payloads is the payload bucket (nil when it is not provisioned:
	// every reference is then refused).
	payloads *payload.Store
	loader   loader
	// ctl decides starts' idempotency, singleton and debounce keys.
	ctl   *startctl.Store
	log   *slog.Logger
	m     *metrics
	cache *recordCache
	// unsure: steps whose save timed out, for their counts (unsure.go).
	unsure unsureSaves
	// limit: how many steps run at once now (steplimit.go).
	limit *stepLimit
	// tracer is nil when tracing is off (Config.TracerProvider).
	tracer trace.Tracer

	// life is the Start/Stop state; its runs are *cycle. The start
	// function sets the fields below before any step reads them.
	life   lifecycle.Machine
	timers jetstream.Stream // the timer stream, purged of settled runs' schedules
	inputs jetstream.Stream // the input stream, asked for the starts of unknown runs
	// partitions is the input stream's partition count, 0 when
	// unpartitioned (partitions.go).
	partitions int
	parts      *partitionSet // this run's share of the partitions, nil when unpartitioned
	adm        *admitter     // admission of queued invocations (queue.go)
	ret        retention     // what removal by retention can do here
	reap       reaper        // batched removal (reaper.go)
	pg         pages         // sequence pages (pages.go)

	early      earlyInputs
	unknownLog throttle
	cancel     context.CancelCauseFunc
	ctx        context.Context

	// Per-run queues: a run's queue is in a lane or in one step
	// goroutine's hands, never both, so that two messages of one run never
	// run at once here. Long-lived step goroutines take turns over the
	// lanes, one message a turn (fresh goroutines per run spent a tenth of
	// the dispatcher's CPU growing their stacks). wg counts the queues;
	// steps the step goroutines. See lanes.go.
	qmu       sync.Mutex
	closed    bool // set when Stop gave up on the consumer's close
	handBack  bool // set once Stop stopped pulling: inputs not yet stepped go back to the stream
	queues    map[string]*runQueue
	ready     []*runQueue // runs this process knows, starts, timers, signed results
	stray     []*runQueue // inputs of runs this process does not know
	judged    []*runQueue // stray runs a batch judged to step alone (strays.go)
	queued    int         // bytes of the messages in the queues
	readyCond *sync.Cond  // on qmu: ready grew, or stepsDone was set
	bothCond  *sync.Cond  // on qmu: a lane grew, or stepsDone was set
	strayCond *sync.Cond  // on qmu: stray grew, or stepsDone was set
	stepsDone bool
	intake    intake        // what each lane holds in hand, and its bound (intake.go)
	keepQuit  chan struct{} // ends keepInHand
	wg        sync.WaitGroup
	steps     sync.WaitGroup

	// crashed makes a test's simulated crash stick until Stop.
	crashed atomic.Bool

	// jobs carries out bulk jobs beside the steps (package bulk).
	jobs *bulk.Runner
	// index keeps the run index beside the steps (package runindex);
	// indexOn says it runs (runIndex), under indexMu.
	index   *runindex.Indexer
	indexMu sync.Mutex
	indexOn bool
	// sched starts the runs of schedule fires (package schedule).
	sched *schedule.Runner
}

type runQueue struct {
	key   string
	msgs  []heldMsg
	stray bool // the queue is in the stray lane
}

// errStopping is the cause given to in-flight steps when Stop runs out of
// time: their inputs are handed back for redelivery.
var errStopping = errors.New("dispatcher stopping")

// New returns a dispatcher that reads and writes runs in store (nil means
// the run bucket named by cfg.Names, bound at Start) and loads workflow
// definitions from reg. It validates cfg after applying defaults.
func New(js jetstream.JetStream, store RunStore, reg registry.Reader, cfg Config) (*Dispatcher, error) {
	c := cfg.WithDefaults()
	l, err := registry.NewLoader(reg, c.RunOptions, c.DefinitionCacheSize)
	if err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	if cfg.Jobs.Search == nil {
		// Bulk jobs with a --where read each run's attributes as the
		// index does.
		cfg.Jobs.Search = runindex.RegistrySearch(reg, c.Jobs.WithDefaults().OpTimeout)
	}
	return newDispatcher(js, store, l, cfg)
}

// newDispatcher is New with the reducer seam exposed (tests pass a fake).
func newDispatcher(js jetstream.JetStream, store RunStore, l loader, cfg Config) (*Dispatcher, error) {
	if js == nil {
		return nil, errors.New("dispatcher: nil JetStream context")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("dispatcher: register metrics: %w", err)
	}
	d := &Dispatcher{
		cfg: cfg, settings: cfg.Settings(), js: js, pub: publisher{
			js: js, nc: js.Conn(), names: cfg.Names, now: cfg.Clock.Now,
			limit: &limiter{js: js, names: cfg.Names, now: cfg.Clock.Now, log: cfg.Logger},
		}, store: store, loader: l, ctl: startctl.New(js, cfg.Names),
		log: cfg.Logger, m: m, cache: newRecordCache(cfg.CacheSize),
		queues: make(map[string]*runQueue), life: lifecycle.Machine{Name: "dispatcher"},
	}
	if cfg.hooks != nil {
		d.pub.fail = cfg.hooks.publish
	}
	if cfg.TracerProvider != nil {
		d.tracer = cfg.TracerProvider.Tracer(tracing.ScopeName)
		d.pub.traced = true
	}
	d.readyCond = sync.NewCond(&d.qmu)
	d.bothCond = sync.NewCond(&d.qmu)
	d.strayCond = sync.NewCond(&d.qmu)
	d.intake.init(&d.qmu, d.cfg)
	return d, nil
}

// Start binds the input and timer streams, the run bucket and the shared
// durable consumer (or, in a partitioned deployment, joins the
// dispatchers sharing the partitions), then handles inputs in the background until Stop
// (Start's context does not end them). It returns start-up errors;
// starting a started dispatcher does nothing, and a Start during a Stop
// waits for it, then starts the dispatcher again (package lifecycle has
// the whole contract).
func (d *Dispatcher) Start(ctx context.Context) error { return d.life.Start(ctx, d.start) }

func (d *Dispatcher) start(ctx context.Context) (lifecycle.Run, error) {
	names := d.cfg.Names
	inputs, err := d.js.Stream(ctx, names.InputStream())
	if err != nil {
		return nil, fmt.Errorf("dispatcher: bind input stream %q (is it provisioned?): %w", names.InputStream(), err)
	}
	// A task stream provisioned before invocations expired takes no
	// per-message TTL, and would refuse one.
	if ts, err := d.js.Stream(ctx, names.TaskStream()); err == nil {
		d.pub.taskTTL = ts.CachedInfo().Config.AllowMsgTTL
	} else {
		d.log.Warn("dispatcher: task stream unreadable; invocations will not expire", slog.Any("error", err))
	}
	timers, err := d.js.Stream(ctx, names.TimerStream())
	if err != nil {
		return nil, fmt.Errorf("dispatcher: bind timer stream %q (is it provisioned?): %w", names.TimerStream(), err)
	}
	if d.cfg.Tokens == nil {
		// Kept for the next Start: the secret does not change under us.
		if d.cfg.Tokens, err = token.Load(ctx, d.js, names); err != nil {
			return nil, fmt.Errorf("dispatcher: %w", err)
		}
	}
	d.settings = d.cfg.Settings()
	if d.payloads == nil {
		ps, err := payload.Open(ctx, d.js, payload.Config{Names: names, Threshold: d.cfg.PayloadThreshold, MaxBytes: d.cfg.MaxPayloadBytes})
		switch {
		case errors.Is(err, payload.ErrNoBucket):
			d.log.Warn("dispatcher: no payload bucket: payloads by reference are refused and large messages fail (provision again)", slog.Any("error", err))
		case err != nil:
			return nil, fmt.Errorf("dispatcher: %w", err)
		}
		d.payloads, d.pub.payloads = ps, ps
	}
	if d.store == nil {
		rs, err := kvstore.OpenRunStore(ctx, d.js, names)
		if err != nil {
			return nil, fmt.Errorf("dispatcher: %w", err)
		}
		d.store = rs
	}
	if rs, ok := d.store.(*kvstore.RunStore); ok && d.payloads != nil {
		rs.WithPayloads(d.payloads)
	}
	// A partitioned stream's consumers are taken as this dispatcher
	// comes to own their partitions (partitions.go).
	partitions := provision.Partitions(inputs.CachedInfo().Config)
	var cons jetstream.Consumer
	if partitions == 0 {
		cons, err = d.js.CreateOrUpdateConsumer(ctx, names.InputStream(), provision.DispatcherConsumerConfig(names, d.cfg.AckWait, d.cfg.MaxAckPending))
		if err != nil {
			return nil, fmt.Errorf("dispatcher: create consumer %q: %w", names.DispatcherConsumer(), err)
		}
	}
	if w, ok := d.loader.(watchingLoader); ok {
		if err := w.Watch(ctx); err != nil {
			return nil, fmt.Errorf("dispatcher: %w", err)
		}
	}
	if d.jobs == nil {
		jc, err := client.New(ctx, d.js, client.Config{Names: names, Search: d.cfg.Jobs.Search})
		if err != nil {
			d.unwatch()
			return nil, fmt.Errorf("dispatcher: bulk jobs: %w", err)
		}
		jobs := d.cfg.Jobs
		if jobs.Sweep == nil {
			jobs.Sweep = d.sweepRun
		}
		if jobs.Migrate == nil {
			jobs.Migrate = d.migrateRun
		}
		d.jobs = bulk.New(d.js, jc, jobs)
	}
	if d.index == nil {
		d.index = runindex.New(d.js, d.cfg.Index)
	}
	if d.sched == nil {
		sc, err := client.New(ctx, d.js, client.Config{Names: names, Store: d.store})
		if err != nil {
			d.unwatch()
			return nil, fmt.Errorf("dispatcher: schedules: %w", err)
		}
		d.sched = schedule.New(d.js, sc, d.cfg.Schedules)
	}
	// Steps outlive Start's context: only Stop ends them.
	d.ctx, d.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	d.qmu.Lock()
	d.ready, d.stray, d.judged, d.queued, d.stepsDone = nil, nil, nil, 0, false
	d.intake.reset(d.cfg)
	d.qmu.Unlock()
	// Steps read these as soon as they run (early.go, apply.go).
	d.timers, d.inputs, d.partitions = timers, inputs, partitions
	d.ret = d.startRetention(ctx, inputs)
	d.startPages(inputs)
	if d.ret.on {
		d.ret.batched = d.startReaper(timers)
	}
	d.limit = newStepLimit(d.cfg.Concurrency, d.cfg.Clock.Now, d.m.stepLimit.Set)
	for i := range d.cfg.Concurrency {
		service := serveBoth
		if i < readyWorkers(d.cfg.Concurrency) {
			service = serveReady
		}
		d.steps.Go(func() { d.stepLoop(service) })
	}
	for range strayWorkers(d.cfg.Concurrency) {
		d.steps.Go(func() { d.stepLoop(serveStray) })
	}
	keepQuit := make(chan struct{})
	d.qmu.Lock()
	d.keepQuit = keepQuit
	d.qmu.Unlock()
	d.steps.Go(func() { d.keepInHand(keepQuit) })
	d.crashed.Store(false)
	d.qmu.Lock()
	d.closed, d.handBack = false, false
	d.qmu.Unlock()
	var cc jetstream.ConsumeContext
	d.parts = nil
	if partitions > 0 {
		d.parts, err = d.startPartitions(ctx, inputs, partitions)
		cc = d.parts
	} else {
		cc, err = cons.Consume(d.receive,
			jetstream.PullMaxMessagesWithBytesLimit(pullBatch(d.cfg), pullBytes(d.js.Conn().MaxPayload())),
			jetstream.PullExpiry(provision.PullExpiry), jetstream.PullHeartbeat(provision.PullHeartbeat),
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				d.log.Warn("dispatcher: consume", slog.Any("error", err))
			}))
	}
	if err != nil {
		d.cancel(err)
		d.stopSteps()
		d.unwatch()
		return nil, fmt.Errorf("dispatcher: consume %q: %w", names.DispatcherConsumer(), err)
	}
	d.jobs.Start()
	switch {
	case d.cfg.Index.Off:
		d.index.Start() // leaves the off mark
	case d.parts == nil:
		d.runIndex(true) // partitioned: while this member owns partition 0 (keepIndex)
	}
	d.sched.Start()
	d.adm = d.startAdmission(ctx)
	return &cycle{d: d, cc: cc, halt: make(chan struct{}), done: make(chan struct{})}, nil
}

// Stop stops pulling inputs, finishes the ones already received and
// returns. If ctx ends first, the steps still running are abandoned and
// their inputs handed back for redelivery. Stopping a dispatcher that is
// not running does nothing; a stopped dispatcher can be started again.
func (d *Dispatcher) Stop(ctx context.Context) error { return d.life.Stop(ctx) }

// cycle is one Start..Stop run of a dispatcher, its lifecycle.Run.
type cycle struct {
	d        *Dispatcher
	cc       jetstream.ConsumeContext
	halt     chan struct{} // closed by Halt
	haltOnce sync.Once
	done     chan struct{} // closed once windDown is over
}

// Drain begins windDown and returns.
func (c *cycle) Drain() { go c.d.windDown(c) }

// Halt abandons the steps still running: their inputs are handed back.
func (c *cycle) Halt() { c.haltOnce.Do(func() { close(c.halt) }) }

func (c *cycle) Done() <-chan struct{} { return c.done }

// Ending is false: only Stop ends a dispatcher's run.
func (c *cycle) Ending() bool { return false }

// windDown stops pulling inputs, lets the steps in flight finish and hands
// the inputs received but not yet stepped back to the stream (a nak:
// another dispatcher, or this one's successor, takes them at once), then
// ends the step goroutines. Halt cuts the wait short. Handing back keeps a
// stop short however many inputs a dispatcher holds (up to its consumer's
// window, most of them stray in a flood).
func (d *Dispatcher) windDown(c *cycle) {
	defer close(c.done)
	d.adm.stop()
	d.jobs.Stop()
	d.sched.Stop()
	d.stopReaper()
	c.cc.Drain()
	// After the drain: a partition set's drain waits out its rebalances,
	// one of which may have started the indexer.
	d.runIndex(false)
	select {
	case <-c.cc.Closed():
	case <-c.halt:
		c.cc.Stop()
		// No callback may queue a message once we wait for the queues. The
		// consumer's close waits for a flush that never ends while NATS is
		// unreachable, so refuse late callbacks instead of waiting for it.
		d.qmu.Lock()
		d.closed = true
		d.intake.wakeAll()
		d.qmu.Unlock()
	}
	d.qmu.Lock()
	d.handBack = true
	d.intake.wakeAll()
	d.qmu.Unlock()
	drained := make(chan struct{})
	go func() { d.wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-c.halt:
		d.cancel(errStopping)
		<-drained
	}
	d.cancel(errStopping)
	// Every queue is drained: nothing is left for the step goroutines.
	d.stopSteps()
	d.unwatch()
}

// runIndex starts (on) or stops the run indexer, counted in the
// indexers gauge, and reports whether that changed anything. An indexer
// that is off is never run (start left its off mark).
func (d *Dispatcher) runIndex(on bool) bool {
	d.indexMu.Lock()
	defer d.indexMu.Unlock()
	if on == d.indexOn || d.cfg.Index.Off {
		return false
	}
	d.indexOn = on
	if on {
		d.index.Start()
		d.m.indexers.Inc()
	} else {
		d.index.Stop() // hands back what it holds (runindex.Indexer.Stop)
		d.m.indexers.Dec()
	}
	return true
}

// loader resolves a workflow name and revision ("" = latest) to a
// compiled definition; *registry.Loader is the production one.
type loader interface {
	Load(ctx context.Context, name, revision string) (*step.Definition, error)
}

// watchingLoader is a loader that follows the registry while the
// dispatcher runs.
type watchingLoader interface {
	Watch(ctx context.Context) error
	Unwatch()
}

func (d *Dispatcher) unwatch() {
	if w, ok := d.loader.(watchingLoader); ok {
		w.Unwatch()
	}
}
