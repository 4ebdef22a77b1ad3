package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/policy"
)

type workflowRevision struct {
	Revision string    `json:"revision"`
	Hash     string    `json:"hash"`
	Deployed time.Time `json:"deployed"`
	// Policy is the revision's task policy (--json only); absent means
	// the defaults.
	Policy *policy.Policy `json:"policy,omitempty"`
}

type workflowListing struct {
	Name      string             `json:"name"`
	Latest    string             `json:"latest"`
	Revisions []workflowRevision `json:"revisions"`
}

func newWorkflows(s streams) *cobra.Command {
	var (
		conn   connConfig
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "workflows",
		Short: "List the deployed workflows and their revisions",
		Long: "workflows lists every deployed workflow name with its revisions, oldest first; the\n" +
			"latest (the one new runs start) is marked. --json prints the full hashes and each\n" +
			"revision's task policy (absent: the defaults) as JSON.\n" +
			"It connects to --nats (default " + defaultNATSURL + ", where `jetflow serve` listens).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			f, err := conn.open(ctx, openOptions{})
			if err != nil {
				return err
			}
			defer stopQuietly(f)
			ctx, cancel := context.WithTimeout(ctx, conn.Timeout)
			defer cancel()
			list, err := f.Registry.List(ctx)
			if err != nil {
				return fmt.Errorf("listing workflows: %w", err)
			}
			out := []workflowListing{}
			for _, w := range list {
				l := workflowListing{Name: w.Name, Latest: w.Latest().Revision}
				for _, r := range w.Revisions {
					wr := workflowRevision{Revision: r.Revision, Hash: r.Hash, Deployed: r.Deployed.UTC()}
					if asJSON {
						// The policy lives with the document: one read per revision.
						d, err := f.Registry.GetByHash(ctx, r.Hash)
						if err != nil {
							return fmt.Errorf("workflow %q revision %q: %w", w.Name, r.Revision, err)
						}
						wr.Policy = d.Policy
					}
					l.Revisions = append(l.Revisions, wr)
				}
				out = append(out, l)
			}
			if asJSON {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			if len(out) == 0 {
				fmt.Fprintln(s.out, "no workflows deployed (jetflow deploy NAME FILE deploys one)")
				return nil
			}
			tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tREVISION\tLATEST\tHASH\tDEPLOYED")
			for _, l := range out {
				for _, r := range l.Revisions {
					latest := ""
					if r.Revision == l.Latest {
						latest = "*"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Name, r.Revision, latest, shortHash(r.Hash), stamp(r.Deployed))
				}
			}
			return tw.Flush()
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

// shortHash is enough of a content hash to tell revisions apart.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
