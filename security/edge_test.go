package security

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// TestOversizedPayloadsRefusedAtTheEdge: the client refuses bodies above
// the server's max_payload (or its own MaxPayload) before publishing, the
// server refuses them from any other client, and the dispatcher
// terminates inputs above its MaxInputBytes, and inputs that would grow a
// run's record past what NATS takes, each with the reason; nothing stalls.
func TestOversizedPayloadsRefusedAtTheEdge(t *testing.T) {
	ctx := testCtx(t, 2*time.Minute)
	// Events kept for a wait may fill the record here (the default bound,
	// run.DefaultMaxBufferedBytes, keeps it well below).
	// A payload threshold above any message NATS takes: nothing travels
	// or is kept by reference (a deployment's large inputs otherwise go
	// through the payload bucket: integration/payload_test.go), so the
	// edge's own limits are what this test meets.
	const inline = 8 << 20
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded: embedded.Config{Listen: "127.0.0.1:-1", Logger: quiet()},
		Dispatcher: &dispatcher.Config{
			Logger: quiet(), MaxInputBytes: 700 << 10, RunOptions: run.Options{MaxBufferedBytes: 4 << 20},
			PayloadThreshold: inline,
		},
		PayloadThreshold: inline,
		Logger:           quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Stop(context.Background()) }()
	if _, err := f.Deploy(ctx, "good", []byte(goodFlow)); err != nil {
		t.Fatal(err)
	}
	tm := watchTerminations(t, f)
	// No worker serves echo: the run stays in its work state, where
	// events are kept for the wait that comes next.
	if err := f.Client.StartRun(ctx, "good", "big", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	before := inputCount(t, f)

	huge := strings.Repeat("x", 2<<20)
	for what, err := range map[string]error{
		"StartRun":  f.Client.StartRun(ctx, "good", "big2", huge),
		"SendEvent": f.Client.SendEvent(ctx, "big", "go", huge),
		"Cancel":    f.Client.Cancel(ctx, "big", huge),
	} {
		if !errors.Is(err, client.ErrTooLarge) || !strings.Contains(err.Error(), "max_payload") || !strings.Contains(err.Error(), "bytes") {
			t.Errorf("%s of 2 MiB: %v", what, err)
		}
	}
	small, err := client.New(ctx, f.JS, client.Config{Names: f.Names, MaxPayload: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := small.SendEvent(ctx, "big", "go", strings.Repeat("y", 2000)); !errors.Is(err, client.ErrTooLarge) || !strings.Contains(err.Error(), "MaxPayload") {
		t.Errorf("event above client.Config.MaxPayload: %v", err)
	}
	if after := inputCount(t, f); after != before {
		t.Fatalf("%d oversized messages were published", after-before)
	}
	// Another client, without these checks, meets the server's limit.
	if _, err := f.JS.Publish(ctx, f.Names.Event("big", "go"), []byte(huge)); !errors.Is(err, nats.ErrMaxPayload) {
		t.Errorf("raw publish of 2 MiB: %v", err)
	}

	// Above the dispatcher's limit, below the server's.
	over, err := f.JS.Publish(ctx, f.Names.Event("big", "pad"), []byte(`"`+strings.Repeat("z", 800<<10)+`"`))
	if err != nil {
		t.Fatal(err)
	}
	// Two events of 600 KiB each fit one by one; the second would make
	// the run's record larger than the server takes.
	var grow []uint64
	for range 2 {
		ack, err := f.JS.Publish(ctx, f.Names.Event("big", "pad"), []byte(`"`+strings.Repeat("p", 600<<10)+`"`))
		if err != nil {
			t.Fatal(err)
		}
		grow = append(grow, ack.Sequence)
	}
	// The input over the dispatcher's limit is addressed to a run that
	// exists: refused on it, where status and history show it.
	natstest.WaitFor(t, 30*time.Second, "oversized inputs refused", func() error {
		if _, ok := tm.get(grow[1]); !ok {
			return errorString("not yet terminated")
		}
		data, _, err := f.Runs.Get(ctx, "big")
		if err != nil {
			return err
		}
		rec, err := runrecord.Decode(data)
		if err != nil {
			return err
		}
		for _, r := range rec.Rejected {
			if r.Seq == over.Sequence {
				if !strings.Contains(r.Reason, "MaxInputBytes") {
					t.Errorf("the oversized input was refused for %q", r.Reason)
				}
				return nil
			}
		}
		return errorString("not yet refused on its run")
	})
	if r, _ := tm.get(grow[1]); !strings.Contains(r, "larger than NATS accepts") {
		t.Errorf("the input that outgrows the record was terminated for %q", r)
	}
	if _, ok := tm.get(grow[0]); ok {
		t.Error("the first 600 KiB event was terminated")
	}
	// The run is intact and still takes inputs.
	if err := f.Client.Cancel(ctx, "big", "done testing"); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Client.Wait(ctx, "big"); err != nil || st.Status != wire.StatusCancelled {
		t.Fatalf("run after the oversized inputs: %+v, %v", st, err)
	}
}
