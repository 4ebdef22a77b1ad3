package integration

// workflows are deployed in every test's fleet, by name. Each exercises
// one form of the format against the tasks of tasks_test.go.
var workflows = map[string]string{
	// one task: double the input.
	"one": `{"$workflow":"0.2","revision":"one/1","initial":"a","states":{
		"a":{"work":{"task":"double","version":"1"},"then":"done"},
		"done":{"final":true}}}`,

	// a DAG fanning the input out to three tasks, joined by ports.
	"fan": `{"$workflow":"0.2","revision":"fan/1","initial":"fan","states":{
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

	// a task whose output a JSLT stylesheet reshapes.
	"jslt": `{"$workflow":"0.2","revision":"jslt/1","initial":"w","states":{
		"w":{"work":{"dag":{"$dag":"0.1","nodes":{
			"in":{"kind":"input"},
			"d":{"kind":"task","run":"double","version":"1"},
			"j":{"kind":"jslt","stylesheet":[{"match":"$","body":{"doubled":"$","at":"$path"}}]},
			"out":{"kind":"output"}},
		"edges":[{"from":"in","to":"d"},{"from":"d","to":"j"},{"from":"j","to":"out"}]}},"then":"done"},
		"done":{"final":true}}}`,

	// a task, then a wait whose timer is due as it is entered: the result
	// that leads there fires it, with no timer message.
	"zerowait": `{"$workflow":"0.2","revision":"zerowait/1","initial":"a","states":{
		"a":{"work":{"task":"double","version":"1"},"then":"w"},
		"w":{"on":[{"event":"go","to":"early"}],"after":{"ms":0,"to":"late"}},
		"early":{"final":true},"late":{"final":true}}}`,

	// a bounded loop: increment while n < 3, at most 5 rounds.
	"loop": `{"$workflow":"0.2","revision":"loop/1","initial":"inc","states":{
		"inc":{"work":{"task":"inc","version":"1"},"then":"check","limit":5},
		"check":{"choose":[{"guard":{"$lt":["$.context.data.n",3]},"to":"inc"}],"otherwise":"done"},
		"done":{"final":true}}}`,

	// a choice on the input.
	"choice": `{"$workflow":"0.2","revision":"choice/1","initial":"c","states":{
		"c":{"choose":[{"guard":{"$gt":["$.context.data",10]},"to":"big"}],"otherwise":"small"},
		"big":{"final":true},"small":{"final":true}}}`,

	// a wait for an approving event (a refusal is consumed and ignored),
	// then a task on the event's payload.
	"approval": `{"$workflow":"0.2","revision":"approval/1","initial":"wait","states":{
		"wait":{"on":[{"event":"approve","guard":"$.payload.ok","to":"charge"}],"after":{"ms":60000,"to":"expired"}},
		"charge":{"work":{"task":"double","version":"1"},"input":"$.context.event.payload.amount","then":"done"},
		"done":{"final":true},"expired":{"final":true}}}`,

	// an after timer that wins over an event that never comes.
	"sleepy": `{"$workflow":"0.2","revision":"sleepy/1","initial":"wait","states":{
		"wait":{"on":[{"event":"go","to":"early"}],"after":{"ms":300,"to":"late"}},
		"early":{"final":true},"late":{"final":true}}}`,

	// a longer timer, for the server restart.
	"nap": `{"$workflow":"0.2","revision":"nap/1","initial":"wait","states":{
		"wait":{"on":[{"event":"go","to":"early"}],"after":{"ms":1500,"to":"late"}},
		"early":{"final":true},"late":{"work":{"task":"inc","version":"1"},"then":"done"},
		"done":{"final":true}}}`,

	// catch of a task that fails on every attempt.
	"catch": `{"$workflow":"0.2","revision":"catch/1","initial":"charge","states":{
		"charge":{"work":{"task":"fail","version":"1"},"then":"done","catch":"recovered"},
		"recovered":{"final":true},"done":{"final":true}}}`,

	// an uncaught, non-retryable failure.
	"uncaught": `{"$workflow":"0.2","revision":"uncaught/1","initial":"charge","states":{
		"charge":{"work":{"task":"fatal","version":"1"},"then":"done"},
		"done":{"final":true}}}`,

	// a nested flow of two tasks, then one more task.
	"nested": `{"$workflow":"0.2","revision":"nested/1","initial":"outer","states":{
		"outer":{"flow":{"initial":"a","states":{
			"a":{"work":{"task":"inc","version":"1"},"then":"b"},
			"b":{"work":{"task":"inc","version":"1"},"then":"fin"},
			"fin":{"final":true}}},"then":"last"},
		"last":{"work":{"task":"inc","version":"1"},"then":"done"},
		"done":{"final":true}}}`,

	// a task that fails twice and succeeds on its third attempt.
	"flaky": `{"$workflow":"0.2","revision":"flaky/1","initial":"a","states":{
		"a":{"work":{"task":"flaky","version":"1"},"then":"done"},
		"done":{"final":true}}}`,

	// a task that runs until the test releases it (cancel mid-task).
	"hold": `{"$workflow":"0.2","revision":"hold/1","initial":"a","states":{
		"a":{"work":{"task":"hold","version":"1"},"then":"done"},
		"done":{"final":true}}}`,

	// a wait with no timer: only a cancel ends it.
	"forever": `{"$workflow":"0.2","revision":"forever/1","initial":"wait","states":{
		"wait":{"on":[{"event":"never","to":"done"}]},
		"done":{"final":true}}}`,

	// rounds of a task, each started by an event: a result of an earlier
	// round arrives for an old visit.
	"rounds": `{"$workflow":"0.2","revision":"rounds/1","initial":"inc","states":{
		"inc":{"work":{"task":"inc","version":"1"},"then":"wait","limit":5},
		"wait":{"on":[{"event":"again","to":"inc"},{"event":"stop","to":"done"}]},
		"done":{"final":true}}}`,

	// a task that echoes a large input back, larger (payloads by
	// reference).
	"blob": `{"$workflow":"0.2","revision":"blob/1","initial":"a","states":{
		"a":{"work":{"task":"grow","version":"1"},"then":"done"},
		"done":{"final":true}}}`,

	// a program of worker exec that answers with its request.
	"blobexec": `{"$workflow":"0.2","revision":"blobexec/1","initial":"a","states":{
		"a":{"work":{"task":"cat","version":"1"},"then":"done"},
		"done":{"final":true}}}`,

	// a task whose output exceeds the server's max payload.
	"huge": `{"$workflow":"0.2","revision":"huge/1","initial":"a","states":{
		"a":{"work":{"task":"huge","version":"1"},"then":"done","catch":"refused"},
		"done":{"final":true},"refused":{"final":true}}}`,
}
