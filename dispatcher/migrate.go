package dispatcher

import (
	"context"
	"errors"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/wire"
)

// migrateRun is a migration's check of one run (bulk.Config.Migrate,
// `jetflow migrate`): the run's history replayed under its own revisions
// and under revision to, with this dispatcher's definitions and
// settings, so that the proof it returns is the one the run's step then
// checks (step.Proof). A run that has ended, is on to already or is
// gone is left alone (nil).
func (d *Dispatcher) migrateRun(ctx context.Context, runID, to string) (*wire.Migrate, error) {
	m, _, err := replay.Migration(ctx, d.js, d.settings, d.store, d.loader.Load, runID, to)
	switch {
	case errors.Is(err, replay.ErrOnRevision), errors.Is(err, replay.ErrSettled), errors.Is(err, kvstore.ErrRunNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &m, nil
}
