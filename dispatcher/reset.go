package dispatcher

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/step"
)

// hookAfterRewind: a reset rebuilt the run's earlier state from its
// history; nothing is saved yet.
const hookAfterRewind hookPoint = "after_rewind"

// rewind finishes the step of a reset input (step.Rewind): it rebuilds
// the run as it stood after the input the reset names, from the run's
// own history, the way a replay does (replay.Rewind), and steps the
// reset onto it. A point the run cannot go back to refuses the reset,
// recorded like any refusal. Reading the history costs one leader read
// per input of the run; nothing is cached, as resets are rare.
func (d *Dispatcher) rewind(ctx context.Context, in *step.Input, cur step.Run, seq uint64, now float64, defs step.Definitions, log *slog.Logger) (step.Result, error) {
	at, err := replay.Rewind(ctx, d.js, d.settings, defs, cur, in.ResetTo(), seq)
	var point *replay.PointError
	switch {
	case errors.As(err, &point):
		log.Warn("dispatcher: reset cannot go back", slog.Uint64("to", in.ResetTo()), slog.String("reason", point.Reason))
	case err != nil:
		return step.Result{Run: cur}, err
	default:
		log.Info("dispatcher: reset rebuilt the run's earlier state", slog.Uint64("to", in.ResetTo()))
		if err := d.hook(hookAfterRewind, in); err != nil {
			return step.Result{Run: cur}, err
		}
	}
	var why error
	if point != nil {
		why = point
	}
	return step.Reset(d.settings, cur, in, seq, now, defs, at, why)
}
