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
	c, err := provision.EnsureTaskConsumer(ctx, b.js, b.names, "echo", "1", provision.TaskPolicy{StartToClose: 5 * time.Second})
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
		t.Fatalf("fetched %d invocations, want 1 (%v)", got, batch.Error())
	}
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
