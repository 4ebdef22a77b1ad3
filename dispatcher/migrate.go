package dispatcher

import (
	"context"

	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/wire"
)

// migrateRun is a migration's check of one run (bulk.Config.Migrate,
// `jetflow migrate`): the run's history replayed under its own revisions
// and under revision to, with this dispatcher's definitions and
// settings, so that the proof it returns is the one the run's step then
// checks (step.Proof).
func (d *Dispatcher) migrateRun(ctx context.Context, runID, to string) (wire.Migrate, error) {
	m, _, err := replay.Migration(ctx, d.js, d.settings, d.store, d.loader.Load, runID, to)
	return m, err
}
