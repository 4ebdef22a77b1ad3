// Package runindex keeps the run index: a stream of small entries, one per
// run and one per search attribute of a run, on subjects that name the
// run's workflow and status (subjects.Names.IndexEntry), so that a listing
// reads the runs of a filter with a subject filter, in the order they
// last changed (client.ListRuns). The dispatchers keep it with an Indexer,
// a durable consumer of the run bucket's own stream: every record write,
// tombstone and deletion is indexed, then acknowledged.
package runindex

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// Config configures an Indexer. The zero value is usable once passed
// through WithDefaults (New does that).
type Config struct {
	// Off turns the indexer off: this process keeps no index, and Start
	// leaves the index's off mark, so that listings read the run records
	// instead (client.ErrIndexOff) until an indexer starts again. Give
	// every dispatcher the same. Default false.
	Off bool
	// Holder names this process in the off mark. Default: the host name.
	Holder string
	// Names builds every name. Default: subjects.Must("").
	Names subjects.Names
	// Logger receives a line per record the index cannot hold and per
	// retry; every line about a run carries run_id. Default:
	// slog.Default().
	Logger *slog.Logger
	// Clock paces the waits for an unprovisioned index. Default:
	// clock.Real{}.
	Clock clock.Clock
	// Concurrency is how many record changes this process indexes at
	// once. Default 4.
	Concurrency int
	// AckWait is how long a change may be held before it is delivered
	// again (to any dispatcher). Default 30s.
	AckWait time.Duration
	// MaxAckPending caps the changes delivered and not yet indexed,
	// across dispatchers. Default 1000.
	MaxAckPending int
	// Settle is how long a change waits, from its write, before it is
	// indexed. A later change of the same run that comes meanwhile
	// replaces it unindexed, so a run whose record is written several
	// times within Settle (a start and its result, a fan-out's results)
	// is indexed once, in its latest state. Each lane holds at most
	// maxHeld changes; past that the consumer pulls nothing more and the
	// server drops replaced changes undelivered, as it does for an
	// indexer that is behind. A listing that waits for its caller's own
	// writes (client.ListOptions.Wait) waits up to about Settle longer.
	// Default 250ms; negative indexes each change at once.
	Settle time.Duration
	// Poll is how often an index that is not provisioned is looked for
	// again. Default 10s.
	Poll time.Duration
	// OpTimeout bounds each read and write of the index. Default 5s.
	OpTimeout time.Duration
	// Search returns the search attributes a deployment declares.
	// Default: read from the workflow registry (its policy's
	// "$run"."search"), cached per revision.
	Search SearchFunc
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Names.Prefix() == "" {
		c.Names = subjects.Must("")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxAckPending <= 0 {
		c.MaxAckPending = 1000
	}
	if c.Settle == 0 {
		c.Settle = 250 * time.Millisecond
	}
	if c.Poll <= 0 {
		c.Poll = 10 * time.Second
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = 5 * time.Second
	}
	if c.Holder == "" {
		c.Holder, _ = os.Hostname()
	}
	return c
}

// Indexer keeps the run index. Start it with Start and end it with Stop;
// both are safe to call twice.
type Indexer struct {
	js  jetstream.JetStream
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns an indexer over js.
func New(js jetstream.JetStream, cfg Config) *Indexer {
	cfg = cfg.WithDefaults()
	return &Indexer{js: js, cfg: cfg, log: cfg.Logger}
}

// Start runs the indexer in the background until Stop. It never fails: a
// deployment without an index stream (provisioned before the index) is
// looked at again every Poll, and a deleted consumer (a rebuild) is
// created again. An indexer that is Off leaves the off mark (failing
// that, it logs why) and does nothing else.
func (x *Indexer) Start() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cfg.Off {
		ctx, cancel := context.WithTimeout(context.Background(), x.cfg.OpTimeout)
		defer cancel()
		if err := markOff(ctx, x.js, x.cfg.Names, x.cfg.Holder, x.cfg.Clock.Now()); err != nil {
			x.log.Warn("runindex: index off, but listings may not know: they may list from a stale index", slog.Any("error", err))
		}
		return
	}
	if x.done != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	x.cancel, x.done = cancel, make(chan struct{})
	go x.loop(ctx, x.done)
}

// Stop ends the indexer and waits for the changes in hand to be indexed
// or left to redelivery.
func (x *Indexer) Stop() {
	x.mu.Lock()
	cancel, done := x.cancel, x.done
	x.cancel, x.done = nil, nil
	x.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (x *Indexer) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	logged := false
	for ctx.Err() == nil {
		err := x.consume(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := x.cfg.Poll
		if errors.Is(err, errConsumerGone) {
			wait = min(wait, time.Second) // a rebuild: start it soon
			x.log.Info("runindex: the indexers' consumer was deleted (an index rebuild?); indexing every run again", slog.Duration("retry_in", wait))
		} else if !logged || !errors.Is(err, jetstream.ErrStreamNotFound) {
			x.log.Warn("runindex: not indexing; trying again", slog.Any("error", err), slog.Duration("retry_in", wait))
			logged = true
		}
		t := x.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// consume indexes the run bucket's changes until ctx ends or the
// consumer goes away.
func (x *Indexer) consume(ctx context.Context) error {
	n := x.cfg.Names
	w, err := newWriter(ctx, x.js, x.cfg)
	if err != nil {
		return err
	}
	defer w.close()
	// An index of another shape is rebuilt before the consumer is made:
	// the new consumer starts with every run's latest record.
	if rebuilt, err := reshape(ctx, x.js, w.index, n); err != nil {
		return err
	} else if rebuilt {
		x.log.Info("runindex: the index was of an older shape; indexing every run again", slog.Int("shape", subjects.IndexShape))
	}
	cons, err := x.js.CreateOrUpdateConsumer(ctx, n.KVStream(n.RunBucket()),
		provision.IndexerConsumerConfig(n, x.cfg.AckWait, x.cfg.MaxAckPending))
	if err != nil {
		return fmt.Errorf("runindex: create consumer %q on stream %q: %w", n.IndexerConsumer(), n.KVStream(n.RunBucket()), err)
	}
	// Kept again: the changes made while it was off are the consumer's
	// pending ones (or, for a new consumer, every run's latest record).
	if err := clearOff(ctx, w.index, n); err != nil {
		return err
	}
	// One worker per run at a time (by a hash of its key): a run's
	// changes are indexed in order here, and race only with other
	// dispatchers'.
	lanes, quit := make([]chan jetstream.Msg, x.cfg.Concurrency), make(chan struct{})
	var workers sync.WaitGroup
	for i := range lanes {
		lanes[i] = make(chan jetstream.Msg)
		l := &lane{w: w, in: lanes[i], settle: x.cfg.Settle, clock: x.cfg.Clock}
		workers.Go(func() { l.run(ctx, quit) })
	}
	defer workers.Wait() // after handBack closed quit
	lost := make(chan error, 1)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		h := fnv.New32a()
		_, _ = h.Write([]byte(m.Subject()))
		select {
		case lanes[h.Sum32()%uint32(len(lanes))] <- m: //nolint:gosec // a small count
		case <-quit:
			_ = m.Nak() // stopping: another dispatcher takes it
		}
	}, jetstream.PullMaxMessages(max(64, 4*x.cfg.Concurrency)),
		jetstream.PullExpiry(provision.PullExpiry), jetstream.PullHeartbeat(provision.PullHeartbeat), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
				select {
				case lost <- err:
				default:
				}
			}
		}))
	if err != nil {
		close(quit)
		return fmt.Errorf("runindex: consume %q: %w", n.IndexerConsumer(), err)
	}
	defer x.handBack(cc, quit)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-lost:
		return fmt.Errorf("%w: %q: %w", errConsumerGone, n.IndexerConsumer(), err)
	}
}

// handBack ends consuming and hands back what the client had pulled and
// not yet delivered: the lanes stop (quit), the buffered changes reach
// the callback and are nakked, so another dispatcher's indexer takes them
// at once instead of after AckWait, which matters where one member at a
// time indexes (dispatcher's keepIndex). A drain that does not end within
// OpTimeout (the server unreachable) is stopped.
func (x *Indexer) handBack(cc jetstream.ConsumeContext, quit chan struct{}) {
	close(quit)
	cc.Drain()
	t := x.cfg.Clock.NewTimer(x.cfg.OpTimeout)
	defer t.Stop()
	select {
	case <-cc.Closed():
	case <-t.C():
		cc.Stop()
	}
}

// errConsumerGone: the indexers' consumer was deleted under this one,
// as a rebuild does.
var errConsumerGone = errors.New("runindex: the indexers' consumer went away")
