package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/token"
)

func newReplay(s streams) *cobra.Command {
	var conn connConfig
	var tokens secretConfig
	var restore bool
	cmd := &cobra.Command{
		Use:   "replay RUN",
		Short: "Rebuild a run's state from its history and compare it with the saved one",
		Long: "replay reads run RUN's messages from the input stream, applies them through the reducer\n" +
			"in the order the dispatchers did, and compares the state it rebuilds with the saved one,\n" +
			"byte for byte. It prints \"state equal\", or the first place the two differ (a JSON\n" +
			"Pointer) with both values and exits 1.\n\n" +
			"With --restore it writes the rebuilt record back: it creates the run's record when the\n" +
			"run bucket lost it and replaces one that differs. If the input stream no longer holds\n" +
			"the whole history (its retention, --history-max-age of serve, removed messages) it says\n" +
			"what is missing and rebuilds nothing.\n\n" +
			"Replay assumes the dispatchers' default task retry policies. Of a run removed by retention\n" +
			"it says so (\"run RUN removed by retention at T ...\") and exits 1, unless it was archived\n" +
			"before: then it replays the archived history against the archived record, under the line\n" +
			"\"archived (removed by retention at T)\" on stderr (--restore is refused).",
		Args: namedArgs("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			var signer *token.Signer
			check := func() (err error) {
				signer, err = tokens.signer()
				return err
			}
			return onRun(cmd.Context(), s, &conn, "argument RUN", id, check, func(ctx context.Context, f *fleet.Fleet) error {
				ar, archived := readArchived(ctx, f, id)
				if archived && restore {
					return fmt.Errorf("run %s is %s: nothing to restore (its tombstone stands until it expires)", id, archivedMark(ar.Removed))
				}
				if archived {
					fmt.Fprintln(s.err, archivedMark(ar.Removed))
				} else if re, ok := readRemoved(ctx, f, id); ok {
					// Nothing to compare with, nor to restore: the removal
					// stands until the tombstone expires.
					fmt.Fprintf(s.err, "%s\n", removedNote(re))
					return exitError{1}
				}
				src := replay.Source{JS: f.JS, Names: f.Names, Registry: f.Registry, Runs: f.Runs, Settings: step.Settings{Tokens: signer}, Archived: ar}
				var rep replay.Report
				var err error
				if restore {
					rep, err = replay.Restore(ctx, src, id)
				} else {
					rep, err = replay.Check(ctx, src, id)
				}
				if errors.Is(err, replay.ErrNoRecord) {
					if _, started := startedAt(ctx, f, id); !started {
						fmt.Fprintf(s.err, "run %s does not exist: it has no record and the input stream holds no start of it (prefix %q); check the id and --prefix\n", id, f.Names.Prefix())
						return exitError{exitFailed}
					}
					return fmt.Errorf("run %s has no saved record to compare with; `jetflow replay --restore %s` writes the rebuilt one", id, id)
				}
				if err != nil {
					return hintStart(err)
				}
				printReplay(s, id, rep)
				if !rep.Equal && !restore {
					return exitError{1}
				}
				return nil
			})
		},
	}
	addConnFlags(cmd, &conn)
	addSecretFlags(cmd, &tokens) // results are screened by their tokens again
	cmd.Flags().BoolVar(&restore, "restore", false, "write the rebuilt record back (create it if missing, replace it if it differs)")
	return cmd
}

func printReplay(s streams, id string, rep replay.Report) {
	info := rep.Info
	head := fmt.Sprintf("replay of %s: %d messages", id, info.Messages)
	switch {
	case rep.Action == replay.ActionCreated:
		fmt.Fprintf(s.out, "%s, record restored (created at revision %d)\n", head, rep.Revision)
	case rep.Action == replay.ActionUpdated:
		fmt.Fprintf(s.out, "%s, record restored (replaced, now revision %d)\n", head, rep.Revision)
	case rep.Equal:
		fmt.Fprintf(s.out, "%s, state equal\n", head)
	case rep.Divergence == "":
		fmt.Fprintf(s.out, "%s, state differs in its bytes only (the values are equal)\n", head)
	default:
		fmt.Fprintf(s.out, "%s, state differs at %s\n  saved:   %s\n  rebuilt: %s\n", head, rep.Divergence, orAbsent(rep.SavedValue), orAbsent(rep.RebuiltValue))
	}
	if rep.Action != "" && rep.Divergence != "" {
		fmt.Fprintf(s.out, "  the saved state differed at %s\n  saved:   %s\n  rebuilt: %s\n", rep.Divergence, orAbsent(rep.SavedValue), orAbsent(rep.RebuiltValue))
	}
	for _, sk := range info.Skipped {
		fmt.Fprintf(s.out, "  skipped seq %d (%s): %s\n", sk.Seq, sk.Kind, sk.Why)
	}
	for _, n := range info.Notes {
		fmt.Fprintf(s.out, "  note: %s\n", n)
	}
}

func orAbsent(v string) string {
	if v == "" {
		return "(absent)"
	}
	return v
}
