package bench

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jetflow/jetflow/worker"
)

// Every scenario's tasks are the one task version the bench workers serve;
// it echoes its input, so that what is measured is the engine.
const (
	echoTask    = "echo"
	echoVersion = "1"
	// wakeEvent is the event the event and parked scenarios wait for.
	wakeEvent = "wake"
)

// echo is the bench workers' handler: the output is the input.
func echo(_ context.Context, inv worker.Invocation) (any, error) {
	return json.RawMessage(inv.Input), nil
}

// workload is how one scenario drives a run.
type workload struct {
	scenario Scenario
	// workflow is the deployed name, doc the document.
	workflow, doc string
	input         any
	// event, when set, is sent right after the start; the run ends once
	// it has been applied.
	event string
	// code is the run id prefix; run ids are <code>-<phase>-<n>.
	code string
}

var workloads = map[Scenario]workload{
	OneTask: {scenario: OneTask, workflow: "bench-one-task", code: "ot", input: 1, doc: `{"$workflow":"0.2","revision":"bench-1","initial":"work","states":{
 "work":{"work":{"task":"echo","version":"1"},"then":"done"},
 "done":{"final":true}}}`},
	FanOut: {scenario: FanOut, workflow: "bench-fan-out", code: "fo", input: 1, doc: `{"$workflow":"0.2","revision":"bench-1","initial":"fan","states":{
 "fan":{"work":{"dag":{"$dag":"0.1","nodes":{
   "in":{"kind":"input"},
   "a":{"kind":"task","run":"echo","version":"1"},
   "b":{"kind":"task","run":"echo","version":"1"},
   "c":{"kind":"task","run":"echo","version":"1"},
   "join":{"kind":"task","run":"echo","version":"1"},
   "out":{"kind":"output"}},
  "edges":[{"from":"in","to":"a"},{"from":"in","to":"b"},{"from":"in","to":"c"},
   {"from":"a","to":"join","port":"a"},{"from":"b","to":"join","port":"b"},{"from":"c","to":"join","port":"c"},
   {"from":"join","to":"out"}]}},"then":"done"},
 "done":{"final":true}}}`},
	Event: {scenario: Event, workflow: "bench-wait", code: "ev", event: wakeEvent, doc: waitDoc},
	Loop: {scenario: Loop, workflow: "bench-loop", code: "lp", input: 0, doc: `{"$workflow":"0.2","revision":"bench-1","initial":"step","states":{
 "step":{"work":{"task":"echo","version":"1"},"input":{"$add":["$.context.data",1]},"then":"check","limit":10},
 "check":{"choose":[{"guard":{"$lt":["$.context.data",10]},"to":"step"}],"otherwise":"done"},
 "done":{"final":true}}}`},
	Parked: {scenario: Parked, workflow: "bench-wait", code: "pk", doc: waitDoc},
	// The timers scenario deploys one workflow per delay, named
	// <workflow>-<ms> (timerDoc).
	Timers: {scenario: Timers, workflow: "bench-timer", code: "tm"},
	// The large-payload scenario sets the input of each run (largePayload).
	LargePayload: {scenario: LargePayload, workflow: "bench-large", code: "lp", doc: `{"$workflow":"0.2","revision":"bench-1","initial":"work","states":{
 "work":{"work":{"task":"echo","version":"1"},"then":"done"},
 "done":{"final":true}}}`},
}

// waitDoc waits for one event; the event and parked scenarios run it.
const waitDoc = `{"$workflow":"0.2","revision":"bench-1","initial":"wait","states":{
 "wait":{"on":[{"event":"wake","to":"done"}]},
 "done":{"final":true}}}`

// timerDoc sleeps ms milliseconds in a wait that an event could end
// early (none is sent), then ends: the timers scenario runs it.
func timerDoc(ms int64) string {
	return fmt.Sprintf(`{"$workflow":"0.2","revision":"bench-1","initial":"sleep","states":{
 "sleep":{"on":[{"event":"wake","to":"done"}],"after":{"ms":%d,"to":"done"}},
 "done":{"final":true}}}`, ms)
}
