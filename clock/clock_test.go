package clock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/jetflow/jetflow/clock"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fired reports whether t's channel holds a value, taking it.
func fired(t clock.Timer) bool {
	select {
	case <-t.C():
		return true
	default:
		return false
	}
}

func TestManualTimerFiresAtItsDeadline(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(epoch)
	tm := c.NewTimer(time.Second)
	c.Advance(999 * time.Millisecond)
	if fired(tm) {
		t.Fatal("fired before its deadline")
	}
	c.Advance(time.Millisecond)
	select {
	case at := <-tm.C():
		if !at.Equal(epoch.Add(time.Second)) {
			t.Errorf("sent %v, want the clock's time %v", at, epoch.Add(time.Second))
		}
	default:
		t.Fatal("did not fire at its deadline")
	}
	c.Advance(time.Hour)
	if fired(tm) {
		t.Error("fired twice")
	}
}

func TestManualTimerResetAndStop(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		run       func(c *clock.Manual, tm clock.Timer) bool // returns what Reset or Stop reported
		wantArmed bool                                       // what it should report
		advance   time.Duration                              // then the clock moves this far
		wantFire  bool
	}{
		"stop an armed timer": {
			run: func(_ *clock.Manual, tm clock.Timer) bool { return tm.Stop() }, wantArmed: true,
			advance: time.Hour, wantFire: false,
		},
		"stop a fired timer drops its value": {
			run:     func(c *clock.Manual, tm clock.Timer) bool { c.Advance(time.Second); return tm.Stop() },
			advance: 0, wantFire: false,
		},
		"reset an armed timer moves its deadline": {
			run: func(_ *clock.Manual, tm clock.Timer) bool { return tm.Reset(3 * time.Second) }, wantArmed: true,
			advance: 2 * time.Second, wantFire: false,
		},
		"reset counts from the clock's time": {
			run: func(c *clock.Manual, tm clock.Timer) bool {
				c.Advance(500 * time.Millisecond)
				return tm.Reset(time.Second)
			},
			wantArmed: true, advance: time.Second, wantFire: true,
		},
		"reset a fired timer drops its stale value": {
			run:     func(c *clock.Manual, tm clock.Timer) bool { c.Advance(time.Second); return tm.Reset(time.Minute) },
			advance: time.Second, wantFire: false,
		},
		"reset to zero fires at once": {
			run: func(_ *clock.Manual, tm clock.Timer) bool { return tm.Reset(0) }, wantArmed: true,
			advance: 0, wantFire: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := clock.NewManual(epoch)
			tm := c.NewTimer(time.Second)
			if got := tc.run(c, tm); got != tc.wantArmed {
				t.Errorf("reported armed %v, want %v", got, tc.wantArmed)
			}
			c.Advance(tc.advance)
			if got := fired(tm); got != tc.wantFire {
				t.Errorf("fired %v, want %v", got, tc.wantFire)
			}
		})
	}
}

func TestManualTimerOfZeroFiresAtOnce(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(epoch)
	if !fired(c.NewTimer(0)) || !fired(c.NewTimer(-time.Second)) {
		t.Error("a timer of no duration did not fire at once")
	}
	if n := c.Timers(); n != 0 {
		t.Errorf("%d timers armed, want 0", n)
	}
}

func TestManualSetFiresWhatIsDue(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(epoch)
	soon, late := c.NewTimer(time.Minute), c.NewTimer(time.Hour)
	c.Set(epoch.Add(time.Minute))
	if !fired(soon) || fired(late) {
		t.Error("Set did not fire exactly the timer it reached")
	}
	if n := c.Timers(); n != 1 {
		t.Errorf("%d timers armed, want 1", n)
	}
}

func TestAwaitTimers(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(epoch)
	armed := make(chan clock.Timer)
	go func() { armed <- c.NewTimer(time.Second) }()
	if err := c.AwaitTimers(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	tm := <-armed
	c.Advance(time.Second)
	if !fired(tm) {
		t.Error("the awaited timer did not fire")
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("given up")
	cancel(stop)
	if err := c.AwaitTimers(ctx, 1); !errors.Is(err, stop) {
		t.Errorf("AwaitTimers with an ended context = %v, want its cause", err)
	}
}

// Timers armed, reset and stopped from many goroutines while the clock
// moves: run under -race.
func TestManualIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(epoch)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			tm := c.NewTimer(time.Millisecond)
			for i := range 200 {
				tm.Reset(time.Duration(i%3) * time.Millisecond)
				fired(tm)
				if i%7 == 0 {
					tm.Stop()
				}
			}
			tm.Stop()
		})
	}
	wg.Go(func() {
		for range 500 {
			c.Advance(time.Millisecond)
			_ = c.Now()
		}
	})
	wg.Wait()
	if n := c.Timers(); n != 0 {
		t.Errorf("%d timers armed after every one was stopped", n)
	}
}

// A backoff paced by a RetryTimer waits on the clock: its retries come
// as the test advances it.
func TestRetryTimerPacesBackoff(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(epoch)
	tries := make(chan int, 8)
	n := 0
	done := make(chan error, 1)
	go func() {
		b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(time.Second), backoff.WithRandomizationFactor(0),
			backoff.WithMaxElapsedTime(0), backoff.WithClockProvider(c))
		done <- backoff.RetryNotifyWithTimer(func() error {
			n++
			tries <- n
			if n < 3 {
				return errors.New("not yet")
			}
			return nil
		}, b, nil, &clock.RetryTimer{Clock: c})
	}()
	for want := 1; want <= 3; want++ {
		if got := <-tries; got != want {
			t.Fatalf("try %d, want %d", got, want)
		}
		if want < 3 {
			if err := c.AwaitTimers(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			c.Advance(time.Minute) // past any interval
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := c.Timers(); n != 0 {
		t.Errorf("%d timers left armed", n)
	}
}

func TestRealTimer(t *testing.T) {
	t.Parallel()
	var c clock.Clock = clock.Real{}
	tm := c.NewTimer(0)
	<-tm.C()
	if tm.Stop() {
		t.Error("a fired timer reported armed")
	}
	if tm.Reset(time.Hour) {
		t.Error("Reset of a fired timer reported it armed")
	}
	if !tm.Stop() {
		t.Error("Stop after Reset reported the timer disarmed")
	}
}
