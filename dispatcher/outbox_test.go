package dispatcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
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
	inv := b.take(t, "echo")
	// The server forgets the message id of the invocation it deleted.
	natstest.Restart(t, b.srv)

	failing.Store(1)
	b.answer(t, inv, `{"ok":true}`)
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

// answer is the rest of a worker's part: it publishes output as the
// result of inv, as the SDK does.
func (b *bundle) answer(t *testing.T, inv wire.Invocation, output string) {
	t.Helper()
	res, err := json.Marshal(wire.Result{Activation: inv.Activation, Node: inv.Node, Attempt: inv.Attempt, Token: inv.Token, Output: json.RawMessage(output)})
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(inv.Reply)
	m.Data = res
	m.Header.Set(wire.HeaderMsgID, worker.ResultMsgID(inv.Token))
	if _, err := b.js.PublishMsg(testCtx(t), m); err != nil {
		t.Fatal(err)
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

// TestUnsureStepsCountOnce: a step whose save stood has started or
// settled its run, and counts so once, even when it failed after: its
// flush failed, or its save was stored but the reply was lost. The
// redelivery meets the input applied and only flushes; when the counters
// waited for the flush, or for a save's reply, a run settled under a
// timeout was never counted, and TestScale waited for runs that were
// done.
func TestUnsureStepsCountOnce(t *testing.T) {
	t.Parallel()
	fail := errors.New("simulated timeout")
	for name, at := range map[string]func(h *hooks, once func() error){
		"flush fails": func(h *hooks, once func() error) {
			h.publish = func(string) error { return once() }
		},
		"save stored, reply lost": func(h *hooks, once func() error) {
			h.stored = func(string) error { return once() }
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t).withEngine(t, map[string]string{"one": oneTask}, registry.TaskRef{Task: "echo", Version: "1"})
			// armed: the next step (the start's, then the result's) is to
			// fail once at the point under test.
			var armed, failed atomic.Int32
			armed.Store(1)
			h := &hooks{}
			at(h, func() error {
				if armed.CompareAndSwap(1, 0) {
					failed.Add(1)
					return fail
				}
				return nil
			})
			d := b.dispatcher(t, Config{RetryDelay: 50 * time.Millisecond, hooks: h})
			b.startTask(t, "r", map[string]any{"n": 1})
			inv := b.take(t, "echo")
			armed.Store(1)
			b.answer(t, inv, `{"ok":true}`)
			b.waitStatus(t, "r", wire.StatusDone, 30*time.Second)
			if failed.Load() != 2 {
				t.Fatalf("%d steps failed, want 2 (the start's and the result's): the test did not test", failed.Load())
			}
			natstest.WaitFor(t, 10*time.Second, "the result's redelivery met it applied", func() error {
				if got := testutil.ToFloat64(d.m.messages.WithLabelValues(subjects.KindResult, outcomeDuplicate)); got < 1 {
					return fmt.Errorf("%v results met applied", got)
				}
				return nil
			})
			if got := testutil.ToFloat64(d.m.started); got != 1 {
				t.Errorf("runs started counted %v, want 1", got)
			}
			if got := testutil.ToFloat64(d.m.settled.WithLabelValues(wire.StatusDone)); got != 1 {
				t.Errorf("runs settled done counted %v, want 1", got)
			}
		})
	}
}
