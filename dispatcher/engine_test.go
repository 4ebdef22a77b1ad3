package dispatcher

import (
	"testing"
	"time"

	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/wire"
)

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

// withEngine deploys docs (their tasks listed in tasks) and makes b's
// dispatchers run the real engine.
func (b *bundle) withEngine(t testing.TB, docs map[string]string, tasks ...registry.TaskRef) *bundle {
	t.Helper()
	ctx := testCtx(t)
	reg, err := registry.OpenRegistry(ctx, b.js, b.names, registry.RegistryConfig{
		Validate: func(doc any) (registry.Info, error) {
			if _, err := workflow.Compile(doc, workflow.Options{}); err != nil {
				return registry.Info{}, err
			}
			return registry.Info{Tasks: tasks}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range docs {
		if _, err := reg.Deploy(ctx, name, []byte(doc)); err != nil {
			t.Fatalf("deploy %s: %v", name, err)
		}
	}
	b.reg = reg
	return b
}

// reducers runs test once over the fake reducer and once over the engine
// (with workflow "one" deployed).
func reducers(t *testing.T, test func(t *testing.T, setup func(t *testing.T) *bundle)) {
	t.Run("fake", func(t *testing.T) {
		t.Parallel()
		test(t, setup)
	})
	t.Run("engine", func(t *testing.T) {
		t.Parallel()
		test(t, func(t *testing.T) *bundle {
			return setup(t).withEngine(t, map[string]string{"one": oneTask}, registry.TaskRef{Task: "echo", Version: "1"})
		})
	})
}

// How fast one-task runs go end to end (a dispatcher, a worker and a
// server in one process) is the one-task scenario of `jetflow bench
// --modes single`, with its targets; the tests here check behaviour only.
func TestEngineOneTaskRunEndsDone(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"one": oneTask}, registry.TaskRef{Task: "echo", Version: "1"})
	b.dispatcher(t, Config{})
	b.serveTask(t, "echo", "1", echoUpper)
	b.startTask(t, "r1", map[string]any{"x": 1})
	st := b.waitStatus(t, "r1", wire.StatusDone, 10*time.Second).Status
	if got, want := string(st.Result), `{"attempt":1,"echo":{"x":1}}`; got != want {
		t.Errorf("result %s, want %s", got, want)
	}
	if st.Workflow != "one" || st.Revision != "one/1" {
		t.Errorf("run pinned to %s@%s, want one@one/1", st.Workflow, st.Revision)
	}
}
