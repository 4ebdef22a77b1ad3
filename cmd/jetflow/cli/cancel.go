package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/wire"
)

func newCancel(s streams) *cobra.Command {
	var conn connConfig
	var reason string
	var beforeStart bool
	bulk := bulkOp{operation: "cancel", conn: &conn}
	cmd := &cobra.Command{
		Use:   "cancel (RUN | filter flags)",
		Short: "Ask for a run, or every run a filter matches, to end cancelled",
		Long: "cancel RUN publishes a cancel request for run RUN. The next dispatcher to handle it ends the\n" +
			"run cancelled: tasks in flight are abandoned (their results are ignored) and its timers\n" +
			"are removed. A run that has already ended is refused, and so is a run that does not exist\n" +
			"(no record and no start in the input stream: exit 1), unless --before-start sends it anyway.\n\n" +
			"With filter flags instead of RUN it counts the runs they match and, with --yes, submits a bulk\n" +
			"job that the dispatchers carry out: each matching run that has not ended gets one cancel\n" +
			"(reason \"bulk job <id>: <reason>\"); runs that ended are counted as skipped. It then draws the\n" +
			"job's progress until it ends (--detach returns at once; `jetflow jobs` follows it later).",
		Example: "  jetflow cancel order-1001 --reason 'customer changed their mind'\n" +
			"  jetflow cancel --workflow order --status waiting --started-before 24h --dry-run\n" +
			"  jetflow cancel --workflow order --match '{\"$eq\":[\"$.input.sku\",\"tea\"]}' --reason recall --yes",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := singleRun(cmd, s, args, &bulk, reason)
			if id == "" {
				return err
			}
			return onRun(cmd.Context(), s, &conn, "argument RUN", id, nil, func(ctx context.Context, f *fleet.Fleet) error {
				err := checkLive(ctx, s, f, id, "a cancel", beforeStart)
				if err == nil {
					err = f.Client.Cancel(ctx, id, reason)
				}
				if err == nil {
					fmt.Fprintf(s.out, "cancel of run %s requested\n", id)
				}
				return recordAudit(ctx, s, cmd, args, f, wire.AuditEntry{Action: "cancel", Run: id, Reason: reason}, err)
			})
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().StringVar(&reason, "reason", "", "why the run is cancelled, for the record")
	cmd.Flags().BoolVar(&beforeStart, "before-start", false, beforeStartUsage)
	bulk.addFlags(cmd)
	return cmd
}
