// Package lifecycletest checks that a service keeps the lifecycle
// contract (package lifecycle) as a user sees it, through its Start and
// Stop alone: the dispatcher's and the worker's tests run it against the
// real types, and package lifecycle's tests against a fake.
package lifecycletest

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// Service is what the contract is about.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Subject is one service under test.
type Subject struct {
	Service Service
	// Serves, if set, checks that the service does its work (runs a run,
	// serves an invocation). Run calls it after every Start that should
	// leave the service running, with the same t as the Subject's.
	Serves func(t *testing.T)
}

// Rounds of the concurrency case: Goroutines each start and stop the
// service Rounds times.
const (
	Goroutines = 4
	Rounds     = 5
)

// Run checks the contract, one parallel subtest per rule, each on a fresh
// subject from newSubject (called with the subtest's t). Every wait is
// bounded by the test's context only.
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	t.Helper()
	cases := []struct {
		name string
		test func(t *testing.T, s Subject)
	}{
		{"stop before start does nothing", func(t *testing.T, s Subject) {
			stop(t, s)
			start(t, s)
			serves(t, s)
			stop(t, s)
		}},
		{"start twice starts once", func(t *testing.T, s Subject) {
			start(t, s)
			start(t, s)
			serves(t, s)
			stop(t, s)
		}},
		{"stop twice stops once", func(t *testing.T, s Subject) {
			start(t, s)
			stop(t, s)
			stop(t, s)
		}},
		{"a stopped service starts again", func(t *testing.T, s Subject) {
			for range 3 {
				start(t, s)
				serves(t, s)
				stop(t, s)
			}
		}},
		{"concurrent stops all return once it stopped", func(t *testing.T, s Subject) {
			start(t, s)
			serves(t, s)
			var wg sync.WaitGroup
			for range Goroutines {
				wg.Go(func() {
					if err := s.Service.Stop(t.Context()); err != nil {
						t.Errorf("concurrent Stop: %v", err)
					}
				})
			}
			wg.Wait()
			start(t, s)
			serves(t, s)
			stop(t, s)
		}},
		{"concurrent starts and stops", func(t *testing.T, s Subject) {
			var wg sync.WaitGroup
			for range Goroutines {
				wg.Go(func() {
					for range Rounds {
						if err := s.Service.Start(t.Context()); err != nil {
							t.Errorf("Start: %v", err)
						}
						if err := s.Service.Stop(t.Context()); err != nil {
							t.Errorf("Stop: %v", err)
						}
					}
				})
			}
			wg.Wait()
			// Whatever the interleaving, the service is stopped and starts.
			stop(t, s)
			start(t, s)
			serves(t, s)
			stop(t, s)
		}},
		{"stop with an ended context still stops", func(t *testing.T, s Subject) {
			start(t, s)
			serves(t, s)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if err := s.Service.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Stop with an ended context = %v, want nil or its cause", err)
			}
			start(t, s)
			serves(t, s)
			stop(t, s)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSubject(t)
			t.Cleanup(func() {
				// Leave nothing running when a case failed half-way.
				_ = s.Service.Stop(context.WithoutCancel(t.Context()))
			})
			c.test(t, s)
		})
	}
}

func start(t *testing.T, s Subject) {
	t.Helper()
	if err := s.Service.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

func stop(t *testing.T, s Subject) {
	t.Helper()
	if err := s.Service.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func serves(t *testing.T, s Subject) {
	t.Helper()
	if s.Serves != nil {
		s.Serves(t)
	}
}
