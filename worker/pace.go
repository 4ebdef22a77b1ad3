package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/clock"
)

// pace is the AckWait of one task version's consumer as this worker last
// read it. A deploy may change it under a running worker (a new
// startToClose), so it is re-read every Config.ConsumerRefresh while the
// worker pulls or runs invocations, and heartbeats follow it.
type pace struct {
	every   time.Duration // Config.ConsumerRefresh
	timeout time.Duration // bounds one read
	clk     clock.Clock
	log     *slog.Logger

	mu         sync.Mutex
	c          jetstream.Consumer
	ackWait    time.Duration
	read       time.Time     // when ackWait was read
	changed    chan struct{} // closed when ackWait changes
	refreshing bool
}

func newPace(every, timeout time.Duration, clk clock.Clock, log *slog.Logger) *pace {
	return &pace{every: every, timeout: timeout, clk: clk, log: log, changed: make(chan struct{})}
}

// bind adopts a newly bound consumer and the AckWait it was bound with.
func (p *pace) bind(c jetstream.Consumer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.c, p.read = c, p.clk.Now()
	p.setLocked(c.CachedInfo().Config.AckWait)
}

// current returns the AckWait and a channel closed when it changes.
func (p *pace) current() (time.Duration, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ackWait, p.changed
}

// nextRead is when the AckWait is next due to be re-read; while another
// caller reads it, a whole period from now (that read signals a change).
func (p *pace) nextRead() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refreshing {
		return p.clk.Now().Add(p.every)
	}
	return p.read.Add(p.every)
}

// refresh re-reads the AckWait if the last read is older than every. One
// caller reads at a time; the others go on with the value they have.
func (p *pace) refresh(ctx context.Context) {
	p.mu.Lock()
	c := p.c
	if c == nil || p.refreshing || p.clk.Now().Sub(p.read) < p.every {
		p.mu.Unlock()
		return
	}
	p.refreshing = true
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	info, err := c.Info(ctx)
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refreshing, p.read = false, p.clk.Now()
	switch {
	case err != nil:
		// A deleted consumer also fails the next fetch, which rebinds.
		p.log.Debug("re-reading the task consumer's AckWait failed", "error", err)
	case c == p.c: // not rebound meanwhile
		p.setLocked(info.Config.AckWait)
	}
}

func (p *pace) setLocked(ackWait time.Duration) {
	if ackWait == p.ackWait {
		return
	}
	if p.ackWait != 0 {
		p.log.Info("the task consumer's AckWait changed (a deploy set another startToClose); heartbeats follow it",
			"before", p.ackWait, "after", ackWait)
	}
	p.ackWait = ackWait
	close(p.changed)
	p.changed = make(chan struct{})
}

// keepAlive reports m as in progress until the returned function is
// called, paced by the consumer's AckWait as p knows it. When p learns a
// new AckWait the pace changes at once, and a heartbeat already due under
// the new pace goes out at once. The returned function waits for the
// reporter to end, so nothing else touches m after it returns; it is safe
// to call twice.
func (w *Worker) keepAlive(ctx context.Context, m jetstream.Msg, p *pace, log *slog.Logger) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := p.clk.Now() // the delivery started the server's clock
		// Armed only once there is something to wait for, so that an
		// armed timer (clock.Manual.AwaitTimers) means a parked reporter.
		var t clock.Timer
		defer func() {
			if t != nil {
				t.Stop()
			}
		}()
		for {
			ackWait, changed := p.current()
			due := last.Add(w.heartbeatInterval(ackWait))
			now := p.clk.Now()
			if !now.Before(due) {
				if err := m.InProgress(); err != nil {
					log.Warn("heartbeat failed", "error", err)
				}
				last = now
				continue
			}
			// Wake for the heartbeat or the next re-read, whichever is
			// first, so that a running handler notices a new AckWait
			// within one period even when the pull loop waits for slots.
			wake := due
			if next := p.nextRead(); next.Before(wake) {
				wake = next
			}
			if t == nil {
				t = p.clk.NewTimer(wake.Sub(now))
			} else {
				t.Reset(wake.Sub(now))
			}
			select {
			case <-stop:
				return
			case <-changed:
			case <-t.C():
				p.refresh(ctx)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(stop) })
		<-done
	}
}

// heartbeatInterval is the heartbeat pace for a consumer's AckWait.
func (w *Worker) heartbeatInterval(ackWait time.Duration) time.Duration {
	if ackWait <= 0 {
		ackWait = DefaultStartToClose
	}
	d := w.cfg.HeartbeatInterval
	if d == 0 {
		d = ackWait / 3
		if r := w.cfg.ConsumerRefresh; r > 0 {
			// Bounds how stale the last heartbeat is when a deploy
			// shortens AckWait, before the next re-read notices.
			d = min(d, r)
		}
	}
	d = min(d, ackWait/2)
	return max(d, time.Millisecond)
}
