package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// ErrOnRevision: the run is on the revision a migration names already.
var ErrOnRevision = errors.New("run already on the revision")

// ErrSettled: the run has ended; only a run that has not ended moves.
var ErrSettled = errors.New("run has ended")

// Migration checks run runID's history against revision to of its
// workflow (Checker: its own revisions and to loaded with load) and
// returns the migration to send it: with the check's proof when the run
// is the same under to, with the first divergence (or why it cannot be
// checked) otherwise, so that the run refuses it where status and
// history show why. s are the dispatchers' settings, Tokens set. A run
// already on to gives ErrOnRevision, a settled one ErrSettled, one with
// no record an error wrapping kvstore.ErrRunNotFound; other errors are
// those of reading the record, the history and the definitions.
func Migration(ctx context.Context, js jetstream.JetStream, s step.Settings, runs RunStore, load func(ctx context.Context, name, revision string) (*step.Definition, error), runID, to string) (wire.Migrate, RunCheck, error) {
	data, _, err := runs.Get(ctx, runID, kvstore.FromLeader())
	if err != nil {
		return wire.Migrate{}, RunCheck{}, fmt.Errorf("replay: migrate run %s: %w", runID, err)
	}
	rec, err := runrecord.Decode(data)
	if err != nil {
		return wire.Migrate{}, RunCheck{}, fmt.Errorf("replay: migrate run %s: %w", runID, err)
	}
	st, err := step.DecodeState(rec)
	if err != nil {
		return wire.Migrate{}, RunCheck{}, fmt.Errorf("replay: migrate run %s: %w", runID, err)
	}
	switch {
	case st.Revision == to:
		return wire.Migrate{}, RunCheck{}, fmt.Errorf("replay: migrate run %s: %w %s", runID, ErrOnRevision, to)
	case st.Status.Terminal():
		return wire.Migrate{}, RunCheck{}, fmt.Errorf("replay: migrate run %s: %w (%s)", runID, ErrSettled, st.Status)
	}
	def, err := load(ctx, st.Workflow, to)
	if err != nil {
		return wire.Migrate{}, RunCheck{}, fmt.Errorf("replay: migrate run %s: revision %s of workflow %s: %w", runID, to, st.Workflow, err)
	}
	chk, err := NewChecker(s, load, def)
	if err != nil {
		return wire.Migrate{}, RunCheck{}, err
	}
	if len(rec.Order) == 0 {
		return wire.Migrate{}, RunCheck{}, fmt.Errorf("replay: migrate run %s: its record lists no inputs (a record older than input orders): replay and restore it first", runID)
	}
	from, upto := rec.Order[0].From, rec.Order[0].To
	for _, sp := range rec.Order {
		from, upto = min(from, sp.From), max(upto, sp.To)
	}
	// Its history as a reset's rewind reads it: no consumer.
	msgs, err := readRange(ctx, js, s.Names, rec, runID, from, upto)
	if err != nil {
		return wire.Migrate{}, RunCheck{}, err
	}
	v := chk.Compare(ctx, runID, msgs, rec)
	m := wire.Migrate{From: st.Revision, To: to}
	switch v.Verdict {
	case CheckSame:
		m.Proof = v.Proof
	case CheckDiverges:
		m.Divergence = "its history under revision " + to + " " + v.Divergence.Text()
	default:
		m.Divergence = "its history could not be checked against revision " + to + ": " + v.Error
	}
	return m, v, nil
}
