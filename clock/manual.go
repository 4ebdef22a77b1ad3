package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Manual is a clock that moves only when told; the zero value stands at
// the zero time. Its timers fire when Advance or Set moves it to or past
// their deadline, never by themselves. It is safe for concurrent use.
//
// A test that advances the clock under code waiting on one of its timers
// first waits for the code to arm the timer (AwaitTimers): advancing
// earlier would move time under code that has not yet read it.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer // the armed ones
	grew   chan struct{}  // closed and replaced when a timer is armed
}

// NewManual returns a clock standing at t.
func NewManual(t time.Time) *Manual { return &Manual{now: t} }

// Now returns the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d and fires every timer due by
// then, earliest first.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
	m.fireLocked()
}

// Set moves the clock to t and fires every timer due by then, earliest
// first.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = t
	m.fireLocked()
}

// NewTimer returns a timer that fires once the clock has moved d past
// its time now; at once if d is not positive.
func (m *Manual) NewTimer(d time.Duration) Timer {
	t := &manualTimer{m: m, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Timers returns how many timers are armed.
func (m *Manual) Timers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.timers)
}

// AwaitTimers waits until at least n timers are armed, or ctx ends.
func (m *Manual) AwaitTimers(ctx context.Context, n int) error {
	for {
		m.mu.Lock()
		if len(m.timers) >= n {
			m.mu.Unlock()
			return nil
		}
		if m.grew == nil {
			m.grew = make(chan struct{})
		}
		grew := m.grew
		m.mu.Unlock()
		select {
		case <-grew:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// fireLocked fires the timers due at m.now; m.mu is held.
func (m *Manual) fireLocked() {
	slices.SortFunc(m.timers, func(a, b *manualTimer) int { return a.when.Compare(b.when) })
	n := 0
	for _, t := range m.timers {
		if t.when.After(m.now) {
			break
		}
		t.sendLocked()
		n++
	}
	m.timers = slices.Delete(m.timers, 0, n)
}

type manualTimer struct {
	m    *Manual
	c    chan time.Time // one slot: a fired timer's value waits there
	when time.Time      // the deadline while armed
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Reset(d time.Duration) bool {
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	was := t.disarmLocked()
	if d <= 0 {
		t.sendLocked()
		return was
	}
	t.when = m.now.Add(d)
	m.timers = append(m.timers, t)
	if m.grew != nil {
		close(m.grew)
		m.grew = nil
	}
	return was
}

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	return t.disarmLocked()
}

// disarmLocked takes t off the clock and drops a value it sent and
// nobody received, as a Go 1.23 timer does; it reports whether t was
// armed.
func (t *manualTimer) disarmLocked() bool {
	select {
	case <-t.c:
	default:
	}
	i := slices.Index(t.m.timers, t)
	if i < 0 {
		return false
	}
	t.m.timers = slices.Delete(t.m.timers, i, i+1)
	return true
}

// sendLocked delivers the clock's time on t's channel.
func (t *manualTimer) sendLocked() {
	select {
	case t.c <- t.m.now:
	default: // a value is waiting already
	}
}
