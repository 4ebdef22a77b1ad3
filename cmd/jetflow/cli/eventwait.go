package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jetflow/jetflow/authoring"
	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// event --wait follows the run's record until a step took the event (its
// stream sequence among the record's applied inputs or refusals) and says
// what the event did, from the records before and after that step.

// eventOutcome is what an event did to a run.
type eventOutcome struct {
	// Verdict is moved, buffered, held, ignored or rejected.
	Verdict string
	Text    string
}

// sendAndFollow sends the event through send (which stores the event's
// stream sequence in seq) with the run's record watched by w from before,
// and waits for the step that took it; it returns what the event did and
// the record of that step. before is the record read before sending (nil
// when it could not be read): a watch that restarts (its consumer reset
// under load) may deliver first a record that already took the event,
// and the verdict needs the one before it.
func sendAndFollow(ctx context.Context, w *client.RunWatch, id, typ string, before *runrecord.Record, send func(seq *uint64) error) (*eventOutcome, *runrecord.Record, error) {
	var seq uint64
	if err := send(&seq); err != nil {
		return nil, nil, err
	}
	for {
		rec, err := w.Next(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("waiting for run %s to take event %s (seq %d): %w", id, typ, seq, err)
		}
		if o := judgeEvent(before, rec, seq, typ); o != nil {
			return o, rec, nil
		}
		before = rec
	}
}

// arrival is where event --wait-state and --wait-settled stopped
// following a run.
type arrival struct {
	// Reached says the run is in the state waited for (--wait-state) or
	// settled (--wait-settled).
	Reached bool
	Status  *wire.Status
	// States are the run's active states; Data is its context data.
	States []string
	Data   any
}

// followUntil follows the run from rec, the record of the step that took
// the event, until it is in state want or, when want is "", until it
// settles; a run that settles without entering want stops it too.
func followUntil(ctx context.Context, w *client.RunWatch, id string, rec *runrecord.Record, want string) (*arrival, error) {
	for {
		st, err := step.DecodeState(rec)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		ws, err := step.StatusOf(id, rec, st)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		states := mapNames(st.Control.Active)
		in := want != "" && slices.Contains(states, want)
		if in || run.Status(ws.Status).Terminal() {
			return &arrival{Reached: in || want == "", Status: ws, States: states, Data: st.Context.Data}, nil
		}
		if rec, err = w.Next(ctx); err != nil {
			return nil, fmt.Errorf("waiting for run %s to %s: %w", id, untilText(want), err)
		}
	}
}

func untilText(want string) string {
	if want == "" {
		return "settle"
	}
	return "enter state " + want
}

// judgeEvent says what the event at seq did in the step from before (nil
// when unknown) to rec, or nil when rec has not taken it yet.
func judgeEvent(before, rec *runrecord.Record, seq uint64, typ string) *eventOutcome {
	for _, r := range rec.Rejected {
		if r.Seq == seq {
			return &eventOutcome{"rejected", "the run refused it: " + replay.ReasonText(r.Reason)}
		}
	}
	if !slices.Contains(rec.Applied, seq) {
		return nil
	}
	for _, r := range rec.Ignored {
		if r.Seq == seq {
			return &eventOutcome{"ignored", replay.ReasonText(r.Reason)}
		}
	}
	st, err := step.DecodeState(rec)
	if err != nil {
		return &eventOutcome{"applied", "the run took it; its record cannot be read: " + err.Error()}
	}
	var prev *run.State
	if before != nil {
		prev, _ = step.DecodeState(before)
	}
	switch {
	case st.Paused != nil && slices.ContainsFunc(st.Held, func(h run.Held) bool { return h.Kind == run.KindEvent }):
		return &eventOutcome{"held", "the run is paused: it holds the event and applies it when resumed (jetflow resume)"}
	case slices.ContainsFunc(st.Buffered, func(e run.Event) bool { return e.Type == typ }) && (prev == nil || len(st.Buffered) > len(prev.Buffered)):
		return &eventOutcome{"buffered", "the run waits for nothing now (it is in " + strings.Join(mapNames(st.Control.Active), ", ") + "): it keeps the event for its next wait"}
	case prev != nil && !slices.Equal(prev.Control.Active, st.Control.Active):
		return &eventOutcome{"moved", fmt.Sprintf("it took the transition from %s to %s; the run is %s", strings.Join(mapNames(prev.Control.Active), ", "), strings.Join(mapNames(st.Control.Active), ", "), statusText(rec, st))}
	}
	return &eventOutcome{"applied", "the run took it in " + strings.Join(mapNames(st.Control.Active), ", ") + "; it is " + statusText(rec, st)}
}

func statusText(rec *runrecord.Record, st *run.State) string {
	ws, err := step.StatusOf(st.RunID, rec, st)
	if err != nil {
		return string(st.Status)
	}
	return ws.Status
}

// eventSender sends the event with opts, and reports its sequence.
func eventSender(ctx context.Context, f *fleet.Fleet, id, typ string, body any, opts []client.EventOption) func(seq *uint64) error {
	return func(seq *uint64) error {
		return f.Client.SendEvent(ctx, id, typ, body, append(opts, client.EventSeq(seq))...)
	}
}

// arrivalJSON is event --wait-state's and --wait-settled's --json output.
type arrivalJSON struct {
	Run string `json:"run"`
	// Verdict and Text are what the event did (as --wait prints them).
	Verdict string `json:"verdict"`
	Text    string `json:"text"`
	// Reached is false when the run settled before entering the state
	// waited for, or refused or ignored the event.
	Reached bool         `json:"reached"`
	Status  *wire.Status `json:"status,omitempty"`
	States  []string     `json:"states,omitempty"`
	Data    any          `json:"data,omitempty"`
}

// printArrival prints where the run was followed to and sets the exit
// status: --wait-state 0 when it is in the state, else 1; --wait-settled
// as start --wait.
func printArrival(s streams, a *arrival, o *eventOutcome, want string, asJSON bool) error {
	code := exitDone
	switch {
	case want == "":
		code = exitCode(a.Status)
	case !a.Reached:
		code = exitFailed
	}
	if asJSON {
		return printJSONExit(s, arrivalJSON{Run: a.Status.Run, Verdict: o.Verdict, Text: o.Text, Reached: a.Reached, Status: a.Status, States: a.States, Data: a.Data}, code)
	}
	where := strings.Join(a.States, ", ")
	switch {
	case want != "" && a.Reached:
		fmt.Fprintf(s.out, "run %s is in %s (%s)\n", a.Status.Run, where, a.Status.Status)
	case want != "":
		fmt.Fprintf(s.out, "run %s settled (%s, in %s) without entering %s\n", a.Status.Run, a.Status.Status, where, want)
	default:
		fmt.Fprintf(s.out, "run %s is %s (in %s)\n", a.Status.Run, a.Status.Status, where)
	}
	if a.Status.Error != nil {
		fmt.Fprintf(s.out, "error: %s %s %s\n", a.Status.Error.Code, a.Status.Error.Path, a.Status.Error.Message)
	}
	if len(a.Status.Result) > 0 {
		fmt.Fprintf(s.out, "result: %s\n", a.Status.Result)
	}
	data, err := json.Marshal(a.Data)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "data: %s\n", data)
	if code != exitDone {
		return exitError{code}
	}
	return nil
}

// checkStateName refuses a state name that run id's workflow revision
// does not declare, naming the nearest one.
func checkStateName(ctx context.Context, f *fleet.Fleet, id, name string) error {
	_, st, err := readRun(ctx, f, id)
	if err != nil {
		return nil // checkLive has said what there is to say
	}
	wf, err := compiledWorkflows(ctx, f)(st.Workflow, st.Revision)
	if err != nil {
		return nil // the wait goes on without the check
	}
	names := mapNames(wf.Chart.States())
	if slices.Contains(names, name) {
		return nil
	}
	msg := fmt.Sprintf("workflow %s (revision %s) of run %s has no state %q", st.Workflow, st.Revision, id, name)
	if near := authoring.Nearest(name, names); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return fmt.Errorf("%s; its states: %s", msg, strings.Join(names, ", "))
}
