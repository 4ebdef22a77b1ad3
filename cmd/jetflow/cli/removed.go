package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/runrecord"
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
