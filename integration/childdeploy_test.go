package integration

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/registry"
)

// TestChildBoundTaskHasNoConsumer: a deploy makes no task consumer for a
// task version its policy binds to a workflow (no worker would ever pull
// it), lists it among the deployment's children, and says so when an
// earlier deploy of the version unbound made one, which it keeps.
func TestChildBoundTaskHasNoConsumer(t *testing.T) {
	t.Parallel()
	e := setup(t, options{dispatchers: none, workers: none})
	consumer := func(task string) bool {
		t.Helper()
		_, err := e.f.JS.Consumer(e.ctx, e.names.TaskStream(), e.names.TaskConsumer(task, "1"))
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return true
	}
	e.deployChildren(t)
	for _, task := range []string{"leaf", "mid", "spawn"} {
		if consumer(task) {
			t.Errorf("task %s@1 is bound to a workflow in every deployment, yet has a consumer", task)
		}
	}
	if !consumer("hold") {
		t.Error("task hold@1, which workers serve, has no consumer")
	}

	doc := []byte(`{"$workflow":"0.2","revision":"bound/1","initial":"a","states":{
		"a":{"work":{"task":"hold","version":"1"},"then":"done"},"done":{"final":true}}}`)
	p, err := policy.Parse([]byte(`{"$children":{"hold@1":{"workflow":"one","cascade":false}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.f.DeployWith(e.ctx, "bound", doc, fleet.DeployOptions{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	want := []fleet.ChildTask{{TaskRef: registry.TaskRef{Task: "hold", Version: "1"}, Workflow: "one"}}
	if len(d.Children) != 1 || d.Children[0] != want[0] {
		t.Errorf("deployment's children %+v, want %+v", d.Children, want)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "task hold@1 runs as a child workflow (one)") ||
		!strings.Contains(d.Notes[0], "its consumer "+e.names.TaskConsumer("hold", "1")+" exists") {
		t.Errorf("notes %q, want one saying hold@1's earlier consumer stays", d.Notes)
	}
	if !consumer("hold") {
		t.Error("the deploy that binds hold@1 removed the consumer the workflows invoking it unbound need")
	}
}
