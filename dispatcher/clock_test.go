package dispatcher

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/bulk"
	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// The dispatcher's own waits on Config.Clock, moved by the tests instead
// of waited for. Timers, stream times and redelivery delays are the
// server's, and their tests wait for them (timer_test.go).

// losingStore loses every compare-and-swap update while lose is set, as
// against a dispatcher that always writes first.
type losingStore struct {
	RunStore
	lose atomic.Bool
}

func (s *losingStore) Update(ctx context.Context, runID string, data []byte, rev uint64) (uint64, error) {
	if s.lose.Load() {
		return 0, fmt.Errorf("lost the race: %w", kvstore.ErrStale)
	}
	return s.RunStore.Update(ctx, runID, data, rev)
}

// The reload-and-reapply loop after lost compare-and-swaps waits on the
// dispatcher's clock: one retry each time the clock passes the backoff,
// none while it stands, and the input handed back once ConflictTimeout
// of it has passed.
func TestConflictRetriesWaitOnTheClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clk := clock.NewManual(time.Now())
	store := &losingStore{RunStore: b.store}
	// The job and schedule runners keep real time: a timer of theirs on
	// clk would let AwaitTimers return before the retry's is armed.
	d, err := newDispatcher(b.js, store, b.loader, Config{
		Logger: quietLogger(t), Clock: clk, RetryDelay: 20 * time.Millisecond,
		Jobs: bulk.Config{Clock: clock.Real{}}, Schedules: schedule.Config{Clock: clock.Real{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	running(t, d)
	b.start(t, "c", map[string]any{"events": 1})
	b.waitStatus(t, "c", wire.StatusWaiting, 10*time.Second)

	store.lose.Store(true)
	b.publish(t, b.names.Event("c", "go"), "x", "")
	// parked waits for the step to lose and wait on the clock to retry.
	parked := func(conflicts float64) {
		t.Helper()
		natstest.WaitFor(t, 10*time.Second, fmt.Sprintf("%v conflicts", conflicts), func() error {
			if got := testutil.ToFloat64(d.m.conflicts); got != conflicts {
				return fmt.Errorf("%v conflicts", got)
			}
			return nil
		})
		if err := clk.AwaitTimers(testCtx(t), 1); err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(d.m.conflicts); got != conflicts {
			t.Fatalf("%v conflicts while the clock stood, want %v", got, conflicts)
		}
	}
	parked(1)
	for n := 2.0; n <= 4; n++ {
		clk.Advance(time.Second) // past any interval of the backoff
		parked(n)
	}
	if got := testutil.ToFloat64(d.m.messages.WithLabelValues("event", outcomeRetry)); got != 0 {
		t.Fatalf("the event was handed back %v times before ConflictTimeout, want 0", got)
	}
	// Past ConflictTimeout the step gives up; the redelivery starts over.
	clk.Advance(d.cfg.ConflictTimeout)
	parked(6)
	if got := testutil.ToFloat64(d.m.messages.WithLabelValues("event", outcomeRetry)); got != 1 {
		t.Errorf("the event was handed back %v times after ConflictTimeout, want once", got)
	}

	store.lose.Store(false)
	clk.Advance(time.Second)
	rec := b.waitStatus(t, "c", wire.StatusDone, 10*time.Second)
	if got := string(rec.Status.Result); got != `["x"]` {
		t.Errorf("result %s, want the event applied once", got)
	}
}

// An input whose run has no record yet, but whose start is in the stream
// before it, waits UnknownRunWait of the dispatcher's clock from its
// stream time, and no longer.
func TestUnknownRunWaitIsOnTheClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clk := clock.NewManual(time.Now())
	d, err := newDispatcher(b.js, b.store, b.loader, Config{Logger: quietLogger(t), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// No dispatcher runs: the start stays in the stream, unapplied.
	d.partitions = b.partitions()
	b.start(t, "w", map[string]any{"events": 1})
	in := &step.Input{RunID: "w", Kind: "event"}
	meta := &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: 2}, Timestamp: clk.Now()}
	clk.Advance(d.cfg.UnknownRunWait - time.Millisecond)
	if reason := d.noRunReason(testCtx(t), d.cfg.Names.StoredInput(b.names.Event("w", "e"), d.partitions), meta, in); reason != "" {
		t.Fatalf("refused before UnknownRunWait: %s", reason)
	}
	clk.Advance(time.Millisecond)
	if reason := d.noRunReason(testCtx(t), d.cfg.Names.StoredInput(b.names.Event("w", "e"), d.partitions), meta, in); reason == "" {
		t.Fatal("still waiting after UnknownRunWait")
	}
}
