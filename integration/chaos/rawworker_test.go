package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// rawTasks are the tasks the worker processes serve with rawWorker, a
// worker written from docs/PROTOCOL.md section 5 on plain JetStream
// calls, instead of the Go SDK (which cannot misbehave). Every workflow
// of the mix invokes one of them; the SDK serves the others.
var rawTasks = map[string]bool{"double": true, "inc": true}

// rawWorker serves task versions the way a client in another language
// would: pull no more than it can start, heartbeat while it works,
// publish the result with its Nats-Msg-Id, then acknowledge. On the share
// of attempts mis chooses it misbehaves instead, logging what it did.
type rawWorker struct {
	js    jetstream.JetStream
	names subjects.Names
	log   *slog.Logger
	rec   *execLog
	mis   misbehaviour
	// concurrency bounds the invocations of one task in hand at once.
	concurrency int

	// pull ends the pulls; work the handlers (a hard stop only).
	pull, work context.Context
	wg         sync.WaitGroup
}

// rawPollWait is how long one pull waits for invocations.
const rawPollWait = time.Second

// start binds each task's consumer and serves it until pull ends. A
// consumer it cannot bind fails the start, as the SDK's Start does.
func (w *rawWorker) start(ctx context.Context, handlers map[string]worker.Handler) error {
	for task, h := range handlers {
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := w.js.Consumer(bctx, w.names.TaskStream(), w.names.TaskConsumer(task, "1"))
		cancel()
		if err != nil {
			return fmt.Errorf("binding consumer of task %s: %w", task, err)
		}
		w.wg.Go(func() { w.serve(task, c, h) })
	}
	return nil
}

// wait returns once every pull has ended and every handler returned.
func (w *rawWorker) wait() { w.wg.Wait() }

// serve pulls as many invocations as it has free slots, each pull short,
// and handles each in its own goroutine.
func (w *rawWorker) serve(task string, c jetstream.Consumer, h worker.Handler) {
	slots := make(chan struct{}, w.concurrency)
	var handlers sync.WaitGroup
	defer handlers.Wait()
	for w.pull.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-w.pull.Done():
			return
		}
		n := 1
		for n < w.concurrency && tryAcquire(slots) {
			n++
		}
		batch, err := c.Fetch(n, jetstream.FetchMaxWait(rawPollWait))
		got := 0
		if err == nil {
			for m := range batch.Messages() {
				got++
				handlers.Go(func() {
					defer func() { <-slots }()
					w.handle(task, m, h)
				})
			}
			err = batch.Error()
		}
		for range n - got {
			<-slots
		}
		if err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			w.log.Warn("raw worker: pull failed", "task", task, "error", err)
			_ = pause(w.pull, 250*time.Millisecond)
		}
	}
}

// handle is one delivery: parse it, decide, log, then serve or misbehave.
func (w *rawWorker) handle(task string, m jetstream.Msg, h worker.Handler) {
	var delivery uint64
	if md, err := m.Metadata(); err == nil {
		delivery = md.NumDelivered
	}
	var inv wire.Invocation
	if err := json.Unmarshal(m.Data(), &inv); err != nil || inv.Task != task || inv.Token == "" || inv.Reply != w.names.Result(inv.Run) {
		w.log.Error("raw worker: terminating a malformed invocation", "subject", m.Subject(), "error", err)
		_ = m.TermWithReason("malformed invocation")
		return
	}
	log := w.log.With("run_id", inv.Run, "activation", inv.Activation, "node", inv.Node, "attempt", inv.Attempt, "delivery", delivery)
	kind := w.mis.decide(&inv)
	// Logged (and synced) before it happens, so that a kill right after
	// cannot hide it.
	if err := w.rec.record(execution{
		Run: inv.Run, Activation: inv.Activation, Node: inv.Node, Task: inv.Task,
		Attempt: inv.Attempt, Delivery: delivery, Misbehave: kind,
	}); err != nil {
		log.Error("raw worker: execution log", "error", err)
		_ = m.NakWithDelay(rawPollWait)
		return
	}
	switch kind {
	case misNak:
		log.Info("raw worker: misbehaving", "misbehave", kind)
		if err := m.Nak(); err != nil {
			log.Warn("raw worker: nak failed", "error", err)
		}
		return
	case misDrop:
		log.Info("raw worker: misbehaving", "misbehave", kind)
		w.ack(m, log)
		return
	case misEmpty, misNoMessage:
		log.Info("raw worker: misbehaving", "misbehave", kind)
		res := wire.Result{Activation: inv.Activation, Node: inv.Node, Attempt: inv.Attempt, Token: inv.Token}
		if kind == misNoMessage {
			res.Error = &wire.TaskError{Code: "CHAOS"}
		}
		w.answer(m, &inv, res, log)
		return
	}

	stop := w.heartbeat(m, log)
	// Some work widens the window in which a kill finds a task in flight.
	if pause(w.work, time.Duration(20+rand.IntN(180))*time.Millisecond) != nil {
		stop()
		_ = m.NakWithDelay(rawPollWait)
		return
	}
	out, err := worker.Execute(w.work, h, worker.Invocation{
		Run: inv.Run, Activation: inv.Activation, State: inv.State, Node: inv.Node, Task: inv.Task,
		Version: inv.Version, Attempt: inv.Attempt, Delivery: delivery, Input: inv.Input, With: inv.With,
	})
	stop()
	res := wire.Result{Activation: inv.Activation, Node: inv.Node, Attempt: inv.Attempt, Token: inv.Token}
	if err != nil {
		res.Error = worker.WireError(err)
	} else {
		res.Output = out
	}
	w.answer(m, &inv, res, log)
}

// answer publishes res (heartbeating while it retries) and acknowledges
// the invocation once the stream has it; if the worker stops first, it
// gives the invocation back.
func (w *rawWorker) answer(m jetstream.Msg, inv *wire.Invocation, res wire.Result, log *slog.Logger) {
	body, err := json.Marshal(res)
	if err != nil {
		log.Error("raw worker: encoding the result", "error", err)
		_ = m.TermWithReason("result does not encode")
		return
	}
	stop := w.heartbeat(m, log)
	msg := nats.NewMsg(inv.Reply)
	msg.Data = body
	backoff := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(w.work, 5*time.Second)
		_, err := w.js.PublishMsg(ctx, msg, jetstream.WithMsgID(worker.ResultMsgID(inv.Token)),
			jetstream.WithExpectStream(w.names.InputStream()))
		cancel()
		if err == nil {
			break
		}
		if w.work.Err() != nil {
			stop()
			log.Info("raw worker: stopped before the result was published; invocation handed back", "error", err)
			_ = m.NakWithDelay(rawPollWait)
			return
		}
		log.Warn("raw worker: publishing the result failed", "error", err)
		_ = pause(w.work, backoff)
		backoff = min(2*backoff, 2*time.Second)
	}
	stop()
	w.ack(m, log)
}

// tryAcquire takes a free slot if there is one.
func tryAcquire(slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (w *rawWorker) ack(m jetstream.Msg, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.work), 5*time.Second)
	defer cancel()
	if err := m.DoubleAck(ctx); err != nil {
		log.Warn("raw worker: acknowledging failed", "error", err)
	}
}

// heartbeat sends +WPI every second until the returned stop is called
// (the harness's AckWait is 5 s).
func (w *rawWorker) heartbeat(m jetstream.Msg, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(w.work)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := m.InProgress(); err != nil {
					log.Warn("raw worker: heartbeat failed", "error", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
