package provision_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/wire"
)

// TestHeldInvocationReachesTheTaskConsumer: an invocation held back by a
// rate limit is a schedule in the timer stream whose target is the task
// version's release subject; the server produces it there at its time and
// the task stream copies it onto the task subject, where the task's
// consumer delivers it with the invocation's own headers. Before its
// time, the consumer has nothing.
func TestHeldInvocationReachesTheTaskConsumer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, err := provision.EnsureTaskConsumer(b.ctx, b.js, b.names, task, version, provision.TaskPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(2 * time.Second)
	m := nats.NewMsg(b.names.Hold(task, version, "i1"))
	m.Data = []byte(`{"task":"x"}`)
	m.Header.Set("Jetflow-Test", "kept")
	m.Header.Set(wire.HeaderSchedule, "@at "+at.UTC().Format(time.RFC3339Nano))
	m.Header.Set(wire.HeaderScheduleTarget, b.names.Release(task, version))
	if _, err := b.js.PublishMsg(b.ctx, m); err != nil {
		t.Fatal(err)
	}
	var got jetstream.Msg
	natstest.WaitFor(t, 2*time.Minute, "the held invocation is delivered", func() error {
		batch, err := c.FetchNoWait(1)
		if err != nil {
			return err
		}
		for msg := range batch.Messages() {
			got = msg
		}
		if got == nil {
			return errors.New("nothing delivered yet")
		}
		return nil
	})
	if now := time.Now(); now.Before(at) {
		t.Fatalf("delivered at %v, before its time %v", now, at)
	}
	if got.Subject() != b.names.Task(task, version) || string(got.Data()) != `{"task":"x"}` || got.Headers().Get("Jetflow-Test") != "kept" {
		t.Fatalf("delivered %s %s %v", got.Subject(), got.Data(), got.Headers())
	}
	if err := got.Ack(); err != nil {
		t.Fatal(err)
	}
}
