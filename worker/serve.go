package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"
)

// serve is the pull loop of one task version: it fetches at most as many
// invocations as the registration has free slots and runs each in its
// own goroutine. It returns when the run stops pulling. p has c bound,
// or nothing when c is nil.
func (w *Worker) serve(rs *runState, r *registration, c jetstream.Consumer, p *pace) {
	defer rs.loops.Done()
	log := p.log
	slots := make(chan struct{}, r.concurrency)
	retry := newBackoff(100*time.Millisecond, 10*time.Second)
	for rs.pull.Err() == nil {
		if c == nil {
			var err error
			if c, err = w.bind(rs.pull, r); err != nil {
				if rs.pull.Err() == nil {
					log.Warn("cannot bind the task consumer; retrying", "error", err)
				}
				w.pause(rs.pull, retry.NextBackOff())
				continue
			}
			log.Info("bound the task consumer", "consumer", w.cfg.Names.TaskConsumer(r.task, r.version))
			p.bind(c)
		}
		n := acquireSlots(rs.pull, slots)
		if n == 0 {
			return
		}
		got, err := w.fetch(rs, r, c, p, slots, n, log)
		for range n - got {
			<-slots
		}
		if err != nil {
			if rs.pull.Err() != nil {
				return
			}
			log.Warn("fetching invocations failed; retrying", "error", err)
			// Rebind: the consumer may have been deleted and re-created
			// by a redeployment.
			c = nil
			w.pause(rs.pull, retry.NextBackOff())
			continue
		}
		retry.Reset()
		// A deploy may have changed the AckWait (cheap unless due).
		p.refresh(rs.pull)
	}
}

// acquireSlots blocks until at least one slot is free, then takes every
// free slot. It returns 0 once ctx is done.
func acquireSlots(ctx context.Context, slots chan struct{}) int {
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	n := 1
	for n < cap(slots) {
		select {
		case slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// fetch sends one pull request for up to n invocations and starts a
// handler goroutine for each one delivered; each releases its slot when
// it is done. The request is never cut short on the client: a context
// deadline can end the client's wait while the server is still sending a
// message, which is then dropped unacknowledged and waits a whole AckWait
// for redelivery. FetchMaxWait lets the server expire the request and the
// client wait a second longer; after a hard stop, handlers give what
// arrives back at once.
func (w *Worker) fetch(rs *runState, r *registration, c jetstream.Consumer, p *pace, slots chan struct{}, n int, log *slog.Logger) (int, error) {
	if rs.fetch.Err() != nil {
		return 0, nil
	}
	batch, err := c.Fetch(n, jetstream.FetchMaxWait(w.cfg.PollWait))
	if err != nil {
		return 0, err
	}
	got := 0
	for m := range batch.Messages() {
		got++
		rs.handlers.Add(1)
		go func() {
			defer rs.handlers.Done()
			defer func() { <-slots }()
			w.handle(rs, r, m, p, log)
		}()
	}
	if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return got, err
	}
	return got, nil
}

// pause waits d on the worker's clock, or until ctx is done.
func (w *Worker) pause(ctx context.Context, d time.Duration) {
	t := w.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ctx.Done():
	}
}

func newBackoff(initial, maxInterval time.Duration) *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = initial
	b.MaxInterval = maxInterval
	b.MaxElapsedTime = 0
	b.Reset()
	return b
}
