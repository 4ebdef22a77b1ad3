package registry

import (
	"context"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/step"
)

// docRegistry serves fixed deployments by revision.
type docRegistry map[string]Deployment

func (r docRegistry) Get(_ context.Context, name string) (Deployment, error) {
	return r.GetRevision(context.Background(), name, "")
}

func (r docRegistry) GetRevision(_ context.Context, name, revision string) (Deployment, error) {
	d, ok := r[revision]
	if !ok {
		return Deployment{}, ErrWorkflowNotFound
	}
	return d, nil
}

// A deployment's own policy drives its runs' retries; Config.RunOptions
// only those of a deployment without one.
func TestLoaderUsesTheDeploymentsPolicy(t *testing.T) {
	t.Parallel()
	pol, err := policy.Parse([]byte(`{"echo@1":{"maxAttempts":7,"initialInterval":"20ms"}}`))
	if err != nil {
		t.Fatal(err)
	}
	doc := []byte(oneTask)
	reg := docRegistry{
		"with":    {Name: "one", Document: Document{Hash: "h1", Revision: "with", Doc: doc, Policy: pol}},
		"without": {Name: "one", Document: Document{Hash: "h2", Revision: "without", Doc: doc}},
	}
	host := run.RetryPolicy{MaxAttempts: 2}
	l, err := NewLoader(reg, run.Options{
		Retry: func(string, string) run.RetryPolicy { return host },
	}, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		revision string
		attempts int
		initial  float64
	}{{"with", 7, 20}, {"without", 2, 0}} {
		d, err := l.Load(context.Background(), "one", c.revision)
		if err != nil {
			t.Fatal(err)
		}
		got := d.Program.(step.Engine).Options.Retry("echo", "1")
		if got.MaxAttempts != c.attempts || got.InitialIntervalMs != c.initial {
			t.Errorf("revision %s: retry %+v, want %d attempts from %vms", c.revision, got, c.attempts, c.initial)
		}
	}
}

// oneTask is a workflow that runs task echo@1 on its input and ends with
// the task's output.
const oneTask = `{
  "$workflow": "0.2",
  "revision": "one/1",
  "initial": "work",
  "states": {
    "work": {"work": {"task": "echo", "version": "1"}, "then": "done"},
    "done": {"final": true}
  }
}`
