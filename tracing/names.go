package tracing

import "go.opentelemetry.io/otel/attribute"

// ScopeName is the instrumentation scope of jetflow's spans.
const ScopeName = "github.com/jetflow/jetflow"

// Span names. A run's trace is one root span (SpanStart), one span per
// input a dispatcher applies (SpanApply, or SpanRedrive and SpanReset for
// those operations), and one span per task attempt on a worker
// (SpanAttempt), the child of the step that invoked it.
const (
	SpanStart   = "jetflow.start"
	SpanApply   = "jetflow.apply"
	SpanRedrive = "jetflow.redrive"
	SpanReset   = "jetflow.reset"
	SpanAttempt = "jetflow.task.attempt"
)

// Span event names.
const (
	EventTimerFired = "jetflow.timer.fired"
	EventEvent      = "jetflow.event"
	EventIgnored    = "jetflow.event.ignored"
	EventResult     = "jetflow.task.result"
)

// Attribute keys, documented in docs/OBSERVABILITY.md.
const (
	KeyRunID        = attribute.Key("jetflow.run_id")
	KeyWorkflow     = attribute.Key("jetflow.workflow")
	KeyRevision     = attribute.Key("jetflow.revision")
	KeyKind         = attribute.Key("jetflow.input.kind")
	KeySeq          = attribute.Key("jetflow.input.seq")
	KeyDelivery     = attribute.Key("jetflow.input.delivery")
	KeyOutcome      = attribute.Key("jetflow.outcome")
	KeyCAS          = attribute.Key("jetflow.cas")
	KeyStatusBefore = attribute.Key("jetflow.status.before")
	KeyStateBefore  = attribute.Key("jetflow.state.before")
	KeyStatusAfter  = attribute.Key("jetflow.status.after")
	KeyStateAfter   = attribute.Key("jetflow.state.after")
	KeyReason       = attribute.Key("jetflow.reason")
	KeyOperator     = attribute.Key("jetflow.operator")
	KeyTimer        = attribute.Key("jetflow.timer")
	KeyDeadline     = attribute.Key("jetflow.deadline")
	KeyEvent        = attribute.Key("jetflow.event")
	KeyTask         = attribute.Key("jetflow.task")
	KeyVersion      = attribute.Key("jetflow.task.version")
	KeyActivation   = attribute.Key("jetflow.activation")
	KeyNode         = attribute.Key("jetflow.node")
	KeyAttempt      = attribute.Key("jetflow.attempt")
	KeyErrorCode    = attribute.Key("jetflow.error.code")
	KeyResetTo      = attribute.Key("jetflow.reset.to")
)
