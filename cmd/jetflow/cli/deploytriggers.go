package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/trigger"
)

// readTriggers reads and checks deploy's --triggers file before anything
// is deployed: nil when no file is given, an empty slice for an empty
// file (which removes the workflow's triggers). A refusal prints
// FILE: TRIGGERS POINTER: reason and exits 1.
func readTriggers(s streams, file, workflow string, f *fleet.Fleet) ([]byte, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--triggers: %w", err)
	}
	if len(data) == 0 {
		return []byte{}, nil
	}
	if _, err := trigger.Parse(data, workflow, f.Names); err != nil {
		var pe *trigger.PathError
		if errors.As(err, &pe) {
			ptr := pe.Pointer
			if ptr == "" {
				ptr = "''"
			}
			fmt.Fprintf(s.out, "%s: TRIGGERS %s: %s\n", file, ptr, pe.Msg)
			return nil, exitError{1}
		}
		return nil, err
	}
	return data, nil
}

// storeTriggers stores the checked trigger file and prints the triggers
// unless quiet (deploy --json).
func storeTriggers(ctx context.Context, s streams, f *fleet.Fleet, workflow string, data []byte, quiet bool) error {
	specs, err := trigger.Store(ctx, f.JS, f.Names, workflow, data)
	var pe *trigger.PathError
	if errors.As(err, &pe) {
		fmt.Fprintf(s.out, "TRIGGERS %s: %s\n", pe.Pointer, pe.Msg)
		return exitError{1}
	}
	if err != nil {
		return err
	}
	if quiet {
		return nil
	}
	if len(specs) == 0 {
		fmt.Fprintf(s.out, "triggers of %s removed\n", workflow)
	}
	for _, sp := range specs {
		from := "subject " + sp.Subject
		if sp.Webhook != nil {
			from = "webhook POST /api/v1/hooks/" + sp.Name
		}
		what := "starts a run"
		if sp.Action == trigger.ActionEvent {
			what = "sends event " + sp.Event
		}
		fmt.Fprintf(s.out, "trigger %s: %s %s\n", sp.Name, from, what)
	}
	return nil
}
