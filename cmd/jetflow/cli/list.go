package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
)

func newList(s streams) *cobra.Command {
	var conn connConfig
	var filter runFilter
	var sortBy, cursor string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, filtered, sorted and paged",
		Long: "list reads every run record (one pass over the run bucket: a scan, not an index) and prints\n" +
			"one line per run matching every filter given: run, workflow@revision, status, state and when\n" +
			"it last changed. --sort id (the default) orders by run id; start and update put the newest\n" +
			"first. With --limit N it prints N runs, then the --cursor of the next page.\n" +
			"With --json it prints an array of the objects status --json prints (without started), and\n" +
			"the next page's cursor on standard error.",
		Example: "  jetflow list --workflow order --status waiting --started-before 1h\n" +
			"  jetflow list --match '{\"$gt\":[\"$.input.qty\",5]}' --sort start --limit 50",
		Args: namedArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := filter.build(s, time.Now())
			if err != nil {
				return err
			}
			if limit < 0 {
				return fmt.Errorf("--limit %d: give a positive number of runs, or 0 for all", limit)
			}
			ctx := cmd.Context()
			fl, stop, err := dialFleet(ctx, s, &conn)
			if err != nil {
				return err
			}
			defer stop()
			page, err := fl.Client.ListRuns(ctx, client.ListOptions{Filter: f, Sort: sortBy, Limit: limit, Cursor: cursor})
			if err != nil {
				return flagError(err)
			}
			for _, err := range page.Skipped {
				fmt.Fprintf(s.err, "warning: %v\n", err)
			}
			runs := make([]runJSON, len(page.Runs))
			for i, r := range page.Runs {
				runs[i] = runJSON{Status: r.Status, Updated: r.Updated.UTC().Format(time.RFC3339Nano)}
			}
			if asJSON {
				if page.Next != "" {
					fmt.Fprintf(s.err, "next page: --cursor %s\n", page.Next)
				}
				return json.NewEncoder(s.out).Encode(runs)
			}
			if len(runs) == 0 {
				fmt.Fprintln(s.out, "no runs")
				return nil
			}
			tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATUS\tSTATE\tUPDATED")
			for i, r := range runs {
				fmt.Fprintf(tw, "%s\t%s@%s\t%s\t%s\t%s\n", r.Run, r.Workflow, r.Revision, r.Status.Status,
					stateName(r.State), page.Runs[i].Updated.Local().Format("2006-01-02 15:04:05"))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.Next != "" {
				fmt.Fprintf(s.out, "next page: --cursor %s\n", page.Next)
			}
			return nil
		},
	}
	addConnFlags(cmd, &conn)
	filter.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&sortBy, "sort", client.SortID, "order: id, start (newest first) or update (most recently changed first)")
	f.IntVar(&limit, "limit", 0, "print at most this many runs, then the next page's cursor (0: all)")
	f.StringVar(&cursor, "cursor", "", "continue after the page that printed this cursor (same filters and --sort)")
	f.BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}
