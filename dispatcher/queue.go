package dispatcher

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/wire"
)

// A task version whose policy sets priority, priorityFrom or key has its
// invocations published to the queue stream (package step puts them on
// subjects.Names.Queue, which names their priority and key), not to its
// task subject: JetStream delivers a consumer's messages in stream order,
// and the queue is where waiting work can be reordered. One dispatcher
// at a time admits each task version's queue: in a partitioned
// deployment, the owner of the partition the task version hashes to
// (partitions.go); in an unpartitioned one, every dispatcher (two may
// then admit the same invocation; the task stream drops the second copy,
// see below). The admitting dispatcher holds the queued invocations of
// the versions it admits in memory, rebuilt from the queue stream when it
// starts and whenever the partitions it holds change, and moves the next
// one onto the task subject whenever the task consumer has room: fewer
// than its max_ack_pending delivered and not acknowledged, and fewer than
// QueueBacklog undelivered, so that new high-priority work never waits
// behind much. The next is the oldest of the highest priority, round
// robin across keys within a priority, skipping a key with maxPerKey
// attempts in flight. The copy on the task subject carries a Nats-Msg-Id
// made of the queued one's and its queue sequence, so a repeat of the
// move (a crash between the move and the delete, a handover) stores
// nothing new within the duplicate window, and the run's compare-and-swap
// and token apply a result once after it. An invocation whose attempt's
// deadline passed while it waited is not moved (its TTL removes it from
// the queue): the attempt fails at its deadline with TASK_TIMEOUT, and
// the retry is queued anew.

// QueueBacklog is how many admitted invocations of a task version may
// wait undelivered on its task subject: besides what idle workers ask
// for, only this many, so that work queued later at a higher priority
// passes all but these.
const QueueBacklog = 1

// queuePoll is how often an admitting dispatcher looks for room while
// work waits; queueIdle how often while none does (a new queued
// invocation wakes it at once).
const (
	queuePoll = 20 * time.Millisecond
	queueIdle = time.Second
)

// queued is one invocation waiting in the queue stream.
type queued struct {
	seq      uint64
	priority int
	key      string // the key token
	limit    int    // the key's maxPerKey, 0 for none
	deadline time.Time
	header   nats.Header
	data     []byte
}

// keyRing is the waiting invocations of one priority: FIFO per key, the
// keys served round robin.
type keyRing struct {
	keys    []string
	next    int
	waiting map[string][]*queued
}

func (r *keyRing) push(q *queued) {
	if r.waiting == nil {
		r.waiting = map[string][]*queued{}
	}
	if len(r.waiting[q.key]) == 0 {
		r.keys = append(r.keys, q.key)
	}
	r.waiting[q.key] = append(r.waiting[q.key], q)
}

// pop takes the head of the first key, from the ring's cursor on, that
// blocked does not refuse, and moves the cursor past it.
func (r *keyRing) pop(blocked func(key string, limit int) bool) *queued {
	for i := range len(r.keys) {
		at := (r.next + i) % len(r.keys)
		key := r.keys[at]
		list := r.waiting[key]
		if blocked(key, list[0].limit) {
			continue
		}
		q := list[0]
		if len(list) == 1 {
			delete(r.waiting, key)
			r.keys = slices.Delete(r.keys, at, at+1)
			r.next = at
		} else {
			r.waiting[key] = list[1:]
			r.next = at + 1
		}
		if len(r.keys) > 0 {
			r.next %= len(r.keys)
		} else {
			r.next = 0
		}
		return q
	}
	return nil
}

// taskQueue is one task version's waiting invocations, and the
// task-stream sequences of those it admitted, by key, until they leave
// the task stream (acknowledged, or expired).
type taskQueue struct {
	task, vtok string
	levels     [wire.MaxPriority + 1]keyRing
	n          int
	inflight   map[string][]uint64
	cons       jetstream.Consumer
	// idleUntil: the task consumer was missing; ask again then.
	idleUntil time.Time
	// seen holds the queue sequences this view took in, so that a
	// message a stopped view delivered late is not taken twice.
	seen map[uint64]bool
}

func (t *taskQueue) push(q *queued) {
	if t.seen[q.seq] {
		return
	}
	t.seen[q.seq] = true
	t.levels[q.priority].push(q)
	t.n++
}

// admitter moves queued invocations onto their task subjects.
type admitter struct {
	d      *Dispatcher
	queue  jetstream.Stream
	tasks  jetstream.Stream
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu      sync.Mutex
	tqs     map[string]*taskQueue
	view    jetstream.ConsumeContext
	viewGen uint64 // the partitions' generation the view was built for
	held    map[int]bool
	built   bool
	// unbound: the streams did not answer at the last bind (logged once).
	unbound bool
	// bound: queue and tasks are set (read by tests).
	bound atomic.Bool
}

// startAdmission starts admitting the queues this dispatcher owns. The
// queue and task streams are bound by the admitter itself, again until
// they are: a dispatcher that started while NATS did not answer (a chaos
// run saw one give up until its restart, and the queues of the
// partitions it owned wait for good), or before the queue stream was
// provisioned, admits once they answer.
func (d *Dispatcher) startAdmission(ctx context.Context) *admitter {
	a := &admitter{d: d, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	a.ctx, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go a.run()
	return a
}

// bindRetry is how often an admitter that could not bind its streams
// tries again.
const bindRetry = 2 * time.Second

// bind binds the queue and task streams, once. It logs the first
// failure of a run of them, and the success after one.
func (a *admitter) bind() error {
	if a.queue != nil {
		return nil
	}
	names := a.d.cfg.Names
	ctx, cancel := context.WithTimeout(a.ctx, a.d.cfg.OpTimeout)
	defer cancel()
	qs, err := a.d.js.Stream(ctx, names.QueueStream())
	var ts jetstream.Stream
	if err == nil {
		ts, err = a.d.js.Stream(ctx, names.TaskStream())
	}
	if err != nil {
		if !a.unbound && a.ctx.Err() == nil {
			a.unbound = true
			level, why := slog.LevelWarn, "unreadable"
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				level, why = slog.LevelInfo, "not provisioned"
			}
			a.d.log.Log(a.ctx, level, "dispatcher: queue or task stream "+why+"; queued invocations are admitted once both answer (asked again every "+bindRetry.String()+")",
				slog.String("stream", names.QueueStream()), slog.Any("error", err))
		}
		return err
	}
	if a.unbound {
		a.d.log.Info("dispatcher: queue and task streams bound; admitting queued invocations", slog.String("stream", names.QueueStream()))
	}
	a.queue, a.tasks, a.unbound = qs, ts, false
	a.bound.Store(true)
	return nil
}

// stop ends admission and waits for it; safe on nil.
func (a *admitter) stop() {
	if a == nil {
		return
	}
	a.cancel()
	<-a.done
}

func (a *admitter) run() {
	defer close(a.done)
	defer func() {
		a.mu.Lock()
		if a.view != nil {
			a.view.Stop()
		}
		a.mu.Unlock()
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-a.wake:
		case <-timer.C:
		}
		if err := a.bind(); err != nil {
			timer.Reset(bindRetry)
			continue
		}
		if err := a.refresh(); err != nil {
			a.d.log.Warn("dispatcher: reading the queue stream (retried)", slog.Any("error", err))
			timer.Reset(queueIdle)
			continue
		}
		wait := queueIdle
		if a.round() {
			wait = queuePoll
		}
		timer.Reset(wait)
	}
}

// owns reports whether this dispatcher admits the task version's queue.
func (a *admitter) owns(task, vtok string) bool {
	if a.held == nil {
		return true
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(task + "." + vtok))
	return a.held[int(h.Sum32()%uint32(a.d.partitions))]
}

// refresh rebuilds the in-memory view from the queue stream when it has
// none, or when the partitions this dispatcher holds changed.
func (a *admitter) refresh() error {
	var held map[int]bool
	var gen uint64
	if ps := a.d.parts; ps != nil {
		held, gen = ps.holding()
	}
	a.mu.Lock()
	if a.built && gen == a.viewGen {
		a.mu.Unlock()
		return nil
	}
	if a.view != nil {
		a.view.Stop()
		a.view = nil
	}
	a.tqs, a.held, a.viewGen, a.built = map[string]*taskQueue{}, held, gen, false
	a.mu.Unlock()
	names := a.d.cfg.Names
	ctx, cancel := context.WithTimeout(a.ctx, a.d.cfg.OpTimeout)
	defer cancel()
	cons, err := a.d.js.OrderedConsumer(ctx, names.QueueStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{names.QueueAll()}, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return err
	}
	cc, err := cons.Consume(a.received, jetstream.PullExpiry(provision.PullExpiry), jetstream.PullHeartbeat(provision.PullHeartbeat), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		a.d.log.Debug("dispatcher: queue view", slog.Any("error", err))
	}))
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.view, a.built = cc, true
	a.mu.Unlock()
	return nil
}

// received adds one queued invocation to the view.
func (a *admitter) received(m jetstream.Msg) {
	task, vtok, priority, key, ok := a.d.cfg.Names.ParseQueue(m.Subject())
	if !ok || priority > wire.MaxPriority {
		return
	}
	meta, err := m.Metadata()
	if err != nil {
		return
	}
	q := &queued{seq: meta.Sequence.Stream, priority: priority, key: key, header: m.Headers(), data: m.Data()}
	if l, err := strconv.Atoi(q.header.Get(wire.HeaderKeyLimit)); err == nil && l > 0 {
		q.limit = l
	}
	if d, err := strconv.ParseFloat(q.header.Get(wire.HeaderDeadline), 64); err == nil && d > 0 {
		q.deadline = time.UnixMilli(int64(d))
	}
	a.mu.Lock()
	if !a.owns(task, vtok) {
		a.mu.Unlock()
		return
	}
	tv := task + "." + vtok
	tq := a.tqs[tv]
	if tq == nil {
		tq = &taskQueue{task: task, vtok: vtok, inflight: map[string][]uint64{}, seen: map[uint64]bool{}}
		a.tqs[tv] = tq
	}
	tq.push(q)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// round admits what the task consumers have room for; it reports
// whether work still waits.
func (a *admitter) round() bool {
	a.mu.Lock()
	var todo []*taskQueue
	for _, tq := range a.tqs {
		if tq.n > 0 {
			todo = append(todo, tq)
		}
	}
	a.mu.Unlock()
	waiting := false
	for _, tq := range todo {
		if err := a.admit(tq); err != nil {
			a.d.log.Warn("dispatcher: admitting queued invocations (retried)", slog.String("task", tq.task), slog.String("version", tq.vtok), slog.Any("error", err))
		}
		a.mu.Lock()
		waiting = waiting || tq.n > 0
		a.mu.Unlock()
	}
	return waiting
}

// admit moves as many of tq's waiting invocations onto the task subject
// as its consumer has room for.
func (a *admitter) admit(tq *taskQueue) error {
	names := a.d.cfg.Names
	ctx, cancel := context.WithTimeout(a.ctx, a.d.cfg.OpTimeout)
	defer cancel()
	if tq.cons == nil {
		if a.d.cfg.Clock.Now().Before(tq.idleUntil) {
			return nil
		}
		c, err := a.d.js.Consumer(ctx, names.TaskStream(), names.TaskConsumer(tq.task, tq.vtok))
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			// Not deployed (yet): nobody would take them.
			tq.idleUntil = a.d.cfg.Clock.Now().Add(queueIdle)
			return nil
		}
		if err != nil {
			return err
		}
		tq.cons = c
	}
	info, err := tq.cons.Info(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			tq.cons = nil
			return nil
		}
		return err
	}
	limit := info.Config.MaxAckPending
	if limit <= 0 {
		limit = int(^uint(0) >> 2)
	}
	room := limit - info.NumAckPending - int(info.NumPending)
	want := QueueBacklog - int(info.NumPending)
	if info.NumPending == 0 {
		want += info.NumWaiting
	}
	n := min(room, want)
	if n <= 0 {
		return nil
	}
	a.settle(ctx, tq, info.AckFloor.Stream)
	now := a.d.cfg.Clock.Now()
	var batch, dropped []*queued
	taken := map[string]int{} // by key, in this batch
	blocked := func(key string, l int) bool { return l > 0 && len(tq.inflight[key])+taken[key] >= l }
	for len(batch) < n {
		a.mu.Lock()
		var q *queued
		for p := wire.MaxPriority; p >= 0 && q == nil; p-- {
			q = tq.levels[p].pop(blocked)
		}
		if q != nil {
			tq.n--
			delete(tq.seen, q.seq)
		}
		a.mu.Unlock()
		if q == nil {
			break // none waits, or every key with work waiting is at its limit
		}
		if !q.deadline.IsZero() && !now.Before(q.deadline) {
			// Its attempt failed at the deadline; its TTL removes it
			// from the queue, else a delete.
			if q.header.Get(wire.HeaderTTL) == "" {
				dropped = append(dropped, q)
			}
			continue
		}
		batch = append(batch, q)
		taken[q.key]++
	}
	if err := a.move(ctx, tq, batch); err != nil {
		a.mu.Lock()
		a.built = false // read the queue again: what was not moved is still there
		a.mu.Unlock()
		return err
	}
	a.remove(ctx, append(batch, dropped...))
	return nil
}

// settle forgets the admitted invocations that left the task stream:
// those at or below the consumer's ack floor, and, for a key at its
// limit, any the stream no longer has.
func (a *admitter) settle(ctx context.Context, tq *taskQueue, ackFloor uint64) {
	a.mu.Lock()
	blocked := map[string]int{}
	for p := range tq.levels {
		for key, list := range tq.levels[p].waiting {
			if l := list[0].limit; l > 0 {
				blocked[key] = l
			}
		}
	}
	check := map[string][]uint64{}
	for key, seqs := range tq.inflight {
		kept := seqs[:0]
		for _, s := range seqs {
			if s > ackFloor {
				kept = append(kept, s)
			}
		}
		if len(kept) == 0 {
			delete(tq.inflight, key)
			continue
		}
		tq.inflight[key] = kept
		if l, ok := blocked[key]; ok && len(kept) >= l {
			check[key] = slices.Clone(kept)
		}
	}
	a.mu.Unlock()
	for key, seqs := range check {
		var gone []uint64
		for _, s := range seqs {
			if _, err := a.tasks.GetMsg(ctx, s); errors.Is(err, jetstream.ErrMsgNotFound) {
				gone = append(gone, s)
			}
		}
		if len(gone) > 0 {
			a.mu.Lock()
			tq.inflight[key] = slices.DeleteFunc(tq.inflight[key], func(s uint64) bool { return slices.Contains(gone, s) })
			a.mu.Unlock()
		}
	}
}

// move publishes the batch on its task subject, all at once, and
// records what each key has in flight.
func (a *admitter) move(ctx context.Context, tq *taskQueue, batch []*queued) error {
	type sent struct {
		q     *queued
		f     jetstream.PubAckFuture
		count bool // in flight for its key
	}
	var out []sent
	for _, q := range batch {
		m := nats.NewMsg(a.d.cfg.Names.Task(tq.task, tq.vtok))
		m.Data = q.data
		for k, v := range q.header {
			m.Header[k] = slices.Clone(v)
		}
		m.Header.Del(wire.HeaderTTL)
		m.Header.Set(wire.HeaderMsgID, q.header.Get(wire.HeaderMsgID)+"/q"+strconv.FormatUint(q.seq, 10))
		m.Header.Set(wire.HeaderQueued, strconv.FormatUint(q.seq, 10))
		a.d.pub.expire(m)
		direct := true
		if a.d.pub.limit != nil {
			held, err := a.d.pub.limit.limit(ctx, m)
			if err != nil {
				return err
			}
			direct = held == m
			m = held
		}
		if m == nil {
			continue // its rate-limit slot comes after its deadline
		}
		f, err := a.d.js.PublishMsgAsync(m)
		if err != nil {
			return a.d.pub.publishError(m.Subject, err)
		}
		out = append(out, sent{q, f, direct && q.key != ""})
	}
	for _, s := range out {
		select {
		case ack := <-s.f.Ok():
			if s.count {
				a.mu.Lock()
				tq.inflight[s.q.key] = append(tq.inflight[s.q.key], ack.Sequence)
				a.mu.Unlock()
			}
		case err := <-s.f.Err():
			return a.d.pub.publishError(s.f.Msg().Subject, err)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// remove deletes moved (or expired) invocations from the queue, a few
// requests at a time. One it fails to delete is moved again by a later
// view, and the task stream drops the repeat within its duplicate window.
func (a *admitter) remove(ctx context.Context, qs []*queued) {
	const parallel = 8
	var wg sync.WaitGroup
	next := make(chan uint64)
	for range min(parallel, len(qs)) {
		wg.Go(func() {
			for seq := range next {
				if err := a.queue.DeleteMsg(ctx, seq); err != nil && !gone(err) {
					a.d.log.Warn("dispatcher: deleting an admitted invocation from the queue", slog.Uint64("queue_seq", seq), slog.Any("error", err))
				}
			}
		})
	}
	for _, q := range qs {
		next <- q.seq
	}
	close(next)
	wg.Wait()
}

// errDeleteFailed is the server's refusal of a message delete (10057),
// which it also gives for a message already gone.
const errDeleteFailed jetstream.ErrorCode = 10057

// gone reports whether a delete failed because the message is no longer
// there: another admitter moved it during a handover, or it expired.
func gone(err error) bool {
	var ae *jetstream.APIError
	return errors.Is(err, jetstream.ErrMsgNotFound) || errors.As(err, &ae) && ae.ErrorCode == errDeleteFailed
}
