package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// BenchmarkLargePayload measures a one-task run whose input and result
// are each size bytes, end to end (start, invocation, result, settled
// status), one run at a time: the MB/s is both bodies over the run's
// time. The inline case sends 256 KiB under the threshold; the same size
// by reference (threshold 64 KiB) prices the object store round trips.
//
//	go test ./integration -run - -bench LargePayload -benchtime 20x
func BenchmarkLargePayload(b *testing.B) {
	for _, c := range []struct {
		name      string
		size      int
		threshold int
	}{
		{"inline-256KiB", 256 << 10, 0},
		{"ref-256KiB", 256 << 10, 64 << 10},
		{"ref-4MiB", 4 << 20, 0},
		{"ref-16MiB", 16 << 20, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := payloadBenchFleet(b, c.threshold)
			input := strings.Repeat("0123456789abcdef", c.size/16)
			b.SetBytes(2 * int64(c.size))
			b.ResetTimer()
			for i := range b.N {
				id := fmt.Sprintf("lp-%d", i)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				if err := f.Client.StartRun(ctx, "lp", id, input); err != nil {
					b.Fatal(err)
				}
				st, err := f.Client.Wait(ctx, id)
				cancel()
				if err != nil || st.Status != wire.StatusDone || len(st.Result) != len(input)+2 {
					b.Fatalf("run %s: %v %v, want done with the input", id, st, err)
				}
			}
		})
	}
}

// payloadBenchFleet is a server, a dispatcher and an echo worker with the
// payload threshold (0: the default).
func payloadBenchFleet(b *testing.B, threshold int) *fleet.Fleet {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	quiet := slog.New(slog.DiscardHandler)
	dc := dispatcherConfig(dispatcher.Config{})
	dc.Logger = quiet
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded: embedded.Config{
			Listen: "127.0.0.1:-1", DataDir: b.TempDir(), ServerName: "bench",
			Logger: quiet, ReadyTimeout: natstest.StartTimeout,
		},
		PayloadThreshold: threshold, Dispatcher: &dc, Logger: quiet,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Stop(context.Background()) })
	if _, err := f.Deploy(ctx, "lp", []byte(`{"$workflow":"0.2","revision":"lp/1","initial":"a","states":{
		"a":{"work":{"task":"echo","version":"1"},"then":"done"},"done":{"final":true}}}`)); err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(f.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	w, err := worker.New(js, worker.Config{Names: f.Names, PayloadThreshold: threshold, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Register("echo", "1", func(_ context.Context, inv worker.Invocation) (any, error) {
		return json.RawMessage(inv.Input), nil
	}); err != nil {
		b.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Stop(context.Background()) })
	return f
}
