// Package clock is the time source of jetflow's own timing decisions
// outside the engine (which takes time as an argument), so that tests can
// set the time instead of waiting for it.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// Real is the system clock.
type Real struct{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// Manual is a clock that moves only when told; the zero value stands at
// the zero time. It is safe for concurrent use.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// NewManual returns a clock standing at t.
func NewManual(t time.Time) *Manual { return &Manual{now: t} }

// Now returns the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
}

// Set moves the clock to t.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = t
}
