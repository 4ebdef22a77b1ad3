package dispatcher

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Every input reaches the dispatchers through one consumer, in stream
// order, so an input waits behind every input published before it. To
// keep a flood of inputs for runs nobody started (or that ended) from
// delaying everyone else, a dispatcher takes inputs in ahead of stepping
// them (each lane up to its own bound, intake.go, and
// Config.MaxQueuedBytes their bytes) and sorts them into two lanes:
//
//   - ready: starts, timers (only dispatchers schedule them), results
//     whose token verifies, and any input of a run this process holds in
//     its cache or is working on;
//   - stray: events, cancels and unsigned results of runs this process
//     does not know, which are often for no run at all.
//
// Most step goroutines serve ready first and stray when ready is empty,
// so that the events waking runs parked long enough to leave the cache
// are stepped at full concurrency when nothing else waits. A few serve
// only stray, so that stray inputs make progress however busy ready is,
// and a quarter serve only ready, so that an input of a known run never
// waits for a stray step to end, however many stray inputs there are.

// strayWorkers is how many step goroutines serve only the stray lane.
func strayWorkers(concurrency int) int { return max(1, concurrency/8) }

// readyWorkers is how many of the Concurrency step goroutines serve only
// the ready lane; the others serve stray too when ready is empty.
func readyWorkers(concurrency int) int { return max(1, concurrency/4) }

// laneService is which lanes a step goroutine serves.
type laneService int

const (
	serveBoth  laneService = iota // ready first, stray when ready is empty
	serveReady                    // ready only
	serveStray                    // stray only
)

// pullBatch is how many inputs one pull asks for.
func pullBatch(cfg Config) int { return min(cfg.MaxAckPending, max(4*cfg.Concurrency, 2048)) }

// pullBytes bounds the bytes one pull buffers: never below two messages
// of the server's largest, or a large message would stall the consumer.
func pullBytes(maxPayload int64) int { return int(max(16<<20, 2*maxPayload)) }

// spillDelay is how long an input that found the queues full waits
// before it is delivered again.
const spillDelay = time.Second

// receive queues a message behind the other messages of its run, in the
// lane its run belongs to, once that lane has a place (intake.go).
func (d *Dispatcher) receive(m jetstream.Msg) {
	key := d.cfg.Names.RunToken(m.Subject())
	size := len(m.Data()) + len(m.Subject())
	d.qmu.Lock()
	// stray is judged, without the lock, whenever the run has no queue
	// here: at the first look, or once its queue went while this input
	// waited for a place (a stray run's input must not then take a place
	// in ready).
	stray, judged := false, false
	woken := -1
	var q *runQueue
	var known bool
	for {
		if d.closed {
			// Stopped: the input is redelivered after its AckWait.
			d.qmu.Unlock()
			return
		}
		q, known = d.queues[key]
		if !known && !judged {
			d.qmu.Unlock()
			stray, judged = d.isStray(key, m), true
			d.qmu.Lock()
			continue
		}
		lane := laneOf(stray)
		if known {
			lane = laneOf(q.stray)
		}
		// Handing back, every input goes straight back to the stream.
		if !d.intake.full(lane) || d.handBack {
			if woken >= 0 && woken != lane {
				d.intake.pass(woken)
			}
			break
		}
		d.intake.wait(lane)
		woken = lane
	}
	if d.queued+size > d.cfg.MaxQueuedBytes && d.queued > 0 {
		// Full: hand it back rather than grow without bound.
		d.qmu.Unlock()
		d.m.messages.WithLabelValues(kindOf(d, m.Subject()), outcomeRetry).Inc()
		_ = m.NakWithDelay(spillDelay)
		return
	}
	d.queued += size
	if known {
		d.intake.take(laneOf(q.stray))
		q.msgs = append(q.msgs, heldMsg{m, time.Now()})
		d.qmu.Unlock()
		return
	}
	d.intake.take(laneOf(stray))
	q = &runQueue{key: key, msgs: []heldMsg{{m, time.Now()}}, stray: stray}
	d.queues[key] = q
	d.wg.Add(1)
	d.enqueue(q)
	d.qmu.Unlock()
}

// enqueue puts q at the tail of its lane; qmu is held.
func (d *Dispatcher) enqueue(q *runQueue) {
	// One goroutine that serves only q's lane wakes, and one that serves
	// both: whichever finds q first takes it, the other waits again.
	if q.stray {
		d.stray = append(d.stray, q)
		d.strayCond.Signal()
	} else {
		d.ready = append(d.ready, q)
		d.readyCond.Signal()
	}
	d.bothCond.Signal()
}

// isStray reports whether a message of a run with no queue here belongs
// in the stray lane. It reads no stream: only the subject, the cache
// and, for a result, its token.
func (d *Dispatcher) isStray(key string, m jetstream.Msg) bool {
	runID, kind, _, err := d.cfg.Names.ParseInput(m.Subject())
	if err != nil || subjects.CheckRunID(runID) != nil {
		return false // malformed: terminated without reading anything
	}
	switch kind {
	case subjects.KindStart, subjects.KindTimer:
		return false
	}
	if _, ok := d.cache.get(key); ok {
		return false
	}
	if kind == subjects.KindResult && m.Headers().Get(wire.HeaderPayload) != "" {
		return false // by reference: read once, by the step
	}
	if kind == subjects.KindResult {
		in, err := step.Parse(d.settings, m.Subject(), m.Headers(), m.Data())
		return err != nil || step.Screen(d.settings, in) != nil
	}
	return true
}

// stepLoop is one step goroutine: it handles the first message of the
// queue at the head of its lane, then puts the queue back at the tail if
// it has more, until Stop has drained every queue, from the lanes
// service names.
func (d *Dispatcher) stepLoop(service laneService) {
	d.qmu.Lock()
	defer d.qmu.Unlock()
	for {
		var q *runQueue
		var batch []*runQueue
		for {
			if service != serveStray && len(d.ready) > 0 {
				q, d.ready[0], d.ready = d.ready[0], nil, d.ready[1:]
				break
			}
			if service != serveReady && len(d.judged) > 0 {
				q, d.judged[0], d.judged = d.judged[0], nil, d.judged[1:]
				break
			}
			if service != serveReady && len(d.stray) > 1 && !d.handBack {
				batch = d.takeStrays()
				break
			}
			if service != serveReady && len(d.stray) > 0 {
				q, d.stray[0], d.stray = d.stray[0], nil, d.stray[1:]
				break
			}
			if d.stepsDone {
				return
			}
			switch service {
			case serveReady:
				d.readyCond.Wait()
			case serveStray:
				d.strayCond.Wait()
			default:
				d.bothCond.Wait()
			}
		}
		if batch != nil {
			d.stepStrays(batch)
			continue
		}
		// The input waits for its place among the steps at once while
		// still in q.msgs, where keepInHand keeps its AckWait from
		// running out: with the step limit cut, the wait can be long.
		placed := false
		if !d.handBack {
			// Usually a place is free: take it without letting qmu go
			// (qmu, then the limit's lock; never the other way).
			if placed = d.limit.tryAcquire(); !placed {
				d.qmu.Unlock()
				placed = d.limit.acquire(d.ctx)
				d.qmu.Lock()
			}
		}
		m := q.msgs[0].m
		q.msgs[0] = heldMsg{}
		q.msgs = q.msgs[1:]
		handBack := d.handBack
		d.qmu.Unlock()
		switch {
		case placed && !handBack && d.ctx.Err() == nil:
			d.limit.release(d.handle(d.ctx, m))
		case placed:
			d.limit.release(false)
			d.abandon(m)
		default:
			d.abandon(m)
		}
		d.qmu.Lock()
		d.finish(q, m)
	}
}

// finish counts m, the input of q just stepped, out of its lane, and
// puts q back at the tail of its lane if it holds more; qmu is held.
func (d *Dispatcher) finish(q *runQueue, m jetstream.Msg) {
	d.queued -= len(m.Data()) + len(m.Subject())
	d.intake.stepped(d.cfg, laneOf(q.stray))
	if len(q.msgs) == 0 {
		delete(d.queues, q.key)
		d.wg.Done()
		return
	}
	// A run this process now knows leaves the stray lane.
	if q.stray {
		if _, ok := d.cache.get(q.key); ok {
			q.stray = false
			d.intake.moved(len(q.msgs))
		}
	}
	d.enqueue(q)
}

// stopSteps ends the step goroutines once every queue is drained.
func (d *Dispatcher) stopSteps() {
	d.qmu.Lock()
	d.stepsDone = true
	if d.keepQuit != nil {
		close(d.keepQuit)
		d.keepQuit = nil
	}
	d.readyCond.Broadcast()
	d.bothCond.Broadcast()
	d.strayCond.Broadcast()
	d.qmu.Unlock()
	d.steps.Wait()
}
