package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/subjects"
)

// index status|rebuild: the run index `list` reads (docs/OPERATIONS.md).

func newIndex(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Show or rebuild the run index list reads",
		Long: "The dispatchers keep a run index on JetStream (the stream <prefix>_index) from the run\n" +
			"bucket's changes; list, the console and bulk counts read it. index status says whether it is\n" +
			"kept and how far behind the records it is; index rebuild has the dispatchers index every run\n" +
			"again. A deployment turns it off with serve/dispatcher --index=false (JETFLOW_INDEX=false):\n" +
			"list then reads every run record, and says so.",
		Args: namedArgs(),
	}
	cmd.AddCommand(newIndexStatus(s), newIndexRebuild(s))
	return cmd
}

func newIndexStatus(s streams) *cobra.Command {
	var conn connConfig
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say whether the run index is kept and how far behind it is",
		Args:  namedArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return onIndex(cmd.Context(), s, &conn, func(ctx context.Context, f *fleet.Fleet) error {
				off, err := client.ReadIndexOff(ctx, f.JS, f.Names)
				if err != nil {
					return err
				}
				if off != nil {
					fmt.Fprintf(s.out, "off since %s (dispatcher %s): list reads every run record\n", off.Since, off.By)
					return nil
				}
				shape, err := client.ReadIndexShape(ctx, f.JS, f.Names)
				if err != nil {
					return err
				}
				if shape != 0 && shape != subjects.IndexShape {
					fmt.Fprintf(s.out, "of shape %d, not %d: list reads every run record until a dispatcher of this version starts, which rebuilds it\n", shape, subjects.IndexShape)
					return nil
				}
				p, err := runindex.ReadProgress(ctx, f.JS, f.Names)
				if err != nil {
					return err
				}
				fmt.Fprintln(s.out, progressText(p))
				return nil
			})
		},
	}
	addConnFlags(cmd, &conn)
	return cmd
}

func newIndexRebuild(s streams) *cobra.Command {
	var conn connConfig
	var detach bool
	cmd := &cobra.Command{
		Use:   "rebuild",
		Short: "Have the dispatchers index every run again",
		Long: "rebuild empties the run index, then deletes the consumer the dispatchers' indexers share;\n" +
			"each indexer creates it again within about a second, and a new consumer starts with the\n" +
			"latest record of every run. The dispatchers do the work, not this command: it survives this\n" +
			"command exiting and a dispatcher being killed (another goes on from the consumer's\n" +
			"acknowledgements), and no dispatcher with the index on means it waits for one. Use it after\n" +
			"deploying a revision that adds a search attribute (the runs of the workflow's older revisions\n" +
			"become findable by it) or to drop what an index kept of runs removed while it was off.\n" +
			"Until it is done, list shows the runs indexed so far and warns how many changes are left.\n" +
			"It then prints its progress until the index has caught up (--detach returns at once).\n" +
			"It is refused while the index is off.",
		Example: "  jetflow index rebuild\n  jetflow index rebuild --detach && jetflow index status",
		Args:    namedArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return onIndex(cmd.Context(), s, &conn, func(ctx context.Context, f *fleet.Fleet) error {
				if err := runindex.Rebuild(ctx, f.JS, f.Names); err != nil {
					return err
				}
				fmt.Fprintln(s.out, "index rebuild requested: the dispatchers index every run again")
				if detach {
					return nil
				}
				return followRebuild(cmd.Context(), s, f)
			})
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().BoolVar(&detach, "detach", false, "return once the rebuild is requested; index status follows it")
	return cmd
}

// onIndex dials the deployment for an index verb.
func onIndex(ctx context.Context, s streams, conn *connConfig, do func(context.Context, *fleet.Fleet) error) error {
	f, stop, err := dialFleet(ctx, s, conn)
	if err != nil {
		return err
	}
	defer stop()
	return do(ctx, f)
}

// followRebuild prints the rebuild's progress, a line each time it
// changes, until the index has caught up with the run records.
func followRebuild(ctx context.Context, s streams, f *fleet.Fleet) error {
	last := ""
	for {
		p, err := runindex.ReadProgress(ctx, f.JS, f.Names)
		if err != nil {
			return err
		}
		if line := progressText(p); line != last {
			fmt.Fprintln(s.out, line)
			last = line
		}
		if p.Started && p.Left == 0 {
			return nil
		}
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			fmt.Fprintln(s.out, "stopped watching; the dispatchers go on with the rebuild")
			return ctx.Err()
		case <-t.C:
		}
	}
}

func progressText(p runindex.Progress) string {
	switch {
	case !p.Started:
		return "on: waiting for a dispatcher with the index on to start indexing (after a rebuild, about a second)"
	case p.Left == 0:
		return "on: every run change is indexed"
	}
	return fmt.Sprintf("on: %d run changes left to index", p.Left)
}
