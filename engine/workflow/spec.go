package workflow

import (
	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/engine/value"
)

// Lowering is the lowering version the reference stamps on its output and
// on every run identity.
const Lowering = "0.1"

// Internal event names of the lowered statechart. A wait's external event
// is EventPrefix plus the author's name, so a caller cannot forge a work
// completion or a choice.
const (
	EventNext   = "@workflow/next"
	EventDone   = "@workflow/done"
	EventError  = "@workflow/error"
	EventPrefix = "event:"
	// EventClock is the event the run loop steps with to move time forward
	// on a resumed computation; no transition listens for it.
	EventClock = "@workflow/clock"
)

// DefaultInput is the work input query used when a work state declares
// none (or null).
const DefaultInput = "$.context.data"

// Kind is a state's declaration form.
type Kind string

// The five mutually exclusive forms of a state.
const (
	KindWork   Kind = "work"
	KindChoose Kind = "choose"
	KindOn     Kind = "on"
	KindFlow   Kind = "flow"
	KindFinal  Kind = "final"
)

// Spec is one state's declaration, resolved. Target ids are qualified
// (JSON Pointer) state ids.
type Spec struct {
	// ID is the qualified state id, also its source pointer.
	ID   string
	Kind Kind
	// Parent is the enclosing flow state's id, "" at the top level.
	Parent string
	// Limit is the declared visit bound, 0 when the state has none.
	Limit int64

	// Then is the success target of work and flow states.
	Then string
	// Catch is the JF2006 target of a work state, "" when absent.
	Catch string
	// Input is the work input query document (DefaultInput when the
	// declaration has none or null).
	Input any

	// Choose and Otherwise are a choice's branches and fallback.
	Choose    []Choice
	Otherwise string

	// On and After are a wait's event branches and optional delay.
	On    []Wait
	After *Delay

	// Initial is a flow state's nested initial state.
	Initial string

	// raw is the reference's specs[id]: the declaration plus kind.
	raw map[string]any
}

// Choice is one guarded branch of a choose state.
type Choice struct {
	Guard any
	To    string
}

// Wait is one external event branch of an on state; Event is the author's
// name, without EventPrefix.
type Wait struct {
	Event    string
	Guard    any
	HasGuard bool
	To       string
}

// Delay is an on state's timer branch.
type Delay struct {
	Ms float64
	To string
}

// Raw returns the reference's specs[id]: the declaration with kind added.
// The map is shared; do not modify it.
func (s *Spec) Raw() map[string]any { return s.raw }

// Lowered is a lowered workflow: the reference's LoweredWorkflow plus the
// orders in which the reference iterates it. Everything in it is shared
// and must be treated as read-only.
type Lowered struct {
	Version  string
	Revision string
	// Document is the normalized copy of the source document.
	Document map[string]any
	// FSM is the jaren-fsm 0.2 statechart document.
	FSM map[string]any
	// DAGs maps each work state's id to its jaren-dag document.
	DAGs map[string]map[string]any
	// Sources maps each state id to its source pointer.
	Sources map[string]string
	Specs   map[string]*Spec
	// States lists every state id in declaration order (a scope's states
	// before a nested scope's), the order of the reference's specs.
	States []string
	// Work lists the work state ids in the same order, the order of the
	// reference's dags.
	Work []string
	// Initial is the top-level initial state id.
	Initial string

	chart *statechart.Chart
}

// Value returns the reference's lowerWorkflow result as a JSON value
// sharing the lowered data.
func (l *Lowered) Value() map[string]any {
	sources := make(map[string]any, len(l.Sources))
	for id, s := range l.Sources {
		sources[id] = s
	}
	specs := make(map[string]any, len(l.Specs))
	for id, s := range l.Specs {
		specs[id] = s.raw
	}
	return map[string]any{
		"version":  l.Version,
		"revision": l.Revision,
		"document": l.Document,
		"fsm":      l.FSM,
		"dags":     l.dagsValue(),
		"sources":  sources,
		"specs":    specs,
	}
}

// Canonical returns the RFC 8785 text of Value, byte-identical to the
// reference's canonicalizeJson(lowerWorkflow(document)).
func (l *Lowered) Canonical() string { return value.MustCanonical(l.Value()) }

// dagsValue returns the dags member as a JSON object.
func (l *Lowered) dagsValue() map[string]any {
	dags := make(map[string]any, len(l.DAGs))
	for id, d := range l.DAGs {
		dags[id] = d
	}
	return dags
}
