package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/subjects"
)

// BenchmarkReadHistoryAmongOthers reads the 10-message history of one run
// from an input stream (file storage, 16 partitions) that also holds
// 10,000 or 1,000,000 messages of other runs, its own spread evenly among
// them (a run that lived while the others came and went): the cost
// of `jetflow history` and `replay` as the stream grows. The million
// takes about a minute to store; -short skips it.
//
//	go test ./replay -run '^$' -bench ReadHistoryAmongOthers -benchtime 200x
func BenchmarkReadHistoryAmongOthers(b *testing.B) {
	for _, others := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			if testing.Short() && others > 10_000 {
				b.Skip("-short: storing a million messages takes about a minute")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			srv := natstest.Server(b)
			js := natstest.JetStream(b, natstest.Conn(b, srv))
			names, err := subjects.New("hb")
			if err != nil {
				b.Fatal(err)
			}
			if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{Storage: jetstream.FileStorage}); err != nil {
				b.Fatal(err)
			}
			fill(ctx, b, js, names, others)
			b.ResetTimer()
			for range b.N {
				h, err := replay.ReadHistory(ctx, js, names, "the-run")
				if err != nil || len(h) != 10 {
					b.Fatalf("history of %d messages, %v; want 10", len(h), err)
				}
			}
		})
	}
}

// fill stores n events of n/10 other runs and, every n/10 of them, one
// of the-run's 10, asynchronously.
func fill(ctx context.Context, b *testing.B, js jetstream.JetStream, names subjects.Names, n int) {
	b.Helper()
	futures := make([]jetstream.PubAckFuture, 0, 1024)
	wait := func() {
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			case <-ctx.Done():
				b.Fatal(ctx.Err())
			}
		}
		futures = futures[:0]
	}
	for i := range n + 10 {
		subject := names.Event(fmt.Sprintf("other-%d", i/10), "x")
		if i%(n/10+1) == 0 {
			subject = names.Event("the-run", "x")
		}
		f, err := js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: []byte(`{"n":1}`)})
		if err != nil {
			b.Fatal(err)
		}
		if futures = append(futures, f); len(futures) == cap(futures) {
			wait()
		}
	}
	wait()
}
