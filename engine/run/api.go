// Package run is the pure reducer of one workflow run: a function from
// (run state, message) to (new run state, effects). The state carries the
// reference's jaren-workflow-run/0.1 snapshot unchanged, inside an
// envelope holding what a message-driven fleet needs besides: node values
// in flight, attempts, buffered events, armed timers and the outcome.
package run

// Kind is the kind of an input message.
type Kind string

// Message kinds.
const (
	KindStart  Kind = "start"
	KindEvent  Kind = "event"
	KindResult Kind = "result"
	KindTimer  Kind = "timer"
	KindCancel Kind = "cancel"
	// KindWake lets time pass without an event: the reference's call with
	// only a time. The fleet's timers use KindTimer.
	KindWake Kind = "wake"
	// KindRedrive continues a failed run from its failed work activation
	// (redrive.go).
	KindRedrive Kind = "redrive"
)

// Message is one input to a run. Time is the logical now in milliseconds
// (the dispatcher passes the message's stream timestamp, so a replay sees
// the same time).
type Message struct {
	Kind Kind
	Time float64
	// NoTime says the message carries no time (the reference's call
	// without now); the fleet always has one.
	NoTime bool
	// NoTick says the message takes no time of its own: the chart's clock
	// does not move to Time when it applies, but a wait it leads to reads
	// Time (fires what is due, else moves the clock there). The simulator
	// answers a call's invocations so, as the reference's call finishes
	// its work at the call's now.
	NoTick bool
	// Start
	RunID string
	Input any
	// Event
	Event *Event
	// Result
	Result *TaskResult
	// Timer
	Timer *TimerFire
	// Postpone (postpone.go)
	Postpone *Postpone
	// Cancel, pause, resume, terminate, redrive
	Reason string
	// Operator names who paused, resumed or terminated the run.
	Operator string
}

// Event is an external event.
type Event struct {
	Type       string
	Payload    any
	HasPayload bool
}

// TaskResult is a task's outcome as a worker reported it.
type TaskResult struct {
	Activation string
	Node       string
	Attempt    int
	Output     any
	Error      *TaskError
}

// TaskError is a task failure.
type TaskError struct {
	Message      string
	Code         string
	NonRetryable bool
	// RetryAfterMs, when above 0, is the worker's own delay before the
	// next attempt (an upstream's "retry after"): it replaces the
	// policy's backoff for this retry and does not advance it. The
	// attempt still counts against MaxAttempts.
	RetryAfterMs float64
}

// MaxRetryAfterMs caps a worker's retry-after delay (24 h).
const MaxRetryAfterMs = 24 * 60 * 60 * 1000

// TimerFire says a timer armed by an ArmTimer effect is due.
type TimerFire struct {
	ID       string
	Deadline float64
}

// Status of a run.
type Status string

// Run statuses. Running and waiting are the reference's; failed and
// cancelled are the fleet's terminal outcomes besides done.
const (
	StatusRunning   Status = "running"
	StatusWaiting   Status = "waiting"
	StatusDone      Status = "done"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether no message can change a run in this status.
func (s Status) Terminal() bool {
	return s == StatusDone || s == StatusFailed || s == StatusCancelled || s == StatusTerminated
}

// Failure is why a run failed.
type Failure struct {
	Code    string `json:"code"`
	Path    string `json:"path"`
	Message string `json:"message"`
	// Unlocated says the failure has no document location (Path is then
	// empty, which otherwise means the document root).
	Unlocated bool `json:"unlocated,omitempty"`
}

// Effect is something the host must do after saving the new state.
// Exactly one field is set. Every effect has a stable ID for idempotent
// publishing (the same state always yields the same IDs).
type Effect struct {
	ID      string
	Invoke  *Invoke
	Arm     *ArmTimer
	Disarm  *DisarmTimer
	Settled *Settled
}

// Invoke asks a worker to run one task node.
type Invoke struct {
	Activation string
	State      string
	Node       string
	Task       string
	Version    string
	Attempt    int
	Input      any
	With       any
	HasWith    bool
	// Deadline is when the attempt fails with CodeTaskTimeout unless its
	// result is accepted first (ms); 0 when no timeout applies.
	Deadline float64
	// given is the argument ({"with", "input"}) as the reference hands
	// an in-process handler, when it holds the empty marker; nil else
	given map[string]any
}

// Given returns the input and with as the reference hands them to an
// in-process handler: Input and With, except that they hold the empty
// marker (value.Empty) where a query left one, which Input and With,
// being JSON, show as null in an array and leave out as a member. A
// simulation's mock reads these; a worker gets Input and With.
func (inv *Invoke) Given() (input, with any) {
	if inv.given != nil {
		return inv.given["input"], inv.given["with"]
	}
	if !inv.HasWith {
		return inv.Input, nil
	}
	return inv.Input, inv.With
}

// ArmTimer asks for a TimerFire message at Deadline (ms).
type ArmTimer struct {
	ID       string
	Deadline float64
}

// DisarmTimer asks the host to drop an armed timer that no longer
// matters (a fire that comes anyway is rejected as no longer armed).
type DisarmTimer struct {
	ID string
}

// Settled announces a status change (running, waiting or terminal).
type Settled struct {
	Status Status
	State  string
	Result any
	Error  *Failure
	// Since is when a run was paused, or terminated (ms); Reason and
	// Operator are what the operator gave.
	Since    float64
	Reason   string
	Operator string
}
