package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/wire"
)

func newMigrate(s streams) *cobra.Command {
	var (
		conn     connConfig
		tokens   secretConfig
		to       string
		reason   string
		operator string
	)
	bulk := bulkOp{operation: client.OpMigrate, conn: &conn}
	cmd := &cobra.Command{
		Use:   "migrate --to REVISION (RUN | filter flags)",
		Short: "Move waiting and running runs onto another revision when their own history proves it safe",
		Long: "migrate moves run RUN, waiting or running on an older revision of its workflow, onto\n" +
			"deployed revision REVISION. It first replays the run's whole history under both\n" +
			"revisions, as `jetflow check-revision` does; when they are the same (docs/REVISIONS.md: the\n" +
			"same outcomes, state and task invocations at every input, the same activations in flight,\n" +
			"timers and deadlines, and every event the run waits for still awaited), it sends the run a\n" +
			"migration input carrying a fingerprint of the state it checked. The dispatcher that takes\n" +
			"it re-pins the run to REVISION in one compare-and-swap of its record, only if the run is\n" +
			"still in that state, and the input stays in the run's history, so replay rebuilds the\n" +
			"move exactly. Nothing is published: workers, timers and clients see no difference, and the\n" +
			"run's next inputs follow REVISION.\n\n" +
			"Otherwise the run refuses the migration with the first divergence (input K, state X under\n" +
			"its revision, Y under REVISION, what differs), recorded where `jetflow status` and\n" +
			"`jetflow history` show it, and this command exits 1 naming it; a run that took another\n" +
			"input meanwhile refuses it too (migrate again). A settled run, or one on REVISION already,\n" +
			"is refused at once.\n\n" +
			"With filter flags instead of RUN it submits a bulk job (see `jetflow cancel --help`): the\n" +
			"dispatcher that holds it checks each matching waiting or running run and sends it its\n" +
			"migration (or its refusal) once; a job whose dispatcher dies is taken over after its lease,\n" +
			"and a run it migrated already is left alone.",
		Example: "  jetflow migrate --to order-2 order-1042\n" +
			"  jetflow migrate --to order-2 --workflow order --status waiting --yes",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return errors.New("--to REVISION is required: the deployed revision to move runs to")
			}
			bulk.revision = to
			id, err := singleRun(cmd, s, args, &bulk, reason)
			if id == "" {
				return err
			}
			signer, err := tokens.signer()
			if err != nil {
				return err
			}
			return onRun(cmd.Context(), s, &conn, "argument RUN", id, nil, func(ctx context.Context, f *fleet.Fleet) error {
				err := migrateRun(ctx, s, f, signer, id, to, reason, operatorOrEnv(operator))
				return recordAudit(ctx, s, cmd, args, f, wire.AuditEntry{Action: "migrate", Run: id, Reason: reason, Detail: "to revision " + to}, err)
			})
		},
	}
	addConnFlags(cmd, &conn)
	addSecretFlags(cmd, &tokens)
	cmd.Flags().StringVar(&to, "to", "", "the deployed revision to move the runs to (required)")
	addOperatorFlags(cmd, &reason, &operator, "why the runs move, for the record")
	bulk.addFlags(cmd)
	return cmd
}

// migrateRun checks one run and sends it its migration, then prints
// what the run did with it: exit 1 when it refused.
func migrateRun(ctx context.Context, s streams, f *fleet.Fleet, signer *token.Signer, id, to, reason, operator string) error {
	if signer == nil {
		var err error
		if signer, err = token.Load(ctx, f.JS, f.Names); err != nil {
			return fmt.Errorf("the deployment's token secret, which the history's results are checked with: %w", err)
		}
	}
	l, err := registry.NewLoader(f.Registry, run.Options{}, 0)
	if err != nil {
		return err
	}
	settings := step.Settings{Names: f.Names, Tokens: signer}.WithDefaults()
	m, chk, err := replay.Migration(ctx, f.JS, settings, f.Runs, l.Load, id, to)
	switch {
	case errors.Is(err, replay.ErrOnRevision), errors.Is(err, replay.ErrSettled):
		fmt.Fprintf(s.err, "run %s not migrated: %v\n", id, err)
		return exitError{1}
	case err != nil:
		return hintStart(err)
	}
	m.Reason, m.Operator = reason, operator
	seq, err := f.Client.Migrate(ctx, id, m, "")
	if err != nil {
		return err
	}
	st, err := f.Client.Migrated(ctx, id, seq)
	if errors.Is(err, client.ErrMigrateRefused) {
		fmt.Fprintf(s.out, "run %s stays on revision %s: %v\n", id, m.From, err)
		return exitError{1}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "run %s moved from revision %s to %s (%d inputs checked; %s %s)\n", id, m.From, st.Revision, chk.Inputs, st.Status, st.State)
	return nil
}
