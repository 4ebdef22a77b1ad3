package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Entry is the stream sequence of the input after which run runID
// entered state (its id, "/states/pay/flow/states/wait", or the name
// `jetflow status` prints, "pay/wait") for the visit-th time, visit 0
// meaning its last visit: the first input on the run's line (superseded
// inputs left out) after which the state is active with that many
// visits. It replays the history as Rebuild does; a run whose history
// cannot be replayed gives Rebuild's error.
func Entry(ctx context.Context, src Source, runID, state string, visit int) (uint64, error) {
	if err := checkSource(src, runID); err != nil {
		return 0, err
	}
	sv, err := loadSaved(ctx, src, runID)
	if err != nil {
		return 0, err
	}
	w, err := replayHistory(ctx, src, runID, sv)
	if err != nil {
		return 0, err
	}
	line := w.run.Line
	entries := map[int]uint64{}
	last := 0
	for _, seq := range line.Seqs() {
		st := line.State(seq)
		id := ""
		for _, a := range st.Control.Active {
			if a == state || stateName(a) == state {
				id = a
			}
		}
		if id == "" {
			continue
		}
		v, _ := st.Context.Visits[id].(float64)
		if _, seen := entries[int(v)]; !seen {
			entries[int(v)] = seq
		}
		last = max(last, int(v))
	}
	if len(entries) == 0 {
		return 0, fmt.Errorf("run %s was never in state %q after any input it took (`jetflow history %s` lists them; a state is named as `jetflow status` prints it, or by its id)", runID, state, runID)
	}
	if visit == 0 {
		visit = last
	}
	seq, ok := entries[visit]
	if !ok {
		visits := make([]int, 0, len(entries))
		for v := range entries {
			visits = append(visits, v)
		}
		slices.Sort(visits)
		return 0, fmt.Errorf("run %s was never in state %q on its visit %d after an input it took; it was on visits %v", runID, state, visit, visits)
	}
	return seq, nil
}

// stateName shortens a state id as `jetflow status` prints it:
// /states/fulfil/flow/states/ship is fulfil/ship.
func stateName(id string) string {
	return strings.ReplaceAll(strings.TrimPrefix(id, "/states/"), "/flow/states/", "/")
}
