package provision_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
)

// TestPauseTask: a task version's consumer pauses until resumed or until
// the time given, when the server ends the pause by itself; a deploy
// (EnsureTaskConsumer) keeps the pause.
func TestPauseTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := provision.PauseTask(b.ctx, b.js, b.names, task, version, time.Time{}); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("pause of an undeployed task: %v, want ErrConsumerNotFound", err)
	}
	if _, err := provision.EnsureTaskConsumer(b.ctx, b.js, b.names, task, version, provision.TaskPolicy{}); err != nil {
		t.Fatal(err)
	}
	paused := func() bool {
		t.Helper()
		p, _, err := provision.TaskPaused(b.ctx, b.js, b.names, task, version)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if paused() {
		t.Fatal("a new task consumer is paused")
	}
	until, err := provision.PauseTask(b.ctx, b.js, b.names, task, version, time.Time{})
	if err != nil || time.Until(until) < 50*365*24*time.Hour {
		t.Fatalf("pause without an end: until %v, %v", until, err)
	}
	if _, err := provision.EnsureTaskConsumer(b.ctx, b.js, b.names, task, version, provision.TaskPolicy{MaxAckPending: 9}); err != nil {
		t.Fatal(err)
	}
	if !paused() {
		t.Fatal("a deploy ended the pause")
	}
	if err := provision.ResumeTask(b.ctx, b.js, b.names, task, version); err != nil {
		t.Fatal(err)
	}
	if paused() {
		t.Fatal("resumed, still paused")
	}
	if _, err := provision.PauseTask(b.ctx, b.js, b.names, task, version, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if !paused() {
		t.Fatal("not paused until a second from now")
	}
	natstest.WaitFor(t, 15*time.Second, "the pause ends by itself", func() error {
		if paused() {
			return errors.New("still paused")
		}
		return nil
	})
	if _, err := provision.PauseTask(b.ctx, b.js, b.names, "a.b", version, time.Time{}); err == nil {
		t.Fatal("a bad task name accepted")
	}
}
