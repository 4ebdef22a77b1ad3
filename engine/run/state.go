package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/engine/workflow"
)

// Format is the reference's run snapshot format.
const Format = "jaren-workflow-run/0.1"

// State is the envelope of one run: the reference's snapshot fields
// (all but the identity, which is a pure function of the pinned workflow
// and is rebuilt by Snapshot) and the fleet's bookkeeping. Apply treats a
// State as immutable; values inside it are never modified in place.
type State struct {
	// Workflow and Revision name the deployed definition the run is
	// pinned to; the host sets them, the reducer carries them.
	Workflow string `json:"workflow,omitempty"`
	Revision string `json:"revision,omitempty"`
	RunID    string `json:"runId"`
	// Status is the fleet's status; Snapshot status is derived from it.
	Status Status   `json:"status"`
	Error  *Failure `json:"error,omitempty"`

	Generation int64            `json:"generation"`
	Control    statechart.State `json:"-"`
	Context    Context          `json:"context"`
	Pending    *Pending         `json:"pending"`

	// Work is the DAG activation in flight, nil when none.
	Work *Work `json:"work,omitempty"`
	// Buffered are events that arrived while no wait was active; the next
	// wait receives them in order.
	Buffered []Event `json:"buffered,omitempty"`
	// Seq counts applied messages; effect ids are built from it.
	Seq int64 `json:"seq"`
	// Retries numbers retry timers across the run, so that a late fire of
	// an old activation's timer can never match a new one.
	Retries int64 `json:"retries,omitempty"`
	// Deadline is the deadline timer's armed time (ms), 0 when none is
	// armed: the earliest deadline of the attempts in flight.
	Deadline float64 `json:"deadline,omitempty"`
	// Paused marks a paused run; Held are the inputs it keeps for its
	// resume, in arrival order (pause.go).
	Paused *Paused `json:"paused,omitempty"`
	Held   []Held  `json:"held,omitempty"`
	// Terminated says why an operator ended the run.
	Terminated *Termination `json:"terminated,omitempty"`
	// Kept holds, while the run is failed, the outputs of the failed
	// activation's task nodes that succeeded without a checkpoint: a
	// redrive restores them with the checkpointed ones (redrive.go).
	// Each is kept as its worker wrote it (Kept).
	Kept Kept `json:"kept,omitempty"`
	// Redrives counts the redrives applied to the run.
	Redrives int64 `json:"redrives,omitempty"`
	// Resets counts the resets applied to the run (reset.go).
	Resets int64 `json:"resets,omitempty"`
	// AttemptFloor is, after a reset, the run's Seq when it was reset:
	// every activation from then on numbers its attempts above it. The
	// activations after the point come again with the ids they had on the
	// superseded line, and an attempt number they had then would repeat a
	// result's message id, which the input stream drops as a duplicate.
	AttemptFloor int64 `json:"attemptFloor,omitempty"`
	// StartRevision is the revision the run started on, once a redrive
	// moved it to another (Revision); replay starts it there.
	StartRevision string `json:"startRevision,omitempty"`

	// Ignored lists the events the message that produced this state
	// consumed without effect. It is not stored: the host records it.
	Ignored []Ignored `json:"-"`
}

// Ignored is an event a waiting run consumed without taking a
// transition, as the reference does: its type is not awaited, or every
// guard of the branches awaiting it failed.
type Ignored struct {
	Type   string
	Reason string
	// Kind is the input's kind when it is not an event (a held input
	// refused at resume).
	Kind Kind
}

// Context is the reference's run context.
type Context struct {
	Input   any            `json:"input"`
	Data    any            `json:"data"`
	Event   *Event         `json:"event"`
	Results map[string]any `json:"results"`
	Visits  map[string]any `json:"visits"`
}

// Pending is the reference's pending work activation.
type Pending struct {
	State    string         `json:"state"`
	Visit    int64          `json:"visit"`
	Input    any            `json:"input"`
	Values   map[string]any `json:"values"`
	Identity map[string]any `json:"identity,omitempty"`
	Result   any            `json:"result,omitempty"`
	// HasResult distinguishes a completed activation whose result is null.
	HasResult bool `json:"hasResult,omitempty"`
}

// Work is what the fleet tracks of a DAG activation besides the
// reference's pending record: every known node value (checkpointed or
// not) and the tasks in flight.
type Work struct {
	Activation string              `json:"activation"`
	Values     map[string]any      `json:"values"`
	Running    map[string]*Attempt `json:"running"`
	// Retries maps a retry timer id to the node it re-invokes.
	Retries map[string]string `json:"retries,omitempty"`
	// Base is the attempt number before this activation's first attempts:
	// 0, or after a redrive a number above every attempt the run made
	// before, so that no earlier attempt's result or token matches a new
	// one. The retry policy counts attempts from it.
	Base int `json:"base,omitempty"`
	// Ordered holds the known values that hold objects built at run
	// time, in their member order, while a node still reads them
	// (dag.Plan.Ordered): the reference hands a node's value to its
	// consumers by reference for the whole activation, so a join after
	// a task reads them as built. Values holds their plain form. Never
	// modified in place: the reducer replaces it whole.
	Ordered Ordered `json:"ordered,omitempty"`
	// Marked holds the known values that hold the empty marker as the
	// DAG computed them (dag.Plan.Marked), while a node still reads
	// them: the reference keeps a node's value, marker included, for the
	// whole activation, so a node reading it after a task answered reads
	// the marker and a checkpoint refuses it. Values holds their JSON
	// form. Stored as Ordered is, each marker null and noted in NotJSON.
	// Never modified in place: the reducer replaces it whole.
	Marked Ordered `json:"marked,omitempty"`
	// NotJSON is set only in a state Encode is writing (see NotJSON).
	NotJSON *NotJSON `json:"notJSON,omitempty"`
}

// appendPointers writes p as encoding/json writes query.Pointers.
func appendPointers(b []byte, p query.Pointers) ([]byte, bool) {
	n := len(b)
	for _, l := range []struct {
		name string
		at   []string
	}{{`,"at":`, p.At}, {`,"nan":`, p.NaN}, {`,"inf":`, p.Inf}, {`,"-inf":`, p.NegInf}} {
		if len(l.at) > 0 {
			b = appendStrings(append(b, l.name...), l.at)
		}
	}
	return closeMembers(b, n), true
}

// closeMembers makes the members written from b[n] on, each after a
// comma, an object: the first comma becomes its brace.
func closeMembers(b []byte, n int) []byte {
	if len(b) == n {
		return append(b, "{}"...)
	}
	b[n] = '{'
	return append(b, '}')
}

// NotJSON says where the node values of Work.Values, Work.Ordered and
// Work.Marked hold what JSON cannot: the empty marker, or NaN or an
// infinity, which a query or a stylesheet may compute and the reference
// keeps in memory for the whole activation. Encode stores those values
// with null in their place and this beside them (query.Marks); Decode
// puts them back (query.Remark). It is nil in a state in memory.
type NotJSON struct {
	Values  map[string]query.Pointers `json:"values,omitempty"`
	Ordered map[string]query.Pointers `json:"ordered,omitempty"`
	Marked  map[string]query.Pointers `json:"marked,omitempty"`
}

// storable is st with the values of its work that JSON cannot hold
// nulled and noted in Work.NotJSON (a copy: st is not changed), and
// whether there were any.
func storable(st *State) (*State, bool) {
	if st.Work == nil {
		return st, false
	}
	values, vp := nullNotJSON(st.Work.Values)
	ordered, op := nullNotJSON(st.Work.Ordered)
	marked, mp := nullNotJSON(st.Work.Marked)
	if vp == nil && op == nil && mp == nil {
		return st, false
	}
	w := *st.Work
	w.Values, w.Ordered, w.Marked = values, ordered, marked
	w.NotJSON = &NotJSON{Values: vp, Ordered: op, Marked: mp}
	c := *st
	c.Work = &w
	return &c, true
}

// nullNotJSON is m with each value that holds NaN or an infinity nulled
// where it does, and their pointers; m itself when none does.
func nullNotJSON[M ~map[string]any](m M) (M, map[string]query.Pointers) {
	var out M
	var ps map[string]query.Pointers
	for k, v := range m {
		nulled, p := query.Marks(v)
		if p.Empty() {
			continue
		}
		if out == nil {
			out, ps = maps.Clone(m), map[string]query.Pointers{}
		}
		out[k], ps[k] = nulled, p
	}
	if out == nil {
		return m, nil
	}
	return out, ps
}

// restoreNotJSON puts back what Work.NotJSON notes, in the values just
// decoded.
func restoreNotJSON(w *Work) error {
	if w == nil || w.NotJSON == nil {
		return nil
	}
	for _, m := range []struct {
		name   string
		values map[string]any
		at     map[string]query.Pointers
	}{{"value", w.Values, w.NotJSON.Values}, {"ordered value", w.Ordered, w.NotJSON.Ordered}, {"marked value", w.Marked, w.NotJSON.Marked}} {
		for k, p := range m.at {
			v, err := query.Remark(m.values[k], p)
			if err != nil {
				return fmt.Errorf("%s of node %q: %w", m.name, k, err)
			}
			m.values[k] = v
		}
	}
	w.NotJSON = nil
	return nil
}

// Ordered is a map of node values that may hold *value.Object. It is
// stored with each object in its own member order (when that is not
// Keys order) and read back in the order written, so that a stored
// state read back and encoded again is byte for byte what was stored.
type Ordered map[string]any

// MarshalJSON writes o as appendWork does.
func (o Ordered) MarshalJSON() ([]byte, error) {
	b, ok := value.AppendGoJSONMap(nil, o, value.AppendGoJSONOrdered)
	if !ok {
		return nil, errors.New("an ordered node value is not JSON")
	}
	return b, nil
}

// Kept is a map of task results as their workers wrote them: a value
// holding an object out of Keys order is stored in its member order, any
// other as every stored value is (appendKept), so that a plain value
// stores the bytes it always did.
type Kept map[string]any

// MarshalJSON writes k as appendState does.
func (k Kept) MarshalJSON() ([]byte, error) {
	b, ok := value.AppendGoJSONMap(nil, k, appendKept)
	if !ok {
		return nil, errors.New("a kept task result is not JSON")
	}
	return b, nil
}

// UnmarshalJSON reads each value in the member order written.
func (k *Kept) UnmarshalJSON(data []byte) error {
	return (*Ordered)(k).UnmarshalJSON(data)
}

// appendKept appends a task result as Kept and a held result store it:
// in its member order when some object of it walks out of Keys order,
// else plain. Either text reads back (DecodeOrdered) to a value that
// this writes as the same bytes, which replay compares.
func appendKept(b []byte, v any) ([]byte, bool) {
	if value.HasObject(v) {
		if !value.WalksInKeysOrder(v) {
			return value.AppendGoJSONOrdered(b, v)
		}
		v = value.Plain(v)
	}
	return appendValue(b, v)
}

// keptValue is one task result kept as its worker wrote it (Kept).
type keptValue struct{ v any }

func (k *keptValue) MarshalJSON() ([]byte, error) {
	b, ok := appendKept(nil, k.v)
	if !ok {
		return nil, errors.New("a held task result is not JSON")
	}
	return b, nil
}

// value is the result, nil when there is none.
func (k *keptValue) value() any {
	if k == nil {
		return nil
	}
	return k.v
}

func (k *keptValue) UnmarshalJSON(data []byte) (err error) {
	k.v, err = decodeStored(data)
	return err
}

// decodeStored reads a stored value in the member order written; the
// record's own bound already held its size.
func decodeStored(data []byte) (any, error) {
	return value.DecodeOrdered(data, value.Limits{MaxBytes: len(data) + 1, MaxDepth: 10000})
}

// UnmarshalJSON reads each value in the member order written.
func (o *Ordered) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw == nil {
		*o = nil
		return nil
	}
	m := make(Ordered, len(raw))
	for k, r := range raw {
		v, err := decodeStored(r)
		if err != nil {
			return err
		}
		m[k] = v
	}
	*o = m
	return nil
}

// Attempt is one task node in flight.
type Attempt struct {
	Attempt int `json:"attempt"`
	// Waiting is true while a retry timer, not a worker, holds the node.
	Waiting bool `json:"waiting,omitempty"`
	// RetryAt is the retry timer's deadline while Waiting.
	RetryAt float64 `json:"retryAt,omitempty"`
	// Deferred counts the node's failures since the activation whose
	// worker asked to retry after a delay of its own: the backoff of
	// other failures does not count them.
	Deferred int `json:"deferred,omitempty"`
	// Deadline is when the attempt in flight fails with TASK_TIMEOUT
	// unless a result is accepted first (ms); 0 when no timeout applies.
	Deadline float64 `json:"deadline,omitempty"`
	// Paused marks a paused run; Held are the inputs it keeps for its
	// resume, in arrival order (pause.go).
	Paused *Paused `json:"paused,omitempty"`
	Held   []Held  `json:"held,omitempty"`
	// Terminated says why an operator ended the run.
	Terminated *Termination `json:"terminated,omitempty"`
	// Scheduled is when the node's first attempt was invoked (ms), the
	// start of its schedule-to-close timeout.
	Scheduled float64 `json:"scheduled,omitempty"`
}

// MarshalJSON writes an event as the reference stores it.
func (e Event) MarshalJSON() ([]byte, error) {
	m := map[string]any{"type": e.Type}
	if e.HasPayload {
		m["payload"] = e.Payload
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads an event, keeping whether it had a payload.
func (e *Event) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw["type"], &e.Type); err != nil {
		return errors.New("event type must be a string")
	}
	if p, ok := raw["payload"]; ok {
		e.HasPayload = true
		return json.Unmarshal(p, &e.Payload)
	}
	return nil
}

// stored is State's JSON form: the control snapshot as the reference's
// value.
type stored struct {
	State
	Control controlJSON `json:"control"`
}

type controlJSON struct {
	Active  []string            `json:"active"`
	History map[string][]string `json:"history"`
	Timers  []timerJSON         `json:"timers"`
	Serial  int64               `json:"serial"`
	Time    float64             `json:"time"`
}

type timerJSON struct {
	Transition int     `json:"transition"`
	At         float64 `json:"at"`
	Token      int64   `json:"token"`
}

// Encode returns the stored form of a state: what encodeReflect
// returns, written by hand (appendState).
func Encode(st *State) ([]byte, error) {
	b, ok := appendState(make([]byte, 0, 1024), st)
	if !ok {
		// a DAG value holding NaN or an infinity (rare: try it first)
		var changed bool
		if st, changed = storable(st); changed {
			b, ok = appendState(b[:0], st)
		}
	}
	if ok {
		if checkEncoding.Load() {
			verifyEncoded(st, b)
		}
		return b, nil
	}
	return encodeReflect(st)
}

// encodeReflect is the stored form as encoding/json writes it, the
// definition appendState follows byte for byte.
func encodeReflect(st *State) ([]byte, error) {
	c := controlJSON{Active: st.Control.Active, History: st.Control.History, Serial: st.Control.Serial, Time: st.Control.Time}
	if c.History == nil {
		c.History = map[string][]string{}
	}
	c.Timers = make([]timerJSON, len(st.Control.Timers))
	for i, t := range st.Control.Timers {
		c.Timers[i] = timerJSON{Transition: t.Transition, At: t.At, Token: t.Token}
	}
	return json.Marshal(stored{State: *st, Control: c})
}

// Decode parses a stored state. The control snapshot is checked against
// the workflow when the state is next applied.
func Decode(data []byte) (*State, error) {
	var s stored
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	st := s.State
	if err := restoreNotJSON(st.Work); err != nil {
		return nil, fmt.Errorf("stored run state: %w", err)
	}
	st.Control = statechart.State{Active: s.Control.Active, History: s.Control.History, Serial: s.Control.Serial, Time: s.Control.Time}
	for _, t := range s.Control.Timers {
		st.Control.Timers = append(st.Control.Timers, statechart.Timer{Transition: t.Transition, At: t.At, Token: t.Token})
	}
	if st.RunID == "" || st.Context.Results == nil || st.Context.Visits == nil || len(st.Control.Active) == 0 {
		return nil, errors.New("stored run state is incomplete")
	}
	return &st, nil
}

// Snapshot returns the reference's jaren-workflow-run/0.1 snapshot.
func (st *State) Snapshot(wf *workflow.Workflow) map[string]any {
	return map[string]any{
		"format":     Format,
		"runId":      st.RunID,
		"identity":   wf.Identity.Value(),
		"generation": float64(st.Generation),
		"control":    st.Control.ToValue(),
		"context":    st.Context.value(),
		"pending":    st.Pending.value(),
		"status":     st.innerStatus(),
	}
}

// innerStatus is the reference's status: running, waiting or done. A
// failed or cancelled run keeps the status of its last good snapshot.
func (st *State) innerStatus() string {
	status := st.Status
	if st.Paused != nil {
		status = st.Paused.Was
	}
	switch status {
	case StatusWaiting:
		return "waiting"
	case StatusDone:
		return "done"
	}
	return "running"
}

func (c Context) value() map[string]any {
	var ev any
	if c.Event != nil {
		ev = c.Event.value()
	}
	return map[string]any{"input": c.Input, "data": c.Data, "event": ev, "results": c.Results, "visits": c.Visits}
}

func (e Event) value() map[string]any {
	m := map[string]any{"type": e.Type}
	if e.HasPayload {
		m["payload"] = e.Payload
	}
	return m
}

func (p *Pending) value() any {
	if p == nil {
		return nil
	}
	m := map[string]any{"state": p.State, "visit": float64(p.Visit), "input": p.Input, "values": p.Values}
	if p.Identity != nil {
		m["identity"] = p.Identity
	}
	if p.HasResult {
		m["result"] = p.Result
	}
	return m
}

// ErrRejected is wrapped by Apply's refusals of a message that cannot
// apply to the run (unknown or stale activation, a start for an existing
// run, any message for a settled run). The state is unchanged; the host
// records the reason and acknowledges the message.
var ErrRejected = errors.New("message rejected")
