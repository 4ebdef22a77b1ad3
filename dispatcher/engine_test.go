package dispatcher

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
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
func (b *bundle) withEngine(t *testing.T, docs map[string]string, tasks ...kvstore.TaskRef) *bundle {
	t.Helper()
	ctx := testCtx(t)
	reg, err := kvstore.OpenRegistry(ctx, b.js, b.names, kvstore.RegistryConfig{
		Validate: func(doc any) (kvstore.Info, error) {
			if _, err := workflow.Compile(doc, workflow.Options{}); err != nil {
				return kvstore.Info{}, err
			}
			return kvstore.Info{Tasks: tasks}, nil
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
			return setup(t).withEngine(t, map[string]string{"one": oneTask}, kvstore.TaskRef{Task: "echo", Version: "1"})
		})
	})
}

func TestEngineOneTaskRunEndsDone(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"one": oneTask}, kvstore.TaskRef{Task: "echo", Version: "1"})
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

// TestEngineThroughput measures one-task runs per second end to end (one
// dispatcher, a plain worker, one server, all on this machine).
func TestEngineThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	t.Parallel()
	n := 3000
	if raceEnabled {
		n = 500
	}
	b := setup(t).withEngine(t, map[string]string{"one": oneTask}, kvstore.TaskRef{Task: "echo", Version: "1"})
	d := b.dispatcher(t, Config{Concurrency: 64})
	b.simpleWorker(t, "echo", "1")
	began := time.Now()
	for i := range n {
		in, _ := json.Marshal(i)
		b.publishAsync(t, b.names.Start(fmt.Sprintf("r%d", i)), wire.Start{Workflow: "one", Input: in})
	}
	natstest.WaitFor(t, 120*time.Second, "all runs done", func() error {
		if got := testutil.ToFloat64(d.m.settled.WithLabelValues("done")); got < float64(n) {
			return fmt.Errorf("%v of %d done", got, n)
		}
		return nil
	})
	elapsed := time.Since(began)
	t.Logf("%d one-task runs in %s: %.0f runs/s", n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
}
