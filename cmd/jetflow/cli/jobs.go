package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/wire"
)

func newJobs(s streams) *cobra.Command {
	var conn connConfig
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List bulk jobs and their progress; show, watch or cancel one",
		Long: "A bulk job applies one run operation (cancel, pause, resume, terminate or redrive) to every\n" +
			"run a filter matches; the operation's verb with filter flags (`jetflow cancel --workflow ...`)\n" +
			"submits one. The dispatchers carry it out, not the command: it survives the\n" +
			"command exiting and a dispatcher dying. jobs lists every job, oldest first, with its progress.",
		Args: namedArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJobs(cmd.Context(), s, &conn, func(ctx context.Context, f *fleet.Fleet) error {
				jobs, err := f.Client.Jobs(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					if jobs == nil {
						jobs = []*wire.Job{}
					}
					return json.NewEncoder(s.out).Encode(jobs)
				}
				if len(jobs) == 0 {
					fmt.Fprintln(s.out, "no jobs")
					return nil
				}
				tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "JOB\tOPERATION\tSTATE\tMATCHED\tSENT\tSKIPPED\tERRORS\tCREATED")
				for _, j := range jobs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", j.ID, j.Operation, j.State, j.Matched, j.Sent, j.Skipped, j.Errors, j.Created)
				}
				return tw.Flush()
			})
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the job records as a JSON array")
	cmd.AddCommand(newJobsShow(s), newJobsWatch(s), newJobsCancel(s))
	return cmd
}

func newJobsShow(s streams) *cobra.Command {
	var conn connConfig
	cmd := &cobra.Command{
		Use:   "show JOB",
		Short: "Print a bulk job's record (JSON): its spec and progress",
		Args:  namedArgs("JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJobs(cmd.Context(), s, &conn, func(ctx context.Context, f *fleet.Fleet) error {
				j, _, err := f.Client.Job(ctx, args[0], false)
				if err != nil {
					return err
				}
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(j)
			})
		},
	}
	addConnFlags(cmd, &conn)
	return cmd
}

func newJobsWatch(s streams) *cobra.Command {
	var conn connConfig
	cmd := &cobra.Command{
		Use:   "watch JOB",
		Short: "Follow a bulk job's progress until it ends",
		Long:  "watch draws the job's progress bar until it ends; it exits 0 when the job is done and 1 otherwise.",
		Args:  namedArgs("JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJobs(cmd.Context(), s, &conn, func(ctx context.Context, f *fleet.Fleet) error {
				return watchJob(ctx, s, f, args[0])
			})
		},
	}
	addConnFlags(cmd, &conn)
	return cmd
}

func newJobsCancel(s streams) *cobra.Command {
	var conn connConfig
	cmd := &cobra.Command{
		Use:   "cancel JOB",
		Short: "Stop a bulk job",
		Long: "cancel marks the job cancelled; its dispatcher stops at its next checkpoint (at most one\n" +
			"batch of runs later). Runs already handled stay handled. A job that has ended is refused.",
		Args: namedArgs("JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJobs(cmd.Context(), s, &conn, func(ctx context.Context, f *fleet.Fleet) error {
				j, err := f.Client.CancelJob(ctx, args[0])
				if err = recordAudit(ctx, s, cmd, args, f, wire.AuditEntry{Action: "jobs-cancel", Job: args[0]}, err); err != nil {
					return err
				}
				fmt.Fprintf(s.out, "job %s cancelled after %d of %d runs\n", j.ID, j.Sent+j.Skipped+j.Errors, j.Matched)
				return nil
			})
		},
	}
	addConnFlags(cmd, &conn)
	return cmd
}

// onJobs dials the deployment for a jobs verb.
func onJobs(ctx context.Context, s streams, conn *connConfig, do func(context.Context, *fleet.Fleet) error) error {
	f, stop, err := dialFleet(ctx, s, conn)
	if err != nil {
		return err
	}
	defer stop()
	return do(ctx, f)
}

// bulkOp is the bulk form of a run operation verb: a filter instead of
// a run id.
type bulkOp struct {
	filter              runFilter
	dryRun, yes, detach bool
	operation, reason   string
	conn                *connConfig
	// revision is the revision a migration moves runs to.
	revision string
	// cmd and args are the verb's, for the audit entry.
	cmd  *cobra.Command
	args []string
}

// addFlags declares the bulk flags beside the verb's own.
func (b *bulkOp) addFlags(cmd *cobra.Command) {
	b.filter.addFlags(cmd)
	f := cmd.Flags()
	f.BoolVar(&b.dryRun, "dry-run", false, "with a filter: count the runs it matches, change nothing")
	f.BoolVar(&b.yes, "yes", false, "with a filter: submit the bulk job (without it, only the count is printed)")
	f.BoolVar(&b.detach, "detach", false, "with a filter: print the job id and return instead of following its progress")
}

// handle runs the verb's bulk form when bulk or filter flags are given,
// reporting whether it did; the verb handles RUN otherwise. Any run
// operation verb gets its bulk form with a bulkOp, addFlags and this.
func (b *bulkOp) handle(cmd *cobra.Command, s streams, args []string, reason string) (bool, error) {
	if !b.filter.set() && !b.dryRun && !b.yes && !b.detach {
		return false, nil
	}
	if len(args) > 0 {
		return true, fmt.Errorf("give either RUN or filter flags, not both (RUN %q)", args[0])
	}
	if !b.filter.set() {
		return true, fmt.Errorf("--dry-run, --yes and --detach need filter flags (--workflow, --status, ...)")
	}
	f, err := b.filter.build(s, time.Now())
	if err != nil {
		return true, err
	}
	b.reason = reason
	b.cmd, b.args = cmd, args
	return true, b.run(cmd.Context(), s, f)
}

// run counts the runs the filter matches, then (with --yes) submits the
// job and follows it unless --detach.
func (b *bulkOp) run(ctx context.Context, s streams, f wire.RunFilter) error {
	fl, stop, err := dialFleet(ctx, s, b.conn)
	if err != nil {
		return err
	}
	defer stop()
	// A scan, as the job itself reads runs (package bulk).
	page, err := fl.Client.ListRuns(ctx, client.ListOptions{Filter: f, Scan: true})
	if err != nil {
		return flagError(err)
	}
	eligible := 0
	for _, r := range page.Runs {
		if client.Operations[b.operation].Eligible(r.Status.Status) {
			eligible++
		}
	}
	fmt.Fprintf(s.out, "%d run%s match; %d can take a %s now (the job decides again at each run)\n", len(page.Runs), plural(len(page.Runs)), eligible, b.operation)
	if b.dryRun {
		return nil
	}
	if !b.yes {
		return fmt.Errorf("nothing submitted: add --yes to submit the bulk %s (or --dry-run to only count)", b.operation)
	}
	j, err := fl.Client.SubmitJob(ctx, client.JobSpec{Operation: b.operation, Reason: b.reason, Filter: f, By: operatorIdentity(b.cmd), Revision: b.revision})
	e := wire.AuditEntry{Action: "jobs-create", Filter: &f, Reason: b.reason, Detail: b.operation}
	if j != nil {
		e.Job = j.ID
	}
	if err := recordAudit(ctx, s, b.cmd, b.args, fl, e, err); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "job %s submitted: jetflow jobs watch %s, jetflow jobs cancel %s\n", j.ID, j.ID, j.ID)
	if b.detach {
		return nil
	}
	return watchJob(ctx, s, fl, j.ID)
}

// watchJob draws a job's progress until it ends: exit 0 when done, 1
// when it failed or was cancelled.
func watchJob(ctx context.Context, s streams, f *fleet.Fleet, id string) error {
	tty := isTerminal(s.out)
	lastState := ""
	j, err := f.Client.WatchJob(ctx, id, func(j *wire.Job) bool {
		switch {
		case tty:
			fmt.Fprintf(s.out, "\r\033[K%s", progressLine(j))
		case j.State != lastState && !j.Settled():
			fmt.Fprintln(s.out, progressLine(j))
		}
		lastState = j.State
		return true
	})
	if err != nil {
		if errors.Is(err, context.Canceled) && j != nil {
			fmt.Fprintf(s.out, "\nstopped watching; job %s goes on\n", id)
		}
		return err
	}
	if tty {
		fmt.Fprintln(s.out)
	} else {
		fmt.Fprintln(s.out, progressLine(j))
	}
	if j.Error != "" {
		fmt.Fprintf(s.err, "job %s: %s\n", j.ID, j.Error)
	}
	if j.State != wire.JobDone {
		return exitError{1}
	}
	return nil
}

// progressLine is one line of a job's progress: a bar of the runs
// handled out of those matched, and the counts.
func progressLine(j *wire.Job) string {
	done := j.Sent + j.Skipped + j.Errors
	const width = 30
	filled := 0
	if j.Matched > 0 {
		filled = min(width, done*width/j.Matched)
	} else if j.Settled() {
		filled = width
	}
	bar := strings.Repeat("#", filled) + strings.Repeat(".", width-filled)
	return fmt.Sprintf("job %s %s [%s] %d/%d  sent %d  skipped %d  errors %d  %s",
		j.ID, j.Operation, bar, done, j.Matched, j.Sent, j.Skipped, j.Errors, j.State)
}
