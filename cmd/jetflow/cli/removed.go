package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// Runs removed by retention: the run bucket holds a tombstone in place of
// the record until it expires, and status, history and replay say so
// instead of "not found".

// readRemoved returns run id's tombstone when retention removed it.
func readRemoved(ctx context.Context, f *fleet.Fleet, id string) (*runrecord.RemovedError, bool) {
	data, _, err := f.Runs.Get(ctx, id)
	if err != nil {
		return nil, false
	}
	_, err = runrecord.Decode(data)
	var re *runrecord.RemovedError
	return re, errors.As(err, &re)
}

// readArchived returns run id's archive when retention removed it with
// one: its tombstone says archived, or the tombstone expired and the
// run bucket holds nothing (the archive outlives it).
func readArchived(ctx context.Context, f *fleet.Fleet, id string) (*wire.Archived, bool) {
	data, _, err := f.Runs.Get(ctx, id)
	switch {
	case errors.Is(err, kvstore.ErrRunNotFound):
	case err != nil:
		return nil, false
	default:
		var re *runrecord.RemovedError
		if _, err := runrecord.Decode(data); !errors.As(err, &re) || !re.Removed.Archived {
			return nil, false
		}
	}
	a, err := kvstore.OpenArchive(ctx, f.JS, f.Names)
	if err != nil {
		return nil, false
	}
	ar, err := a.Get(ctx, id)
	if err != nil {
		return nil, false
	}
	return ar, true
}

// archivedMark is the line status, history and replay print for an
// archived run.
func archivedMark(r wire.Removed) string {
	return "archived (removed by retention at " + msTime(r.At) + ")"
}

// archivedRun decodes an archived run's record and state.
func archivedRun(ar *wire.Archived) (*runrecord.Record, *run.State, error) {
	rec, err := runrecord.Decode(ar.Record)
	if err != nil {
		return nil, nil, fmt.Errorf("the archive of run %s: %w", ar.Removed.Run, err)
	}
	st, err := step.DecodeState(rec)
	if err != nil {
		return nil, nil, fmt.Errorf("the archive of run %s: %w", ar.Removed.Run, err)
	}
	return rec, st, nil
}

// removedJSON is a removed run as status --json prints it.
type removedJSON struct {
	Run     string        `json:"run"`
	Status  string        `json:"status"`
	Removed *wire.Removed `json:"removed"`
}

// printRemoved is status's output for a removed run.
func printRemoved(s streams, r wire.Removed, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(s.out).Encode(removedJSON{Run: r.Run, Status: "removed", Removed: &r})
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("run", r.Run)
	row("workflow", r.Workflow+"@"+r.Revision)
	row("status", "removed by retention at "+msTime(r.At))
	row("settled", r.Status+" at "+msTime(r.Settled))
	if r.HistoryKept {
		row("history", "kept (the input stream denies purges) until its max age")
	} else {
		row("history", "erased")
	}
	row("id free", "after "+msTime(r.Until))
	return tw.Flush()
}

// removedNote is the line history and replay print for a removed run.
func removedNote(re *runrecord.RemovedError) string {
	return re.Error()
}

// removedAt is when a tombstone was written, for list.
