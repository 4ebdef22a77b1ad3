package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/runrecord"
)

// orderRun drives the demo's order workflow through the real reducer,
// recording after each message the record a dispatcher would store.
type orderRun struct {
	t       *testing.T
	wf      *workflow.Workflow
	st      *run.State
	now     float64
	invokes map[string]*run.Invoke // by node
	records []*runrecord.Record
}

func newOrderRun(t *testing.T) *orderRun {
	wf, err := workflow.CompileJSON(demoOrder, workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &orderRun{t: t, wf: wf, now: 1000, invokes: map[string]*run.Invoke{}}
}

func (o *orderRun) apply(msg run.Message) {
	o.t.Helper()
	o.now += 10
	msg.Time = o.now
	st, effects, err := run.Apply(o.wf, o.st, msg, run.Options{})
	if err != nil {
		o.t.Fatalf("%s: %v", msg.Kind, err)
	}
	st.Workflow, st.Revision = "order", "order-1"
	o.st = st
	for _, e := range effects {
		if e.Invoke != nil {
			o.invokes[e.Invoke.Node] = e.Invoke
		}
	}
	data, err := run.Encode(st)
	if err != nil {
		o.t.Fatal(err)
	}
	o.records = append(o.records, &runrecord.Record{State: data})
}

func (o *orderRun) result(node string, output any, fail string) {
	o.t.Helper()
	inv := o.invokes[node]
	if inv == nil {
		o.t.Fatalf("node %s was never invoked", node)
	}
	r := &run.TaskResult{Activation: inv.Activation, Node: node, Attempt: inv.Attempt, Output: output}
	if fail != "" {
		r.Output, r.Error = nil, &run.TaskError{Message: fail, NonRetryable: true}
	}
	o.apply(run.Message{Kind: run.KindResult, Result: r})
}

// lines tracks every record and renders the steps as plain lines.
func (o *orderRun) lines() []string {
	tr := &tracker{workflow: func(string, string) (*workflow.Workflow, error) { return o.wf, nil }}
	var buf bytes.Buffer
	v := &view{w: &buf, running: map[string]bool{}}
	for _, rec := range o.records {
		steps, err := tr.observe(rec)
		if err != nil {
			o.t.Fatal(err)
		}
		v.show(steps)
	}
	return strings.Split(strings.TrimSpace(buf.String()), "\n")
}

func TestTrackerFollowsAPaidOrder(t *testing.T) {
	o := newOrderRun(t)
	o.apply(run.Message{Kind: run.KindStart, RunID: "r1", Input: map[string]any{"sku": "KB-42", "qty": 2.0, "customer": "ada"}})
	o.result("stock", map[string]any{"available": true}, "")
	o.result("price", map[string]any{"total": 59.98}, "")
	o.result("fraud", map[string]any{"score": 0.1}, "")
	o.apply(run.Message{Kind: run.KindEvent, Event: &run.Event{Type: "payment", Payload: map[string]any{"amount": 59.98}, HasPayload: true}})
	o.result("task", map[string]any{"tracking": "T1"}, "") // ship
	o.result("task", map[string]any{"notified": true}, "") // notify
	want := []string{
		"+0.000s state check",
		"+0.000s task fraud score-fraud@1 invoked, attempt 1",
		"+0.000s task price quote-price@1 invoked, attempt 1",
		"+0.000s task stock check-stock@1 invoked, attempt 1",
		`+0.010s task stock check-stock@1 ok {"available":true}`,
		`+0.020s task price quote-price@1 ok {"total":59.98}`,
		"+0.030s task fraud score-fraud@1 ok",
		"+0.030s state decide",
		"+0.030s state await-payment",
		"+0.030s waiting for event payment or a timer of 1.5s",
		"+0.040s state fulfil",
		"+0.040s state fulfil/ship",
		"+0.040s task ship ship@1 invoked, attempt 1",
		`+0.050s task ship ship@1 ok {"tracking":"T1"}`,
		"+0.050s state fulfil/notify",
		"+0.050s task notify notify@1 invoked, attempt 1",
		`+0.060s task notify notify@1 ok {"notified":true}`,
		"+0.060s state fulfil/sent",
		"+0.060s state done",
		"done in 0.060s",
		`result {"notified":true}`,
	}
	if got := o.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTrackerReportsACaughtFailure(t *testing.T) {
	o := newOrderRun(t)
	o.apply(run.Message{Kind: run.KindStart, RunID: "r2", Input: map[string]any{"sku": "X", "qty": 1.0, "customer": "c"}})
	o.result("price", map[string]any{"total": 1.0}, "")
	o.result("stock", nil, "no such SKU")
	got := strings.Join(o.lines(), "\n")
	for _, w := range []string{
		"+0.020s task stock check-stock@1 failed: node 'stock' failed: no such SKU (caught)\n",
		"+0.020s task fraud score-fraud@1 ok\n", // abandoned with its activation; reported settled
		"+0.020s state rejected\ndone in 0.020s\nresult {\"error\":",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("lines lack %q:\n%s", w, got)
		}
	}
}

func TestTrackerReportsCancel(t *testing.T) {
	o := newOrderRun(t)
	o.apply(run.Message{Kind: run.KindStart, RunID: "r3", Input: map[string]any{"sku": "X", "qty": 1.0, "customer": "c"}})
	o.apply(run.Message{Kind: run.KindCancel, Reason: "test"})
	got := strings.Join(o.lines(), "\n")
	if !strings.Contains(got, "task stock check-stock@1 failed: abandoned: the run was cancelled\n") || !strings.Contains(got, "\ncancelled in ") {
		t.Errorf("lines:\n%s", got)
	}
}

// TestOrderEnteredWithoutWorkflow falls back to declaration-free order:
// states are still all reported.
func TestOrderEnteredWithoutWorkflow(t *testing.T) {
	got := orderEntered(nil, []string{"/states/a"}, map[string]int{"/states/c": 1, "/states/b": 1})
	if strings.Join(got, " ") != "/states/b /states/c" {
		t.Errorf("got %v", got)
	}
}

func TestPrettyView(t *testing.T) {
	var buf bytes.Buffer
	v := &view{w: &buf, tty: true, running: map[string]bool{}}
	v.show([]progressStep{{Kind: stepState, At: 1, State: "/states/fulfil/flow/states/ship"}, {Kind: stepSettle, At: 2, Name: "ship", OK: true, Detail: "{}"}})
	out := buf.String()
	for _, w := range []string{"→ fulfil/ship", "✓ ship", ansiGreen, clearLine} {
		if !strings.Contains(out, w) {
			t.Errorf("terminal view lacks %q: %q", w, out)
		}
	}
}

func TestStateName(t *testing.T) {
	for id, want := range map[string]string{"/states/a": "a", "/states/f/flow/states/g/flow/states/h": "f/g/h", "": ""} {
		if got := stateName(id); got != want {
			t.Errorf("stateName(%q) = %q, want %q", id, got, want)
		}
	}
}
