package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
)

func newRetention(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Operate retention: sweep settled runs that have no removal scheduled",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newRetentionSweep(s))
	return cmd
}

func newRetentionSweep(s streams) *cobra.Command {
	var conn connConfig
	var reason string
	b := bulkOp{operation: client.OpRetentionSweep, conn: &conn}
	cmd := &cobra.Command{
		Use:   "sweep [filter flags]",
		Short: "Schedule the removal of settled runs that settled before retention (or a lower one) applied",
		Long: "A settled run's removal is scheduled when it settles, so runs that settled before retention\n" +
			"was on, or before their workflow's retention was lowered, are never removed. sweep counts the\n" +
			"runs the filter flags match (all runs without them) and, with --yes, submits a bulk job the\n" +
			"dispatchers carry out: for each settled run (done, failed, cancelled, terminated) the\n" +
			"dispatcher holding the job schedules the removal its settlement would have scheduled under\n" +
			"the retention its deployment has now: at its settlement plus that retention, or within about\n" +
			"two removal buckets (20 s) when that has passed. Runs that are not settled are skipped, and so\n" +
			"are runs whose retention is off. The job is durable (a killed dispatcher's job is taken over\n" +
			"after its lease, from its last checkpoint), paced at 100 runs a second per job, and listed by\n" +
			"`jetflow jobs` (docs/OPERATIONS.md, Retention and the archive).",
		Example: "  jetflow retention sweep --dry-run\n" +
			"  jetflow retention sweep --yes\n" +
			"  jetflow retention sweep --workflow order --started-before 720h --yes --detach",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := b.filter.build(s, time.Now())
			if err != nil {
				return err
			}
			b.reason = reason
			return b.run(cmd.Context(), s, f)
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().StringVar(&reason, "reason", "", "why the sweep is run, for the job's record")
	b.addFlags(cmd)
	return cmd
}
