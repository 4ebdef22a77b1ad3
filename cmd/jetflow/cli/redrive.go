package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

func newRedrive(s streams) *cobra.Command {
	var conn connConfig
	var reason, revision string
	var wait bool
	bulk := bulkOp{operation: "redrive", conn: &conn}
	cmd := &cobra.Command{
		Use:   "redrive (RUN | filter flags)",
		Short: "Continue a failed run from its failed task",
		Long: "redrive asks failed run RUN to continue from its last checkpoint, as if its failure had\n" +
			"been a retry: the task nodes of the failed work state that succeeded keep their values,\n" +
			"the others are invoked again with a fresh retry budget (their attempt numbers continue\n" +
			"above the earlier ones, so that no late result of a failed attempt is taken). Fix and\n" +
			"redeploy the worker first; for a new policy, deploy the document again under a new\n" +
			"revision with --policy and redrive with --to-revision latest, which moves the run to it (the\n" +
			"same workflow only). The redrive is an input in the run's history, so a replay\n" +
			"reproduces it.\n\n" +
			"Only a run that failed at a work state (a task failure after its retries, a task timeout,\n" +
			"a query error of the state's DAG or input) can be redriven; any other run is refused\n" +
			"with the reason, which `jetflow status` and `jetflow history` show too. It prints the\n" +
			"run's status once a dispatcher took the redrive; with --wait it then waits for the\n" +
			"run to end and exits 0 done, 1 failed, 2 cancelled (docs/OPERATIONS.md#redrive).\n\n" +
			"With filter flags instead of RUN it submits a bulk job (see `jetflow cancel --help`): each\n" +
			"matching failed run gets one redrive (--to-revision and --wait apply to one RUN only).",
		Example: "  jetflow redrive order-1001 --reason 'fraud service fixed' --wait\n" +
			"  jetflow redrive --workflow order --status failed --started-after 2h --reason 'fraud service fixed' --yes",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if bulk.filter.set() && (revision != "" || wait) {
				return errors.New("--to-revision and --wait apply to one RUN, not to a bulk redrive")
			}
			id, err := singleRun(cmd, s, args, &bulk, reason)
			if id == "" {
				return err
			}
			return onRun(cmd.Context(), s, &conn, "argument RUN", id, nil, func(ctx context.Context, f *fleet.Fleet) error {
				err := redrive(ctx, s, f, conn, id, reason, revision, false)
				err = recordAudit(ctx, s, cmd, args, f, wire.AuditEntry{Action: "redrive", Run: id, Reason: reason}, err)
				if err != nil || !wait {
					return err
				}
				return followToEnd(ctx, s, f, id)
			})
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().StringVar(&reason, "reason", "", "why the run is redriven, for the record")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the redriven run to end; exit 0 done, 1 failed, 2 cancelled")
	cmd.Flags().StringVar(&revision, "to-revision", "", "move the run to this deployed revision of its workflow, or \"latest\": the same document deployed with another --policy")
	bulk.addFlags(cmd)
	return cmd
}

func redrive(ctx context.Context, s streams, f *fleet.Fleet, conn connConfig, id, reason, revision string, wait bool) error {
	st, err := f.Client.Status(ctx, id)
	switch {
	case errors.Is(err, kvstore.ErrRunNotFound):
		return fmt.Errorf("run %s has no record: there is nothing to redrive (check the id and --prefix)", id)
	case err != nil:
		return err
	case st.Status != wire.StatusFailed:
		return fmt.Errorf("run %s is %s: only a failed run can be redriven", id, st.Status)
	}
	var opts []client.RedriveOption
	if revision != "" {
		to, err := redriveRevision(ctx, f, st, revision)
		if err != nil {
			return err
		}
		opts = append(opts, client.RedriveRevision(to))
	}
	seq, err := f.Client.Redrive(ctx, id, reason, opts...)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, conn.Timeout)
	defer cancel()
	after, err := f.Client.Redriven(tctx, id, seq)
	if errors.Is(err, client.ErrRedriveRefused) {
		fmt.Fprintln(s.err, err)
		return exitError{exitFailed}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "run %s redriven (input %d): %s in %s\n", id, seq, after.Status, stateName(after.State))
	if !wait {
		return nil
	}
	return followToEnd(ctx, s, f, id)
}

// redriveRevision resolves --revision ("latest" or a revision) for the
// run st describes and checks that it holds the run's document, as the
// dispatchers will.
func redriveRevision(ctx context.Context, f *fleet.Fleet, st *wire.Status, revision string) (string, error) {
	cur, err := f.Registry.GetRevision(ctx, st.Workflow, st.Revision)
	if err != nil {
		return "", fmt.Errorf("the run's revision %s of workflow %s: %w", st.Revision, st.Workflow, err)
	}
	to, err := f.Registry.GetRevision(ctx, st.Workflow, revision)
	if revision == "latest" {
		to, err = f.Registry.Get(ctx, st.Workflow)
	}
	if err != nil {
		return "", fmt.Errorf("--to-revision %s of workflow %s: %w", revision, st.Workflow, err)
	}
	a, err := workflow.CompileJSON(cur.Doc, workflow.Options{})
	if err != nil {
		return "", err
	}
	b, err := workflow.CompileJSON(to.Doc, workflow.Options{})
	if err != nil {
		return "", err
	}
	if !step.SameWorkflow(a, b) {
		return "", fmt.Errorf("--to-revision: revision %s of workflow %s runs another workflow than the run's revision %s; a redrive moves a run only to the same document redeployed (another task policy)", to.Revision, st.Workflow, st.Revision)
	}
	return to.Revision, nil
}

// followToEnd waits for run id to end after an operator's input took it
// back to work (redrive, reset), prints how it ended, and exits as start
// --wait does.
func followToEnd(ctx context.Context, s streams, f *fleet.Fleet, id string) error {
	final, err := f.Client.Wait(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(s.err, "stopped waiting for run %s; it goes on (see: jetflow status %s)\n", id, id)
			return exitError{exitInterrupted}
		}
		return err
	}
	outcome := outcomeLine(final)
	if final.Error != nil {
		// Name the task a task failure is about, as status does.
		if rec, st, err := readRun(ctx, f, id); err == nil {
			wf, _ := compiledWorkflows(ctx, f)(st.Workflow, st.Revision)
			if ft := failedTask(ctx, f, wf, st, rec); ft != nil {
				outcome = "\nerror " + failureText(final.Error, ft)
			}
		}
	}
	fmt.Fprintf(s.out, "%s in %s%s\n", final.Status, stateName(final.State), outcome)
	return exitError{exitCode(final)}
}
