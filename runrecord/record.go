package runrecord

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jetflow/jetflow/wire"
)

// Record is what the run bucket stores under a run id: the reducer's state
// together with the messages that state still owes the world (the outbox)
// and enough history to recognise a redelivered input.
type Record struct {
	// State is the reducer's envelope in its stored form (run.Encode).
	State json.RawMessage `json:"state"`
	// Status is the last status announced for the run; clients read it.
	Status *wire.Status `json:"status,omitempty"`
	// Outbox holds the messages produced by the step that wrote this
	// record. They are published after the save and replaced by the next
	// step's, once that step has made sure they were published.
	Outbox []Outgoing `json:"outbox,omitempty"`
	// Applied lists the stream sequences of the most recently applied
	// inputs, oldest first, bounded by the dispatchers' AppliedHistory.
	Applied []uint64 `json:"applied,omitempty"`
	// Rejected lists the most recent refused inputs, oldest first, bounded
	// by RejectedHistory.
	Rejected []Rejection `json:"rejected,omitempty"`
	// Ignored lists the most recent events the run consumed without
	// effect (applied, as the reference applies them, but matching no
	// transition), oldest first, bounded by RejectedHistory. Seq
	// is the input whose step consumed the event: the event itself, or
	// a later input when it arrived while the run was busy.
	Ignored []Rejection `json:"ignored,omitempty"`
	// Order is the order every input so far was applied or rejected in,
	// for replay (package replay): usually one span.
	Order Order `json:"order,omitempty"`
	// Timers is set once a step of the run has armed a timer: settling
	// the run then purges the schedules that may still be pending, unless
	// DeadlineOnly (PurgesTimers).
	Timers bool `json:"timers,omitempty"`
	// DeadlineOnly qualifies Timers: every timer the run armed is its
	// deadline timer, which the settling step disarms itself, so no purge
	// is needed. The previous release reads Timers alone, and so purges
	// when it settles such a run: its disarm goes to the subject before
	// armed instances (Armed), which misses the pending instance.
	DeadlineOnly bool `json:"deadlineOnly,omitempty"`
	// Tracked qualifies Timers: every timer schedule the run published is
	// in Armed or known gone, because the input whose step dropped it was
	// its fire (which purged it), or an outbox disarmed or re-armed it. It
	// is unset once a step dropped an instance still pending (a wait left
	// by an event before its timer), and on records from before it, whose
	// settlement then purges (SweepsTimers).
	Tracked bool `json:"tracked,omitempty"`
	// Armed maps each timer the run may still rely on to the step (the
	// state's Seq) whose outbox armed its pending instance: the instance
	// is on its own schedule subject (subjects.Names.ScheduleInstance),
	// which a disarm or a re-arm then names. A timer missing here was
	// armed on the layout before instances (subjects.Names.Schedule).
	Armed map[string]int64 `json:"armed,omitempty"`
	// Parent links a child run to the parent's task attempt that started
	// it (from its start); nil for a run started otherwise.
	Parent *wire.Parent `json:"parent,omitempty"`
	// Children are the child runs the run started, one per task attempt
	// of a node bound to a workflow, in the order started.
	Children []wire.Child `json:"children,omitempty"`
	// Priority is the priority the run's start gave (wire.Start.Priority),
	// which its task invocations inherit where their task version's
	// policy queues them (docs/POLICY.md#priority-and-fairness); nil when
	// the start gave none.
	Priority *int `json:"priority,omitempty"`

	// statusJSON is Status encoded, when known: the step that announced
	// the status encoded it for the announcement already.
	statusJSON json.RawMessage
}

// Outgoing kinds.
const (
	OutInvoke = "invoke"
	OutTimer  = "timer"
	OutStatus = "status"
	// OutDisarm replaces a pending timer schedule by a marker that
	// expires at once, so that it never fires.
	OutDisarm = "disarm"
	// OutInput is a message to another run's input: a child run's start,
	// a child's result to its parent, or an operation cascading from a
	// parent to its children (docs/CHILDREN.md).
	OutInput = "input"
)

// Outgoing is one effect rendered as the message that carries it out.
type Outgoing struct {
	// ID is the effect's stable id, sent as Nats-Msg-Id for JetStream
	// de-duplication.
	ID string `json:"id"`
	// Kind is OutInvoke, OutTimer, OutDisarm or OutStatus.
	Kind    string            `json:"kind"`
	Subject string            `json:"subject"`
	Header  map[string]string `json:"header,omitempty"`
	Data    json.RawMessage   `json:"data"`
}

// Rejection is one input the reducer refused, or one event it ignored.
type Rejection struct {
	Seq    uint64  `json:"seq"`
	Kind   string  `json:"kind"`
	Reason string  `json:"reason"`
	Time   float64 `json:"time"`
}

// Decode parses a stored record. A tombstone (a run removed by
// retention) is an error wrapping ErrRemoved, a *RemovedError.
func Decode(data []byte) (*Record, error) {
	if removed, ok := decodeRemoved(data); ok {
		return nil, removed
	}
	r, ok := parseRecord(data)
	if !ok {
		r = &Record{}
		if err := json.Unmarshal(data, r); err != nil {
			return nil, fmt.Errorf("decode run record: %w", err)
		}
	}
	if len(r.State) == 0 {
		return nil, fmt.Errorf("decode run record: no state")
	}
	return r, nil
}

// Encode returns the stored form of the record: its JSON, as
// encoding/json would write it.
func (r *Record) Encode() ([]byte, error) {
	n := len(r.State) + 64 + 16*(len(r.Applied)+len(r.Order))
	for _, o := range r.Outbox {
		n += len(o.Data) + len(o.Subject) + len(o.ID) + 160
	}
	if r.Status != nil {
		n += len(r.Status.Result) + 160
	}
	return appendRecord(make([]byte, 0, n), r)
}

// HasApplied reports whether the input at stream sequence seq is already
// reflected in the record.
func (r *Record) HasApplied(seq uint64) bool {
	if slices.Contains(r.Applied, seq) {
		return true
	}
	for i := range r.Rejected {
		if r.Rejected[i].Seq == seq {
			return true
		}
	}
	return false
}

// Inputs returns the stream sequences of every input the run took,
// applied or refused, ascending; nil when the record may no longer name
// them all (either list reached its bound, maxApplied or maxRejected).
func (r *Record) Inputs(maxApplied, maxRejected int) []uint64 {
	if len(r.Applied) == 0 || len(r.Applied) >= maxApplied || len(r.Rejected) >= maxRejected {
		return nil
	}
	out := make([]uint64, 0, len(r.Applied)+len(r.Rejected))
	out = append(out, r.Applied...)
	for i := range r.Rejected {
		out = append(out, r.Rejected[i].Seq)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Next returns the record after an input at seq (r is nil before the
// run's first): the caller fills State, Outbox and Status (SetStatus). It shares
// nothing mutable with r.
func (r *Record) Next(seq uint64, maxApplied int) *Record {
	if r == nil {
		return &Record{Applied: []uint64{seq}, Order: Order{{seq, seq}}}
	}
	n := &Record{Status: r.Status, statusJSON: r.statusJSON, Rejected: r.Rejected, Ignored: r.Ignored, Timers: r.Timers, DeadlineOnly: r.DeadlineOnly, Tracked: r.Tracked, Parent: r.Parent, Children: r.Children, Priority: r.Priority}
	n.Applied = AppendBounded(r.Applied, seq, maxApplied)
	n.Order = r.Order.Add(seq)
	return n
}

// PurgesTimers reports whether settling the run purges its pending
// schedules: some timer it armed may outlive the settling step.
func (r *Record) PurgesTimers() bool { return r.Timers && !r.DeadlineOnly }

// SweepsTimers reports whether settling or removing the run purges its
// schedules: PurgesTimers, unless every schedule it published is known
// gone. The previous release's steps use PurgesTimers alone (it decides
// DeadlineOnly, which that release reads).
func (r *Record) SweepsTimers() bool {
	return r.PurgesTimers() && (!r.Tracked || len(r.Armed) > 0)
}

// Refused returns the record after refusing the input at seq: the same
// run, with the refusal noted (a redelivery of it is then recognised)
// and its place in the order kept for replay.
func (r *Record) Refused(rej Rejection, maxRejected int) *Record {
	n := *r
	n.Rejected = AppendBounded(r.Rejected, rej, maxRejected)
	n.Order = r.Order.Add(rej.Seq)
	return &n
}

// SetStatus records s as the run's last announced status; the outbox's
// last status message, when there is one, is its encoding already.
func (r *Record) SetStatus(s *wire.Status) {
	r.Status, r.statusJSON = s, announced(r.Outbox)
}

// announced is the body of an outbox's last status announcement, or nil.
func announced(out []Outgoing) json.RawMessage {
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Kind == OutStatus {
			return out[i].Data
		}
	}
	return nil
}

// AppendBounded returns a new slice of s plus v, dropping the oldest
// elements beyond limit.
func AppendBounded[T any](s []T, v T, limit int) []T {
	if drop := len(s) + 1 - limit; drop > 0 {
		s = s[drop:]
	}
	out := make([]T, 0, len(s)+1)
	return append(append(out, s...), v)
}
