package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/fleet"
)

func newCancel(s streams) *cobra.Command {
	var conn connConfig
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Ask for a run to end cancelled",
		Long: "cancel publishes a cancel request for run RUN. The next dispatcher to handle it ends the\n" +
			"run cancelled: tasks in flight are abandoned (their results are ignored) and its timers\n" +
			"are removed. A run that has already ended is refused.",
		Example: "  jetflow cancel order-1001 --reason 'customer changed their mind'",
		Args:    namedArgs("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			return onRun(cmd.Context(), s, &conn, "argument RUN", id, nil, func(ctx context.Context, f *fleet.Fleet) error {
				if err := checkLive(ctx, s, f, id, "a cancel"); err != nil {
					return err
				}
				if err := f.Client.Cancel(ctx, id, reason); err != nil {
					return err
				}
				fmt.Fprintf(s.out, "cancel of run %s requested\n", id)
				return nil
			})
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().StringVar(&reason, "reason", "", "why the run is cancelled, for the record")
	return cmd
}
