package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/wire"
)

func newList(s streams) *cobra.Command {
	var conn connConfig
	var filter runFilter
	var sortBy, cursor string
	var limit int
	var asJSON, scan bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, filtered, sorted and paged",
		Long: "list reads the run index the dispatchers keep on JetStream and prints one line per run\n" +
			"matching every filter given: run, workflow@revision, status, state and when it last changed.\n" +
			"--sort update puts the most recently changed first and reads about one page of the index\n" +
			"however many runs there are; --sort start (newest start first) and id (the default) read\n" +
			"every entry of the --workflow, --status and first --where given. With --limit N it prints\n" +
			"N runs, then the --cursor of the next page. --where NAME=VALUE keeps runs whose search\n" +
			"attribute NAME (declared in the deployment's policy, \"$run\".\"search\") is VALUE; several\n" +
			"are ANDed. --status removed lists runs removed by retention whose tombstones live.\n" +
			"--match reads the record of each candidate. The index follows the records by a moment: list\n" +
			"first waits (up to 2s) until every change made before it is indexed, and says so if not.\n" +
			"Where the dispatchers run with the index off (--index=false), list warns and reads every\n" +
			"run record instead; jetflow index status and rebuild look after the index.\n" +
			"--scan reads every run record instead (no removed; --where reads each run's attributes from\n" +
			"its record as the index would). With --json it prints an\n" +
			"array of the objects status --json prints (without started), and the next page's cursor on\n" +
			"standard error.",
		Example: "  jetflow list --workflow order --status waiting --started-before 1h\n" +
			"  jetflow list --where customer=c-7 --status failed --sort update --limit 50\n" +
			"  jetflow list --match '{\"$gt\":[\"$.input.qty\",5]}' --sort start --limit 50",
		Args: namedArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			removed := filter.status == wire.StatusRemoved
			if removed {
				filter.status = "" // a listing-only status, which bulk filters do not take
			}
			f, err := filter.build(s, time.Now())
			if err != nil {
				return err
			}
			if removed {
				f.Status = wire.StatusRemoved
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
			page, err := fl.Client.ListRuns(ctx, client.ListOptions{Filter: f, Sort: sortBy, Limit: limit, Cursor: cursor, Full: asJSON, Scan: scan})
			if err != nil {
				return flagError(err)
			}
			if off := page.IndexOff; off != nil {
				fmt.Fprintf(s.err, "warning: the run index is off since %s (dispatcher %s runs with --index=false); listed by reading every run record, as --scan does\n", off.Since, off.By)
			}
			if page.Behind > 0 {
				fmt.Fprintf(s.err, "warning: the run index is %d changes behind the run records; runs may show an older status\n", page.Behind)
			}
			for _, err := range page.Skipped {
				fmt.Fprintf(s.err, "warning: %v\n", err)
			}
			runs := make([]runJSON, len(page.Runs))
			for i, r := range page.Runs {
				runs[i] = runJSON{Status: r.Status, Updated: stamp(r.Updated)}
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
			now := time.Now()
			tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATUS\tSTATE\tUPDATED")
			for i, r := range runs {
				fmt.Fprintf(tw, "%s\t%s@%s\t%s\t%s\t%s\n", r.Run, r.Workflow, r.Revision, r.Status.Status,
					stateName(r.State), when(page.Runs[i].Updated, now))
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
	f.Lookup("status").Usage += ", or removed (runs removed by retention)"
	f.BoolVar(&scan, "scan", false, "read every run record instead of the run index")
	return cmd
}
