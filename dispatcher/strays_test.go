package dispatcher

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
)

// A flood of inputs for no run is judged in batches, and each one is
// terminated with the reason its own step would give; an input of a run
// with a record but no start in the stream (a run carried over by a
// migration) is applied, and one that came before its run's start is
// refused as such.
func TestStraysJudgedInBatchesKeepTheirReasons(t *testing.T) {
	t.Parallel()
	b := setupPartitions(t, 2)
	ctx := testCtx(t)

	var mu sync.Mutex
	reasons := map[uint64]string{}
	sub, err := b.nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."+b.names.InputStream()+".>", func(m *nats.Msg) {
		var adv struct {
			StreamSeq uint64 `json:"stream_seq"`
			Reason    string `json:"reason"`
		}
		if json.Unmarshal(m.Data, &adv) == nil {
			mu.Lock()
			reasons[adv.StreamSeq] = adv.Reason
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}

	// "kept" has a record and, once its start is purged, no start.
	first := b.dispatcher(t, Config{})
	b.start(t, "kept", map[string]any{"events": 2})
	b.waitStatus(t, "kept", wire.StatusWaiting, time.Minute)
	if err := first.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	in, err := b.js.Stream(ctx, b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range b.names.StoredStarts("kept", b.partitions()) {
		if err := in.Purge(ctx, jetstream.WithPurgeSubject(s)); err != nil {
			t.Fatal(err)
		}
	}

	const ghosts = 600
	b.publish(t, b.names.Event("late", "payment"), map[string]any{"amount": 1}, "")
	for i := range ghosts {
		if i == ghosts/2 {
			b.publish(t, b.names.Event("kept", "payment"), map[string]any{"amount": 2}, "")
		}
		b.publishAsync(t, b.names.Event(fmt.Sprintf("ghost-%d", i), "payment"), map[string]any{"amount": 9})
	}
	b.start(t, "late", map[string]any{"events": 5})

	d := b.dispatcher(t, Config{})
	natstest.WaitFor(t, 2*time.Minute, "every stray terminated", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(reasons) < ghosts+1 {
			return fmt.Errorf("%d of %d terminated", len(reasons), ghosts+1)
		}
		return nil
	})
	rec := b.waitStatus(t, "late", wire.StatusWaiting, time.Minute)
	if rec == nil {
		t.Fatal("late never started")
	}
	natstest.WaitFor(t, time.Minute, "kept's event applied", func() error {
		st := b.record(t, "kept")
		if st == nil {
			return fmt.Errorf("no record")
		}
		if n := testutil.ToFloat64(d.m.messages.WithLabelValues("event", outcomeApplied)); n != 1 {
			return fmt.Errorf("%v events applied", n)
		}
		return nil
	})

	mu.Lock()
	defer mu.Unlock()
	if len(reasons) != ghosts+1 {
		t.Errorf("%d inputs terminated, want %d", len(reasons), ghosts+1)
	}
	for seq, reason := range reasons {
		m, err := in.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		runID, _, _, err := b.names.ParseInput(m.Subject)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case runID == "late":
			if !strings.Contains(reason, "no run late when this input came: its start (stream sequence") {
				t.Errorf("late's early event terminated with %q", reason)
			}
		case strings.HasPrefix(runID, "ghost-"):
			if want := "no run " + runID + ": the input stream holds no start for it"; reason != want {
				t.Errorf("%s terminated with %q, want %q", runID, reason, want)
			}
		default:
			t.Errorf("%s's input terminated: %q", runID, reason)
		}
	}
	batched := testutil.ToFloat64(d.m.strayBatched)
	if batched == 0 || batched > ghosts {
		t.Errorf("%v strays terminated in batches, want between 1 and %d", batched, ghosts)
	}
	t.Logf("%v of %d strays terminated in batches", batched, ghosts)
}

// BenchmarkStrayFlood measures how fast a dispatcher gets through inputs
// for no run already in the stream: b.N of them, in two partitions.
func BenchmarkStrayFlood(b *testing.B) {
	bu := setupPartitions(b, 2)
	var terminated sync.WaitGroup
	terminated.Add(b.N)
	sub, err := bu.nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."+bu.names.InputStream()+".>", func(*nats.Msg) { terminated.Done() })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		bu.publishAsync(b, bu.names.Event(fmt.Sprintf("ghost-%d", i), "payment"), map[string]any{"amount": 9})
	}
	b.ResetTimer()
	bu.dispatcher(b, Config{})
	terminated.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "strays/s")
}
