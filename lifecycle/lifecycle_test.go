package lifecycle_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/lifecycle"
	"github.com/jetflow/jetflow/lifecycle/lifecycletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// service is the smallest service on a Machine: each run is a goroutine
// that works until drained (or, if stubborn, until halted).
type service struct {
	life lifecycle.Machine

	startErr error         // what the next start function returns
	gate     chan struct{} // if set, the start function waits for it
	entered  chan struct{} // the start function signals here as it begins
	stubborn bool          // runs ignore Drain and end only when halted

	starts, drains, halts atomic.Int32
	live                  atomic.Int32 // runs that have not ended
	maxLive               atomic.Int32
	cur                   *run // the last run started; written by start under the machine
}

type run struct {
	s                 *service
	drain, halt, done chan struct{}
	drainOnce, halt1  sync.Once
	ending            atomic.Bool
}

func newService() *service {
	return &service{life: lifecycle.Machine{Name: "fake"}, entered: make(chan struct{}, 1)}
}

func (s *service) Start(ctx context.Context) error { return s.life.Start(ctx, s.start) }
func (s *service) Stop(ctx context.Context) error  { return s.life.Stop(ctx) }

func (s *service) start(ctx context.Context) (lifecycle.Run, error) {
	s.starts.Add(1)
	select {
	case s.entered <- struct{}{}:
	default:
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	if s.startErr != nil {
		return nil, s.startErr
	}
	r := &run{s: s, drain: make(chan struct{}), halt: make(chan struct{}), done: make(chan struct{})}
	n := s.live.Add(1)
	for m := s.maxLive.Load(); n > m && !s.maxLive.CompareAndSwap(m, n); m = s.maxLive.Load() {
	}
	s.cur = r
	drain := r.drain
	if s.stubborn {
		drain = nil
	}
	go func() {
		defer close(r.done)
		defer s.live.Add(-1)
		select {
		case <-drain:
		case <-r.halt:
		}
	}()
	return r, nil
}

func (r *run) Drain() {
	r.s.drains.Add(1)
	r.drainOnce.Do(func() { close(r.drain) })
}

func (r *run) Halt() {
	r.s.halts.Add(1)
	r.halt1.Do(func() { close(r.halt) })
}

func (r *run) Done() <-chan struct{} { return r.done }
func (r *run) Ending() bool          { return r.ending.Load() }

// endByItself makes the run end without a Stop, as a worker whose Start
// context was cancelled does.
func (r *run) endByItself() {
	r.ending.Store(true)
	r.halt1.Do(func() { close(r.halt) })
}

func TestContract(t *testing.T) {
	t.Parallel()
	lifecycletest.Run(t, func(*testing.T) lifecycletest.Subject { return lifecycletest.Subject{Service: newService()} })
}

func TestSequences(t *testing.T) {
	t.Parallel()
	type counts struct{ starts, drains, halts int32 }
	cases := map[string]struct {
		setup func(s *service)
		ops   []string // start, stop, stop-late (with an ended context)
		errs  []string // per op: "" for nil, else a part of the error
		want  counts
	}{
		"stop before start": {ops: []string{"stop"}, errs: []string{""}, want: counts{}},
		"start twice":       {ops: []string{"start", "start", "stop"}, errs: []string{"", "", ""}, want: counts{1, 1, 0}},
		"stop twice":        {ops: []string{"start", "stop", "stop"}, errs: []string{"", "", ""}, want: counts{1, 1, 0}},
		"restart":           {ops: []string{"start", "stop", "start", "stop"}, errs: []string{"", "", "", ""}, want: counts{2, 2, 0}},
		"failed start leaves it stopped": {
			setup: func(s *service) { s.startErr = errors.New("no stream") },
			ops:   []string{"start", "stop", "start"}, errs: []string{"no stream", "", "no stream"}, want: counts{2, 0, 0},
		},
		"a stop out of time halts": {
			setup: func(s *service) { s.stubborn = true },
			ops:   []string{"start", "stop-late", "stop"}, errs: []string{"", "fake: stop: the context ended first", ""}, want: counts{1, 1, 1},
		},
		"stop after stop with an ended context does nothing": {
			ops: []string{"start", "stop", "stop-late"}, errs: []string{"", "", ""}, want: counts{1, 1, 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newService()
			if tc.setup != nil {
				tc.setup(s)
			}
			for i, op := range tc.ops {
				var err error
				switch op {
				case "start":
					err = s.Start(t.Context())
				case "stop":
					err = s.Stop(t.Context())
				case "stop-late":
					ctx, cancel := context.WithCancel(t.Context())
					cancel()
					err = s.Stop(ctx)
				}
				switch want := tc.errs[i]; {
				case want == "" && err != nil:
					t.Errorf("%s #%d: %v", op, i, err)
				case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
					t.Errorf("%s #%d = %v, want an error with %q", op, i, err, want)
				}
			}
			if got := (counts{s.starts.Load(), s.drains.Load(), s.halts.Load()}); got != tc.want {
				t.Errorf("starts, drains, halts = %+v, want %+v", got, tc.want)
			}
			if n := s.live.Load(); n != 0 {
				t.Errorf("%d runs still live", n)
			}
		})
	}
}

func TestStartWaitsForAStopUnderWay(t *testing.T) {
	t.Parallel()
	s := newService()
	s.stubborn = true
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := s.cur
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(t.Context()) }()
	// A Start gives up when its context ends while the stop goes on...
	ctx, cancel := context.WithCancelCause(t.Context())
	impatient := errors.New("impatient")
	cancel(impatient)
	<-first.drain
	if err := s.Start(ctx); !errors.Is(err, impatient) || !strings.Contains(err.Error(), "fake: start") {
		t.Errorf("Start with an ended context during a stop = %v, want its cause", err)
	}
	// ...and otherwise starts the service afresh once the stop is over.
	restarted := make(chan error, 1)
	go func() { restarted <- s.Start(t.Context()) }()
	first.Halt() // the stop ends
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if n := s.starts.Load(); n != 2 {
		t.Errorf("%d starts, want 2", n)
	}
	s.cur.Halt()
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestStopWaitsForAStartUnderWay(t *testing.T) {
	t.Parallel()
	s := newService()
	s.gate = make(chan struct{})
	started := make(chan error, 1)
	go func() { started <- s.Start(t.Context()) }()
	<-s.entered
	// The start holds the machine: a Stop with an ended context gives up.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Stop(ctx); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "fake: stop") {
		t.Errorf("Stop during a start, with an ended context = %v", err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(t.Context()) }()
	close(s.gate)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	// The Stop waited for the Start and stopped what it started.
	if d, n := s.drains.Load(), s.live.Load(); d != 1 || n != 0 {
		t.Errorf("%d drains and %d runs live after the Stop, want 1 and 0", d, n)
	}
}

func TestARunThatEndsByItselfIsStartedAgain(t *testing.T) {
	t.Parallel()
	s := newService()
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := s.cur
	first.endByItself()
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-first.Done()
	if n := s.starts.Load(); n != 2 {
		t.Errorf("%d starts, want 2: a Start on an ending run must start it again", n)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestIfStopped(t *testing.T) {
	t.Parallel()
	s := newService()
	calls := 0
	f := func() { calls++ }
	if !s.life.IfStopped(f) {
		t.Error("a new service is not stopped")
	}
	s.gate = make(chan struct{})
	started := make(chan error, 1)
	go func() { started <- s.Start(t.Context()) }()
	<-s.entered
	if s.life.IfStopped(f) {
		t.Error("stopped while starting")
	}
	close(s.gate)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if s.life.IfStopped(f) {
		t.Error("stopped while running")
	}
	s.cur.endByItself()
	<-s.cur.Done()
	if s.life.IfStopped(f) {
		t.Error("stopped after ending by itself, before a Stop")
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !s.life.IfStopped(f) {
		t.Error("not stopped after Stop")
	}
	if calls != 2 {
		t.Errorf("f called %d times, want 2", calls)
	}
}

// Many goroutines start and stop one service: never two runs at once,
// none left, no error. Run under -race.
func TestConcurrentStartsAndStops(t *testing.T) {
	t.Parallel()
	s := newService()
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for range 50 {
				if err := s.Start(t.Context()); err != nil {
					t.Errorf("Start: %v", err)
				}
				if err := s.Stop(t.Context()); err != nil {
					t.Errorf("Stop: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if n := s.maxLive.Load(); n != 1 {
		t.Errorf("up to %d runs at once, want 1", n)
	}
	if n := s.live.Load(); n != 0 {
		t.Errorf("%d runs live after the last Stop", n)
	}
	if d, st := s.drains.Load(), s.starts.Load(); d != st {
		t.Errorf("%d runs drained of %d started", d, st)
	}
}
