package dispatcher

import (
	"testing"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// A dispatcher can publish an outbox the run has moved past: one that
// loaded the record from a replica that lags, or that holds a revision
// another dispatcher is about to replace, flushes it before its
// compare-and-swap fails. Nats-Msg-Id does not always drop it: a server
// that restarts (or a new stream leader) rebuilds its duplicate window
// from the messages it still stores, and a schedule replaced by a later
// one, or a disarm marker, is no longer stored. Such a stale arm or
// disarm of a timer must not take away the timer the run relies on now.
func TestStaleOutboxKeepsTheCurrentTimer(t *testing.T) {
	t.Parallel()
	for _, stale := range []struct {
		name string
		// pick chooses the stale record among the first attempt's
		// (which armed the deadline timer) and the retry wait's (which
		// disarmed it).
		pick func(first, retry *runrecord.Record) *runrecord.Record
	}{
		{"arm", func(first, _ *runrecord.Record) *runrecord.Record { return first }},
		{"disarm", func(_, retry *runrecord.Record) *runrecord.Record { return retry }},
	} {
		t.Run(stale.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t).withEngine(t, map[string]string{"one": oneTask}, registry.TaskRef{Task: "echo", Version: "1"})
			// No worker: each attempt ends at its deadline; the second
			// one fails the run.
			const attempt = 4 * time.Second
			d := b.dispatcher(t, Config{RunOptions: run.Options{
				Timeouts: func(string, string) run.Timeouts { return run.Timeouts{AttemptMs: float64(attempt.Milliseconds())} },
				Retry: func(string, string) run.RetryPolicy {
					return run.RetryPolicy{MaxAttempts: 2, InitialIntervalMs: 500, MaxIntervalMs: 500, Multiplier: 1}
				},
			}})
			b.startTask(t, "s", map[string]any{"n": 1})

			// The records of the first attempt, of the retry wait and of
			// the second attempt, as they are saved.
			var first, retry *runrecord.Record
			natstest.WaitFor(t, 3*attempt, "the second attempt in flight", func() error {
				rec := b.record(t, "s")
				if rec == nil {
					return errorf("no record yet")
				}
				st, err := step.DecodeState(rec)
				if err != nil {
					t.Fatal(err)
				}
				if st.Work == nil || len(st.Work.Running) != 1 {
					return errorf("status %s, no attempt", st.Status)
				}
				var a *run.Attempt
				for _, a = range st.Work.Running {
				}
				switch {
				case a.Attempt == 1 && !a.Waiting:
					first = rec
				case a.Attempt == 1 && a.Waiting:
					retry = rec
				case a.Attempt == 2 && !a.Waiting && st.Deadline > 0:
					return nil
				}
				return errorf("attempt %d waiting %v", a.Attempt, a.Waiting)
			})
			if first == nil || retry == nil {
				t.Fatalf("did not see the first attempt's record (%v) and the retry wait's (%v)", first != nil, retry != nil)
			}
			// The server forgets the message ids of schedules it no
			// longer stores.
			natstest.Restart(t, b.srv)
			if err := d.flush(testCtx(t), "s", cached{rec: stale.pick(first, retry)}); err != nil {
				t.Fatal(err)
			}
			// The second attempt still ends at its deadline, and with it
			// the run. The fire may come late: a restarted server that
			// loads the input stream before the timer stream sets up its
			// source of fires again only after a retry (10 s, then more).
			b.waitStatus(t, "s", wire.StatusFailed, time.Minute)
		})
	}
}
