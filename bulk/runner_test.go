package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
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

// putJob stores a job record as a runner of another process left it.
func putJob(t *testing.T, b *bundle, j wire.Job) {
	t.Helper()
	bucket, err := b.c.JobBucket(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bucket.KV().Create(b.ctx, j.ID, data); err != nil {
		t.Fatal(err)
	}
}

// awaitGone waits until the job's record is removed.
func awaitGone(t *testing.T, b *bundle, id string) {
	t.Helper()
	for {
		_, _, err := b.c.Job(b.ctx, id, true)
		if errors.Is(err, client.ErrJobNotFound) {
			return
		}
		if b.ctx.Err() != nil {
			t.Fatalf("job %s still stored (%v)", id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listed returns the ids Jobs lists.
func listed(t *testing.T, b *bundle) []string {
	t.Helper()
	jobs, err := b.c.Jobs(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

// TestRemovesSettledJobsAfterTheirRetention: a done or cancelled job
// whose retention passed since it finished is removed at the runner's
// next pass and no longer listed; a recently failed one is listed until
// its own retention passes on the runner's clock; an unsettled job is
// never removed, and one finished now is kept.
func TestRemovesSettledJobsAfterTheirRetention(t *testing.T) {
	b := setup(t)
	now := time.Now()
	clk := clock.NewManual(now)
	old := client.Timestamp(now.Add(-DefaultJobRetention - time.Minute))
	recent := client.Timestamp(now.Add(-time.Hour))
	none := wire.RunFilter{Workflow: "none"}
	putJob(t, b, wire.Job{ID: "done-old", Operation: "cancel", Filter: none, State: wire.JobDone, Created: old, Updated: old, Finished: old})
	putJob(t, b, wire.Job{ID: "cancelled-old", Operation: "cancel", Filter: none, State: wire.JobCancelled, Created: old, Updated: old, Finished: old})
	putJob(t, b, wire.Job{ID: "failed-recent", Operation: "cancel", Filter: none, State: wire.JobFailed, Created: recent, Updated: recent, Finished: recent})
	// Held by a live lease of another holder, however old: never removed.
	putJob(t, b, wire.Job{
		ID: "held-old", Operation: "cancel", Filter: none, State: wire.JobRunning, Created: old, Updated: old,
		Holder: "other", LeaseUntil: client.Timestamp(now.Add(2 * DefaultJobRetention)),
	})
	r := New(b.js, b.c, Config{Names: b.names, Logger: quiet(), Clock: clk, Holder: "me", Poll: time.Second})
	r.Start()
	t.Cleanup(r.Stop)
	awaitGone(t, b, "done-old")
	awaitGone(t, b, "cancelled-old")
	if got := listed(t, b); !slices.Equal(got, []string{"failed-recent", "held-old"}) && !slices.Equal(got, []string{"held-old", "failed-recent"}) {
		t.Fatalf("jobs listed after the first pass: %v; want failed-recent and held-old", got)
	}

	clk.Advance(DefaultJobRetention)
	// A new job wakes the runner (its watch) for another pass.
	j, err := b.c.SubmitJob(b.ctx, client.JobSpec{Operation: "cancel", Filter: none})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.WatchJob(b.ctx, j.ID, func(*wire.Job) bool { return true }); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, b, "failed-recent")
	got, _, err := b.c.Job(b.ctx, "held-old", true)
	if err != nil || got.State != wire.JobRunning {
		t.Fatalf("the held job: %+v, %v; want it kept, running", got, err)
	}
	if done, _, err := b.c.Job(b.ctx, j.ID, true); err != nil || done.State != wire.JobDone {
		t.Fatalf("the job finished now: %+v, %v; want it kept, done", done, err)
	}
}

// TestKeepsJobsForEverWhenAsked: a negative JobRetention removes no
// job, however old.
func TestKeepsJobsForEverWhenAsked(t *testing.T) {
	b := setup(t)
	clk := clock.NewManual(time.Now())
	old := client.Timestamp(clk.Now().Add(-10 * DefaultJobRetention))
	putJob(t, b, wire.Job{ID: "ancient", Operation: "cancel", Filter: wire.RunFilter{Workflow: "none"}, State: wire.JobDone, Created: old, Updated: old, Finished: old})
	r := New(b.js, b.c, Config{Names: b.names, Logger: quiet(), Clock: clk, Poll: time.Second, JobRetention: -1})
	r.Start()
	t.Cleanup(r.Stop)
	// The first pass is over once the runner waits for its next poll.
	if err := clk.AwaitTimers(b.ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, b); !slices.Equal(got, []string{"ancient"}) {
		t.Fatalf("jobs listed: %v; want the ancient one kept", got)
	}
}
