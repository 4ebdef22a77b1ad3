package integration

import (
	"context"
	"testing"
	"time"

	"github.com/jetflow/jetflow/replay"
)

// checkReplay asserts that replaying the run's input history through the
// engine reproduces the saved run state exactly. Every scenario calls it
// for the runs it drives.
func checkReplay(t testing.TB, e *env, runID string) {
	t.Helper()
	checkReplayWithin(t, e, runID, 30*time.Second)
}

// checkReplayWithin is checkReplay with a bound of its own, for runs whose
// history holds large payloads to read back.
func checkReplayWithin(t testing.TB, e *env, runID string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, d)
	defer cancel()
	rep, err := replay.Check(ctx, replay.Source{
		JS: e.f.JS, Names: e.names, Registry: e.f.Registry, Runs: e.f.Runs,
		Settings: dispatcherConfig(e.opts.dispatcher).Settings(), RunOptions: dispatcherConfig(e.opts.dispatcher).RunOptions,
	}, runID)
	if err != nil {
		t.Errorf("replay of run %s: %v", runID, err)
		return
	}
	if !rep.Equal {
		t.Errorf("replay of run %s diverges at %q: saved %s, replayed %s (%d messages, order %s, notes %v, skipped %+v)",
			runID, rep.Divergence, rep.SavedValue, rep.RebuiltValue, rep.Info.Messages, rep.Info.Order, rep.Info.Notes, rep.Info.Skipped)
	}
}
