// Package lifecycle is the Start/Stop contract of jetflow's long-lived
// services (the dispatcher, the worker), kept in one place instead of in
// each. A service holds a Machine; its Start hands the machine a function
// that starts one run of the service, its Stop asks the machine to stop
// it, and the machine decides which calls do something, in what order,
// and how long each one waits.
package lifecycle

import (
	"context"
	"fmt"
	"sync"
)

// Run is one Start..Stop cycle of a service: what its start function
// returns once the service runs in the background.
type Run interface {
	// Drain begins a graceful stop and returns at once: the run takes no
	// new work and finishes what it holds. The machine calls it once per
	// run, possibly after the run ended by itself.
	Drain()
	// Halt cuts a stop short: what is still in flight is abandoned (its
	// context cancelled, its input handed back). The machine calls it
	// after Drain when a Stop's context ends before the run did, possibly
	// more than once and after Done is closed.
	Halt()
	// Done is closed once the run has ended: everything it started has
	// returned.
	Done() <-chan struct{}
	// Ending reports whether the run has begun to end by itself, without
	// Drain (a worker whose Start context was cancelled). A Start then
	// waits for it to end and starts the service afresh.
	Ending() bool
}

// Machine is the Start/Stop state of one service. Its zero value is a
// stopped service. It keeps this contract, which its service's Start and
// Stop documentation repeats:
//
//   - Start runs the start function, which returns start-up errors and
//     leaves the service running in the background. A Start that fails
//     leaves the service stopped; a later Start tries again.
//   - Start on a started service does nothing. Start while the service
//     stops (or ends by itself) waits for it to end, then starts it again:
//     a stopped service can always be started again.
//   - Stop before Start, or after Stop, does nothing.
//   - Stop drains the run and returns once it has ended. If Stop's
//     context ends first, Stop halts the run, waits for it to end, and
//     returns an error with the context's cause.
//   - Calls may come at once from any number of goroutines. A Start holds
//     off every other call for its whole start-up, so a Stop during a
//     Start stops what that Start started; concurrent Stops all wait for
//     the same run to end, each as long as its own context allows.
//   - Every wait is bounded by the caller's context, except a halted
//     run's ending: that is the service's promise (a worker handler that
//     ignores its context keeps Stop waiting).
//
// Its methods must not be called from the start function or from a Run's
// methods.
type Machine struct {
	// Name begins the errors the machine returns itself, as "worker" in
	// "worker: start: waiting for the previous stop: context canceled".
	Name string

	mu       sync.Mutex
	turn     chan struct{} // one slot: held by a Start for its start-up, by a Stop while it picks the run
	starting bool          // a start function is running
	run      Run           // the current or last run; nil when stopped
	drained  bool          // Drain was called on run
}

// Start starts the service with start unless it is started already (see
// Machine). start runs with ctx; it returns the running run, or an error
// and no run.
func (m *Machine) Start(ctx context.Context, start func(ctx context.Context) (Run, error)) error {
	for {
		if err := m.acquire(ctx); err != nil {
			return fmt.Errorf("%s: start: %w", m.Name, err)
		}
		m.mu.Lock()
		r, drained := m.run, m.drained
		if r == nil {
			m.starting = true
		}
		m.mu.Unlock()
		if r == nil {
			break
		}
		if !drained && !r.Ending() && !ended(r) {
			m.release()
			return nil
		}
		// A stop is under way: let it finish, then start afresh.
		m.release()
		select {
		case <-r.Done():
			m.forget(r)
		case <-ctx.Done():
			return fmt.Errorf("%s: start: waiting for the previous stop: %w", m.Name, context.Cause(ctx))
		}
	}
	defer m.release()
	var r Run
	var err error
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.starting = false
		if err == nil {
			m.run, m.drained = r, false
		}
	}()
	r, err = start(ctx)
	if err == nil && r == nil {
		panic("lifecycle: start function returned neither a run nor an error")
	}
	return err
}

// Stop stops the service if it runs and waits for it to end, as long as
// ctx allows (see Machine).
func (m *Machine) Stop(ctx context.Context) error {
	if err := m.acquire(ctx); err != nil {
		return fmt.Errorf("%s: stop: %w", m.Name, err)
	}
	m.mu.Lock()
	r := m.run
	drain := r != nil && !m.drained
	if drain {
		m.drained = true
	}
	m.mu.Unlock()
	if drain {
		r.Drain()
	}
	m.release()
	if r == nil {
		return nil
	}
	var err error
	select {
	case <-r.Done():
	default:
		select {
		case <-r.Done():
		case <-ctx.Done():
			r.Halt()
			<-r.Done()
			err = fmt.Errorf("%s: stop: the context ended first, and the work still in flight was abandoned: %w", m.Name, context.Cause(ctx))
		}
	}
	m.forget(r)
	return err
}

// IfStopped calls f and returns true if the service is stopped: no Start
// is starting it and no run is held (a run that ended by itself is held
// until the next Stop or Start). Start and Stop wait for f, which is
// how a service changes what its next Start will read.
func (m *Machine) IfStopped(f func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.starting || m.run != nil {
		return false
	}
	f()
	return true
}

// acquire takes the turn, waiting as long as ctx allows. Uncontended it
// succeeds even when ctx has ended: a Stop with an expired context must
// still stop.
func (m *Machine) acquire(ctx context.Context) error {
	m.mu.Lock()
	if m.turn == nil {
		m.turn = make(chan struct{}, 1)
	}
	turn := m.turn
	m.mu.Unlock()
	select {
	case turn <- struct{}{}:
		return nil
	default:
	}
	select {
	case turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (m *Machine) release() { <-m.turn }

// forget drops r once it has ended, unless another run replaced it.
func (m *Machine) forget(r Run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.run == r {
		m.run, m.drained = nil, false
	}
}

func ended(r Run) bool {
	select {
	case <-r.Done():
		return true
	default:
		return false
	}
}
