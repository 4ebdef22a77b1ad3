package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

const (
	oneTask = `{"$workflow": "0.2", "revision": "one/1", "initial": "work", "states": {
		"work": {"work": {"task": "double", "version": "1"}, "then": "done"},
		"done": {"final": true}}}`
	approval = `{"$workflow": "0.2", "revision": "approval/1", "initial": "wait", "states": {
		"wait": {"on": [{"event": "approve", "guard": "$.payload.ok", "to": "done"}], "after": {"ms": 60000, "to": "expired"}},
		"done": {"final": true},
		"expired": {"final": true}}}`
	// Two revisions of one workflow, deployed in this order (the second is
	// the latest), ending in different states.
	pinnedOld = `{"$workflow": "0.2", "revision": "pinned/1", "initial": "old", "states": {"old": {"final": true}}}`
	pinnedNew = `{"$workflow": "0.2", "revision": "pinned/2", "initial": "new", "states": {"new": {"final": true}}}`
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// setup starts a server, deploys the workflows, and runs a dispatcher and
// a worker of double@1; it returns a client.
func setup(t *testing.T) *client.Client {
	t.Helper()
	srv := natstest.Server(t)
	js := natstest.JetStream(t, natstest.Conn(t, srv))
	ctx := ctxFor(t, 30*time.Second)
	names := subjects.Must("")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.OpenRegistry(ctx, js, names, registry.RegistryConfig{Validate: func(doc any) (registry.Info, error) {
		_, err := workflow.Compile(doc, workflow.Options{})
		return registry.Info{Tasks: []registry.TaskRef{{Task: "double", Version: "1"}}}, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range [][2]string{{"one", oneTask}, {"approval", approval}, {"pinned", pinnedOld}, {"pinned", pinnedNew}} {
		if _, err := reg.Deploy(ctx, d[0], []byte(d[1])); err != nil {
			t.Fatal(err)
		}
	}
	quiet := slog.New(slog.DiscardHandler)
	d, err := dispatcher.New(js, nil, reg, dispatcher.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(js, worker.Config{CreateConsumers: true, PollWait: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Register("double", "1", func(_ context.Context, inv worker.Invocation) (any, error) {
		var n float64
		if err := inv.DecodeInput(&n); err != nil {
			return nil, worker.NonRetryable(err)
		}
		return 2 * n, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Error(err)
		}
		if err := d.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	c, err := client.New(ctx, js, client.Config{RecheckInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStartAndWait(t *testing.T) {
	t.Parallel()
	c := setup(t)
	ctx := ctxFor(t, 20*time.Second)
	if err := c.StartRun(ctx, "one", "r1", 21); err != nil {
		t.Fatal(err)
	}
	// A repeated start is harmless.
	if err := c.StartRun(ctx, "one", "r1", 99); err != nil {
		t.Fatal(err)
	}
	st, err := c.Wait(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != wire.StatusDone || string(st.Result) != "42" || st.Workflow != "one" || st.Revision != "one/1" {
		t.Errorf("status %+v", st)
	}
	again, err := c.Status(ctx, "r1")
	if err != nil || again.Status != wire.StatusDone || string(again.Result) != "42" {
		t.Errorf("Status = %+v, %v", again, err)
	}
	// Wait on a run that already ended returns at once.
	if st, err := c.Wait(ctx, "r1"); err != nil || st.Status != wire.StatusDone {
		t.Errorf("second Wait = %+v, %v", st, err)
	}
}

func TestEventsAndCancel(t *testing.T) {
	t.Parallel()
	c := setup(t)
	ctx := ctxFor(t, 20*time.Second)
	for _, id := range []string{"a1", "a2"} {
		if err := c.StartRun(ctx, "approval", id, map[string]any{"order": id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SendEvent(ctx, "a1", "approve", map[string]any{"ok": false}); err != nil {
		t.Fatal(err)
	}
	if err := c.SendEvent(ctx, "a1", "approve", map[string]any{"ok": true}, client.EventID("e2")); err != nil {
		t.Fatal(err)
	}
	st, err := c.Wait(ctx, "a1")
	if err != nil || st.Status != wire.StatusDone || string(st.Result) != `{"order":"a1"}` {
		t.Fatalf("a1: %+v, %v", st, err)
	}
	if err := c.Cancel(ctx, "a2", "changed my mind"); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Wait(ctx, "a2"); err != nil || st.Status != wire.StatusCancelled {
		t.Fatalf("a2: %+v, %v", st, err)
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	c := setup(t)
	ctx := ctxFor(t, 2*time.Minute)
	if err := c.StartRun(ctx, "approval", "w", nil); err != nil {
		t.Fatal(err)
	}
	short := ctxFor(t, 500*time.Millisecond)
	if _, err := c.Wait(short, "w"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v, want the context's deadline", err)
	}
	// The run goes on: the wait that ended did not touch it.
	natstest.WaitFor(t, time.Minute, "run w waiting", func() error {
		st, err := c.Status(ctx, "w")
		if err == nil && st.Status != wire.StatusWaiting {
			err = fmt.Errorf("status %s", st.Status)
		}
		return err
	})
	// A run that does not exist yet is waited for, not refused.
	if _, err := c.Wait(ctxFor(t, 300*time.Millisecond), "nobody"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait(nobody) = %v, want the context's deadline", err)
	}
	if _, err := c.Status(ctx, "nobody"); !errors.Is(err, client.ErrRunNotFound) {
		t.Errorf("Status(nobody) = %v, want ErrRunNotFound", err)
	}
}

func TestRefusesBadNames(t *testing.T) {
	t.Parallel()
	c := setup(t)
	ctx := ctxFor(t, 5*time.Second)
	for name, err := range map[string]error{
		"run id":   c.StartRun(ctx, "one", "a.b", nil),
		"workflow": c.StartRun(ctx, "o*e", "r", nil),
		"event":    c.SendEvent(ctx, "r", "go go", nil),
		"cancel":   c.Cancel(ctx, "r>", ""),
		"input":    c.StartRun(ctx, "one", "r", func() {}),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := c.Wait(ctx, "a b"); !errors.Is(err, subjects.ErrInvalid) {
		t.Errorf("Wait(bad id) = %v", err)
	}
}

// TestStartPinnedToARevision: WithRevision runs the revision it names, not
// the latest.
func TestStartPinnedToARevision(t *testing.T) {
	t.Parallel()
	c := setup(t)
	ctx := ctxFor(t, 20*time.Second)
	if err := c.StartRun(ctx, "pinned", "pin-old", nil, client.WithRevision("pinned/1")); err != nil {
		t.Fatal(err)
	}
	if err := c.StartRun(ctx, "pinned", "pin-latest", nil); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][2]string{"pin-old": {"pinned/1", "/states/old"}, "pin-latest": {"pinned/2", "/states/new"}} {
		st, err := c.Wait(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if st.Status != wire.StatusDone || st.Revision != want[0] || st.State != want[1] {
			t.Errorf("%s: %+v, want done in %s of revision %s", id, st, want[1], want[0])
		}
	}
}

// TestWatchFollowsARun: a watch begun before the start sees the run from
// its first record to its end.
func TestWatchFollowsARun(t *testing.T) {
	t.Parallel()
	c := setup(t)
	ctx := ctxFor(t, 20*time.Second)
	w, err := c.Watch(ctx, "watched")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	if err := c.StartRun(ctx, "one", "watched", 4); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	defs := func(name, revision string) (*workflow.Workflow, error) {
		if name != "one" || revision != "one/1" {
			return nil, fmt.Errorf("asked for %s %s", name, revision)
		}
		return workflow.CompileJSON([]byte(oneTask), workflow.Options{})
	}
	st, err := w.Follow(ctx, &client.Tracker{Workflow: defs}, func(steps []client.Progress) {
		for _, s := range steps {
			kinds = append(kinds, strings.TrimSpace(string(s.Kind)+" "+s.State+s.Task+" "+s.Detail))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != wire.StatusDone || string(st.Result) != "8" {
		t.Errorf("status %+v", st)
	}
	want := "state /states/work, invoke /states/workdouble@1, settle /states/workdouble@1 8, state /states/done, end"
	if got := strings.Join(kinds, ", "); got != want {
		t.Errorf("progress %s\nwant     %s", got, want)
	}
	if _, err := c.Watch(ctx, "a.b"); !errors.Is(err, subjects.ErrInvalid) {
		t.Errorf("Watch(bad id) = %v", err)
	}
}
