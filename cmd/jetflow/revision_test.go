package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/worker"
)

// TestRevisionWorkedExample is docs/REVISIONS.md's worked example: the
// order workflow gains a step after its fulfilment; check-revision says
// the orders waiting for payment may move and the paid one diverges;
// deploy --check deploys it; migrate moves the waiting orders by bulk
// job; a moved order takes the new step, and replays exactly.
func TestRevisionWorkedExample(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	doc, err := os.ReadFile("../../examples/order.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Deploy(ctx, "order", doc); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for task, out := range map[string]any{
		"check-stock": map[string]any{"available": true}, "quote-price": map[string]any{"total": 10},
		"score-fraud": map[string]any{"score": 0.1}, "ship": map[string]any{"tracking": "T-1", "to": "ada"},
		"notify": map[string]any{"notified": true, "tracking": "T-1"},
	} {
		if err := w.Register(task, "1", func(context.Context, worker.Invocation) (any, error) { return out, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	for _, id := range []string{"o-wait-1", "o-wait-2", "o-paid"} {
		if err := f.Client.StartRun(ctx, "order", id, map[string]any{"sku": "KB-42", "qty": 1, "customer": "ada"}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, f, id, "waiting")
	}
	if err := f.Client.SendEvent(ctx, "o-paid", "payment", map[string]any{"amount": 10}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "o-paid", "done")

	out, errOut, exit := verb(t, f, "check-revision", "order", "../../examples/order-2.json")
	if exit != 1 || !strings.Contains(out, "run o-wait-1 (order-1, waiting): same") ||
		!strings.Contains(out, "run o-paid (order-1, done): diverges at input") ||
		!strings.Contains(out, "checked 3 runs of order against revision order-2") ||
		!strings.Contains(out, "2 same (2 waiting or running may move), 1 diverge, 0 fail") {
		t.Fatalf("check-revision: exit %d\n%s\n%s", exit, out, errOut)
	}
	t.Log(out)
	out, _, exit = verb(t, f, "check-revision", "order", "../../examples/order-2.json", "--status", "waiting", "--json")
	var rep struct {
		Summary struct{ Checked, Same, Movable int }
	}
	if exit != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Summary.Checked != 2 || rep.Summary.Movable != 2 {
		t.Fatalf("check-revision --status waiting --json: exit %d\n%s", exit, out)
	}
	if out, errOut, exit := verb(t, f, "deploy", "order", "../../examples/order-2.json", "--check"); exit != 1 || !strings.Contains(errOut, "not deployed") {
		t.Fatalf("deploy --check with a diverging settled run: exit %d\n%s\n%s", exit, out, errOut)
	}
	if out, errOut, exit := verb(t, f, "deploy", "order", "../../examples/order-2.json", "--check", "--status", "waiting"); exit != 0 || !strings.Contains(out, "deployed order revision order-2") {
		t.Fatalf("deploy --check --status waiting: exit %d\n%s\n%s", exit, out, errOut)
	}
	if out, errOut, exit := verb(t, f, "migrate", "--to", "order-2", "o-paid"); exit != 1 || !strings.Contains(errOut, "run has ended") {
		t.Fatalf("migrate a settled run: exit %d\n%s\n%s", exit, out, errOut)
	}
	if out, errOut, exit := verb(t, f, "migrate", "--to", "order-2", "o-wait-2"); exit != 0 || !strings.Contains(out, "run o-wait-2 moved from revision order-1 to order-2") {
		t.Fatalf("migrate one run: exit %d\n%s\n%s", exit, out, errOut)
	}
	if out, errOut, exit := verb(t, f, "migrate", "--to", "order-2", "--workflow", "order", "--status", "waiting", "--yes"); exit != 0 || !strings.Contains(out, "done") {
		t.Fatalf("migrate by bulk job: exit %d\n%s\n%s", exit, out, errOut)
	}
	natstest.WaitFor(t, 3*time.Minute, "o-wait-1 on order-2", func() error {
		st, err := f.Client.Status(ctx, "o-wait-1")
		if err == nil && st.Revision != "order-2" {
			return os.ErrNotExist
		}
		return err
	})
	if err := f.Client.SendEvent(ctx, "o-wait-1", "payment", map[string]any{"amount": 10}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, f, "o-wait-1", "done")
	if st.Revision != "order-2" {
		t.Fatalf("status %+v", st)
	}
	// The moved order took the step its new revision added.
	if rec, _, err := f.Runs.Get(ctx, "o-wait-1"); err != nil || !strings.Contains(string(rec), `"/states/receipt":1`) {
		t.Fatalf("record after the new step: %s, %v", rec, err)
	}
	out, _, exit = verb(t, f, "history", "o-wait-1")
	if exit != 0 || !strings.Contains(out, "migrate") {
		t.Errorf("history: exit %d\n%s", exit, out)
	}
	t.Log(out)
	out, errOut, exit = verb(t, f, "replay", "o-wait-1")
	if exit != 0 || !strings.Contains(out, "state equal") {
		t.Fatalf("replay after the migration: exit %d\n%s\n%s", exit, out, errOut)
	}
}
