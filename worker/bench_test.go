package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/worker"
)

// BenchmarkRoundTrip measures invocations served per second end to end:
// publish the invocation, the worker fetches, runs a no-op handler,
// publishes the result and acknowledges; the benchmark waits for every
// result.
func BenchmarkRoundTrip(b *testing.B) {
	for _, conc := range []int{1, 16, 64} {
		b.Run(fmt.Sprint("concurrency=", conc), func(b *testing.B) {
			s := natstest.Server(b)
			nc := natstest.Conn(b, s)
			js := natstest.JetStream(b, nc)
			names := subjects.Must("bench")
			ctx := context.Background()
			for _, cfg := range []jetstream.StreamConfig{
				{Name: names.TaskStream(), Subjects: []string{names.TaskAll()}, Retention: jetstream.WorkQueuePolicy},
				{Name: names.InputStream(), Subjects: []string{names.InputAll()}},
			} {
				if _, err := js.CreateStream(ctx, cfg); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := provision.EnsureTaskConsumer(ctx, js, names, task, version, provision.TaskPolicy{}); err != nil {
				b.Fatal(err)
			}
			results := make(chan struct{}, 1<<16)
			sub, err := nc.Subscribe(names.InputAll(), func(*nats.Msg) { results <- struct{}{} })
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = sub.Unsubscribe() }()
			w, err := worker.New(js, worker.Config{Names: names, Concurrency: conc, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			if err := w.Register(task, version, func(context.Context, worker.Invocation) (any, error) { return 1, nil }); err != nil {
				b.Fatal(err)
			}
			if err := w.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = w.Stop(ctx) }()
			b.ResetTimer()
			for i := range b.N {
				inv := (&bundle{names: names}).invocation(fmt.Sprint("n", i), nil)
				body, _ := json.Marshal(inv)
				if _, err := js.PublishAsync(names.Task(task, version), body); err != nil {
					b.Fatal(err)
				}
			}
			for range b.N {
				select {
				case <-results:
				case <-time.After(wait):
					b.Fatal("results missing")
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "invocations/s")
		})
	}
}
