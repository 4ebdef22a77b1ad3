package runindex

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
)

// TestChangesWithinSettleAreIndexedOnce: a run written twice within
// Settle is indexed once, in its latest state: its entries and head are
// stored once and nothing is purged. Indexing each change at once stores
// them twice.
func TestChangesWithinSettleAreIndexedOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		settle time.Duration
		want   uint64 // index messages stored
	}{
		{3 * time.Second, 3},
		{-1, 6}, // the second written once the first is listed
	} {
		t.Run(fmt.Sprint(tc.settle), func(t *testing.T) {
			t.Parallel()
			ctx, js, names, _ := provisionedWriters(t, time.Minute)
			index, err := js.Stream(ctx, names.IndexStream())
			if err != nil {
				t.Fatal(err)
			}
			before := index.CachedInfo().State.LastSeq
			none := func(string, string) (map[string]string, error) { return nil, nil }
			x := New(js, Config{Names: names, Settle: tc.settle, Search: none, Logger: slog.New(slog.DiscardHandler)})
			x.Start()
			defer x.Stop()
			kv, err := js.KeyValue(ctx, names.RunBucket())
			if err != nil {
				t.Fatal(err)
			}
			c, err := client.New(ctx, js, client.Config{})
			if err != nil {
				t.Fatal(err)
			}
			listed := func(wf string) {
				t.Helper()
				natstest.WaitFor(t, 30*time.Second, "r1 listed at "+wf, func() error {
					runs, err := removedRuns(ctx, c)
					if err != nil {
						return err
					}
					if len(runs) != 1 || runs[0] != "r1@"+wf {
						return fmt.Errorf("listed %q", runs)
					}
					return nil
				})
			}
			var cons jetstream.Consumer
			natstest.WaitFor(t, 30*time.Second, "the indexers' consumer", func() error {
				cons, err = js.Consumer(ctx, names.KVStream(names.RunBucket()), names.IndexerConsumer())
				return err
			})
			for _, wf := range []string{"wf-a", "wf-b"} {
				if _, err := kv.Put(ctx, "r1", tombstone("r1", wf)); err != nil {
					t.Fatal(err)
				}
				if tc.settle < 0 && wf == "wf-a" {
					listed(wf)
				}
			}
			listed("wf-b")
			natstest.WaitFor(t, 30*time.Second, "every change acknowledged", func() error {
				info, err := cons.Info(ctx)
				if err != nil {
					return err
				}
				if info.NumPending+uint64(info.NumAckPending) != 0 { //nolint:gosec // a count
					return fmt.Errorf("%d pending, %d in hand", info.NumPending, info.NumAckPending)
				}
				return nil
			})
			info, err := index.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := info.State.LastSeq - before; got != tc.want {
				t.Errorf("index messages stored for two changes within %v: %d, want %d", tc.settle, got, tc.want)
			}
		})
	}
}
