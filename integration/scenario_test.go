package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
)

// scenario is one workflow run from start to end, with what it must end as.
type scenario struct {
	name     string
	workflow string
	input    any
	// drive does what the run needs after its start (events, cancel).
	drive func(t *testing.T, e *env, runID string)
	// The run's end: status, final state, result (canonical JSON; ""
	// skips) or error code.
	status, state, result, errCode string
	// says is a phrase the result or the error message must contain.
	says string
	// attempts is how many task attempts the run makes.
	attempts int
	// inputs is how many inputs the run's record applied, rejected how
	// many more it refused.
	inputs, rejected int
}

var scenarios = []scenario{
	{
		name: "one task", workflow: "one", input: 21,
		status: wire.StatusDone, state: "/states/done", result: `42`, attempts: 1, inputs: 2,
	},
	{
		name: "DAG fan-out joined by ports", workflow: "fan", input: 3,
		status: wire.StatusDone, state: "/states/done", result: `{"d":6,"n":-3,"s":9,"sum":12}`, attempts: 3, inputs: 4,
	},
	{
		name: "JSLT node over a task's output", workflow: "jslt", input: 21,
		status: wire.StatusDone, state: "/states/done", result: `{"at":"$","doubled":42}`, attempts: 1, inputs: 2,
	},
	{
		name: "zero-delay wait after a task fires with its result", workflow: "zerowait", input: 1,
		status: wire.StatusDone, state: "/states/late", result: `2`, attempts: 1, inputs: 2,
	},
	{
		name: "bounded loop", workflow: "loop", input: map[string]any{"n": 0},
		status: wire.StatusDone, state: "/states/done", result: `{"n":3}`, attempts: 3, inputs: 4,
	},
	{
		name: "bounded loop exhausts its limit", workflow: "loop", input: map[string]any{"n": -10},
		status: wire.StatusFailed, errCode: "JF2015", attempts: 5, inputs: 6,
	},
	{
		name: "choice taken", workflow: "choice", input: 11,
		status: wire.StatusDone, state: "/states/big", result: `11`, inputs: 1,
	},
	{
		name: "choice otherwise", workflow: "choice", input: 3,
		status: wire.StatusDone, state: "/states/small", result: `3`, inputs: 1,
	},
	{
		name: "event from a plain NATS client", workflow: "approval", input: map[string]any{"order": 7},
		drive: approveWithPlainNATS, status: wire.StatusDone, state: "/states/done", result: `42`, attempts: 1, inputs: 4,
	},
	{
		name: "after timer", workflow: "sleepy", input: map[string]any{"n": 1},
		status: wire.StatusDone, state: "/states/late", result: `{"n":1}`, inputs: 2,
	},
	{
		name: "catch of a failing task after its retries", workflow: "catch", input: map[string]any{"n": 1},
		status: wire.StatusDone, state: "/states/recovered", attempts: 3,
		result: `{"error":{"code":"JF2006","message":"JF2006: node 'task' failed: boom: payment gateway down at /nodes/task","nodeId":"task"}}`, inputs: 6,
	},
	{
		name: "uncaught failure", workflow: "uncaught", input: map[string]any{"n": 1},
		status: wire.StatusFailed, errCode: "JF2006", says: "card declined", attempts: 1, inputs: 2,
	},
	{
		name: "nested flow", workflow: "nested", input: map[string]any{"n": 0},
		status: wire.StatusDone, state: "/states/done", result: `{"n":3}`, attempts: 3, inputs: 4,
	},
	{
		name: "retries succeed on the third attempt", workflow: "flaky", input: "x",
		status: wire.StatusDone, state: "/states/done", result: `{"attempt":3,"input":"x"}`, attempts: 3, inputs: 6,
	},
	{
		name: "cancel while waiting", workflow: "forever", input: 1,
		drive: cancelWhenWaiting, status: wire.StatusCancelled, inputs: 2,
	},
	{
		name: "cancel during a task", workflow: "hold", input: 1,
		drive: cancelDuringTask, status: wire.StatusCancelled, attempts: 1, rejected: 1, inputs: 3,
	},
	{
		name: "task output over the max payload travels by reference", workflow: "huge", input: 1,
		status: wire.StatusDone, state: "/states/done", attempts: 1, inputs: 2,
	},
}

// TestScenarios runs every scenario on one deployment, concurrently, each
// as its own run.
func TestScenarios(t *testing.T) {
	t.Parallel()
	// The parallel subtests may wait minutes for a slot behind the
	// package's other tests: the deployment must outlive that wait (each
	// subtest bounds its own waits).
	e := setup(t, options{timeout: 30 * time.Minute})
	for i, sc := range scenarios {
		runID := fmt.Sprintf("sc-%02d", i)
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			e.start(t, sc.workflow, runID, sc.input)
			if sc.drive != nil {
				sc.drive(t, e, runID)
			}
			st := e.wait(t, runID, 30*time.Second)
			checkEnd(t, sc, st)
			// A refused input may still be in flight after the end.
			waitRejected(t, e, runID, sc.rejected)
			rec := e.checkRecord(t, runID, sc.rejected)
			if len(rec.Applied) != sc.inputs-sc.rejected {
				t.Errorf("%d inputs applied, want %d", len(rec.Applied), sc.inputs)
			}
			if got := len(e.tasks.invocations(runID)); got != sc.attempts {
				t.Errorf("%d task attempts, want %d", got, sc.attempts)
			}
			checkReplay(t, e, runID)
		})
	}
}

func checkEnd(t *testing.T, sc scenario, st *wire.Status) {
	t.Helper()
	if st.Status != sc.status {
		t.Fatalf("status %s, want %s (%+v)", st.Status, sc.status, st)
	}
	if sc.state != "" && st.State != sc.state {
		t.Errorf("ended in %s, want %s", st.State, sc.state)
	}
	if sc.result != "" {
		if got, want := canonical(t, string(st.Result)), canonical(t, sc.result); got != want {
			t.Errorf("result %s, want %s", got, want)
		}
	}
	if sc.errCode != "" && (st.Error == nil || st.Error.Code != sc.errCode) {
		t.Errorf("error %+v, want code %s", st.Error, sc.errCode)
	}
	text := string(st.Result)
	if st.Error != nil {
		text += st.Error.Message
	}
	if !strings.Contains(text, sc.says) {
		t.Errorf("result %s, error %+v: want them to say %q", st.Result, st.Error, sc.says)
	}
}

// approveWithPlainNATS publishes the raw event bytes the protocol
// documents, from a connection that uses nothing of jetflow but the
// subject name: a refusal with core NATS, then an approval through
// JetStream.
func approveWithPlainNATS(t *testing.T, e *env, runID string) {
	e.waitStatus(t, runID, wire.StatusWaiting, 15*time.Second)
	nc, err := nats.Connect(e.f.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subject := e.names.Event(runID, "approve")
	if err := nc.Publish(subject, []byte(`{"ok":false,"amount":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(e.ctx, subject, []byte(`{"ok":true,"amount":21}`)); err != nil {
		t.Fatal(err)
	}
}

func cancelWhenWaiting(t *testing.T, e *env, runID string) {
	e.waitStatus(t, runID, wire.StatusWaiting, 15*time.Second)
	if err := e.f.Client.Cancel(e.ctx, runID, "no longer needed"); err != nil {
		t.Fatal(err)
	}
}

// cancelDuringTask cancels while the hold task runs, then lets the task
// finish: its late result must be refused and recorded.
func cancelDuringTask(t *testing.T, e *env, runID string) {
	deadline := time.After(time.Minute)
	for held := false; !held; {
		select {
		case id := <-e.tasks.held:
			held = id == runID
		case <-deadline:
			t.Fatal("the hold task never started")
		}
	}
	if err := e.f.Client.Cancel(e.ctx, runID, "customer left"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, runID, wire.StatusCancelled, 15*time.Second)
	e.tasks.unhold(runID)
}

// waitRejected waits until the run's record holds n rejections.
func waitRejected(t *testing.T, e *env, runID string, n int) {
	t.Helper()
	if n == 0 {
		return
	}
	natstest.WaitFor(t, 15*time.Second, fmt.Sprintf("run %s: %d rejections recorded", runID, n), func() error {
		if rec := e.record(t, runID); rec == nil || len(rec.Rejected) < n {
			data, _ := json.Marshal(rec)
			return fmt.Errorf("record %s", data)
		}
		return nil
	})
}
