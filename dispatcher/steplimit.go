package dispatcher

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// stepLimit bounds how many steps run at once below Config.Concurrency
// when the server falls behind: additive increase, multiplicative
// decrease, as TCP does. A step whose round trip to NATS timed out
// halves the limit (once per backoffWindow: one congestion times out a
// whole window of steps); every step that completes adds 1/limit, so
// the limit climbs back by one for each limit's worth of steps.
//
// Without it, an overloaded server (three dispatchers of 128 steps in
// one -race test process, docs/RELIABILITY.md) answered past the 5 s
// timeout, every failed step was redelivered and asked again, and the
// load that caused the timeouts never went down.
type stepLimit struct {
	mu    sync.Mutex
	cond  *sync.Cond
	max   float64
	floor float64
	limit float64
	inUse int
	// lastCut is when the limit was last halved.
	lastCut time.Time
	now     func() time.Time
	// gauge reports the limit (nil in tests of the type alone).
	gauge func(float64)
}

// backoffWindow is the least time between two cuts: about one round of
// the steps that timed out together.
const backoffWindow = time.Second

// stepLimitFloor is the least the limit falls to.
const stepLimitFloor = 4

func newStepLimit(concurrency int, now func() time.Time, gauge func(float64)) *stepLimit {
	l := &stepLimit{max: float64(concurrency), floor: float64(min(concurrency, stepLimitFloor)), limit: float64(concurrency), now: now, gauge: gauge}
	l.cond = sync.NewCond(&l.mu)
	l.report()
	return l
}

// tryAcquire takes a place among the steps running at once if one is
// free, without waiting.
func (l *stepLimit) tryAcquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inUse < int(l.limit) {
		l.inUse++
		return true
	}
	return false
}

// acquire waits for a place among the steps running at once. It returns
// false, taking none, once ctx is done.
func (l *stepLimit) acquire(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inUse < int(l.limit) {
		l.inUse++
		return true
	}
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.cond.Broadcast()
	})
	defer stop()
	for l.inUse >= int(l.limit) {
		if ctx.Err() != nil {
			return false
		}
		l.cond.Wait()
	}
	l.inUse++
	return true
}

// release gives the place back; timedOut says the step failed on a
// round trip that timed out, which cuts the limit.
func (l *stepLimit) release(timedOut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inUse--
	switch now := l.now(); {
	case timedOut && now.Sub(l.lastCut) >= backoffWindow:
		l.limit = max(l.floor, l.limit/2)
		l.lastCut = now
		l.report()
	case !timedOut && l.limit < l.max:
		before := int(l.limit)
		l.limit = min(l.max, l.limit+1/l.limit)
		if int(l.limit) != before {
			l.report()
		}
	}
	l.cond.Signal()
}

func (l *stepLimit) report() {
	if l.gauge != nil {
		l.gauge(float64(int(l.limit)))
	}
}

// isTimeout reports whether err is a round trip to NATS that got no
// answer in time: a sign the server is behind, unlike a conflict or a
// refusal.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}
