package dispatcher

import (
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// TestFailedSavePublishesTheOutboxOnce: when the write of a task result
// fails (a store that timed out in a server outage), the redelivered
// result reads the record again from the store. That record is the one
// whose outbox this dispatcher already published, invocation included;
// publishing it again stored a second copy of the invocation when the
// server had restarted in between and the worker had acknowledged the
// first (the task stream is a work queue, and a restarted server rebuilds
// its duplicate window only from the messages it still stores), so the
// task attempt ran twice. TestServerRestartMidRun saw it.
func TestFailedSavePublishesTheOutboxOnce(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"one": oneTask}, registry.TaskRef{Task: "echo", Version: "1"})
	// failing: 1 once the next save of the run is to fail, 2 once it has.
	var failing atomic.Int32
	b.dispatcher(t, Config{RetryDelay: 50 * time.Millisecond, hooks: &hooks{save: func(runID string) error {
		if runID == "r" && failing.CompareAndSwap(1, 2) {
			return errors.New("simulated store timeout")
		}
		return nil
	}}})
	b.startTask(t, "r", map[string]any{"n": 1})

	// The worker's part: take the invocation and acknowledge it.
	ctx := testCtx(t)
	inv := b.take(t, "echo")
	// The server forgets the message id of the invocation it deleted.
	natstest.Restart(t, b.srv)

	failing.Store(1)
	res, err := json.Marshal(wire.Result{Activation: inv.Activation, Node: inv.Node, Attempt: inv.Attempt, Token: inv.Token, Output: json.RawMessage(`{"ok":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(inv.Reply)
	m.Data = res
	m.Header.Set(wire.HeaderMsgID, worker.ResultMsgID(inv.Token))
	if _, err := b.js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, "r", wire.StatusDone, 30*time.Second)
	if failing.Load() != 2 {
		t.Fatal("the save of the result never failed: the test did not test")
	}
	if n := b.stored(t, b.names.TaskStream()); n != 1 {
		t.Errorf("the task stream stored %d invocations, want 1: the outbox was published again after the failed save", n)
	}
}

// pairOfTasks invokes echo@1 and slow@1 at once: one outbox, two
// invocations.
const pairOfTasks = `{"$workflow":"0.2","revision":"pair/1","initial":"w","states":{
 "w":{"work":{"dag":{"$dag":"0.1",
  "nodes":{"in":{"kind":"input"},"a":{"kind":"task","run":"echo","version":"1"},"b":{"kind":"task","run":"slow","version":"1"},
   "j":{"kind":"query","query":["$.a","$.b"]},"out":{"kind":"output"}},
  "edges":[{"from":"in","to":"a"},{"from":"in","to":"b"},{"from":"a","to":"j","port":"a"},{"from":"b","to":"j","port":"b"},{"from":"j","to":"out"}]}},
  "then":"done"},
 "done":{"final":true}}}`

// TestCutShortFlushPublishesOnlyTheRest: a flush that an outage cut
// short (echo's invocation stored, slow's not) publishes, when the input
// comes again, only what was not stored. Publishing the whole outbox
// again stored a second copy of echo's invocation once its worker had
// acknowledged the first and the server had restarted (which rebuilds
// the duplicate window only from the messages it still stores), so the
// attempt ran twice.
func TestCutShortFlushPublishesOnlyTheRest(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"pair": pairOfTasks},
		registry.TaskRef{Task: "echo", Version: "1"}, registry.TaskRef{Task: "slow", Version: "1"})
	var down atomic.Bool // the outage, for slow's invocation only
	down.Store(true)
	var refused atomic.Int32
	slow := b.names.Task("slow", "1")
	b.dispatcher(t, Config{RetryDelay: 50 * time.Millisecond, hooks: &hooks{publish: func(subject string) error {
		if subject == slow && down.Load() {
			refused.Add(1)
			return errors.New("simulated outage")
		}
		return nil
	}}})
	in, err := json.Marshal(map[string]any{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	b.publish(t, b.names.Start("p"), wire.Start{Workflow: "pair", Input: in}, "start/p")

	// echo's worker takes its invocation and acknowledges it (the work
	// queue deletes it) while slow's is still refused.
	b.take(t, "echo")
	natstest.WaitFor(t, 30*time.Second, "a flush retried after the outage", func() error {
		if refused.Load() < 2 {
			return errors.New("slow's invocation refused fewer than twice")
		}
		return nil
	})
	natstest.Restart(t, b.srv)
	down.Store(false)
	if inv := b.take(t, "slow"); inv.Node != "b" {
		t.Fatalf("slow's invocation is of node %q, want b", inv.Node)
	}
	if n := b.stored(t, b.names.TaskStream()); n != 2 {
		t.Errorf("the task stream stored %d invocations, want 2: echo's was published again after the cut-short flush", n)
	}
}

// take is a worker's part: it fetches one invocation of task@1 and
// acknowledges it, so that the work queue deletes it.
func (b *bundle) take(t *testing.T, task string) wire.Invocation {
	t.Helper()
	ctx := testCtx(t)
	c, err := provision.EnsureTaskConsumer(ctx, b.js, b.names, task, "1", provision.TaskPolicy{StartToClose: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var inv wire.Invocation
	got := 0
	for m := range batch.Messages() {
		got++
		if err := json.Unmarshal(m.Data(), &inv); err != nil {
			t.Fatal(err)
		}
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got != 1 {
		t.Fatalf("fetched %d invocations of %s, want 1 (%v)", got, task, batch.Error())
	}
	return inv
}
