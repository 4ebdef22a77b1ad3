package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// task pause|resume: an operator holds a task version for the whole
// deployment while its upstream is down (docs/OPERATIONS.md).

func newTask(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Pause or resume a task version for the whole deployment",
		Long: "task pause stops the delivery of a task version's invocations to its workers (its durable\n" +
			"consumer is paused natively by the server) while its upstream is down; runs that need it wait\n" +
			"without spending attempts: an attempt whose deadline comes while the version is paused starts\n" +
			"over (a fresh deadline, the same attempt number). task resume delivers them again.",
		Args: namedArgs(),
	}
	cmd.AddCommand(newTaskPause(s), newTaskResume(s))
	return cmd
}

func newTaskPause(s streams) *cobra.Command {
	var conn connConfig
	var until time.Duration
	cmd := &cobra.Command{
		Use:   "pause TASK@VERSION",
		Short: "Stop delivering a task version's invocations, until resumed or for --until",
		Long: "pause pauses the durable consumer of task version TASK@VERSION: workers receive none of its\n" +
			"invocations (those already delivered go on) until task resume, or until --until has passed.\n" +
			"Invocations keep arriving in the task stream and wait there. A dispatcher that finds an\n" +
			"attempt of a paused version past its deadline postpones it instead of failing it: the\n" +
			"attempt starts over with a fresh attemptTimeout and scheduleToClose, its invocation is\n" +
			"published again (the waiting one carries the old deadline and expires), and no attempt is\n" +
			"spent. Deploying a workflow keeps the pause.",
		Example: "  jetflow task pause check-stock@1 --until 10m\n  jetflow task pause charge-card@2",
		Args:    namedArgs("TASK@VERSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			task, version, err := parseTaskArg(args[0])
			if err != nil {
				return err
			}
			if until < 0 {
				return errors.New("--until must not be negative")
			}
			f, stop, err := dialFleet(cmd.Context(), s, &conn)
			if err != nil {
				return err
			}
			defer stop()
			var end time.Time
			if until > 0 {
				end = time.Now().Add(until)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), conn.Timeout)
			defer cancel()
			got, err := provision.PauseTask(ctx, f.JS, f.Names, task, version, end)
			if err = recordAudit(ctx, s, cmd, args, f, wire.AuditEntry{Action: "task-pause", Task: args[0]}, err); err != nil {
				return err
			}
			if until > 0 {
				fmt.Fprintf(s.out, "task %s@%s paused until %s\n", task, version, humanTime(got))
			} else {
				fmt.Fprintf(s.out, "task %s@%s paused until resumed (jetflow task resume %s@%s)\n", task, version, task, version)
			}
			return nil
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().DurationVar(&until, "until", 0, "end the pause by itself after this long (0: until task resume)")
	return cmd
}

func newTaskResume(s streams) *cobra.Command {
	var conn connConfig
	cmd := &cobra.Command{
		Use:     "resume TASK@VERSION",
		Short:   "Deliver a paused task version's invocations again",
		Long:    "resume ends the pause of task version TASK@VERSION: its workers receive the invocations\nthat waited, oldest first (an invocation past its deadline has been published again, and\nworkers drop the old one).",
		Example: "  jetflow task resume check-stock@1",
		Args:    namedArgs("TASK@VERSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			task, version, err := parseTaskArg(args[0])
			if err != nil {
				return err
			}
			f, stop, err := dialFleet(cmd.Context(), s, &conn)
			if err != nil {
				return err
			}
			defer stop()
			ctx, cancel := context.WithTimeout(cmd.Context(), conn.Timeout)
			defer cancel()
			err = provision.ResumeTask(ctx, f.JS, f.Names, task, version)
			if err = recordAudit(ctx, s, cmd, args, f, wire.AuditEntry{Action: "task-resume", Task: args[0]}, err); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "task %s@%s resumed\n", task, version)
			return nil
		},
	}
	addConnFlags(cmd, &conn)
	return cmd
}

// parseTaskArg splits the argument TASK@VERSION and checks both parts.
func parseTaskArg(v string) (task, version string, err error) {
	task, version, ok := strings.Cut(v, "@")
	if !ok {
		return "", "", fmt.Errorf("argument TASK@VERSION %q: want TASK@VERSION, such as check-stock@1", v)
	}
	if err := subjects.CheckTask(task); err != nil {
		return "", "", fmt.Errorf("argument TASK@VERSION: %w", err)
	}
	if err := subjects.CheckVersion(version); err != nil {
		return "", "", fmt.Errorf("argument TASK@VERSION: %w", err)
	}
	return task, version, nil
}
