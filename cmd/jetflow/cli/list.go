package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

var runStatuses = []string{wire.StatusRunning, wire.StatusWaiting, wire.StatusDone, wire.StatusFailed, wire.StatusCancelled, statusRemoved}

// statusRemoved lists the runs removed by retention whose tombstones
// live; no other listing shows them.
const statusRemoved = "removed"

func newList(s streams) *cobra.Command {
	var conn connConfig
	var status, name string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, optionally by status and workflow",
		Long: "list reads every run record (one pass over the run bucket) and prints one line per run,\n" +
			"ordered by run id: run, workflow@revision, status, state and when it last changed.\n" +
			"With --json it prints an array of the objects status --json prints (without started).\n" +
			"Runs removed by retention are left out, unless --status removed lists them (while their\n" +
			"tombstones live): status \"removed\", the time of the removal as updated, no state.",
		Args: namedArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if status != "" && !slices.Contains(runStatuses, status) {
				return fmt.Errorf("--status %q is not a run status (one of %s)", status, strings.Join(runStatuses, ", "))
			}
			if name != "" {
				if err := subjects.CheckWorkflowName(name); err != nil {
					return fmt.Errorf("--workflow: %w", err)
				}
			}
			ctx := cmd.Context()
			f, stop, err := dialFleet(ctx, s, &conn)
			if err != nil {
				return err
			}
			defer stop()
			entries, err := f.Runs.List(ctx, nil)
			if err != nil {
				return err
			}
			runs := []runJSON{}
			for _, e := range entries {
				rec, err := runrecord.Decode(e.Data)
				var removed *runrecord.RemovedError
				if errors.As(err, &removed) {
					// Shown only when asked for: they are gone.
					if status == statusRemoved && (name == "" || removed.Removed.Workflow == name) {
						r := removed.Removed
						runs = append(runs, runJSON{
							Status:  &wire.Status{Run: r.Run, Workflow: r.Workflow, Revision: r.Revision, Status: statusRemoved, Time: r.At},
							Updated: removedAt(r).UTC().Format(time.RFC3339Nano),
						})
					}
					continue
				}
				if err != nil {
					fmt.Fprintf(s.err, "warning: run %s: %v\n", e.RunID, err)
					continue
				}
				ws, err := step.StatusOf(e.RunID, rec, nil)
				if err != nil {
					fmt.Fprintf(s.err, "warning: run %s: %v\n", e.RunID, err)
					continue
				}
				if (status != "" && ws.Status != status) || (name != "" && ws.Workflow != name) {
					continue
				}
				runs = append(runs, runJSON{Status: ws, Updated: updated(e)})
			}
			if asJSON {
				return json.NewEncoder(s.out).Encode(runs)
			}
			if len(runs) == 0 {
				fmt.Fprintln(s.out, "no runs")
				return nil
			}
			tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATUS\tSTATE\tUPDATED")
			for _, r := range runs {
				t, _ := time.Parse(time.RFC3339Nano, r.Updated)
				fmt.Fprintf(tw, "%s\t%s@%s\t%s\t%s\t%s\n", r.Run, r.Workflow, r.Revision, r.Status.Status,
					stateName(r.State), t.Local().Format("2006-01-02 15:04:05"))
			}
			return tw.Flush()
		},
	}
	addConnFlags(cmd, &conn)
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only runs in this status: "+strings.Join(runStatuses, ", "))
	f.StringVar(&name, "workflow", "", "only runs of this workflow")
	f.BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// updated is when a run's record last changed (server time).
func updated(e kvstore.Entry) string { return e.Updated.UTC().Format(time.RFC3339Nano) }
