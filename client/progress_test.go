package client_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// orderRun drives examples/order.json through the real reducer,
// recording after each message the record a dispatcher would store.
type orderRun struct {
	t       *testing.T
	wf      *workflow.Workflow
	st      *run.State
	now     float64
	invokes map[string]*run.Invoke // by node
	records []*runrecord.Record
	results map[uint64]*wire.Result // the task results applied, by sequence
}

func newOrderRun(t *testing.T) *orderRun {
	doc, err := os.ReadFile("../examples/order.json")
	if err != nil {
		t.Fatal(err)
	}
	wf, err := workflow.CompileJSON(doc, workflow.Options{})
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
	applied := []uint64{uint64(len(o.records) + 1)}
	if n := len(o.records); n > 0 {
		applied = append(slices.Clone(o.records[n-1].Applied), applied...)
	}
	o.records = append(o.records, &runrecord.Record{State: data, Applied: applied})
	if r := msg.Result; r != nil {
		if o.results == nil {
			o.results = map[uint64]*wire.Result{}
		}
		w := &wire.Result{Activation: r.Activation, Node: r.Node, Attempt: r.Attempt}
		if r.Output != nil {
			w.Output, _ = json.Marshal(r.Output)
		}
		if r.Error != nil {
			w.Error = &wire.TaskError{Message: r.Error.Message, Code: r.Error.Code, NonRetryable: r.Error.NonRetryable}
		}
		o.results[uint64(len(o.records))] = w
	}
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

// paid starts a run of the order, settles its three checks and pays, so
// that it enters fulfil and invokes ship.
func (o *orderRun) paid(runID string) {
	o.t.Helper()
	o.apply(run.Message{Kind: run.KindStart, RunID: runID, Input: map[string]any{"sku": "KB-42", "qty": 2.0, "customer": "ada"}})
	o.result("stock", map[string]any{"available": true}, "")
	o.result("price", map[string]any{"total": 59.98}, "")
	o.result("fraud", map[string]any{"score": 0.1}, "")
	o.apply(run.Message{Kind: run.KindEvent, Event: &run.Event{Type: "payment", Payload: map[string]any{"amount": 59.98}, HasPayload: true}})
}

// done takes a paid order through ship and notify to its end.
func (o *orderRun) done(runID string) {
	o.t.Helper()
	o.paid(runID)
	o.result("task", map[string]any{"tracking": "T1"}, "") // ship
	o.result("task", map[string]any{"notified": true}, "") // notify
}

// track observes every record with tr and writes each progress as a line
// (line).
func (o *orderRun) track(tr *client.Tracker) []string {
	var lines []string
	for _, rec := range o.records {
		steps, err := tr.Observe(rec)
		if err != nil {
			o.t.Fatal(err)
		}
		for _, p := range steps {
			lines = append(lines, line(p))
		}
	}
	return lines
}

// lines tracks the run knowing its workflow.
func (o *orderRun) lines() []string {
	return o.track(&client.Tracker{Workflow: func(string, string) (*workflow.Workflow, error) { return o.wf, nil }})
}

// line is a progress as "<ms> <kind> <what>".
func line(p client.Progress) string {
	t := fmt.Sprintf("%g %s ", p.At-1000, p.Kind)
	switch p.Kind {
	case client.ProgressState:
		return t + p.State
	case client.ProgressInvoke:
		return fmt.Sprintf("%s%s %s %s attempt %d", t, p.State, p.Name, p.Task, p.Attempt)
	case client.ProgressSettle:
		return strings.TrimSpace(fmt.Sprintf("%s%s %s ok=%t retry=%t %s", t, p.Name, p.Task, p.OK, p.Retry, p.Detail))
	case client.ProgressWaiting:
		return t + p.State + " for " + p.Detail
	case client.ProgressEnd:
		s := p.Status
		out := fmt.Sprintf("%s%s %s in %s", t, s.Run, s.Status, s.State)
		if s.Error != nil {
			out += " error " + s.Error.Code
		}
		return out + " result " + string(s.Result)
	}
	return t
}

func TestTrackerFollowsAPaidOrder(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t)
	o.done("r1")
	want := []string{
		"10 state /states/check",
		"10 invoke /states/check fraud score-fraud@1 attempt 1",
		"10 invoke /states/check price quote-price@1 attempt 1",
		"10 invoke /states/check stock check-stock@1 attempt 1",
		`20 settle stock check-stock@1 ok=true retry=false {"available":true}`,
		`30 settle price quote-price@1 ok=true retry=false {"total":59.98}`,
		"40 settle fraud score-fraud@1 ok=true retry=false",
		"40 state /states/decide",
		"40 state /states/await-payment",
		"40 waiting /states/await-payment for event payment or a timer of 1m0s",
		"50 state /states/fulfil",
		"50 state /states/fulfil/flow/states/ship",
		"50 invoke /states/fulfil/flow/states/ship ship ship@1 attempt 1",
		`60 settle ship ship@1 ok=true retry=false {"tracking":"T1"}`,
		"60 state /states/fulfil/flow/states/notify",
		"60 invoke /states/fulfil/flow/states/notify notify notify@1 attempt 1",
		`70 settle notify notify@1 ok=true retry=false {"notified":true}`,
		"70 state /states/fulfil/flow/states/sent",
		"70 state /states/done",
		`70 end r1 done in /states/done result {"notified":true}`,
	}
	if got := o.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTrackerReportsACaughtFailure(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t)
	o.apply(run.Message{Kind: run.KindStart, RunID: "r2", Input: map[string]any{"sku": "X", "qty": 1.0, "customer": "c"}})
	o.result("price", map[string]any{"total": 1.0}, "")
	o.result("stock", nil, "no such SKU")
	got := strings.Join(o.lines(), "\n")
	for _, w := range []string{
		"30 settle stock check-stock@1 ok=false retry=false node 'stock' failed: no such SKU (caught)\n",
		"30 settle fraud score-fraud@1 ok=true retry=false\n", // abandoned with its activation; reported settled
		"30 state /states/rejected\n30 end r2 done in /states/rejected result {\"error\":",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("progress lacks %q:\n%s", w, got)
		}
	}
}

func TestTrackerReportsCancel(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t)
	o.apply(run.Message{Kind: run.KindStart, RunID: "r3", Input: map[string]any{"sku": "X", "qty": 1.0, "customer": "c"}})
	o.apply(run.Message{Kind: run.KindCancel, Reason: "test"})
	got := strings.Join(o.lines(), "\n")
	if !strings.Contains(got, "settle stock check-stock@1 ok=false retry=false abandoned: the run was cancelled\n") || !strings.Contains(got, "\n10 end r3 cancelled in /states/check result ") {
		t.Errorf("progress:\n%s", got)
	}
}

// TestTrackerWithoutWorkflow: without the definition every state and task
// is still reported, tasks named from the invocations the records carry.
func TestTrackerWithoutWorkflow(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t)
	o.apply(run.Message{Kind: run.KindStart, RunID: "r4", Input: map[string]any{"sku": "X", "qty": 1.0, "customer": "c"}})
	inv := o.invokes["stock"]
	body := fmt.Sprintf(`{"run":"r4","node":"stock","task":"check-stock","version":"1","activation":%q}`, inv.Activation)
	o.records[0].Outbox = []runrecord.Outgoing{{Kind: runrecord.OutInvoke, Data: []byte(body)}}
	o.result("stock", nil, "gone")
	got := strings.Join(o.track(&client.Tracker{}), "\n")
	for _, w := range []string{
		"10 state /states/check\n",
		"10 invoke /states/check stock check-stock@1 attempt 1\n",
		"10 invoke /states/check price  attempt 1\n",
		"20 state /states/rejected\n20 end r4 done in /states/rejected",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("progress lacks %q:\n%s", w, got)
		}
	}
}

// TestTrackerTakesTheAnnouncedStatus: the end carries the status the
// record announced (a cancel's time), as client.Status reads it.
func TestTrackerTakesTheAnnouncedStatus(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t)
	o.apply(run.Message{Kind: run.KindStart, RunID: "r5", Input: map[string]any{"sku": "X", "qty": 1.0, "customer": "c"}})
	o.apply(run.Message{Kind: run.KindCancel, Reason: "test"})
	announced := &wire.Status{Run: "r5", Workflow: "order", Revision: "order-1", Status: wire.StatusCancelled, State: "/states/check", Time: 5000}
	o.records[1].Status = announced
	var tr client.Tracker
	var end *client.Progress
	for _, rec := range o.records {
		steps, err := tr.Observe(rec)
		if err != nil {
			t.Fatal(err)
		}
		for i := range steps {
			if steps[i].Kind == client.ProgressEnd {
				end = &steps[i]
			}
		}
	}
	if end == nil || end.Status != announced || end.At != 5000 {
		t.Errorf("end %+v, want the announced status at its time", end)
	}
}

// TestTrackerReportsARetryItDidNotSee: a watch keeps only the latest
// record, so the re-invocation of a retried node can be skipped; the
// node's eventual success is still reported.
func TestTrackerReportsARetryItDidNotSee(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t)
	o.paid("r6")
	inv := o.invokes["task"]
	o.apply(run.Message{Kind: run.KindResult, Result: &run.TaskResult{Activation: inv.Activation, Node: "task", Attempt: inv.Attempt, Error: &run.TaskError{Message: "carrier down"}}})
	a := o.st.Work.Running["task"]
	if a == nil || !a.Waiting {
		t.Fatalf("ship is not waiting for a retry: %+v", a)
	}
	retry := ""
	for id := range o.st.Work.Retries {
		retry = id
	}
	o.now = a.RetryAt - 10
	o.apply(run.Message{Kind: run.KindTimer, Timer: &run.TimerFire{ID: retry, Deadline: a.RetryAt}})
	o.result("task", map[string]any{"tracking": "T1"}, "") // ship, attempt 2
	skipped := len(o.records) - 2                          // the record of the re-invocation
	o.records = append(o.records[:skipped], o.records[skipped+1:]...)
	got := strings.Join(o.lines(), "\n")
	for _, w := range []string{
		"settle ship ship@1 ok=false retry=true failed, will retry\n",
		`settle ship ship@1 ok=true retry=false {"tracking":"T1"}` + "\n",
		"state /states/fulfil/flow/states/notify\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("progress lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "invoke /states/fulfil/flow/states/ship ship ship@1 attempt 2") {
		t.Errorf("reports an invocation no record it saw showed:\n%s", got)
	}
}

// TestTrackerReportsTasksOfSkippedRecords: a watch that sees only a paid
// order's last record still reports every attempt, from the results the
// record applied.
func TestTrackerReportsTasksOfSkippedRecords(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t)
	o.paid("r7")
	o.result("task", map[string]any{"tracking": "T1"}, "") // ship
	o.result("task", nil, "mail server down")              // notify, caught or failed
	o.records = o.records[len(o.records)-1:]
	got := strings.Join(o.track(&client.Tracker{
		Workflow: func(string, string) (*workflow.Workflow, error) { return o.wf, nil },
		Result:   func(seq uint64) *wire.Result { return o.results[seq] },
	}), "\n")
	for _, w := range []string{
		"invoke /states/check stock check-stock@1 attempt 1\n",
		`settle stock check-stock@1 ok=true retry=false {"available":true}` + "\n",
		`settle fraud score-fraud@1 ok=true retry=false {"score":0.1}` + "\n",
		"invoke /states/fulfil/flow/states/ship ship ship@1 attempt 1\n",
		`settle ship ship@1 ok=true retry=false {"tracking":"T1"}` + "\n",
		"settle notify notify@1 ok=false retry=false mail server down",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("progress lacks %q:\n%s", w, got)
		}
	}
	if n := strings.Count(got, " settle "); n != 5 {
		t.Errorf("%d settles, want 5 (each attempt once):\n%s", n, got)
	}
}

// TestTrackerOrdersStatesOfSkippedRecords: when the watch skips the
// record that entered a flow's next state, the states one observed step
// passed through keep the order the run went through them: the flow's
// own states before where the flow leads.
func TestTrackerOrdersStatesOfSkippedRecords(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t)
	o.done("r8")
	o.records = append(o.records[:len(o.records)-2], o.records[len(o.records)-1])
	var states []string
	for _, l := range o.lines() {
		if _, st, ok := strings.Cut(l, " state "); ok {
			states = append(states, st)
		}
	}
	want := []string{
		"/states/check", "/states/decide", "/states/await-payment", "/states/fulfil",
		"/states/fulfil/flow/states/ship", "/states/fulfil/flow/states/notify", "/states/fulfil/flow/states/sent", "/states/done",
	}
	if !slices.Equal(states, want) {
		t.Errorf("states entered:\n%s\nwant:\n%s", strings.Join(states, "\n"), strings.Join(want, "\n"))
	}
}
