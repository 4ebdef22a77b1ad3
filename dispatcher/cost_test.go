package dispatcher

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// countingRegistry counts the reads a loader makes of the registry.
type countingRegistry struct {
	*registry.Registry
	get, getRevision, latest atomic.Int64
}

func (c *countingRegistry) Get(ctx context.Context, name string) (registry.Deployment, error) {
	c.get.Add(1)
	return c.Registry.Get(ctx, name)
}

func (c *countingRegistry) GetRevision(ctx context.Context, name, rev string) (registry.Deployment, error) {
	c.getRevision.Add(1)
	return c.Registry.GetRevision(ctx, name, rev)
}

func (c *countingRegistry) Latest(ctx context.Context, name string) (registry.RevisionRef, error) {
	c.latest.Add(1)
	return c.Registry.Latest(ctx, name)
}

// TestLatestReadsOnlyTheRevisionList: a start that names no revision
// costs one read of the revision list once its document is compiled, and
// still sees a revision deployed the moment before.
func TestLatestReadsOnlyTheRevisionList(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"one": oneTask}, registry.TaskRef{Task: "echo", Version: "1"})
	reg := &countingRegistry{Registry: b.reg}
	l, err := registry.NewLoader(reg, run.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	for range 3 {
		def, err := l.Load(ctx, "one", "")
		if err != nil || def.Revision != "one/1" {
			t.Fatalf("load latest: %+v, %v", def, err)
		}
	}
	if reg.latest.Load() != 3 || reg.getRevision.Load() != 1 || reg.get.Load() != 0 {
		t.Errorf("3 loads of the latest read the list %d times, a revision %d times, the latest deployment %d times; want 3, 1, 0",
			reg.latest.Load(), reg.getRevision.Load(), reg.get.Load())
	}
	if _, err := b.reg.Deploy(ctx, "one", []byte(strings.Replace(oneTask, `"one/1"`, `"one/2"`, 1))); err != nil {
		t.Fatal(err)
	}
	if def, err := l.Load(ctx, "one", ""); err != nil || def.Revision != "one/2" {
		t.Errorf("latest after deploying one/2: %+v, %v", def, err)
	}
	if _, err := l.Load(ctx, "none", ""); !errors.Is(err, registry.ErrUnknownWorkflow) {
		t.Errorf("an undeployed workflow: %v", err)
	}
}

// TestPurgeOnlyRunsThatArmedTimers: settling a run purges its timer
// schedules (a stream request per run) only when a timer may be pending.
func TestPurgeOnlyRunsThatArmedTimers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	purges := b.watchPurges(t)
	b.dispatcher(t, Config{})
	b.start(t, "plain", map[string]any{"events": 1})
	b.waitStatus(t, "plain", wire.StatusWaiting, 10*time.Second)
	b.publish(t, b.names.Event("plain", "go"), 1, "")
	b.waitStatus(t, "plain", wire.StatusDone, 10*time.Second)
	b.start(t, "timed", map[string]any{"sleepMs": 10.0})
	b.waitStatus(t, "timed", wire.StatusDone, 10*time.Second)
	b.consumerSettled(t, 5*time.Second)
	if got := b.purgeFilters(t, purges); len(got) != 1 {
		t.Errorf("purge requests %v, want one (for the run that armed a timer)", got)
	}
}

// watchPurges subscribes to the purge requests of the timer stream.
func (b *bundle) watchPurges(t *testing.T) *nats.Subscription {
	t.Helper()
	sub, err := b.nc.SubscribeSync("$JS.API.STREAM.PURGE." + b.names.TimerStream())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return sub
}

// purgeFilters returns the subject filters of the purge requests sub
// took so far (a subscription to $JS.API.STREAM.PURGE.<stream>).
func (b *bundle) purgeFilters(t *testing.T, sub *nats.Subscription) []string {
	t.Helper()
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		m, err := sub.NextMsg(200 * time.Millisecond)
		if err != nil {
			return got
		}
		var req jetstream.StreamPurgeRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			t.Fatal(err)
		}
		got = append(got, req.Subject)
	}
}

// TestOneDispatcherReadsNoRecord: a start creates its run without first
// reading it, and later inputs find the record in the cache, so a run
// that one dispatcher drives costs no read of the run bucket.
func TestOneDispatcherReadsNoRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	nc, err := nats.Connect(b.srv.ClientURL(), nats.CustomInboxPrefix("_DISP"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b.nodes = []jetstream.JetStream{natstest.JetStream(t, nc)}
	reads, err := b.nc.SubscribeSync("$JS.API.*.GET.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	b.dispatcher(t, Config{})
	b.start(t, "now", "done at once")
	b.start(t, "later", map[string]any{"events": 1})
	b.waitStatus(t, "later", wire.StatusWaiting, 10*time.Second)
	b.publish(t, b.names.Event("later", "go"), 1, "")
	b.waitStatus(t, "later", wire.StatusDone, 10*time.Second)
	b.waitStatus(t, "now", wire.StatusDone, 10*time.Second)
	b.consumerSettled(t, 5*time.Second)
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := reads.NextMsg(100 * time.Millisecond)
		if err != nil {
			break
		}
		if strings.HasPrefix(m.Reply, "_DISP.") && strings.Contains(m.Subject, "KV_"+b.names.RunBucket()+".") {
			t.Errorf("the dispatcher read %s", m.Subject)
		}
	}
}

func TestNoRunDelay(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, c := range []struct {
		delivered uint64
		ordinary  time.Duration
		want      time.Duration
	}{
		{1, 250 * ms, 5 * ms},
		{2, 250 * ms, 10 * ms},
		{6, 250 * ms, 160 * ms},
		{7, 250 * ms, 250 * ms},
		{100, 250 * ms, 250 * ms},
		{1, 2 * ms, 2 * ms},
	} {
		if got := noRunDelay(c.delivered, c.ordinary); got != c.want {
			t.Errorf("noRunDelay(%d, %s) = %s, want %s", c.delivered, c.ordinary, got, c.want)
		}
	}
}

// TestFailedSaveLeavesTheCacheAsStored: a record write that fails (a
// store that timed out) must leave no trace of the state the input made
// in the cache; the input's redelivery then applies it. The cache used to
// keep the stored record with the new state, so the timer's redelivery
// met a state that had taken it already and was refused as stale,
// leaving the run without its fire.
func TestFailedSaveLeavesTheCacheAsStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var failed atomic.Int32
	failOnce := func(runID string) error {
		if runID == "timed" && failed.Load() == 1 {
			return errors.New("simulated store timeout")
		}
		return nil
	}
	var d *Dispatcher
	d = b.dispatcher(t, Config{hooks: &hooks{
		at: func(p hookPoint, runID, kind string) error {
			// Arm the failure once the timer fire is the next input, and
			// make that input read the record from the store, as one
			// another dispatcher wrote.
			if p == hookAfterPublish && runID == "timed" && kind == subjects.KindStart {
				d.cache.drop(runID)
				failed.Store(1)
			}
			return nil
		},
		save: func(runID string) error {
			if err := failOnce(runID); err != nil {
				failed.Store(2)
				return err
			}
			return nil
		},
	}})
	b.start(t, "timed", map[string]any{"sleepMs": 50.0})
	b.waitStatus(t, "timed", wire.StatusDone, 20*time.Second)
	if failed.Load() != 2 {
		t.Fatalf("the save of the timer's step never failed (state %d): the test did not test", failed.Load())
	}
}
