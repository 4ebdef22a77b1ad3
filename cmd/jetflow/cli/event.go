package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/subjects"
)

func init() { register(newEvent) }

func newEvent(s streams) *cobra.Command {
	var conn connConfig
	var payload, eventID string
	cmd := &cobra.Command{
		Use:   "event RUN TYPE",
		Short: "Send an external event to a run",
		Long: "event publishes an event of TYPE to run RUN. A run waiting for TYPE (\"on\": [{\"event\": TYPE}])\n" +
			"moves on when the branch's guard holds; events that arrive while nothing waits are kept\n" +
			"for the next wait. An event for a run that has ended is refused.",
		Example: "  jetflow event order-1001 payment --payload '{\"amount\":59.98}'",
		Args:    namedArgs("RUN", "TYPE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, typ := args[0], args[1]
			if err := subjects.CheckRunID(id); err != nil {
				return fmt.Errorf("argument RUN: %w", err)
			}
			if err := subjects.CheckEventType(typ); err != nil {
				return fmt.Errorf("argument TYPE: %w", err)
			}
			body, err := jsonArg(s, "--payload", payload)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			f, stop, err := dialFleet(ctx, s, &conn)
			if err != nil {
				return err
			}
			defer stop()
			if err := checkLive(ctx, s, f, id, "an event"); err != nil {
				return err
			}
			var opts []client.EventOption
			if eventID != "" {
				opts = append(opts, client.EventID(eventID))
			}
			if err := f.Client.SendEvent(ctx, id, typ, body, opts...); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "sent %s to run %s\n", typ, id)
			return nil
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().StringVar(&payload, "payload", "", "the event's payload: JSON text, @FILE, or @- for standard input (default null)")
	cmd.Flags().StringVar(&eventID, "id", "", "de-duplicates the event: a second event with this id for the run is dropped (make it unguessable: anyone who may publish inputs could use it first)")
	return cmd
}

// checkLive refuses a run that has ended, and warns about one that has no
// record yet (its start may still be on its way).
func checkLive(ctx context.Context, s streams, f *fleet.Fleet, id, what string) error {
	st, err := f.Client.Status(ctx, id)
	switch {
	case errors.Is(err, kvstore.ErrRunNotFound):
		fmt.Fprintf(s.err, "warning: run %s has no record yet; if it does not start soon, dispatchers drop %s for it\n", id, what)
		return nil
	case err != nil:
		return err
	case run.Status(st.Status).Terminal():
		return fmt.Errorf("run %s is already %s: %s can no longer change it", id, st.Status, what)
	}
	return nil
}
