package client_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// TestTrackerReadsResults: with Result, a settled attempt carries what
// its result said: the worker's code and message of a failure, and the
// output of the task whose result ended its DAG (the record no longer
// holds it). Events the run ignored are reported once each.
func TestTrackerReadsResults(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t)
	results := map[uint64]*wire.Result{}
	// Number each record's input as the stream would, and keep the
	// results under their sequence, as the input stream does.
	applied := func(r *wire.Result) {
		rec := o.records[len(o.records)-1]
		seq := uint64(len(o.records))
		rec.Applied = []uint64{seq}
		if r != nil {
			results[seq] = r
		}
	}
	o.apply(run.Message{Kind: run.KindStart, RunID: "r7", Input: map[string]any{"sku": "KB-42", "qty": 2.0, "customer": "ada"}})
	applied(nil)
	for _, n := range []struct {
		node string
		out  any
	}{{"stock", map[string]any{"available": true}}, {"price", map[string]any{"total": 59.98}}, {"fraud", map[string]any{"score": 0.1}}} {
		inv := o.invokes[n.node]
		o.result(n.node, n.out, "")
		raw, _ := json.Marshal(n.out)
		applied(&wire.Result{Activation: inv.Activation, Node: n.node, Attempt: inv.Attempt, Output: raw})
	}
	// An event the run ignores while it waits for payment.
	o.apply(run.Message{Kind: run.KindEvent, Event: &run.Event{Type: "nope"}})
	applied(nil)
	o.records[len(o.records)-1].Ignored = []runrecord.Rejection{{Seq: 5, Kind: "event", Reason: `event "nope" matched no transition`, Time: o.now}}
	o.apply(run.Message{Kind: run.KindEvent, Event: &run.Event{Type: "payment", Payload: map[string]any{"amount": 59.98}, HasPayload: true}})
	applied(nil)
	o.records[len(o.records)-1].Ignored = []runrecord.Rejection{{Seq: 5, Kind: "event", Reason: `event "nope" matched no transition`, Time: o.now - 10}}
	inv := o.invokes["task"]
	o.apply(run.Message{Kind: run.KindResult, Result: &run.TaskResult{Activation: inv.Activation, Node: "task", Attempt: inv.Attempt, Error: &run.TaskError{Message: "carrier down", Code: "CARRIER", NonRetryable: true}}})
	applied(&wire.Result{Activation: inv.Activation, Node: "task", Attempt: inv.Attempt, Error: &wire.TaskError{Message: "carrier down", Code: "CARRIER", NonRetryable: true}})

	var got []string
	tr := &client.Tracker{
		Workflow: func(string, string) (*workflow.Workflow, error) { return o.wf, nil },
		Result:   func(seq uint64) *wire.Result { return results[seq] },
	}
	for _, rec := range o.records {
		steps, err := tr.Observe(rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range steps {
			switch p.Kind {
			case client.ProgressSettle:
				got = append(got, strings.Join(strings.Fields(p.Name+" ok="+map[bool]string{true: "yes", false: "no"}[p.OK]+" "+p.Code+" "+p.Detail), " "))
			case client.ProgressRefused:
				got = append(got, "refused "+p.Name+" "+p.Detail)
			}
		}
	}
	want := []string{
		`stock ok=yes {"available":true}`,
		`price ok=yes {"total":59.98}`,
		`fraud ok=yes {"score":0.1}`, // its result ended the DAG: only the result has its output
		`refused event ignored: event "nope" matched no transition`,
		"ship ok=no CARRIER carrier down",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
