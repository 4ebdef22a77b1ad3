package step

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ErrPermanent marks failures that no redelivery can cure (a reducer
// panic, an effect no message can carry, a corrupt record): dispatchers
// terminate the input and the record stays as it was.
var ErrPermanent = errors.New("permanent failure")

// Run is a run as a step sees it. The zero value is a run before its
// start.
type Run struct {
	// Record is what the run bucket holds; nil before the start.
	Record *runrecord.Record
	// State is Record.State decoded; nil until decoded (Step decodes it).
	State *run.State
	// Line is the run's line of inputs, kept by a walk of its history
	// for resets (Line.Took); Step and Reset leave it to the caller.
	Line *Line
}

// Outcome says what stepping one input did.
type Outcome string

// Outcomes of Step (Malformed is Parse's).
const (
	// Applied: the reducer took the input; the record changed.
	Applied Outcome = "applied"
	// Rejected: the reducer refused it; the record only notes it.
	Rejected Outcome = "rejected"
	// Duplicate: the record already reflects this sequence.
	Duplicate Outcome = "duplicate"
	// Malformed: no dispatcher can parse it; they terminate it.
	Malformed Outcome = "malformed"
	// Failed: it fails permanently (a reducer panic, an effect no message
	// can carry); dispatchers terminate it and the record stays.
	Failed Outcome = "failed"
	// NoRun: it is not a start and the run has no record yet; dispatchers
	// hand it back until the start is saved.
	NoRun Outcome = "no-run"
)

// Result is what one input did to a run.
type Result struct {
	// Run is the run after the input. For Applied its record is the one
	// to save, whose outbox holds the messages to publish; for Rejected
	// the same run with the refusal noted (no record when the run has
	// none); otherwise the run as it was.
	Run     Run
	Outcome Outcome
	// Reason says why the input was rejected or failed; for Rejected it
	// wraps run.ErrRejected, for Failed ErrPermanent.
	Reason error
	// Status is the status the input announced, if any.
	Status *wire.Status
	// Ignored are the events the step consumed without effect.
	Ignored []run.Ignored
	// Removed is the tombstone that replaces the run's record (Remove
	// only).
	Removed *wire.Removed
}

// Definitions resolves a workflow name and revision to the definition a
// run steps with. Revision "" asks for the one a start naming none gets.
// Errors are returned by Step as they are.
type Definitions interface {
	Definition(name, revision string) (*Definition, error)
}

// DefinitionsFunc is a Definitions.
type DefinitionsFunc func(name, revision string) (*Definition, error)

// Definition implements Definitions.
func (f DefinitionsFunc) Definition(name, revision string) (*Definition, error) {
	return f(name, revision)
}

// Step applies the input at stream sequence seq with stream time now
// (Unix ms) to cur. It does no I/O: a dispatcher saves and publishes
// what it returns, and a replay calls it on a run's history, so that both
// take exactly the same path. defs is asked for the definition only when
// the input is neither a duplicate nor early. Errors are those that stop
// before the input is judged: defs' own, and a record whose state does
// not decode (wrapping ErrPermanent).
func Step(s Settings, cur Run, in *Input, seq uint64, now float64, defs Definitions) (Result, error) {
	if cur.Record != nil && cur.Record.HasApplied(seq) {
		return Result{Run: cur, Outcome: Duplicate}, nil
	}
	if cur.Record == nil && in.Kind != subjects.KindStart {
		return Result{Run: cur, Outcome: NoRun}, nil
	}
	if cur.Record != nil && cur.State == nil {
		st, err := DecodeState(cur.Record)
		if err != nil {
			return Result{Run: cur}, fmt.Errorf("%w: run %s: %w", ErrPermanent, in.RunID, err)
		}
		cur.State = st
	}
	if in.Kind == subjects.KindReset && in.refused == nil {
		// Its judgement needs the run's history, which the caller reads.
		return resetPoint(s, cur, in, seq, now), nil
	}
	if in.Kind == subjects.KindMigrate && in.refused == nil {
		// Its judgement was made against the run's history by whoever
		// sent it; the step only checks the run is still the one judged.
		return migrate(s, cur, in, seq, now, defs)
	}
	if in.Kind == subjects.KindExpire {
		// Retention's judgement needs no definition: the reducer is not
		// asked, and a removed workflow must not keep its runs.
		return expire(s, cur, in, seq, now), nil
	}
	if err := checkParent(s, in); err != nil {
		return refuse(s, cur, in, seq, now, err), nil
	}
	name, revision := in.workflow()
	if cur.State != nil {
		name, revision = cur.State.Workflow, cur.State.Revision
	}
	def, err := defs.Definition(name, revision)
	if err != nil {
		return Result{Run: cur}, err
	}
	if in.Kind == subjects.KindRedrive && in.redriveTo != "" && in.redriveTo != revision && cur.State != nil {
		to, err := defs.Definition(name, in.redriveTo)
		if err != nil {
			return Result{Run: cur}, err
		}
		if !sameDocument(def, to) {
			return refuse(s, cur, in, seq, now, fmt.Errorf("%w: revision %s of workflow %s runs another workflow than the run's revision %s: a redrive moves a run only to the same document redeployed (another task policy)",
				run.ErrRejected, in.redriveTo, name, revision)), nil
		}
		def = to
	}
	return transit(s, def, in, seq, now, cur), nil
}

// sameDocument reports whether two definitions run the same workflow, so
// that a run of one can go on with the other.
func sameDocument(a, b *Definition) bool {
	ea, ok := a.Program.(Engine)
	eb, ok2 := b.Program.(Engine)
	return ok && ok2 && SameWorkflow(ea.Workflow, eb.Workflow)
}

// SameWorkflow reports whether two compiled documents differ at most in
// their revision (and other members that shape no run): the same
// statechart, DAGs and task versions under the same lowering. A run of
// one can go on with the other, which is how a redrive moves a run to
// its document redeployed with another task policy (a new revision).
func SameWorkflow(a, b *workflow.Workflow) bool {
	x, y := a.Identity, b.Identity
	return x.Lowering == y.Lowering && x.Control == y.Control && x.DAGs == y.DAGs && maps.Equal(x.TaskVersions, y.TaskVersions)
}

// DecodeState decodes a record's reducer state.
func DecodeState(rec *runrecord.Record) (*run.State, error) {
	st, err := run.Decode(rec.State)
	if err != nil {
		return nil, fmt.Errorf("decode run state: %w", err)
	}
	return st, nil
}

// transit computes the run after the input from cur, whose state is
// decoded (both nil before the start).
func transit(s Settings, def *Definition, in *Input, seq uint64, now float64, cur Run) Result {
	st := cur.State
	if st != nil && st.Control.Time > now {
		// Stream time is not monotonic across leader changes, and the
		// reducer refuses time that moves backwards.
		now = st.Control.Time
	}
	msg := in.msg
	msg.Time = now
	var next *run.State
	var effects []run.Effect
	var err error
	if in.refused != nil {
		// Malformed, but addressed to this run: its refusal is recorded
		// where status and history show it.
		err = fmt.Errorf("%w: %w", run.ErrRejected, in.refused)
	} else if in.startEvent != nil {
		next, effects, err = startWithEvent(def, in, st, msg)
	} else {
		next, effects, err = screenAndApply(s, def, in, st, msg)
	}
	if errors.Is(err, run.ErrRejected) {
		return refuse(s, cur, in, seq, now, err)
	}
	failed := func(err error) Result {
		return Result{Run: cur, Outcome: Failed, Reason: fmt.Errorf("%w: %w", ErrPermanent, err)}
	}
	if err != nil {
		return failed(fmt.Errorf("reducer: %w", err))
	}
	if next == nil {
		return failed(errors.New("reducer returned no state"))
	}
	return commit(s, def, in, seq, now, cur, next, effects)
}

// commit is the run after the reducer took the input at seq: next and
// its effects rendered into the record that follows cur's.
func commit(s Settings, def *Definition, in *Input, seq uint64, now float64, cur Run, next *run.State, effects []run.Effect) Result {
	prev := cur.Record
	failed := func(err error) Result {
		return Result{Run: cur, Outcome: Failed, Reason: fmt.Errorf("%w: %w", ErrPermanent, err)}
	}
	if next.Workflow == "" {
		next.Workflow = def.Name
	}
	if next.Revision == "" {
		next.Revision = def.Revision
	}
	if in.Kind == subjects.KindRedrive && next.Revision != def.Revision {
		// The redrive moved the run to another revision (Step).
		if next.StartRevision == "" {
			next.StartRevision = next.Revision
		}
		next.Revision = def.Revision
	}
	out, status, err := Render(s.Names, s.Tokens, in.RunID, next, effects, now)
	if err != nil {
		return failed(err)
	}
	started := in.priority(prev)
	links, err := bindChildren(s, def, in.RunID, started, effects, out)
	if err != nil {
		return failed(err)
	}
	var children []wire.Child
	if prev != nil {
		children = prev.Children
	}
	cascaded, err := cascade(s, in, children, cur.State, next)
	if err != nil {
		return failed(err)
	}
	out = append(out, cascaded...)
	queue(s.Names, def, next, started, out)
	if len(links) > 0 {
		children = append(slices.Clip(children), links...)
	}
	parent := in.parent(prev)
	if parent != nil && status != nil && settledStatus(status.Status) && (prev == nil || prev.Status == nil || !settledStatus(prev.Status.Status)) {
		o, err := reportToParent(s.Names, in.RunID, statusID(out), parent, status)
		if err != nil {
			return failed(err)
		}
		out = append(out, o)
	}
	state, err := run.Encode(next)
	if err != nil {
		return failed(fmt.Errorf("encode state: %w", err))
	}
	var armed map[string]int64
	if prev != nil {
		armed = prev.Armed
	}
	out, armed, loose := placeTimers(s.Names, in.RunID, in.fired, armed, cur.State, next, out)
	rec := prev.Next(seq, s.AppliedHistory)
	rec.State, rec.Outbox, rec.Armed = state, out, armed
	rec.Parent, rec.Children, rec.Priority = parent, children, started
	purge := rec.PurgesTimers() || armsTimer(out)
	// A record without Timers armed nothing (Timers is as old as timers);
	// one with Timers and not Tracked may have left a schedule pending,
	// and stays so.
	tracked := !rec.Timers || rec.Tracked
	rec.Timers = rec.Timers || purge || len(armed) > 0
	rec.DeadlineOnly = rec.Timers && !purge
	rec.Tracked = rec.Timers && tracked && !loose
	for _, ig := range next.Ignored {
		kind := subjects.KindEvent
		if ig.Kind != "" {
			kind = string(ig.Kind) // a held input refused at resume
		}
		rec.Ignored = runrecord.AppendBounded(rec.Ignored, runrecord.Rejection{Seq: seq, Kind: kind, Reason: ig.Reason, Time: now}, s.RejectedHistory)
	}
	if status != nil {
		rec.SetStatus(status)
	}
	return Result{Run: Run{Record: rec, State: next}, Outcome: Applied, Status: status, Ignored: next.Ignored}
}

// refuse is the run after refusing the input at seq for err (wrapping
// run.ErrRejected): the refusal noted on its record, when it has one.
func refuse(s Settings, cur Run, in *Input, seq uint64, now float64, err error) Result {
	r := Result{Run: cur, Outcome: Rejected, Reason: err}
	if cur.Record != nil {
		r.Run.Record = cur.Record.Refused(runrecord.Rejection{Seq: seq, Kind: in.Kind, Reason: err.Error(), Time: now}, s.RejectedHistory)
	}
	return r
}
