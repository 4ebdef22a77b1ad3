package step

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ChildBinding binds a task version to a deployed workflow: invoking it
// starts a child run (docs/CHILDREN.md).
type ChildBinding struct {
	// Workflow is the workflow the child runs, at its latest revision.
	Workflow string
	// Cascade says whether the parent's cancel, terminate, pause and
	// resume reach the child.
	Cascade bool
}

// ChildID is the id of the child run that attempt of node in activation
// of run parent starts: the same for every redelivery of the input that
// invoked it, so the input stream keeps one start, and another for each
// attempt, so that a retry starts a fresh child. It reads
// "<parent>--<node>-<attempt>-<hash>" when that is a run id, else
// "child-<hash>".
func ChildID(parent, activation, node string, attempt int) string {
	h := sha256.Sum256([]byte(parent + "\x00" + activation + "\x00" + node + "\x00" + strconv.Itoa(attempt)))
	readable := parent + "--" + node + "-" + strconv.Itoa(attempt) + "-" + hex.EncodeToString(h[:5])
	if subjects.CheckRunID(readable) == nil {
		return readable
	}
	return "child-" + hex.EncodeToString(h[:16])
}

// bindChildren replaces in out, rendered from effects one for one, the
// invocation of every task version def binds to a workflow by the start
// of a child run, and returns the links to the children it starts. A
// child inherits the parent run's priority (nil: none).
func bindChildren(s Settings, def *Definition, runID string, priority *int, effects []run.Effect, out []runrecord.Outgoing) ([]wire.Child, error) {
	if len(def.Children) == 0 {
		return nil, nil
	}
	var links []wire.Child
	for i, e := range effects {
		inv := e.Invoke
		if inv == nil {
			continue
		}
		b, ok := def.Children[inv.Task+"@"+inv.Version]
		if !ok {
			continue
		}
		input, err := childInput(inv)
		if err != nil {
			return nil, fmt.Errorf("effect %q: %w", e.ID, err)
		}
		child := ChildID(runID, inv.Activation, inv.Node, inv.Attempt)
		body, err := json.Marshal(wire.Start{Workflow: b.Workflow, Input: input, Parent: &wire.Parent{
			Run: runID, Activation: inv.Activation, Node: inv.Node, Task: inv.Task, Version: inv.Version, Attempt: inv.Attempt,
			Token: s.Tokens.Sign(runID, inv.Activation, inv.Node, inv.Attempt),
		}, Priority: priority})
		if err != nil {
			return nil, err
		}
		out[i] = runrecord.Outgoing{
			ID: out[i].ID, Kind: runrecord.OutInput, Subject: s.Names.Start(child), Data: body,
			Header: map[string]string{wire.HeaderRunID: child},
		}
		links = append(links, wire.Child{
			Run: child, Workflow: b.Workflow, Activation: inv.Activation, Node: inv.Node,
			Task: inv.Task, Version: inv.Version, Attempt: inv.Attempt, Detached: !b.Cascade,
		})
	}
	return links, nil
}

// childInput is the input of the child run an invocation starts: what
// the node's `with` resolved to, when it declares one that resolved to a
// value (the arguments a worker's handler reads from the invocation's
// with), else the node's input, as a worker's handler gets it.
func childInput(inv *run.Invoke) (json.RawMessage, error) {
	if inv.HasWith {
		with, err := rawJSON(inv.With)
		if err != nil {
			return nil, fmt.Errorf("task with: %w", err)
		}
		return with, nil
	}
	input, err := rawJSON(inv.Input)
	if err != nil {
		return nil, fmt.Errorf("task input: %w", err)
	}
	return input, nil
}

// checkParent refuses a start whose parent link does not carry its
// attempt's token: only a dispatcher starting a child makes one, and a
// child reports its result with it.
func checkParent(s Settings, in *Input) error {
	if in.Kind != subjects.KindStart || in.Start == nil || in.Start.Parent == nil {
		return nil
	}
	p := in.Start.Parent
	if s.Tokens == nil || !s.Tokens.Verify(p.Run, p.Activation, p.Node, p.Attempt, p.Token) {
		return fmt.Errorf("%w: parent link to run %q: %s", run.ErrRejected, p.Run, ReasonForgedToken)
	}
	return nil
}

// reportToParent is the result a child run that settled with status
// publishes to its parent, as its attempt's result; msgID is the status
// announcement's id.
func reportToParent(names subjects.Names, runID, msgID string, p *wire.Parent, status *wire.Status) (runrecord.Outgoing, error) {
	body := wire.Result{Activation: p.Activation, Node: p.Node, Attempt: p.Attempt, Token: p.Token}
	switch status.Status {
	case wire.StatusDone:
		body.Output = status.Result
		if len(body.Output) == 0 {
			body.Output = json.RawMessage("null")
		}
	case wire.StatusFailed:
		msg := "child run " + runID + " failed"
		if e := status.Error; e != nil {
			msg += ": " + e.Code + ": " + e.Message
		}
		body.Error = &wire.TaskError{Code: wire.CodeChildFailed, Message: msg}
	case wire.StatusCancelled:
		body.Error = &wire.TaskError{Code: wire.CodeChildCancelled, Message: withReason("child run "+runID+" was cancelled", status.Reason), NonRetryable: true}
	default: // terminated
		body.Error = &wire.TaskError{Code: wire.CodeChildTerminated, Message: withReason("child run "+runID+" was terminated", status.Reason), NonRetryable: true}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return runrecord.Outgoing{}, err
	}
	return runrecord.Outgoing{
		ID: msgID + "/parent", Kind: runrecord.OutInput, Subject: names.Result(p.Run), Data: data,
		Header: map[string]string{wire.HeaderRunID: p.Run, wire.HeaderActivation: p.Activation, wire.HeaderChild: runID},
	}, nil
}

func withReason(s, reason string) string {
	if reason == "" {
		return s
	}
	return s + ": " + reason
}

// settledStatus reports whether a run status is one a run settles in.
func settledStatus(s string) bool {
	return s == wire.StatusDone || s == wire.StatusFailed || s == wire.StatusCancelled || s == wire.StatusTerminated
}

// childInFlight reports whether st still waits for c's attempt.
func childInFlight(st *run.State, c wire.Child) bool {
	if st == nil || st.Status.Terminal() || st.Work == nil || st.Work.Activation != c.Activation {
		return false
	}
	a := st.Work.Running[c.Node]
	return a != nil && a.Attempt == c.Attempt && !a.Waiting
}

// cascade renders what the input at seq that took the parent run from
// prev to next sends to its children in flight: the parent's pause,
// resume and terminate to each child it cascades to; a cancel to each
// child whose attempt the parent no longer waits for (the parent was
// cancelled or failed, or the attempt's deadline passed), unless the
// parent settled and the child is detached. The child whose result the
// input is gets nothing: it has settled.
func cascade(s Settings, in *Input, children []wire.Child, prev, next *run.State) ([]runrecord.Outgoing, error) {
	var out []runrecord.Outgoing
	for _, c := range children {
		if !childInFlight(prev, c) {
			continue
		}
		var kind, subject, reason string
		switch {
		case in.Kind == subjects.KindPause || in.Kind == subjects.KindResume && childInFlight(next, c):
			if c.Detached {
				continue
			}
			kind, reason = in.Kind, in.msg.Reason
		case in.Kind == subjects.KindTerminate:
			if c.Detached {
				continue
			}
			kind, reason = in.Kind, "parent run "+in.RunID+" terminated: "+in.msg.Reason
		case childInFlight(next, c):
			continue
		case in.Kind == subjects.KindResult && in.msg.Result != nil && in.msg.Result.Activation == c.Activation &&
			in.msg.Result.Node == c.Node && in.msg.Result.Attempt == c.Attempt:
			continue
		case next.Status.Terminal() && c.Detached:
			continue
		default:
			kind, reason = subjects.KindCancel, abandoned(in, next)
		}
		var body any = wire.Operation{Reason: reason, Operator: in.msg.Operator}
		switch kind {
		case subjects.KindPause:
			subject = s.Names.Pause(c.Run)
		case subjects.KindResume:
			subject = s.Names.Resume(c.Run)
		case subjects.KindTerminate:
			subject = s.Names.Terminate(c.Run)
		default:
			subject, body = s.Names.Cancel(c.Run), wire.Cancel{Reason: reason}
		}
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		out = append(out, runrecord.Outgoing{
			ID:   in.RunID + "/" + strconv.FormatInt(next.Seq, 10) + "/" + kind + "/" + c.Run,
			Kind: runrecord.OutInput, Subject: subject, Data: data,
			Header: map[string]string{wire.HeaderRunID: c.Run},
		})
	}
	return out, nil
}

// abandoned says why a parent no longer waits for a child.
func abandoned(in *Input, next *run.State) string {
	switch {
	case next.Status == run.StatusCancelled:
		return withReason("parent run "+in.RunID+" cancelled", in.msg.Reason)
	case next.Status.Terminal():
		return "parent run " + in.RunID + " " + string(next.Status)
	}
	return "parent run " + in.RunID + " no longer waits for this attempt (its deadline passed)"
}

// parent is the parent link of the run the input steps: its record's,
// or the start's when it creates the run.
func (in *Input) parent(prev *runrecord.Record) *wire.Parent {
	if prev != nil {
		return prev.Parent
	}
	if in.Start != nil {
		return in.Start.Parent
	}
	return nil
}

// priority is the priority the start of the run the input steps gave:
// its record's, or the start's when it creates the run; nil for none.
func (in *Input) priority(prev *runrecord.Record) *int {
	if prev != nil {
		return prev.Priority
	}
	if in.Start != nil && in.Start.Priority != nil {
		p := min(max(*in.Start.Priority, wire.MinPriority), wire.MaxPriority)
		return &p
	}
	return nil
}

// statusID is the id of an outbox's last status announcement.
func statusID(out []runrecord.Outgoing) string {
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Kind == runrecord.OutStatus {
			return out[i].ID
		}
	}
	return ""
}
