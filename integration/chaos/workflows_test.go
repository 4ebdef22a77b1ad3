package chaos

import (
	"fmt"
)

// workflow is one kind of run in the mix: its document, the input of the
// i-th run, and what a fault-free run gives.
type workflow struct {
	name   string
	doc    string
	weight int // share of the mix
	input  func(i int) any
	// state and result are the final state and the result of a
	// fault-free run (the result as JSON).
	state  string
	result func(i int) string
	// events: the harness sends the run a refused and an accepted "pay"
	// event once it waits.
	events bool
	// after is how many fires of its chart's timers (after) the run
	// applies; more may come and must be refused. Retry and deadline
	// fires depend on what the workers did (steps_test.go).
	after int
	// visits are states the run must have entered exactly so often.
	visits func(i int) map[string]float64
	// redrive: the driver redrives the run when it fails (once).
	redrive bool
	// retain: deployed with retainedPolicy, the run is removed (and
	// archived) seconds after it settles (retention_test.go).
	retain bool
	// reset: every resetEvery-th run, once done, is reset to its start
	// and must reach the same end again (driver_test.go).
	reset bool
}

// workflows is the mix: one task, a fan-out DAG joined by ports, a
// bounded loop (some runs reset once done), an event wait, an after
// timer, a caught failure after retries and an uncaught failure the
// driver redrives. Most are removed by retention once settled; fan and
// catch are kept. Every task is one of taskHandlers. A last entry of weight 0,
// never in the mix, is the stuck canary (stranded_test.go).
var workflows = []*workflow{
	{
		name: "one", weight: 3, retain: true,
		doc: `{"$workflow":"0.2","revision":"one/1","initial":"a","states":{
			"a":{"work":{"task":"double","version":"1"},"then":"done"},
			"done":{"final":true}}}`,
		input:  func(i int) any { return i },
		state:  "/states/done",
		result: func(i int) string { return fmt.Sprint(2 * i) },
	},
	{
		name: "fan", weight: 3,
		doc: `{"$workflow":"0.2","revision":"fan/1","initial":"fan","states":{
			"fan":{"work":{"dag":{"$dag":"0.1","nodes":{
				"in":{"kind":"input"},
				"d":{"kind":"task","run":"double","version":"1"},
				"s":{"kind":"task","run":"square","version":"1"},
				"n":{"kind":"task","run":"neg","version":"1"},
				"join":{"kind":"query","query":{"d":"$.d","s":"$.s","n":"$.n","sum":{"$add":[{"$add":["$.d","$.s"]},"$.n"]}}},
				"out":{"kind":"output"}},
			"edges":[{"from":"in","to":"d"},{"from":"in","to":"s"},{"from":"in","to":"n"},
				{"from":"d","to":"join","port":"d"},{"from":"s","to":"join","port":"s"},{"from":"n","to":"join","port":"n"},
				{"from":"join","to":"out"}]}},"then":"done"},
			"done":{"final":true}}}`,
		input: func(i int) any { return i },
		state: "/states/done",
		result: func(i int) string {
			return fmt.Sprintf(`{"d":%d,"n":%d,"s":%d,"sum":%d}`, 2*i, -i, i*i, 2*i+i*i-i)
		},
	},
	{
		// Counts n up to k, one task per round: a round applied twice
		// would show in the visits.
		name: "loop", weight: 3, reset: true, retain: true,
		doc: `{"$workflow":"0.2","revision":"loop/1","initial":"inc","states":{
			"inc":{"work":{"task":"inc","version":"1"},"then":"check","limit":6},
			"check":{"choose":[{"guard":{"$lt":["$.context.data.n","$.context.data.k"]},"to":"inc"}],"otherwise":"done"},
			"done":{"final":true}}}`,
		input:  func(i int) any { return map[string]any{"n": 0, "k": loopRounds(i)} },
		state:  "/states/done",
		result: func(i int) string { return fmt.Sprintf(`{"k":%d,"n":%d}`, loopRounds(i), loopRounds(i)) },
		visits: func(i int) map[string]float64 { return map[string]float64{"/states/inc": float64(loopRounds(i))} },
	},
	{
		// Waits for an accepted payment; a refused one is ignored. The
		// timeout is far beyond any run's life: taking it is a lost event.
		name: "event", weight: 2, events: true, retain: true,
		doc: `{"$workflow":"0.2","revision":"event/1","initial":"wait","states":{
			"wait":{"on":[{"event":"pay","guard":"$.payload.ok","to":"charge"}],"after":{"ms":600000,"to":"expired"}},
			"charge":{"work":{"task":"double","version":"1"},"input":"$.context.event.payload.amount","then":"done"},
			"done":{"final":true},"expired":{"final":true}}}`,
		input:  func(i int) any { return map[string]any{"n": i} },
		state:  "/states/done",
		result: func(i int) string { return fmt.Sprint(2 * payAmount(i)) },
		visits: func(int) map[string]float64 { return map[string]float64{"/states/charge": 1} },
	},
	{
		// An after timer wins over an event that never comes.
		name: "timer", weight: 2, after: 1, retain: true,
		doc: `{"$workflow":"0.2","revision":"timer/1","initial":"wait","states":{
			"wait":{"on":[{"event":"never","to":"done"}],"after":{"ms":400,"to":"late"}},
			"late":{"work":{"task":"inc","version":"1"},"then":"done"},
			"done":{"final":true}}}`,
		input:  func(i int) any { return map[string]any{"n": i} },
		state:  "/states/done",
		result: func(i int) string { return fmt.Sprintf(`{"n":%d}`, i+1) },
		visits: func(int) map[string]float64 { return map[string]float64{"/states/late": 1} },
	},
	{
		// A task that always fails, retried twice (harnessPolicy gives
		// fail three attempts), then caught.
		name: "catch", weight: 1,
		doc: `{"$workflow":"0.2","revision":"catch/1","initial":"charge","states":{
			"charge":{"work":{"task":"fail","version":"1"},"then":"done","catch":"recovered"},
			"recovered":{"work":{"task":"double","version":"1"},"input":"$.context.input.n","then":"done"},
			"done":{"final":true}}}`,
		input:  func(i int) any { return map[string]any{"n": i} },
		state:  "/states/done",
		result: func(i int) string { return fmt.Sprint(2 * i) },
		visits: func(int) map[string]float64 { return map[string]float64{"/states/recovered": 1} },
	},
	{
		// A fan-out whose task "once" fails, not retried, on its first
		// attempt: the run fails and the driver redrives it. The redrive
		// invokes once again (numbered above attempt 1, so it succeeds)
		// and not double, whose output it keeps. A first attempt that
		// timed out instead is retried and the run never fails.
		name: "redrive", weight: 1, redrive: true, retain: true,
		doc: `{"$workflow":"0.2","revision":"redrive/1","initial":"fan","states":{
			"fan":{"work":{"dag":{"$dag":"0.1","nodes":{
				"in":{"kind":"input"},
				"d":{"kind":"task","run":"double","version":"1"},
				"o":{"kind":"task","run":"once","version":"1"},
				"join":{"kind":"query","query":{"d":"$.d","o":"$.o"}},
				"out":{"kind":"output"}},
			"edges":[{"from":"in","to":"d"},{"from":"in","to":"o"},
				{"from":"d","to":"join","port":"d"},{"from":"o","to":"join","port":"o"},{"from":"join","to":"out"}]}},"then":"done"},
			"done":{"final":true}}}`,
		input:  func(i int) any { return i },
		state:  "/states/done",
		result: func(i int) string { return fmt.Sprintf(`{"d":%d,"o":%d}`, 2*i, i+1) },
	},
	{
		// Invokes a task no worker serves, whose one attempt outlasts the
		// test: a run that stays running, held by its deadline timer.
		name: "stuck",
		doc: `{"$workflow":"0.2","revision":"stuck/1","initial":"a","states":{
			"a":{"work":{"task":"nobody","version":"1"},"then":"done"},
			"done":{"final":true}}}`,
		input: func(int) any { return nil },
		state: "/states/done",
	},
}

func loopRounds(i int) int { return 1 + i%4 }

func payAmount(i int) int { return i + 7 }

// pick chooses a workflow by weight from a number in [0, total weight).
func pick(x int) *workflow {
	for _, w := range workflows {
		if x < w.weight {
			return w
		}
		x -= w.weight
	}
	panic("pick: out of range")
}

func totalWeight() int {
	n := 0
	for _, w := range workflows {
		n += w.weight
	}
	return n
}
