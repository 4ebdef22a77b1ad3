// Package clock is the time source of jetflow's own timing decisions
// outside the engine (which takes time as an argument): when a worker
// heartbeats, when it re-reads its consumer, how long a dispatcher lets an
// input wait for its run, how our retry loops pace themselves. Tests give
// the code a Manual clock and advance it instead of waiting for it.
package clock

import (
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once
	// d has passed on this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is a time.Timer of a Clock, with the semantics of Go 1.23 and
// later: after Stop or Reset returns, no value from before is received.
type Timer interface {
	// C is the channel the timer sends on when it fires.
	C() <-chan time.Time
	// Reset makes the timer fire once d has passed from now, and reports
	// whether it was armed.
	Reset(d time.Duration) bool
	// Stop disarms the timer and reports whether it was armed.
	Stop() bool
}

// Real is the system clock.
type Real struct{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// NewTimer is time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
func (r realTimer) Stop() bool                 { return r.t.Stop() }

// RetryTimer paces a retry loop on a clock. It has the methods of the
// Timer that github.com/cenkalti/backoff/v4's RetryNotifyWithTimer takes
// (Start, Stop, C), so that a backoff waits on Clock. Its zero value is
// not usable: set Clock.
type RetryTimer struct {
	Clock Clock
	t     Timer
}

// Start arms the timer to fire once d has passed.
func (r *RetryTimer) Start(d time.Duration) {
	if r.t == nil {
		r.t = r.Clock.NewTimer(d)
		return
	}
	r.t.Reset(d)
}

// Stop disarms the timer.
func (r *RetryTimer) Stop() {
	if r.t != nil {
		r.t.Stop()
	}
}

// C is the channel the timer fires on; nil (never ready) before Start.
func (r *RetryTimer) C() <-chan time.Time {
	if r.t == nil {
		return nil
	}
	return r.t.C()
}
