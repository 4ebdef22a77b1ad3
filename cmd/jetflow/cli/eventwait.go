package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
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
// stream sequence in seq) with the run's record watched from before, and
// waits for the step that took it.
func sendAndFollow(ctx context.Context, f *fleet.Fleet, id, typ string, send func(seq *uint64) error) (*eventOutcome, error) {
	w, err := f.Client.Watch(ctx, id)
	if err != nil {
		return nil, err
	}
	defer func() { _ = w.Stop() }()
	var seq uint64
	if err := send(&seq); err != nil {
		return nil, err
	}
	var before *runrecord.Record
	for {
		rec, err := w.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("waiting for run %s to take event %s (seq %d): %w", id, typ, seq, err)
		}
		if o := judgeEvent(before, rec, seq, typ); o != nil {
			return o, nil
		}
		before = rec
	}
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
