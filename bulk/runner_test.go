package bulk

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

type bundle struct {
	ctx   context.Context
	js    jetstream.JetStream
	c     *client.Client
	names subjects.Names
}

// setup is a provisioned deployment with no dispatcher: nothing applies
// the operations a runner publishes.
func setup(t *testing.T) *bundle {
	t.Helper()
	s := natstest.Server(t)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	names := subjects.Must("b")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ctx, js, client.Config{Names: names})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: ctx, js: js, c: c, names: names}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestStartAndStopAreSafe: Stop before Start, Start twice, Stop twice;
// goleak (TestMain) checks nothing is left running.
func TestStartAndStopAreSafe(t *testing.T) {
	b := setup(t)
	r := New(b.js, b.c, Config{Names: b.names, Logger: quiet()})
	r.Stop()
	r.Start()
	r.Start()
	r.Stop()
	r.Stop()
	r.Start()
	r.Stop()
	off := New(b.js, b.c, Config{Names: b.names, Logger: quiet(), Off: true})
	off.Start()
	off.Stop()
}

// TestTakesAJobOnlyOnceItsLeaseLapsed: a job another holder leased is
// left alone until the lease lapses on the runner's clock, then taken
// over and finished.
func TestTakesAJobOnlyOnceItsLeaseLapsed(t *testing.T) {
	b := setup(t)
	clk := clock.NewManual(time.Now())
	bucket, err := b.c.JobBucket(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	j := wire.Job{
		ID: "held", Operation: "cancel", Filter: wire.RunFilter{Workflow: "none"}, Created: client.Timestamp(clk.Now()),
		State: wire.JobRunning, Holder: "other", LeaseUntil: client.Timestamp(clk.Now().Add(20 * time.Second)),
	}
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bucket.KV().Create(b.ctx, j.ID, data); err != nil {
		t.Fatal(err)
	}
	r := New(b.js, b.c, Config{Names: b.names, Logger: quiet(), Clock: clk, Holder: "me", Poll: time.Second})
	r.Start()
	t.Cleanup(r.Stop)
	// The first pass is over once the runner waits for its next poll.
	if err := clk.AwaitTimers(b.ctx, 1); err != nil {
		t.Fatal(err)
	}
	got, _, err := b.c.Job(b.ctx, j.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Holder != "other" || got.Takeovers != 0 {
		t.Fatalf("a live lease was taken: %+v", got)
	}
	clk.Advance(21 * time.Second)
	got, err = b.c.WatchJob(b.ctx, j.ID, func(*wire.Job) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if got.State != wire.JobDone || got.Takeovers != 1 || got.Holder != "" || got.Matched != 0 {
		t.Fatalf("job after the lease lapsed: %+v; want done after one takeover", got)
	}
}

// TestRefusesUnknownOperations: a job record naming no known operation
// (written by hand, or by a newer release) fails with the reason.
func TestRefusesUnknownOperations(t *testing.T) {
	b := setup(t)
	if _, err := b.c.SubmitJob(b.ctx, client.JobSpec{Operation: "explode"}); err == nil {
		t.Fatal("SubmitJob accepted an unknown operation")
	}
	bucket, err := b.c.JobBucket(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(wire.Job{ID: "odd", Operation: "explode", State: wire.JobPending})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bucket.KV().Create(b.ctx, "odd", data); err != nil {
		t.Fatal(err)
	}
	r := New(b.js, b.c, Config{Names: b.names, Logger: quiet()})
	r.Start()
	t.Cleanup(r.Stop)
	got, err := b.c.WatchJob(b.ctx, "odd", func(*wire.Job) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if got.State != wire.JobFailed || got.Error == "" {
		t.Fatalf("job %+v; want failed with the reason", got)
	}
}
