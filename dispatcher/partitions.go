package dispatcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/wire"
)

// In a partitioned deployment (the input stream records P partitions,
// provision.Partitions) every partition has its own durable consumer, and
// one dispatcher at a time consumes it, so that all of a run's inputs
// meet one process, its cache and its per-run queue.
//
// Ownership follows from membership, with no lease to hold: each
// dispatcher announces itself on a core NATS subject every
// Config.PartitionHeartbeat (wire.DispatcherHeartbeat), and the
// dispatchers it heard from in the last three heartbeats, itself
// included, sorted by id, are the members; member i of d owns the
// partitions p with p mod d = i, so each owns P/d of them, give or take
// one. A member that joins is answered at once by the others'
// heartbeats; one that stops says so in a last heartbeat (its
// partitions move at once); one that is killed falls silent, and its
// partitions move three heartbeats later. Its inputs delivered and not
// acknowledged come back after AckWait, as before partitions.
//
// Two dispatchers can disagree for a moment about who is a member (a
// heartbeat in flight), and so both consume a partition: that costs
// compare-and-swap conflicts, never correctness, because the run
// record's compare-and-swap and its applied history stay the guard that
// an input is applied once, as they are between competing consumers.
//
// In a stream partitioned by migration, the shared consumer of the
// inputs stored before (provision.UnpartitionedConsumerConfig) is
// consumed by every dispatcher while it exists.

// membersSilent is how many heartbeats of silence drop a member.
const membersSilent = 3

// partitionSet is a dispatcher's share of the partitions: the
// membership it hears and the consumers it holds. It is the
// dispatcher's consume context in a partitioned deployment.
type partitionSet struct {
	d          *Dispatcher
	partitions int
	self       wire.DispatcherHeartbeat
	sub        *nats.Subscription
	legacy     jetstream.ConsumeContext // nil unless the shared consumer exists

	mu      sync.Mutex
	members map[string]time.Time // id -> last heard, self excluded
	held    map[int]jetstream.ConsumeContext
	let     []jetstream.ConsumeContext // let go of, still draining
	ending  bool

	gen uint64 // counts the changes of held

	wake   chan struct{} // a member joined or left
	quit   chan struct{} // Drain or Stop
	loop   sync.WaitGroup
	closed chan struct{} // every consumer closed after Drain or Stop
}

// startPartitions joins the dispatchers of a partitioned deployment and
// starts consuming the partitions this one owns.
func (d *Dispatcher) startPartitions(ctx context.Context, inputs jetstream.Stream, partitions int) (*partitionSet, error) {
	ps := &partitionSet{
		d: d, partitions: partitions, self: wire.DispatcherHeartbeat{ID: memberID(), Pid: os.Getpid()},
		members: map[string]time.Time{}, held: map[int]jetstream.ConsumeContext{},
		wake: make(chan struct{}, 1), quit: make(chan struct{}), closed: make(chan struct{}),
	}
	legacy, err := inputs.UpdateConsumer(ctx, provision.UnpartitionedConsumerConfig(d.cfg.Names, d.cfg.AckWait, d.cfg.MaxAckPending))
	switch {
	case errors.Is(err, jetstream.ErrConsumerDoesNotExist) || errors.Is(err, jetstream.ErrConsumerNotFound):
	case err != nil:
		return nil, fmt.Errorf("dispatcher: update consumer %q of the inputs stored before partitions: %w", d.cfg.Names.DispatcherConsumer(), err)
	default:
		if ps.legacy, err = ps.consume(legacy, d.cfg.Names.DispatcherConsumer()); err != nil {
			return nil, err
		}
	}
	ps.sub, err = d.js.Conn().Subscribe(d.cfg.Names.DispatcherHeartbeats(), ps.heard)
	if err != nil {
		if ps.legacy != nil {
			ps.legacy.Stop()
		}
		return nil, fmt.Errorf("dispatcher: subscribe to %q: %w", d.cfg.Names.DispatcherHeartbeats(), err)
	}
	ps.announce()
	ps.loop.Go(ps.run)
	ps.loop.Go(ps.beat)
	return ps, nil
}

// memberID is a new member id: host, process and a random part, which
// also orders the members.
func memberID() string {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// run rebalances until Drain or Stop, at each heartbeat and whenever a
// member joins or leaves. The first balance waits half a heartbeat, for
// the others' answers to this member's first heartbeat.
func (ps *partitionSet) run() {
	every := ps.d.cfg.PartitionHeartbeat
	settle := time.NewTimer(every / 2)
	defer settle.Stop()
	select {
	case <-settle.C:
	case <-ps.quit:
		return
	}
	ps.rebalance()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ps.quit:
			return
		case <-tick.C:
		case <-ps.wake:
		}
		ps.rebalance()
	}
}

// beat announces this member every heartbeat until Drain or Stop, on a
// goroutine of its own: a rebalance that waits on the server (taking
// partitions) must not silence it, or the others would drop it.
func (ps *partitionSet) beat() {
	tick := time.NewTicker(ps.d.cfg.PartitionHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ps.quit:
			return
		case <-tick.C:
			ps.announce()
		}
	}
}

// heard takes in another dispatcher's heartbeat.
func (ps *partitionSet) heard(m *nats.Msg) {
	var hb wire.DispatcherHeartbeat
	if json.Unmarshal(m.Data, &hb) != nil || hb.ID == "" || hb.ID == ps.self.ID {
		return
	}
	ps.mu.Lock()
	_, known := ps.members[hb.ID]
	if hb.Leaving {
		delete(ps.members, hb.ID)
	} else {
		ps.members[hb.ID] = time.Now()
	}
	ending := ps.ending
	ps.mu.Unlock()
	if known == hb.Leaving && !ending {
		// A member joined or left: share again now. A newcomer hears
		// this member at once rather than at its next heartbeat.
		if !known {
			ps.announce()
		}
		select {
		case ps.wake <- struct{}{}:
		default:
		}
	}
}

// announce publishes this member's heartbeat.
func (ps *partitionSet) announce() {
	ps.mu.Lock()
	hb := ps.self
	hb.Owns = ps.owned()
	hb.Leaving = ps.ending
	ps.mu.Unlock()
	b, err := json.Marshal(hb)
	if err == nil {
		err = ps.d.js.Conn().Publish(ps.d.cfg.Names.DispatcherHeartbeats(), b)
	}
	if err != nil {
		ps.d.log.Warn("dispatcher: heartbeat", slog.Any("error", err))
	}
}

// owned lists the partitions held, ascending; mu is held.
func (ps *partitionSet) owned() []int {
	out := make([]int, 0, len(ps.held))
	for p := range ps.held {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// holding reports which partitions this member holds now, and a number
// that changes whenever that set changes.
func (ps *partitionSet) holding() (held map[int]bool, gen uint64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	held = make(map[int]bool, len(ps.held))
	for p := range ps.held {
		held[p] = true
	}
	return held, ps.gen
}

// share is which of partitions the member self owns among the members
// ids (self among them): member i of d, in id order, owns p when
// p mod d = i.
func share(self string, ids []string, partitions int) []int {
	slices.Sort(ids)
	i := slices.Index(ids, self)
	var out []int
	for p := i; i >= 0 && p < partitions; p += len(ids) {
		out = append(out, p)
	}
	return out
}

// rebalance drops silent members, then takes the partitions this member
// owns and lets go of the others. Only run calls it, and only it changes
// held before Drain or Stop; it waits on the server without holding mu.
func (ps *partitionSet) rebalance() {
	ps.mu.Lock()
	if ps.ending {
		ps.mu.Unlock()
		return
	}
	silent := time.Now().Add(-membersSilent * ps.d.cfg.PartitionHeartbeat)
	ids := []string{ps.self.ID}
	for id, at := range ps.members {
		if at.Before(silent) {
			delete(ps.members, id)
			continue
		}
		ids = append(ids, id)
	}
	want := share(ps.self.ID, ids, ps.partitions)
	changed := false
	for p, cc := range ps.held {
		if !slices.Contains(want, p) {
			// Its inputs already received are stepped here; the next
			// owner gets the rest.
			cc.Drain()
			ps.let = append(ps.let, cc)
			delete(ps.held, p)
			changed = true
		}
	}
	var missing []int
	for _, p := range want {
		if _, ok := ps.held[p]; !ok {
			missing = append(missing, p)
		}
	}
	ps.mu.Unlock()
	// Taken side by side: a dispatcher that starts alone takes every
	// partition, one consumer request each.
	var taking sync.WaitGroup
	for _, p := range missing {
		taking.Go(func() {
			cc, err := ps.take(p)
			if err != nil {
				ps.d.log.Warn("dispatcher: take partition (retried at the next heartbeat)", slog.Int("partition", p), slog.Any("error", err))
				return
			}
			ps.mu.Lock()
			defer ps.mu.Unlock()
			if ps.ending {
				cc.Drain()
				ps.let = append(ps.let, cc)
			} else {
				ps.held[p] = cc
			}
			changed = true
		})
	}
	taking.Wait()
	ps.keepIndex(slices.Contains(want, 0))
	if changed {
		ps.mu.Lock()
		ps.gen++
		owned := ps.owned()
		ps.mu.Unlock()
		ps.d.log.Info("dispatcher: partitions owned", slog.Any("partitions", owned), slog.Int("dispatchers", len(ids)), slog.String("member", ps.self.ID))
		ps.announce()
	}
}

// keepIndex runs the run indexer while this member owns partition 0, and
// only then. All indexers share one consumer of the run bucket, so with
// one per member a run's changes met several processes: each saw fewer of
// them to coalesce (Settle) and guessed the run's index head wrong where
// another had written it last, a refused write and a read more (at four
// dispatchers, 1.33 changes indexed and 3.88 index messages a fan-out run
// where one dispatcher needs 1.10 and 3.28). One member at a time keeps
// every change of a run in one process and its head cache; a member that
// is killed leaves the index behind by the heartbeats that drop it, and
// the changes it held come back after the consumer's AckWait.
func (ps *partitionSet) keepIndex(own bool) {
	if ps.d.runIndex(own) {
		ps.d.log.Info("dispatcher: run indexer", slog.Bool("running", own), slog.String("member", ps.self.ID))
	}
}

// take starts consuming partition p; mu is held.
func (ps *partitionSet) take(p int) (jetstream.ConsumeContext, error) {
	d := ps.d
	ctx, cancel := context.WithTimeout(d.ctx, d.cfg.OpTimeout)
	defer cancel()
	cfg := provision.PartitionConsumerConfig(d.cfg.Names, p, d.cfg.AckWait, d.cfg.MaxAckPending)
	cons, err := d.js.CreateOrUpdateConsumer(ctx, d.cfg.Names.InputStream(), cfg)
	if err != nil {
		return nil, fmt.Errorf("create consumer %q: %w", cfg.Durable, err)
	}
	return ps.consume(cons, cfg.Durable)
}

// consume pulls a consumer's inputs into the dispatcher's queues.
func (ps *partitionSet) consume(cons jetstream.Consumer, name string) (jetstream.ConsumeContext, error) {
	d := ps.d
	batch := partitionBatch(d.cfg, ps.partitions)
	cc, err := cons.Consume(d.receive,
		jetstream.PullMaxMessagesWithBytesLimit(batch, pullBytes(d.js.Conn().MaxPayload())),
		jetstream.PullExpiry(provision.PullExpiry), jetstream.PullHeartbeat(provision.PullHeartbeat),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			d.log.Warn("dispatcher: consume", slog.String("consumer", name), slog.Any("error", err))
		}))
	if err != nil {
		return nil, fmt.Errorf("consume %q: %w", name, err)
	}
	return cc, nil
}

// partitionBatch is how many inputs one pull of a partition asks for.
// The inputs a pull brings wait in the client's buffer, their AckWait
// running, while the lanes are full (intake.go), so a partition's pull
// is about a lane's floor: with P partitions the buffers hold P times
// it, which the step goroutines work through in well under AckWait.
func partitionBatch(cfg Config, partitions int) int {
	return max(16, min(pullBatch(cfg)/partitions, 4*cfg.Concurrency))
}

// Drain says goodbye, stops pulling and lets the inputs received be
// delivered; Closed is closed once every consumer is.
func (ps *partitionSet) Drain() { ps.end(jetstream.ConsumeContext.Drain) }

// Stop is Drain without waiting for inputs in flight to the client.
func (ps *partitionSet) Stop() { ps.end(jetstream.ConsumeContext.Stop) }

// Closed is closed once every consumer stopped.
func (ps *partitionSet) Closed() <-chan struct{} { return ps.closed }

func (ps *partitionSet) end(how func(jetstream.ConsumeContext)) {
	ps.mu.Lock()
	again := ps.ending
	ps.ending = true
	// At once, even while a rebalance takes partitions (it drains those
	// it takes from now on): an input handed back meanwhile must go to
	// the next owner, not back to this one.
	for _, cc := range ps.all() {
		how(cc)
	}
	ps.mu.Unlock()
	if again {
		return // Stop after Drain: what still drained is stopped
	}
	ps.announce() // leaving: the others take the partitions now
	close(ps.quit)
	ps.loop.Wait()
	_ = ps.sub.Unsubscribe()
	ps.mu.Lock()
	ccs := ps.all()
	ps.mu.Unlock()
	go func() {
		for _, cc := range ccs {
			<-cc.Closed()
		}
		close(ps.closed)
	}()
}

// all is every consumer held or still draining; mu is held.
func (ps *partitionSet) all() []jetstream.ConsumeContext {
	ccs := slices.Clone(ps.let)
	for _, cc := range ps.held {
		ccs = append(ccs, cc)
	}
	if ps.legacy != nil {
		ccs = append(ccs, ps.legacy)
	}
	return ccs
}
