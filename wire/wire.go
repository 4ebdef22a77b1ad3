// Package wire holds the JSON bodies and headers of every message jetflow
// sends or accepts, as docs/PROTOCOL.md specifies them. Workers and event
// publishers in other languages implement exactly these shapes.
package wire

import "encoding/json"

// Headers set on jetflow messages.
const (
	// HeaderMsgID is JetStream's de-duplication id.
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderRunID names the run on task invocations and status messages.
	HeaderRunID = "Jetflow-Run"
	// HeaderActivation carries a task invocation's activation key.
	HeaderActivation = "Jetflow-Activation"
	// HeaderTimer names the timer a scheduled fire belongs to.
	HeaderTimer = "Jetflow-Timer"
	// HeaderDeadline is a timer's logical deadline, or an invocation's
	// attempt deadline, in Unix milliseconds.
	HeaderDeadline = "Jetflow-Deadline"

	// HeaderPayload, HeaderPayloadSize and HeaderPayloadDigest are set
	// together on a message whose body travels by reference: the body is
	// empty and the real one is object HeaderPayload of the payload
	// bucket, HeaderPayloadSize bytes long, with the digest
	// HeaderPayloadDigest ("SHA-256=" and the padded base64url encoding
	// of its SHA-256, the form of the Object Store's own digest).
	// docs/PROTOCOL.md 2.4; package payload reads and writes them.
	HeaderPayload       = "Jetflow-Payload"
	HeaderPayloadSize   = "Jetflow-Payload-Size"
	HeaderPayloadDigest = "Jetflow-Payload-Digest"
)

// Start is the body of a run's start message.
type Start struct {
	// Workflow is the deployed workflow's name.
	Workflow string `json:"workflow"`
	// Revision pins a deployed revision; empty means the latest.
	Revision string `json:"revision,omitempty"`
	// Input is the run input (absent means null).
	Input json.RawMessage `json:"input,omitempty"`
	// Event, when present, is delivered in the same step: right after
	// the start that creates the run, or, when the run exists and has
	// not ended, to it alone (signal with start).
	Event *StartEvent `json:"event,omitempty"`
	// Parent, when present, makes the run a child run of a parent's task
	// attempt (child.go); only dispatchers publish it.
	Parent *Parent `json:"parent,omitempty"`
	// IdempotencyKey, when set, makes the start count once within the
	// idempotency window (24 h): a later start with the same key starts
	// nothing and is answered with the first one's run (startctl.go).
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Singleton, when set, allows one active run per key.
	Singleton *Singleton `json:"singleton,omitempty"`
	// Debounce, when set, holds the start back; a later start with the
	// same key within the delay replaces it.
	Debounce *Debounce `json:"debounce,omitempty"`
	// Priority, from MinPriority to MaxPriority, is the run's priority:
	// its task invocations inherit it where their task version's policy
	// queues them (docs/POLICY.md#priority-and-fairness). Absent: the
	// policy's priority, else 0.
	Priority *int `json:"priority,omitempty"`
}

// The range of a priority; higher is delivered first.
const (
	MinPriority = 0
	MaxPriority = 9
)

// StartEvent is the event a start carries.
type StartEvent struct {
	Type string `json:"type"`
	// Payload is the event's payload (absent: an event without one).
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Invocation is the body of a task invocation a worker receives.
type Invocation struct {
	Run        string `json:"run"`
	Activation string `json:"activation"`
	// State is the work state's id (a JSON Pointer into the workflow).
	State   string `json:"state"`
	Node    string `json:"node"`
	Task    string `json:"task"`
	Version string `json:"version"`
	Attempt int    `json:"attempt"`
	// Input and With are what the task handler receives.
	Input json.RawMessage `json:"input"`
	With  json.RawMessage `json:"with,omitempty"`
	// Token must be echoed in the result: only the receiver of this
	// invocation can answer it.
	Token string `json:"token"`
	// Reply is the subject the result is published to.
	Reply string `json:"reply"`
	// Deadline is when the dispatchers fail the attempt with TASK_TIMEOUT
	// unless its result is accepted first, in Unix milliseconds; absent
	// when no timeout applies. A result after it is refused, so a worker
	// may stop working on the attempt then.
	Deadline float64 `json:"deadline,omitempty"`
}

// Result is the body a worker publishes to an invocation's Reply subject.
// Exactly one of Output and Error is set.
type Result struct {
	Activation string          `json:"activation"`
	Node       string          `json:"node"`
	Attempt    int             `json:"attempt"`
	Token      string          `json:"token"`
	Output     json.RawMessage `json:"output,omitempty"`
	Error      *TaskError      `json:"error,omitempty"`
}

// TaskError is a task's failure as a worker reports it.
type TaskError struct {
	Message string `json:"message"`
	// Code is the worker's own error code; the retry policy may name codes
	// that are not retried.
	Code string `json:"code,omitempty"`
	// NonRetryable skips the remaining attempts.
	NonRetryable bool `json:"nonRetryable,omitempty"`
	// RetryAfterMs, above 0, is how long to wait before the next attempt
	// (an upstream's "retry after", HTTP 429 style), in milliseconds: it
	// replaces the retry policy's backoff for this retry, capped at 24 h.
	RetryAfterMs float64 `json:"retryAfterMs,omitempty"`
	// CloseTask, with RetryAfterMs, also closes the task version for that
	// long: no worker gets any of its invocations until then (its
	// consumer is paused, as by `jetflow task pause --until`).
	CloseTask bool `json:"closeTask,omitempty"`
}

// Timer is the body of a scheduled timer message.
type Timer struct {
	Timer    string  `json:"timer"`
	Deadline float64 `json:"deadline"`
}

// Cancel is the body of a cancel request.
type Cancel struct {
	Reason string `json:"reason,omitempty"`
}

// Redrive is the body of a redrive request: a failed run continues from
// its failed work activation.
type Redrive struct {
	Reason string `json:"reason,omitempty"`
	// Revision, when set, moves the run to that deployed revision of its
	// workflow, which must hold the same document (a new task policy).
	Revision string `json:"revision,omitempty"`
}

// Reset is the body of a reset request: the run goes back to the state
// it had after its input at stream sequence To, rebuilt from its history,
// and continues from there (docs/OPERATIONS.md#reset).
type Reset struct {
	To       uint64 `json:"to"`
	Reason   string `json:"reason,omitempty"`
	Operator string `json:"operator,omitempty"`
}

// Migrate is the body of a migration: the run moves from revision From
// to revision To of its workflow, which a replay of its history under
// To found the same (docs/REVISIONS.md). Proof is the fingerprint of the
// run's state the check proved (step.Proof): a run that took an input
// since refuses the move. Divergence, when set, is the first difference
// the check found: the run refuses the move with it, so that status and
// history show why it stayed.
type Migrate struct {
	From       string `json:"from"`
	To         string `json:"to"`
	Proof      string `json:"proof,omitempty"`
	Divergence string `json:"divergence,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Operator   string `json:"operator,omitempty"`
}

// Status is announced on a run's status subject at every status change.
type Status struct {
	Run      string          `json:"run"`
	Workflow string          `json:"workflow"`
	Revision string          `json:"revision"`
	Status   string          `json:"status"`
	State    string          `json:"state,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    *RunError       `json:"error,omitempty"`
	// Time is the logical time of the change, Unix milliseconds.
	Time float64 `json:"time"`
	// Since is when a paused run was paused, or a terminated run
	// terminated (Unix ms); Reason and Operator are what the operator gave.
	Since    float64 `json:"since,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	Operator string  `json:"operator,omitempty"`
}

// RunError is why a run failed.
type RunError struct {
	Code    string `json:"code"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Run statuses.
const (
	StatusRunning   = "running"
	StatusWaiting   = "waiting"
	StatusDone      = "done"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)
