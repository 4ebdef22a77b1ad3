package client_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// TestTaskWorkers reads a task version's consumer: missing, then an
// invocation no worker pulls, then the version paused by an operator,
// which waits for the operator rather than a worker.
func TestTaskWorkers(t *testing.T) {
	t.Parallel()
	srv := natstest.Server(t)
	js := natstest.JetStream(t, natstest.Conn(t, srv))
	ctx := ctxFor(t, 30*time.Second)
	names := subjects.Must("")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ctx, js, client.Config{Names: names})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()

	w, err := c.TaskWorkers(ctx, "pack", "1")
	if err != nil {
		t.Fatal(err)
	}
	if w.Consumer || !w.Starved() || !strings.Contains(w.Text(now), "pack@1 has no consumer") {
		t.Errorf("no consumer: %+v, %q", w, w.Text(now))
	}

	if _, err := provision.EnsureTaskConsumer(ctx, js, names, "pack", "1", provision.TaskPolicy{}); err != nil {
		t.Fatal(err)
	}
	if w, err = c.TaskWorkers(ctx, "pack", "1"); err != nil {
		t.Fatal(err)
	}
	if !w.Consumer || w.Starved() || w.Text(now) != "" {
		t.Errorf("a consumer with nothing waiting: %+v, %q", w, w.Text(now))
	}
	if _, err := js.Publish(ctx, names.Task("pack", "1"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	// The consumer counts a stored message a moment after its publish is
	// acknowledged.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if w, err = c.TaskWorkers(ctx, "pack", "1"); err != nil {
			t.Fatal(err)
		}
		if w.Pending > 0 || time.Now().After(deadline) {
			break
		}
	}
	if want := "no worker is pulling pack@1: 1 invocation waiting, never pulled"; !w.Starved() || w.Pending != 1 || w.Text(now) != want {
		t.Errorf("an invocation nobody pulls: %+v, %q, want %q", w, w.Text(now), want)
	}

	if _, err := provision.PauseTask(ctx, js, names, "pack", "1", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if w, err = c.TaskWorkers(ctx, "pack", "1"); err != nil {
		t.Fatal(err)
	}
	if !w.Paused || w.Starved() {
		t.Errorf("a paused task version: %+v", w)
	}

	if _, err := c.TaskWorkers(ctx, "pack.*", "1"); err == nil {
		t.Error("a task name that is no subject token was read")
	}
}
