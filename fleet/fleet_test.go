package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

const double = `{"$workflow":"0.2","revision":"d1","initial":"a","states":{
 "a":{"work":{"task":"double","version":"1.0"},"then":"c"},
 "c":{"choose":[{"guard":{"$gt":["$.context.data",10]},"to":"big"}],"otherwise":"small"},
 "big":{"final":true},"small":{"final":true}}}`

// TestEmbeddedRunEndsDone starts the embedded default with a dispatcher,
// deploys, serves the task with the SDK and runs a workflow to done.
func TestEmbeddedRunEndsDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := Start(ctx, Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Dispatcher: &dispatcher.Config{},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Stop(context.Background()) }()

	d, err := f.Deploy(ctx, "double", []byte(double))
	if err != nil {
		t.Fatal(err)
	}
	if d.Revision != "d1" || len(d.Tasks) != 1 || d.Tasks[0].Task != "double" {
		t.Fatalf("deployment %+v", d)
	}
	w, err := worker.New(f.JS, worker.Config{Names: f.Names})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Register("double", "1.0", func(ctx context.Context, inv worker.Invocation) (any, error) {
		var n float64
		if err := json.Unmarshal(inv.Input, &n); err != nil {
			return nil, err
		}
		return n * 2, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(context.Background()) }()

	if err := f.Client.StartRun(ctx, "double", "run-1", 7); err != nil {
		t.Fatal(err)
	}
	st, err := f.Client.Wait(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "done" || string(st.Result) != "14" || st.State != "/states/big" {
		t.Fatalf("status %+v", st)
	}
}

func TestDeployRefusesWithPath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := Start(ctx, Config{Embedded: embedded.Config{Listen: "127.0.0.1:-1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Stop(context.Background()) }()
	_, err = f.Deploy(ctx, "bad", []byte(`{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"work":{"task":"x","version":""},"then":"a"}}}`))
	if p, _ := fault.PathOf(err); fault.CodeOf(err) != fault.JF0021 || p != "/states/a/work" {
		t.Fatalf("deploy of a bad document: %v", err)
	}
	_, err = f.Deploy(ctx, "bad", []byte(`{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"work":{"task":"x.y","version":"1"},"then":"b"},"b":{"final":true}}}`))
	var pe *PathError
	if !errors.As(err, &pe) || pe.Path != "/states/a/work" {
		t.Fatalf("deploy of a task name that breaks a subject: %v", err)
	}
}

func TestValidateRefusesEventTypesThatBreakSubjects(t *testing.T) {
	t.Parallel()
	doc := map[string]any{"$workflow": "0.2", "revision": "r", "initial": "w", "states": map[string]any{
		"w":    map[string]any{"on": []any{map[string]any{"event": "order.paid", "to": "done"}}},
		"done": map[string]any{"final": true},
	}}
	_, err := Validate(doc)
	var pe *PathError
	if !errors.As(err, &pe) || pe.Path != "/states/w/on/0/event" {
		t.Fatalf("Validate = %v", err)
	}
}
