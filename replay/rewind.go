package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
)

// PointError is why a reset cannot go back to the point it names: the
// dispatcher refuses the reset with it, and records it.
type PointError struct{ Reason string }

func (e *PointError) Error() string { return e.Reason }

func noPoint(format string, args ...any) error {
	return &PointError{Reason: fmt.Sprintf(format, args...)}
}

// Rewind rebuilds a run as it stood after its input at stream sequence
// to, for a reset at sequence reset that a dispatcher is applying to cur
// (the run's record and state now). It reads the run's history from the
// input stream, takes the inputs cur's record lists in the order it
// lists them through the step, exactly as a replay does (Stepper: a
// reset among them goes back along the line), and returns the state the
// line holds after to. defs are the dispatcher's definitions; s its
// settings.
//
// A point the run cannot go back to is a *PointError: to is not an
// input the run took before the reset, a reset superseded it, it is the
// latest input, the history lost inputs the line depends on (the
// stream's MaxAge, a retention purge, --migrate-inputs), or the history
// does not rebuild the record (the state it leads to differs from cur's:
// the point could not be trusted either). Other errors are those of
// reading the stream and of defs.
func Rewind(ctx context.Context, js jetstream.JetStream, s step.Settings, defs step.Definitions, cur step.Run, to, reset uint64) (*run.State, error) {
	rec, st := cur.Record, cur.State
	if rec == nil || st == nil || len(rec.Order) == 0 {
		return nil, errors.New("replay: rewind needs the run's record and state")
	}
	runID := st.RunID
	from, upto := rec.Order[0].From, rec.Order[0].To
	for _, sp := range rec.Order {
		from, upto = min(from, sp.From), max(upto, sp.To)
	}
	msgs, err := readRange(ctx, js, s.Names, rec, runID, from, upto)
	if err != nil {
		return nil, err
	}
	if missing, seq := trimmedFrom(msgs, rec.Order[0].From, rec.Applied); missing != "" {
		if err := confirmGone(ctx, js, s.Names, runID, seq, reset); err != nil {
			return nil, err
		}
		return nil, noPoint("the history of run %q is trimmed: %s (the input stream's MaxAge, a retention purge or --migrate-inputs removed it), and a reset rebuilds the run from its history", runID, missing)
	}
	pin := st.Revision
	if st.StartRevision != "" {
		pin = st.StartRevision
	}
	walker := &Stepper{settings: s, load: func(_ context.Context, name, revision string) (*step.Definition, error) {
		return defs.Definition(name, revision)
	}}
	var line step.Run
	for _, m := range planByRecord(msgs, rec.Order, rec.Applied, refusedSeqs(rec)).order {
		if line, _, _, err = walker.Step(ctx, line, m, pin); err != nil {
			return nil, fmt.Errorf("replay: rebuild run %s for its reset: %w", runID, err)
		}
	}
	if line.Record == nil || !equalJSON(line.Record.State, rec.State) {
		at := "/"
		if line.Record != nil {
			at, _, _ = Diverge(rec.State, line.Record.State)
		}
		return nil, noPoint("the history of run %q does not rebuild its saved state (they differ at %q), so no earlier state of it can be trusted either (`jetflow replay %s` shows the difference)", runID, at, runID)
	}
	at, why := line.Line.Point(runID, to, reset)
	if why != nil {
		return nil, &PointError{Reason: why.Error()}
	}
	return at, nil
}

// trimmedFrom says which input the line needs is missing from msgs (the
// start, or one the record lists as applied) and its sequence, or "".
func trimmedFrom(msgs []Message, start uint64, applied []uint64) (string, uint64) {
	have := make(map[uint64]bool, len(msgs))
	for _, m := range msgs {
		have[m.Seq] = true
	}
	if !have[start] {
		return fmt.Sprintf("its start (seq %d) is gone", start), start
	}
	for _, seq := range slices.Sorted(slices.Values(applied)) {
		if !have[seq] {
			return fmt.Sprintf("input seq %d, which it applied, is gone", seq), seq
		}
	}
	return "", 0
}

// confirmGone asks the input stream's leader for the run's input at seq,
// which the history read did not return; nil when the leader holds no
// such input either. The read's counts and gets may be answered by a
// server that lags (a node rejoining after a partition, a leader
// election under way), and a reset refused on that word is refused for
// good, while a later replay, reading the whole history, applies it and
// no longer rebuilds the record. An input the leader still holds is an
// error, so the dispatcher steps the reset again later. So is an answer
// with no input of the run from seq on at all when witness, the reset
// being applied (a later input of the run), is past seq: a server that
// lacks even that one has not applied what was stored, and a leader
// that lost a partition may still answer for a moment after it heals.
func confirmGone(ctx context.Context, js jetstream.JetStream, names subjects.Names, runID string, seq, witness uint64) error {
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	m, err := kvstore.NextOnSubject(ctx, js, names.InputStream(), seq, names.RunInputs(runID))
	switch {
	case errors.Is(err, kvstore.ErrNoKey) && witness > seq:
		return fmt.Errorf("replay: the history of run %s was read from a server that holds none of its inputs from %d on, not even the reset at %d being applied (a lagging server answered the read); read it again", runID, seq, witness)
	case errors.Is(err, kvstore.ErrNoKey):
		return nil
	case err != nil:
		return fmt.Errorf("replay: confirm that input %d of run %s is gone: %w", seq, runID, err)
	case m.Sequence == seq:
		return fmt.Errorf("replay: the history of run %s was read without its input %d, which the input stream's leader holds (a lagging server answered the read); read it again", runID, seq)
	}
	return nil
}

// readRange returns the run's messages with sequences from..to, in
// stream order: its history (readHistory, with the record in hand),
// whose counts come from the stream leader, so that it holds every
// input the dispatchers applied.
func readRange(ctx context.Context, js jetstream.JetStream, names subjects.Names, rec *runrecord.Record, runID string, from, to uint64) ([]Message, error) {
	msgs, err := readHistory(ctx, js, names, runID, rec)
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(msgs, func(m Message) bool { return m.Seq < from || m.Seq > to })
	return out, resolvePayloads(ctx, js, names, out)
}
