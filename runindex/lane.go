package runindex

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/clock"
)

// maxHeld bounds the changes one lane holds waiting to be due.
const maxHeld = 32

// held is a change a lane waits on until it is due (c is never nil).
type held struct {
	m   jetstream.Msg
	c   *change
	due time.Time
}

// lane indexes the changes of the runs that hash to it, in the order they
// came, each once it is Settle old. A change that a later change of its
// run reached the lane before it was due is acknowledged unindexed: the
// index only ever shows a run's latest state, so a run that changes
// several times within Settle costs one indexing (its entries, its head,
// no purge of the entries the earlier states would have had) instead of
// one per change. The bucket keeps one revision per run, so the server
// has already dropped the replaced change from the consumer's pending
// ones; the acknowledgement only covers a bucket that keeps more.
type lane struct {
	w      *writer
	in     chan jetstream.Msg
	settle time.Duration
	clock  clock.Clock
}

func (l *lane) run(ctx context.Context, quit <-chan struct{}) {
	var queue []held
	newest := map[string]uint64{} // run -> the latest revision queued
	var timer clock.Timer
	var wake <-chan time.Time // timer's channel while it is armed
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		for _, h := range queue {
			_ = h.m.Nak() // stopping: another dispatcher takes them at once
		}
	}()
	for {
		for len(queue) > 0 && wake == nil {
			h := queue[0]
			if wait := h.due.Sub(l.clock.Now()); wait > 0 {
				if timer == nil {
					timer = l.clock.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				wake = timer.C()
				break
			}
			queue[0] = held{}
			queue = queue[1:]
			if newest[h.c.run] != h.c.rev {
				_ = h.m.Ack() // replaced by a later change, queued behind it
				continue
			}
			delete(newest, h.c.run)
			l.w.handle(ctx, h.m, h.c)
		}
		in := l.in
		if len(queue) >= maxHeld {
			// Full: the consumer pulls nothing more, and the changes left
			// in the stream that a later one replaces are dropped there,
			// undelivered, which costs less than holding them here.
			in = nil
		}
		select {
		case m := <-in:
			c := l.w.parse(m)
			if l.settle <= 0 || c == nil {
				l.w.handle(ctx, m, c)
				continue
			}
			// Due Settle after the write, and never later than Settle
			// from now, whatever the server's clock says.
			now := l.clock.Now()
			due := c.at.Add(l.settle)
			if limit := now.Add(l.settle); due.After(limit) {
				due = limit
			}
			if c.rev > newest[c.run] {
				newest[c.run] = c.rev
			}
			queue = append(queue, held{m: m, c: c, due: due})
		case <-wake:
			wake = nil
		case <-quit:
			return
		}
	}
}
