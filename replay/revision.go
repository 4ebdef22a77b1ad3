package replay

// Sameness: when a run may move from the revision it is pinned to onto
// another revision of its workflow (docs/REVISIONS.md).
//
// A run's history is replayed twice, input by input in the order the
// dispatchers applied it: under the run's own revisions, and under the
// other revision (every definition of the workflow resolves to it). The
// two are the same when, after every input on the run's line:
//
//  1. the step had the same outcome (applied, refused, ...);
//  2. the reducer's state is equal member for member apart from its
//     pins (step.Pins: the workflow, revision and start revision names):
//     the statechart configuration and generation (the settled path of
//     states and their visit counts), the context data, the activation
//     in flight (its id, nodes, attempts, inputs and outputs so far), the
//     armed timers and their deadlines, the deadline timer, buffered
//     events, held inputs and the counters effect ids are built from;
//  3. the step's outbox is equal message for message: the task
//     invocations (subject, so task and version; activation, node,
//     attempt, input and token), the timers armed and disarmed (subject
//     and fire time) and the status announcements, apart from the
//     revision an announcement names.
//
// Why that makes the move invisible: everything a worker, a timer or a
// client ever received from the run is what the other revision would
// have sent (3), so nothing in flight is addressed to an activation,
// token or timer the other revision does not have; and the run's future
// is a function of its state and its next inputs only (the engine is
// pure), so equal states (2) under the other revision go on exactly as
// a run that had started on it. A migration input (KindMigrate) changes
// only the pins, so it is compared on the state alone.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Verdicts of a run's check against another revision (RunCheck.Verdict).
const (
	// CheckSame: the run's history under the other revision is the same.
	CheckSame = "same"
	// CheckDiverges: it differs at some input (RunCheck.Divergence).
	CheckDiverges = "diverges"
	// CheckFails: it could not be judged (RunCheck.Error).
	CheckFails = "fails"
)

// RunCheck is one run's check against another revision.
type RunCheck struct {
	Run string `json:"run"`
	// Revision is the revision the run is pinned to; Status its status.
	Revision string `json:"revision,omitempty"`
	Status   string `json:"status,omitempty"`
	// Verdict is CheckSame, CheckDiverges or CheckFails.
	Verdict string `json:"verdict"`
	// Inputs is how many inputs of the run's line were compared.
	Inputs     int         `json:"inputs"`
	Divergence *Divergence `json:"divergence,omitempty"`
	Error      string      `json:"error,omitempty"`
	// Proof is the fingerprint of the run's state (step.Proof) when the
	// verdict is CheckSame: a migration carries it.
	Proof string `json:"proof,omitempty"`
}

// Divergence is the first input whose step differs under the two
// revisions.
type Divergence struct {
	// Input is its position on the run's line (1 is the start); Seq its
	// stream sequence and Kind its kind.
	Input int    `json:"input"`
	Seq   uint64 `json:"seq"`
	Kind  string `json:"kind"`
	// What differs: "outcome", "state" or "effects".
	What string `json:"what"`
	// OldState and NewState are the state the run is in after the input
	// under its own revision and under the other.
	OldState string `json:"oldState"`
	NewState string `json:"newState"`
	// Pointer is the first difference in the unpinned state (JSON
	// Pointer), with the value on each side; Old and New for What
	// "outcome" are the outcomes.
	Pointer string `json:"pointer,omitempty"`
	Old     string `json:"old,omitempty"`
	New     string `json:"new,omitempty"`
	// Invocations lists the task invocations that differ: those of one
	// side only, as "task@version state/node attempt N".
	Invocations []InvocationDiff `json:"invocations,omitempty"`
}

// InvocationDiff is one task invocation the two revisions do not share:
// Old is the own revision's ("" when it has none), New the other's.
type InvocationDiff struct {
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

// Text is the divergence as one sentence.
func (d *Divergence) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "diverges at input %d (seq %d, %s): state %s under its revision, %s under the other", d.Input, d.Seq, d.Kind, orNone(d.OldState), orNone(d.NewState))
	switch d.What {
	case "outcome":
		fmt.Fprintf(&b, "; the input is %s under its revision, %s under the other", d.Old, d.New)
	case "state":
		fmt.Fprintf(&b, "; %s differs at %s (%s vs %s)", stateArea(d.Pointer), d.Pointer, orNone(d.Old), orNone(d.New))
	case "effects":
		b.WriteString("; its effects differ")
	case "waits":
		fmt.Fprintf(&b, "; in %s the run %s under its revision and %s under the other", d.Pointer, d.Old, d.New)
	}
	for _, inv := range d.Invocations {
		fmt.Fprintf(&b, "; invokes %s vs %s", orNone(inv.Old), orNone(inv.New))
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// stateArea names the part of a run's state a pointer is in.
func stateArea(p string) string {
	switch top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/"); top {
	case "context":
		return "the context data"
	case "pending":
		return "the pending wait, timers and deadlines"
	case "work":
		return "the activation in flight"
	case "deadline":
		return "the deadline timer"
	case "control":
		return "the path of states"
	case "buffered", "held":
		return "the inputs it keeps"
	default:
		return "the state"
	}
}

// Checker judges runs' histories under their own revisions and under
// one other definition of their workflow.
type Checker struct {
	names subjects.Names
	own   *Stepper
	other *Stepper
}

// NewChecker returns a checker stepping with s (its Tokens set: the
// deployment's secret), loading the runs' own revisions with own and
// resolving every revision of workflow to is name to.
func NewChecker(s step.Settings, own func(ctx context.Context, name, revision string) (*step.Definition, error), to *step.Definition) (*Checker, error) {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if s.Tokens == nil {
		return nil, fmt.Errorf("replay: a check needs the deployment's token secret (step.Settings.Tokens)")
	}
	other := func(ctx context.Context, name, revision string) (*step.Definition, error) {
		if name == to.Name {
			return to, nil
		}
		return own(ctx, name, revision)
	}
	return &Checker{names: s.Names, own: &Stepper{settings: s, load: own}, other: &Stepper{settings: s, load: other}}, nil
}

// Compare judges one run from its history (msgs, in stream order) and
// its saved record (nil when it has none: stream order is taken).
func (c *Checker) Compare(ctx context.Context, runID string, msgs []Message, rec *runrecord.Record) RunCheck {
	v := RunCheck{Run: runID, Verdict: CheckSame}
	var p plan
	pin := ""
	if rec != nil {
		if st, err := step.DecodeState(rec); err == nil {
			v.Revision, v.Status = st.Revision, string(st.Status)
			pin = st.Revision
			if st.StartRevision != "" {
				pin = st.StartRevision
			}
		}
	}
	if rec != nil && len(rec.Order) > 0 {
		if missing, _ := trimmedFrom(msgs, rec.Order[0].From, rec.Applied); missing != "" {
			v.Verdict, v.Error = CheckFails, "history trimmed: "+missing
			return v
		}
		p = planByRecord(msgs, rec.Order, rec.Applied, refusedSeqs(rec))
	} else {
		p = planByStream(c.names, msgs)
	}
	var a, b step.Run
	for _, m := range p.order {
		na, ao, awhy, err := c.own.Step(ctx, a, m, pin)
		if err != nil {
			v.Verdict, v.Error = CheckFails, fmt.Sprintf("input seq %d under the run's own revision: %v", m.Seq, err)
			return v
		}
		nb, bo, bwhy, err := c.other.Step(ctx, b, m, pin)
		if err != nil {
			v.Verdict, v.Error = CheckFails, fmt.Sprintf("input seq %d under the other revision: %v", m.Seq, err)
			return v
		}
		prevA := a
		a, b = na, nb
		if ao != step.Applied && ao != step.Rejected && bo == ao {
			continue // never on the line: a duplicate, an early input
		}
		v.Inputs++
		kind := kindOf(c.names, m.Subject)
		if d := c.differ(ctx, runID, m, kind, v.Inputs, prevA, a, b, ao, bo, awhy, bwhy); d != nil {
			v.Verdict, v.Divergence = CheckDiverges, d
			return v
		}
	}
	if a.Record == nil {
		v.Verdict, v.Error = CheckFails, "the history holds no start the run's revision applies"
		return v
	}
	if rec != nil && !equalJSON(a.Record.State, rec.State) {
		at, _, _ := Diverge(rec.State, a.Record.State)
		v.Verdict, v.Error = CheckFails, fmt.Sprintf("the history does not rebuild the saved state under the run's own revision (they differ at %q; `jetflow replay %s` shows it)", at, runID)
		return v
	}
	if v.Revision == "" && a.State != nil {
		v.Revision, v.Status = a.State.Revision, string(a.State.Status)
	}
	if d := c.waits(ctx, runID, a, b, v.Inputs); d != nil {
		v.Verdict, v.Divergence = CheckDiverges, d
		return v
	}
	if a.State != nil {
		if proof, err := step.Proof(a.State, c.chart(ctx, c.own, a)); err == nil {
			v.Proof = proof
		}
	}
	return v
}

// differ compares the two sides after input m (the k-th on the line),
// prev being the own side before it.
func (c *Checker) differ(ctx context.Context, runID string, m Message, kind string, k int, prev, a, b step.Run, ao, bo step.Outcome, awhy, bwhy string) *Divergence {
	d := &Divergence{Input: k, Seq: m.Seq, Kind: kind, OldState: c.where(runID, a), NewState: c.where(runID, b)}
	if kind != subjects.KindMigrate && ao != bo {
		d.What, d.Old, d.New = "outcome", outcomeText(ao, awhy), outcomeText(bo, bwhy)
		return d
	}
	if a.Record == nil || b.Record == nil {
		if a.Record == nil && b.Record == nil {
			return nil
		}
		d.What, d.Old, d.New = "outcome", outcomeText(ao, awhy), outcomeText(bo, bwhy)
		return d
	}
	ua, erra := step.Unpinned(a.Record.State, c.chart(ctx, c.own, a))
	ub, errb := step.Unpinned(b.Record.State, c.chart(ctx, c.other, b))
	if erra != nil || errb != nil {
		d.What, d.Old, d.New = "state", fmt.Sprint(erra), fmt.Sprint(errb)
		return d
	}
	if !bytes.Equal(ua, ub) {
		d.What = "state"
		d.Pointer, d.Old, d.New = Diverge(ua, ub)
		d.Invocations = invocationDiff(c.outbox(a, prev, ao), c.outbox(b, prev, bo))
		return d
	}
	if kind == subjects.KindMigrate || ao != step.Applied {
		return nil
	}
	oa, ob := c.outbox(a, prev, ao), c.outbox(b, prev, bo)
	if !sameOutbox(oa, ob) {
		d.What = "effects"
		d.Invocations = invocationDiff(oa, ob)
		if len(d.Invocations) == 0 {
			d.Pointer, d.Old, d.New = Diverge(outboxJSON(oa), outboxJSON(ob))
		}
		return d
	}
	return nil
}

// waits compares what the run waits for now: every event its own
// revision waits for in its active states must be awaited under the
// other too. An event branch the other revision removed would leave an
// event sent for it ignored, which the run's senders cannot see.
func (c *Checker) waits(ctx context.Context, runID string, a, b step.Run, k int) *Divergence {
	if a.State == nil || b.State == nil || a.State.Status.Terminal() {
		return nil
	}
	wa, wb := c.workflow(ctx, c.own, a), c.workflow(ctx, c.other, b)
	if wa == nil || wb == nil {
		return nil
	}
	for _, id := range a.State.Control.Active {
		sa, sb := wa.Spec(id), wb.Spec(id)
		if sa == nil {
			continue
		}
		for _, w := range sa.On {
			found := false
			if sb != nil {
				for _, x := range sb.On {
					found = found || x.Event == w.Event
				}
			}
			if !found {
				return &Divergence{
					Input: k, Kind: "wait", What: "waits", OldState: c.where(runID, a), NewState: c.where(runID, b),
					Pointer: "/states/" + id, Old: "waits for event " + w.Event, New: "does not wait for event " + w.Event,
				}
			}
		}
	}
	return nil
}

// workflow is the compiled document r steps with under st's loader.
func (c *Checker) workflow(ctx context.Context, st *Stepper, r step.Run) *workflow.Workflow {
	def, err := st.load(ctx, r.State.Workflow, r.State.Revision)
	if err != nil {
		return nil
	}
	e, ok := def.Program.(step.Engine)
	if !ok {
		return nil
	}
	return e.Workflow
}

// chart is the statechart r steps with under st's loader.
func (c *Checker) chart(ctx context.Context, st *Stepper, r step.Run) *statechart.Chart {
	if wf := c.workflow(ctx, st, r); wf != nil {
		return wf.Chart
	}
	return nil
}

// outbox is what the step that led to r published: its record's outbox
// when it applied the input.
func (c *Checker) outbox(r, _ step.Run, o step.Outcome) []runrecord.Outgoing {
	if o != step.Applied || r.Record == nil {
		return nil
	}
	return r.Record.Outbox
}

// where names the states a run is in and its status.
func (c *Checker) where(_ string, r step.Run) string {
	if r.State == nil {
		return ""
	}
	return strings.Join(r.State.Control.Active, ",") + " (" + string(r.State.Status) + ")"
}

func outcomeText(o step.Outcome, why string) string {
	if why == "" {
		return string(o)
	}
	return string(o) + ": " + why
}

// sameOutbox compares two outboxes message for message, a status
// announcement without the revision it names.
func sameOutbox(a, b []runrecord.Outgoing) bool {
	return bytes.Equal(outboxJSON(a), outboxJSON(b))
}

func outboxJSON(out []runrecord.Outgoing) []byte {
	norm := make([]runrecord.Outgoing, len(out))
	for i, o := range out {
		if o.Kind == runrecord.OutStatus {
			if u, err := step.Unpinned(o.Data, nil); err == nil {
				o.Data = u
			}
		}
		norm[i] = o
	}
	data, _ := json.Marshal(norm)
	return data
}

// invocationDiff lists the invocations of one outbox the other lacks.
func invocationDiff(a, b []runrecord.Outgoing) []InvocationDiff {
	ia, ib := invocations(a), invocations(b)
	var out []InvocationDiff
	for i := 0; i < max(len(ia), len(ib)); i++ {
		var x, y string
		if i < len(ia) {
			x = ia[i]
		}
		if i < len(ib) {
			y = ib[i]
		}
		if x != y {
			out = append(out, InvocationDiff{Old: x, New: y})
		}
	}
	return out
}

func invocations(out []runrecord.Outgoing) []string {
	var s []string
	for _, o := range out {
		if o.Kind != runrecord.OutInvoke {
			continue
		}
		var inv wire.Invocation
		if json.Unmarshal(o.Data, &inv) != nil {
			s = append(s, "?")
			continue
		}
		at := inv.State
		if inv.Node != "" {
			at += "/" + inv.Node
		}
		s = append(s, fmt.Sprintf("%s@%s %s attempt %d input %s", inv.Task, inv.Version, at, inv.Attempt, excerpt(inv.Input)))
	}
	return s
}
